//! A table: its definition and its current version, swapped atomically by one writer at a time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use arrow::datatypes::SchemaRef;
use wireload_types::TableSchema;

use crate::StorageError;
use crate::compression::{Compression, StoredAs};
use crate::index::{IndexDef, TableIndex};
use crate::version::TableVersion;

/// How a table's rows are split into partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partitioning {
    /// One partition holds every row.
    Single,
    /// `PARTITION BY HASH (column) PARTITIONS count`.
    Hash {
        /// index of the partitioning column in the schema
        column: usize,
        /// number of partitions (at least 1)
        count: usize,
    },
}

impl Partitioning {
    /// Number of partitions.
    pub fn count(&self) -> usize {
        match self {
            Partitioning::Single => 1,
            Partitioning::Hash { count, .. } => *count,
        }
    }
}

/// What a table is: name, columns and partitioning. Never changes after creation.
#[derive(Debug, Clone)]
pub struct TableDef {
    /// Table name.
    pub name: String,
    /// Columns.
    pub schema: TableSchema,
    /// Partitioning scheme.
    pub partitioning: Partitioning,
    /// The Arrow schema of the table's chunks.
    pub arrow_schema: SchemaRef,
    /// Indexes declared with the table (PRIMARY KEY, UNIQUE); a version may hold more.
    pub indexes: Vec<IndexDef>,
    /// The `COMPRESSION` of each column.
    pub compression: Vec<Compression>,
}

impl TableDef {
    /// Checks and builds a definition.
    pub fn new(
        name: impl Into<String>,
        schema: TableSchema,
        partitioning: Partitioning,
    ) -> Result<Self, StorageError> {
        let name = name.into();
        if schema.columns.is_empty() {
            return Err(StorageError::InvalidDefinition(format!(
                "table \"{name}\" has no columns"
            )));
        }
        for (i, c) in schema.columns.iter().enumerate() {
            if schema.columns[..i].iter().any(|o| o.name == c.name) {
                return Err(StorageError::InvalidDefinition(format!(
                    "column \"{}\" specified more than once",
                    c.name
                )));
            }
        }
        if let Partitioning::Hash { column, count } = partitioning {
            if column >= schema.columns.len() {
                return Err(StorageError::InvalidDefinition(
                    "partitioning column out of range".into(),
                ));
            }
            if count == 0 || count > 4096 {
                return Err(StorageError::InvalidDefinition(format!(
                    "PARTITIONS must be between 1 and 4096, got {count}"
                )));
            }
        }
        let arrow_schema = schema.arrow_schema();
        Ok(TableDef {
            name,
            compression: vec![Compression::Plain; schema.columns.len()],
            schema,
            partitioning,
            arrow_schema,
            indexes: Vec::new(),
        })
    }

    /// This definition with column `i` stored as `compression[i]`.
    pub fn with_compression(mut self, compression: Vec<Compression>) -> Result<Self, StorageError> {
        if compression.len() != self.schema.columns.len() {
            return Err(StorageError::InvalidDefinition(format!(
                "{} COMPRESSION settings for {} columns",
                compression.len(),
                self.schema.columns.len()
            )));
        }
        self.compression = compression;
        Ok(self)
    }

    /// True when some column is (or may become) dictionary-encoded.
    pub fn has_dictionaries(&self) -> bool {
        self.compression.iter().any(|c| *c != Compression::Plain)
    }

    /// This definition with the indexes of its constraints; checks them.
    pub fn with_indexes(mut self, indexes: Vec<IndexDef>) -> Result<Self, StorageError> {
        for (i, ix) in indexes.iter().enumerate() {
            ix.check(&self.schema)?;
            if ix.primary && indexes[..i].iter().any(|o| o.primary) {
                return Err(StorageError::InvalidDefinition(format!(
                    "multiple primary keys for table \"{}\" are not allowed",
                    self.name
                )));
            }
            if indexes[..i].iter().any(|o| o.name == ix.name) {
                return Err(StorageError::InvalidDefinition(format!(
                    "index name \"{}\" used twice",
                    ix.name
                )));
            }
        }
        self.indexes = indexes;
        Ok(self)
    }

    /// The primary key, when the table has one.
    pub fn primary_key(&self) -> Option<&IndexDef> {
        self.indexes.iter().find(|i| i.primary)
    }

    /// The `CREATE TABLE` statement that creates this table, constraints and partitioning
    /// included (identifiers double-quoted, so any name survives).
    pub fn create_sql(&self) -> String {
        let mut lines: Vec<String> = self
            .schema
            .columns
            .iter()
            .zip(&self.compression)
            .map(|(c, compression)| {
                let not_null = if c.nullable { "" } else { " NOT NULL" };
                let stored = match compression {
                    Compression::Plain => String::new(),
                    other => format!(" COMPRESSION {other}"),
                };
                format!("    {} {}{not_null}{stored}", quote(&c.name), c.ty)
            })
            .collect();
        for ix in &self.indexes {
            let what = if ix.primary { "PRIMARY KEY" } else { "UNIQUE" };
            lines.push(format!(
                "    CONSTRAINT {} {what} ({}) USING {}",
                quote(&ix.name),
                self.quoted_columns(ix),
                ix.kind
            ));
        }
        let mut sql = format!(
            "CREATE TABLE {} (\n{}\n)",
            quote(&self.name),
            lines.join(",\n")
        );
        if let Partitioning::Hash { column, count } = self.partitioning {
            sql.push_str(&format!(
                " PARTITION BY HASH ({}) PARTITIONS {count}",
                quote(&self.schema.columns[column].name)
            ));
        }
        sql
    }

    /// The `CREATE INDEX` statement that creates index `ix` over this table.
    pub fn create_index_sql(&self, ix: &IndexDef) -> String {
        format!(
            "CREATE {}INDEX {} ON {} ({}) USING {}",
            if ix.unique { "UNIQUE " } else { "" },
            quote(&ix.name),
            quote(&self.name),
            self.quoted_columns(ix),
            ix.kind
        )
    }

    fn quoted_columns(&self, ix: &IndexDef) -> String {
        ix.columns
            .iter()
            .map(|&c| quote(&self.schema.columns[c].name))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `"name"` with embedded double quotes doubled.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A table of the catalog.
#[derive(Debug)]
pub struct Table {
    def: Arc<TableDef>,
    current: RwLock<Arc<TableVersion>>,
    writer: Mutex<()>,
    /// A compaction of the table is under way.
    compacting: AtomicBool,
}

impl Table {
    /// A new empty table outside any catalog (see [`crate::Catalog::attach`]).
    pub fn new(def: TableDef) -> Self {
        let mut empty =
            TableVersion::empty(def.partitioning.count(), Arc::clone(&def.arrow_schema));
        empty.indexes = def.indexes.iter().cloned().map(TableIndex::empty).collect();
        empty.stored_as = def
            .schema
            .columns
            .iter()
            .zip(&def.compression)
            .map(|(col, &c)| StoredAs::of_column(&col.ty, c))
            .collect();
        Table {
            def: Arc::new(def),
            current: RwLock::new(Arc::new(empty)),
            writer: Mutex::new(()),
            compacting: AtomicBool::new(false),
        }
    }

    /// A table outside any catalog holding `version` of the table `def` (a transaction's
    /// private copy: its writes publish here until they are committed).
    pub fn with_version(def: Arc<TableDef>, version: Arc<TableVersion>) -> Self {
        Table {
            def,
            current: RwLock::new(version),
            writer: Mutex::new(()),
            compacting: AtomicBool::new(false),
        }
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// The table's definition.
    pub fn def(&self) -> &Arc<TableDef> {
        &self.def
    }

    /// The current version; it stays valid and unchanged for as long as the caller holds it.
    pub fn snapshot(&self) -> Arc<TableVersion> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Claims the table's one compaction slot: false when a compaction is under way.
    pub fn claim_compaction(&self) -> bool {
        self.compacting
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Gives the compaction slot back.
    pub fn release_compaction(&self) {
        self.compacting.store(false, Ordering::Release);
    }

    /// True while a compaction of the table is under way.
    pub fn is_compacting(&self) -> bool {
        self.compacting.load(Ordering::Acquire)
    }

    /// Becomes the table's only writer until the guard is dropped or published.
    pub fn begin_write(&self) -> WriteGuard<'_> {
        let lock = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let base = self.snapshot();
        WriteGuard {
            table: self,
            base,
            _lock: lock,
        }
    }
}

/// Exclusive right to publish the next version of a table. Dropping it publishes nothing.
#[derive(Debug)]
pub struct WriteGuard<'a> {
    table: &'a Table,
    base: Arc<TableVersion>,
    _lock: MutexGuard<'a, ()>,
}

impl WriteGuard<'_> {
    /// The version this write builds on.
    pub fn base(&self) -> &Arc<TableVersion> {
        &self.base
    }

    /// Makes `next` the table's current version in one step: a write (its `content` is
    /// its number).
    pub fn publish(self, mut next: TableVersion) -> Arc<TableVersion> {
        next.content = next.number;
        self.install(next)
    }

    /// Makes `next`, the base without its deleted rows, the current version: not a write
    /// (its `content` stays the base's, see [`TableVersion::content`]).
    pub fn publish_compacted(self, mut next: TableVersion) -> Arc<TableVersion> {
        assert_eq!(
            next.num_rows(),
            self.base.num_rows(),
            "a compaction keeps every live row"
        );
        next.number = self.base.number + 1;
        next.content = self.base.content;
        self.install(next)
    }

    /// Makes `next` the current version.
    fn install(self, next: TableVersion) -> Arc<TableVersion> {
        let next = Arc::new(next);
        *self
            .table
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Arc::clone(&next);
        next
    }
}

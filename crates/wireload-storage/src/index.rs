//! Index definitions and the indexes a table version holds.

use std::sync::Arc;

use wireload_index::{Index, IndexKind, KeyEncoder};
use wireload_types::TableSchema;

use crate::StorageError;

/// What an index is: its name, key columns, uniqueness and structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    /// Index name (unique in the database).
    pub name: String,
    /// Key columns, as positions in the table schema, in key order.
    pub columns: Vec<usize>,
    /// No two rows may have equal keys (PRIMARY KEY, UNIQUE); NULL keys are errors.
    pub unique: bool,
    /// The table's primary key.
    pub primary: bool,
    /// Adaptive radix tree or chained hash table.
    pub kind: IndexKind,
}

impl IndexDef {
    /// Checks the definition against the table's columns.
    pub fn check(&self, schema: &TableSchema) -> Result<(), StorageError> {
        if self.columns.is_empty() {
            return Err(StorageError::InvalidDefinition(format!(
                "index \"{}\" has no columns",
                self.name
            )));
        }
        for (i, &c) in self.columns.iter().enumerate() {
            if c >= schema.columns.len() {
                return Err(StorageError::InvalidDefinition(format!(
                    "index \"{}\": column {c} out of range",
                    self.name
                )));
            }
            if self.columns[..i].contains(&c) {
                return Err(StorageError::InvalidDefinition(format!(
                    "index \"{}\": column \"{}\" appears twice",
                    self.name, schema.columns[c].name
                )));
            }
        }
        self.encoder(schema).map(|_| ())
    }

    /// The key encoder of this index over a table with `schema`.
    pub fn encoder(&self, schema: &TableSchema) -> Result<KeyEncoder, StorageError> {
        let cols: Vec<_> = self
            .columns
            .iter()
            .map(|&c| {
                let col = &schema.columns[c];
                // unique keys may not be NULL: the encoder reports them
                (col.ty.arrow_type(), col.nullable && !self.unique)
            })
            .collect();
        KeyEncoder::new(&cols)
            .map_err(|e| StorageError::InvalidDefinition(format!("index \"{}\": {e}", self.name)))
    }

    /// The names of the key columns.
    pub fn column_names<'a>(&self, schema: &'a TableSchema) -> Vec<&'a str> {
        self.columns
            .iter()
            .map(|&c| schema.columns[c].name.as_str())
            .collect()
    }
}

/// An index of a table version: its definition and its entries for exactly that version.
#[derive(Debug, Clone)]
pub struct TableIndex {
    /// The definition.
    pub def: Arc<IndexDef>,
    /// The entries (shared with later versions until a load merges into a copy).
    pub index: Arc<Index>,
}

impl TableIndex {
    /// An index without entries.
    pub fn empty(def: IndexDef) -> Self {
        let index = Index::empty(def.kind, def.unique);
        TableIndex {
            def: Arc::new(def),
            index: Arc::new(index),
        }
    }
}

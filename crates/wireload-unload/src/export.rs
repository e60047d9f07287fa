//! A whole database unloaded to a directory and loaded back: `EXPORT DATABASE` and
//! `IMPORT DATABASE`.
//!
//! An export is a directory holding one Arrow IPC file per table partition, `schema.sql`
//! (the `CREATE TABLE` and `CREATE INDEX` statements, for people) and `manifest.json` (the
//! table definitions, and every file with its row count, size and CRC-32). It is written
//! under a temporary name beside the target, synced, and renamed into place, so a crash never
//! leaves a half export under the target name. An import verifies every file against the
//! manifest and reads everything before it adds any table: a damaged or truncated file is
//! reported by name and the database is unchanged.
//!
//! Manifest version 2 holds the definitions as data; version 1 (older exports) held them as
//! SQL text only, which [`Export::resolve_sql`] turns into definitions with the caller's SQL
//! parser.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use wireload_publish::{LoadControl, LoadError};
use wireload_storage::{Catalog, Compression, IndexDef, IndexKind, Partitioning, Table, TableDef};
use wireload_types::{ColumnDef, SqlType, TableSchema};

use crate::UnloadError;
use crate::ipc::IpcCompression;

/// The manifest's format marker.
const FORMAT: &str = "wireload-export";
/// The manifest version written.
const VERSION: u64 = 2;
/// The manifest's file name.
const MANIFEST: &str = "manifest.json";

/// Why an export or import failed; the database and the target are unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// A file or directory could not be read or written.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// what was being done (`read`, `create`, `sync`, `rename the export to`...)
        what: &'static str,
        /// the path
        path: PathBuf,
        /// the operating system's error
        source: std::io::Error,
    },
    /// The export target exists and is not an empty directory.
    #[error("{} {why}; EXPORT DATABASE writes a new directory", path.display())]
    TargetExists {
        /// the target
        path: PathBuf,
        /// `exists and is not empty`, `is not a directory`...
        why: &'static str,
    },
    /// The directory holds no wireload export.
    #[error("{} is not a wireload export: it has no {MANIFEST}", dir.display())]
    NotAnExport {
        /// the directory
        dir: PathBuf,
    },
    /// A file of the export is damaged, truncated or does not match the manifest.
    #[error("{} is damaged: {what}; nothing was imported", path.display())]
    Damaged {
        /// the file
        path: PathBuf,
        /// what is wrong
        what: String,
    },
    /// A table of the export exists in the database already.
    #[error(
        "table \"{table}\" already exists; IMPORT DATABASE adds tables and replaces none (drop it first); nothing was imported"
    )]
    TableExists {
        /// the table
        table: String,
    },
    /// A table definition of a version 1 manifest could not be read.
    #[error("{}: the definition of table \"{table}\": {message}", path.display())]
    Definition {
        /// the manifest
        path: PathBuf,
        /// the table
        table: String,
        /// what is wrong with its SQL
        message: String,
    },
    /// Writing or reading a data file failed.
    #[error(transparent)]
    Unload(#[from] UnloadError),
    /// Loading a table's rows (or building its indexes) failed.
    #[error("{error}\nnothing was imported (table \"{table}\")")]
    Load {
        /// the table
        table: String,
        /// why
        error: LoadError,
    },
    /// The export or import was cancelled.
    #[error("cancelled; nothing was written or imported")]
    Cancelled,
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> ExportError + 'a {
    move |source| ExportError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// The manifest as it is written and read.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    format: String,
    version: u64,
    #[serde(default)]
    written_by: String,
    tables: Vec<ManifestTable>,
}

/// One table of the manifest.
#[derive(Debug, Serialize, Deserialize)]
struct ManifestTable {
    name: String,
    /// the CREATE TABLE statement (version 1: the definition; version 2: for people)
    create: String,
    /// CREATE INDEX statements of the indexes beyond the constraints (version 1)
    #[serde(default)]
    indexes: Vec<String>,
    /// the definition (version 2)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    definition: Option<Definition>,
    /// indexes beyond the constraints (version 2)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    index_definitions: Vec<IndexSpec>,
    rows: u64,
    files: Vec<ManifestFile>,
}

/// A table definition as data.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Definition {
    columns: Vec<ColumnSpec>,
    /// `PARTITION BY HASH (column) PARTITIONS count`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hash_partitions: Option<HashSpec>,
    /// PRIMARY KEY and UNIQUE constraints
    #[serde(default)]
    constraints: Vec<IndexSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ColumnSpec {
    name: String,
    #[serde(rename = "type")]
    ty: SqlType,
    nullable: bool,
    /// `COMPRESSION` other than plain (`dictionary`, `auto`); absent for plain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    compression: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct HashSpec {
    column: String,
    count: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct IndexSpec {
    name: String,
    columns: Vec<String>,
    unique: bool,
    #[serde(default)]
    primary: bool,
    /// `ART` or `HASH`
    kind: String,
}

/// One data file of the manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ManifestFile {
    file: String,
    #[serde(default)]
    partition: usize,
    rows: u64,
    bytes: u64,
    crc32: u32,
}

impl Definition {
    fn of(def: &TableDef) -> Self {
        let name = |c: usize| def.schema.columns[c].name.clone();
        Definition {
            columns: def
                .schema
                .columns
                .iter()
                .zip(&def.compression)
                .map(|(c, &compression)| ColumnSpec {
                    name: c.name.clone(),
                    ty: c.ty,
                    nullable: c.nullable,
                    compression: (compression != Compression::Plain)
                        .then(|| compression.to_string()),
                })
                .collect(),
            hash_partitions: match def.partitioning {
                Partitioning::Single => None,
                Partitioning::Hash { column, count } => Some(HashSpec {
                    column: name(column),
                    count,
                }),
            },
            constraints: def
                .indexes
                .iter()
                .map(|ix| IndexSpec::of(def, ix))
                .collect(),
        }
    }

    /// The table definition called `table`; `bad` describes what is wrong.
    fn table_def(&self, table: &str) -> Result<TableDef, String> {
        let schema = TableSchema {
            columns: self
                .columns
                .iter()
                .map(|c| ColumnDef {
                    name: c.name.clone(),
                    ty: c.ty,
                    nullable: c.nullable,
                })
                .collect(),
        };
        let partitioning = match &self.hash_partitions {
            None => Partitioning::Single,
            Some(h) => Partitioning::Hash {
                column: position(&schema, &h.column)?,
                count: h.count,
            },
        };
        let indexes = self
            .constraints
            .iter()
            .map(|ix| ix.index_def(&schema))
            .collect::<Result<Vec<_>, _>>()?;
        let compression = self
            .columns
            .iter()
            .map(|c| {
                c.compression
                    .as_deref()
                    .map_or(Ok(Compression::Plain), str::parse)
            })
            .collect::<Result<Vec<_>, _>>()?;
        TableDef::new(table, schema, partitioning)
            .and_then(|d| d.with_indexes(indexes))
            .and_then(|d| d.with_compression(compression))
            .map_err(|e| e.to_string())
    }
}

impl IndexSpec {
    fn of(def: &TableDef, ix: &IndexDef) -> Self {
        IndexSpec {
            name: ix.name.clone(),
            columns: ix
                .columns
                .iter()
                .map(|&c| def.schema.columns[c].name.clone())
                .collect(),
            unique: ix.unique,
            primary: ix.primary,
            kind: ix.kind.to_string(),
        }
    }

    fn index_def(&self, schema: &TableSchema) -> Result<IndexDef, String> {
        let kind = match self.kind.to_ascii_uppercase().as_str() {
            "ART" => IndexKind::Art,
            "HASH" => IndexKind::Hash,
            other => return Err(format!("index \"{}\" has kind {other}", self.name)),
        };
        let def = IndexDef {
            name: self.name.clone(),
            columns: self
                .columns
                .iter()
                .map(|c| position(schema, c))
                .collect::<Result<_, _>>()?,
            unique: self.unique,
            primary: self.primary,
            kind,
        };
        def.check(schema).map_err(|e| e.to_string())?;
        Ok(def)
    }
}

fn position(schema: &TableSchema, column: &str) -> Result<usize, String> {
    schema
        .columns
        .iter()
        .position(|c| c.name == column)
        .ok_or_else(|| format!("no column \"{column}\""))
}

/// A file name for table number `i` (names may hold any character; files get safe ones).
fn file_stem(i: usize, name: &str) -> String {
    let safe: String = name
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{i:03}_{safe}")
}

/// CRC-32 and length of a file's bytes (read in blocks that stay in cache).
fn checksum(path: &Path) -> Result<(u32, u64), ExportError> {
    let mut file = File::open(path).map_err(io("read", path))?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io("read", path)(e)),
        };
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok((hasher.finalize(), len))
}

/// Syncs a directory so that renames and new entries in it are durable.
fn sync_dir(dir: &Path) -> Result<(), ExportError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io("sync", dir))
}

/// Writes every table of `catalog` into the new directory `dir`, on the current rayon pool;
/// returns a one-line summary.
pub fn export_database(
    catalog: &Catalog,
    dir: &Path,
    compression: IpcCompression,
    ctl: &LoadControl,
) -> Result<String, ExportError> {
    let started = Instant::now();
    if let Ok(mut entries) = fs::read_dir(dir)
        && entries.next().is_some()
    {
        return Err(ExportError::TargetExists {
            path: dir.to_path_buf(),
            why: "exists and is not empty",
        });
    }
    if dir.exists() && !dir.is_dir() {
        return Err(ExportError::TargetExists {
            path: dir.to_path_buf(),
            why: "exists and is not a directory",
        });
    }
    let Some(name) = dir.file_name() else {
        return Err(ExportError::TargetExists {
            path: dir.to_path_buf(),
            why: "names no directory",
        });
    };
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(io("create", &parent))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = parent.join(format!(
        ".{}.export-{}-{nanos}",
        name.to_string_lossy(),
        std::process::id()
    ));
    fs::create_dir(&tmp).map_err(io("create", &tmp))?;
    let result = write_export(catalog, &tmp, compression, ctl).and_then(|summary| {
        // an empty directory at the target is replaced
        if dir.is_dir() {
            fs::remove_dir(dir).map_err(io("replace", dir))?;
        }
        fs::rename(&tmp, dir).map_err(io("rename the export to", dir))?;
        sync_dir(&parent)?;
        Ok(summary)
    });
    match result {
        Ok((tables, rows, bytes)) => Ok(format!(
            "EXPORT DATABASE: {tables} tables, {rows} rows, {:.1} MB to {} in {:.3} s",
            bytes as f64 / 1e6,
            dir.display(),
            started.elapsed().as_secs_f64()
        )),
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

/// Writes the files and the manifest into `tmp`; returns (tables, rows, bytes).
fn write_export(
    catalog: &Catalog,
    tmp: &Path,
    compression: IpcCompression,
    ctl: &LoadControl,
) -> Result<(usize, u64, u64), ExportError> {
    let names = catalog.table_names();
    let tables: Vec<Arc<Table>> = names.iter().filter_map(|n| catalog.table(n)).collect();
    let mut manifest_tables = Vec::new();
    let mut schema_sql = String::new();
    let (mut total_rows, mut total_bytes) = (0u64, 0u64);
    for (i, table) in tables.iter().enumerate() {
        if ctl.cancel.load(Relaxed) {
            return Err(ExportError::Cancelled);
        }
        let snapshot = table.snapshot();
        let def = table.def();
        let create = def.create_sql();
        schema_sql.push_str(&create);
        schema_sql.push_str(";\n\n");
        // indexes made with CREATE INDEX (constraint indexes come with the table)
        let extra: Vec<&IndexDef> = snapshot
            .indexes
            .iter()
            .map(|ix| ix.def.as_ref())
            .filter(|ix| !def.indexes.iter().any(|c| c.name == ix.name))
            .collect();
        let extra_sql: Vec<String> = extra.iter().map(|ix| def.create_index_sql(ix)).collect();
        for sql in &extra_sql {
            schema_sql.push_str(sql);
            schema_sql.push_str(";\n\n");
        }
        let mut files = Vec::new();
        let count = snapshot.partitions.len();
        for (p, partition) in snapshot.partitions.iter().enumerate() {
            let file = if count == 1 {
                format!("{}.arrow", file_stem(i, table.name()))
            } else {
                format!("{}.p{p}.arrow", file_stem(i, table.name()))
            };
            let path = tmp.join(&file);
            let report = crate::ipc::write_arrow_file(
                &path,
                &snapshot.schema,
                &partition
                    .live_chunks()
                    .and_then(|c| {
                        c.iter()
                            .map(wireload_storage::plain_batch)
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .map_err(UnloadError::from)?,
                compression,
                &ctl.cancel,
            )
            .map_err(|e| match e {
                UnloadError::Cancelled => ExportError::Cancelled,
                e => e.into(),
            })?;
            let crc32 = report.crc32.ok_or_else(|| ExportError::Damaged {
                path: path.clone(),
                what: "the writer reported no checksum".into(),
            })?;
            total_rows += report.rows;
            total_bytes += report.bytes;
            files.push(ManifestFile {
                file,
                partition: p,
                rows: report.rows,
                bytes: report.bytes,
                crc32,
            });
        }
        manifest_tables.push(ManifestTable {
            name: table.name().to_string(),
            create,
            indexes: extra_sql,
            definition: Some(Definition::of(def)),
            index_definitions: extra.iter().map(|ix| IndexSpec::of(def, ix)).collect(),
            rows: snapshot.num_rows() as u64,
            files,
        });
    }
    let schema_path = tmp.join("schema.sql");
    fs::write(&schema_path, &schema_sql).map_err(io("write", &schema_path))?;
    let manifest = Manifest {
        format: FORMAT.into(),
        version: VERSION,
        written_by: concat!("wireload ", env!("CARGO_PKG_VERSION")).into(),
        tables: manifest_tables,
    };
    let path = tmp.join(MANIFEST);
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| ExportError::Damaged {
        path: path.clone(),
        what: format!("cannot encode the manifest: {e}"),
    })?;
    let mut f = File::create(&path).map_err(io("create", &path))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(io("write", &path))?;
    File::open(&schema_path)
        .and_then(|f| f.sync_all())
        .map_err(io("sync", &schema_path))?;
    sync_dir(tmp)?;
    Ok((tables.len(), total_rows, total_bytes))
}

/// Turns a table's `CREATE TABLE` statement and its `CREATE INDEX` statements into the
/// table's definition and its extra indexes (the SQL front end's job).
pub type DefinitionParser = dyn Fn(&str, &[String]) -> Result<(TableDef, Vec<IndexDef>), String>;

/// An export read from its directory, its table definitions not yet checked against a database.
#[derive(Debug)]
pub struct Export {
    dir: PathBuf,
    tables: Vec<ExportTable>,
}

/// One table of an export.
#[derive(Debug)]
struct ExportTable {
    manifest: ManifestTable,
    /// the definition and the extra indexes, once known
    def: Option<(TableDef, Vec<IndexDef>)>,
}

impl Export {
    /// Reads the manifest of the export in `dir`.
    pub fn read(dir: &Path) -> Result<Self, ExportError> {
        let path = dir.join(MANIFEST);
        let text = fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound && dir.is_dir() {
                ExportError::NotAnExport {
                    dir: dir.to_path_buf(),
                }
            } else {
                io("read", &path)(e)
            }
        })?;
        let damaged = |what: String| ExportError::Damaged {
            path: path.clone(),
            what,
        };
        let head: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| damaged(format!("invalid JSON ({e})")))?;
        if head["format"] != FORMAT {
            return Err(damaged("it is not a wireload export manifest".into()));
        }
        let version = head["version"].as_u64();
        if !matches!(version, Some(1 | 2)) {
            return Err(damaged(format!(
                "version {} is not supported (this wireload reads versions 1 and {VERSION})",
                head["version"]
            )));
        }
        let manifest: Manifest =
            serde_json::from_value(head).map_err(|e| damaged(format!("{e}")))?;
        let mut tables = Vec::with_capacity(manifest.tables.len());
        for t in manifest.tables {
            for f in &t.files {
                if f.file.contains(['/', '\\']) || f.file.starts_with('.') || f.file.is_empty() {
                    return Err(damaged(format!(
                        "file name {:?} leaves the directory",
                        f.file
                    )));
                }
            }
            let def = match &t.definition {
                Some(d) => {
                    let table = d.table_def(&t.name).map_err(|m| ExportError::Definition {
                        path: path.clone(),
                        table: t.name.clone(),
                        message: m,
                    })?;
                    let extra = t
                        .index_definitions
                        .iter()
                        .map(|ix| ix.index_def(&table.schema))
                        .collect::<Result<_, _>>()
                        .map_err(|m| ExportError::Definition {
                            path: path.clone(),
                            table: t.name.clone(),
                            message: m,
                        })?;
                    Some((table, extra))
                }
                None => None,
            };
            tables.push(ExportTable { manifest: t, def });
        }
        Ok(Export {
            dir: dir.to_path_buf(),
            tables,
        })
    }

    /// Gives the tables of a version 1 manifest (SQL text only) their definitions: `parse`
    /// turns a table's `CREATE TABLE` statement and its `CREATE INDEX` statements into them.
    pub fn resolve_sql(&mut self, parse: &DefinitionParser) -> Result<(), ExportError> {
        for t in self.tables.iter_mut().filter(|t| t.def.is_none()) {
            let def = parse(&t.manifest.create, &t.manifest.indexes).map_err(|message| {
                ExportError::Definition {
                    path: self.dir.join(MANIFEST),
                    table: t.manifest.name.clone(),
                    message,
                }
            })?;
            t.def = Some(def);
        }
        Ok(())
    }

    /// Verifies every file, reads everything and adds the tables to `catalog` all at once, on
    /// the current rayon pool; `taken` are names of views that tables may not take. Returns
    /// a one-line summary.
    pub fn import(
        self,
        catalog: &Catalog,
        taken: &[String],
        ctl: &LoadControl,
    ) -> Result<String, ExportError> {
        let started = Instant::now();
        let manifest_path = self.dir.join(MANIFEST);
        // every check before any work: names, definitions, files
        for t in &self.tables {
            let name = &t.manifest.name;
            if catalog.table(name).is_some() || taken.contains(name) {
                return Err(ExportError::TableExists {
                    table: name.clone(),
                });
            }
            match &t.def {
                Some((def, _)) if def.name != *name => {
                    return Err(ExportError::Definition {
                        path: manifest_path.clone(),
                        table: name.clone(),
                        message: format!("it creates \"{}\"", def.name),
                    });
                }
                Some(_) => {}
                None => {
                    return Err(ExportError::Definition {
                        path: manifest_path.clone(),
                        table: name.clone(),
                        message: "no definition (a version 1 manifest must be resolved)".into(),
                    });
                }
            }
        }
        let files: Vec<&ManifestFile> =
            self.tables.iter().flat_map(|t| &t.manifest.files).collect();
        files
            .par_iter()
            .try_for_each(|f| verify_file(&self.dir, f))?;
        let mut tables = Vec::with_capacity(self.tables.len());
        let (mut rows, mut bytes) = (0u64, 0u64);
        for t in self.tables {
            let (def, extra) = t.def.expect("checked above");
            let m = &t.manifest;
            let table = Arc::new(Table::new(def));
            let mut batches = Vec::new();
            let mut table_bytes = 0u64;
            for f in &m.files {
                if ctl.cancel.load(Relaxed) {
                    return Err(ExportError::Cancelled);
                }
                let path = self.dir.join(&f.file);
                let (_, b, report) = crate::ipc::read_arrow_file(&path)?;
                if report.rows != f.rows {
                    return Err(ExportError::Damaged {
                        path,
                        what: format!(
                            "it holds {} rows, the manifest says {}",
                            report.rows, f.rows
                        ),
                    });
                }
                table_bytes += f.bytes;
                batches.extend(b);
            }
            bytes += table_bytes;
            let source = format!("{} (table {})", self.dir.display(), m.name);
            let load = |error| ExportError::Load {
                table: m.name.clone(),
                error,
            };
            let report =
                wireload_publish::append_batches(&table, &source, table_bytes, batches, ctl)
                    .map_err(load)?;
            if report.rows != m.rows {
                return Err(ExportError::Damaged {
                    path: manifest_path.clone(),
                    what: format!(
                        "table \"{}\" has {} rows in its files, the manifest says {}",
                        m.name, report.rows, m.rows
                    ),
                });
            }
            for ix in extra {
                wireload_publish::create_index(&table, ix).map_err(load)?;
            }
            rows += report.rows;
            tables.push(table);
        }
        let count = tables.len();
        catalog.attach(tables).map_err(|e| match e {
            wireload_storage::StorageError::TableExists(table) => {
                ExportError::TableExists { table }
            }
            e => ExportError::Definition {
                path: manifest_path.clone(),
                table: String::new(),
                message: e.to_string(),
            },
        })?;
        Ok(format!(
            "IMPORT DATABASE: {count} tables, {rows} rows, {:.1} MB from {} in {:.3} s",
            bytes as f64 / 1e6,
            self.dir.display(),
            started.elapsed().as_secs_f64()
        ))
    }
}

/// Checks a file's size and checksum against the manifest.
fn verify_file(dir: &Path, f: &ManifestFile) -> Result<(), ExportError> {
    let path = dir.join(&f.file);
    let len = fs::metadata(&path).map_err(io("read", &path))?.len();
    if len != f.bytes {
        return Err(ExportError::Damaged {
            what: format!(
                "it is truncated or damaged: {len} bytes, the manifest says {}",
                f.bytes
            ),
            path,
        });
    }
    let (crc, _) = checksum(&path)?;
    if crc != f.crc32 {
        return Err(ExportError::Damaged {
            what: format!("its CRC-32 is {crc:08x}, the manifest says {:08x}", f.crc32),
            path,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_safe() {
        assert_eq!(file_stem(3, "Orders/../x y"), "003_Orders____x_y");
    }

    #[test]
    fn definitions_round_trip_through_the_manifest() {
        let columns = vec![
            ColumnDef {
                name: "id".into(),
                ty: SqlType::BigInt,
                nullable: false,
            },
            ColumnDef {
                name: "Odd \"name\"".into(),
                ty: SqlType::Decimal {
                    precision: 15,
                    scale: 2,
                },
                nullable: true,
            },
            ColumnDef {
                name: "s".into(),
                ty: SqlType::Varchar(Some(44)),
                nullable: true,
            },
        ];
        let def = TableDef::new(
            "t",
            TableSchema { columns },
            Partitioning::Hash {
                column: 0,
                count: 3,
            },
        )
        .unwrap()
        .with_indexes(vec![IndexDef {
            name: "t_pkey".into(),
            columns: vec![0],
            unique: true,
            primary: true,
            kind: IndexKind::Hash,
        }])
        .unwrap()
        .with_compression(vec![
            Compression::Plain,
            Compression::Dictionary,
            Compression::Auto,
        ])
        .unwrap();
        let text = serde_json::to_string(&Definition::of(&def)).unwrap();
        let back: Definition = serde_json::from_str(&text).unwrap();
        let again = back.table_def("t").unwrap();
        assert_eq!(again.schema, def.schema);
        assert_eq!(again.partitioning, def.partitioning);
        assert_eq!(again.indexes, def.indexes);
        assert_eq!(again.compression, def.compression);
        // a plain column says nothing (manifests of earlier versions read the same)
        assert_eq!(text.matches("compression").count(), 2, "{text}");
    }
}

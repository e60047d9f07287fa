//! `EXPORT DATABASE 'dir' [WITH (COMPRESSION lz4|zstd|none)]` and `IMPORT DATABASE 'dir'`.
//!
//! An export is a directory holding one Arrow IPC file per table partition, `schema.sql`
//! (the CREATE TABLE statements) and `manifest.json` (tables, definitions, files with their
//! row counts, sizes and CRC-32 checksums). It is written under a temporary name beside the
//! target, synced, and renamed into place, so a crash never leaves a half export under the
//! target name. An import verifies every file against the manifest and reads everything
//! before it adds any table: a damaged or truncated file is reported by name and the
//! database is unchanged.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use datafusion::sql::sqlparser::tokenizer::Token;
use rayon::prelude::*;
use serde_json::{Value, json};
use wireload_load::LoadControl;
use wireload_storage::{Catalog, Table};
use wireload_unload::ipc::IpcCompression;

use crate::SqlError;
use crate::ddl::{create_index_sql, create_table_sql, parse_create_index, parse_create_table};
use crate::tokens::{Cursor, StatementText, is_keyword, split_statements};

/// The manifest's format marker and version.
const MANIFEST_FORMAT: &str = "wireload-export";
const MANIFEST_VERSION: u64 = 1;
const MANIFEST: &str = "manifest.json";

/// A parsed EXPORT or IMPORT statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// `EXPORT DATABASE 'dir'`
    Export {
        /// target directory
        dir: String,
        /// buffer compression of the Arrow files
        compression: IpcCompression,
    },
    /// `IMPORT DATABASE 'dir'`
    Import {
        /// directory written by EXPORT DATABASE
        dir: String,
    },
}

/// Parses `EXPORT DATABASE ...` / `IMPORT DATABASE ...`; None for any other statement.
pub fn parse(stmt: &StatementText<'_>) -> Result<Option<Statement>, SqlError> {
    let t = &stmt.tokens;
    let export = is_keyword(&t[0].token, "export");
    if !(export || is_keyword(&t[0].token, "import"))
        || !t.get(1).is_some_and(|t| is_keyword(&t.token, "database"))
    {
        return Ok(None);
    }
    let mut c = Cursor::new(t);
    c.next_token();
    c.next_token();
    let dir = match c.next_token() {
        Some(Token::SingleQuotedString(s)) | Some(Token::EscapedStringLiteral(s)) => s.clone(),
        _ => return Err(c.unexpected_previous("a quoted directory path")),
    };
    if !export {
        if !c.at_end() {
            return Err(c.unexpected("the end of the IMPORT DATABASE statement"));
        }
        return Ok(Some(Statement::Import { dir }));
    }
    let mut compression = IpcCompression::Lz4Frame;
    c.eat_keyword("with");
    if c.eat(&Token::LParen) {
        loop {
            let name = c.expect_identifier("an EXPORT option")?;
            let value = match c.next_token() {
                Some(Token::Word(w)) => w.value.to_ascii_lowercase(),
                Some(Token::SingleQuotedString(s)) => s.to_ascii_lowercase(),
                _ => return Err(c.unexpected_previous("an option value")),
            };
            match (name.as_str(), value.as_str()) {
                ("format", "arrow") => {}
                ("format", other) => {
                    return Err(SqlError::Unsupported(format!(
                        "EXPORT DATABASE writes FORMAT arrow only, got {other}"
                    )));
                }
                ("compression", "lz4") => compression = IpcCompression::Lz4Frame,
                ("compression", "zstd") => compression = IpcCompression::Zstd,
                ("compression", "none") => compression = IpcCompression::None,
                ("compression", other) => {
                    return Err(SqlError::Unsupported(format!(
                        "EXPORT DATABASE COMPRESSION must be lz4, zstd or none, got {other}"
                    )));
                }
                (other, _) => {
                    return Err(SqlError::Unsupported(format!(
                        "unknown EXPORT DATABASE option {} (FORMAT, COMPRESSION)",
                        other.to_uppercase()
                    )));
                }
            }
            if c.eat(&Token::RParen) {
                break;
            }
            c.expect(&Token::Comma)?;
        }
    }
    if !c.at_end() {
        return Err(c.unexpected("the end of the EXPORT DATABASE statement"));
    }
    Ok(Some(Statement::Export { dir, compression }))
}

fn export_error(msg: String) -> SqlError {
    SqlError::Export(msg)
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> SqlError {
    export_error(format!("{what} {}: {e}", path.display()))
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
fn checksum(path: &Path) -> Result<(u32, u64), SqlError> {
    use std::io::Read;
    let mut file = File::open(path).map_err(|e| io_error(path, "cannot read", e))?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(path, "cannot read", e)),
        };
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok((hasher.finalize(), len))
}

/// Syncs a directory so that renames and new entries in it are durable.
fn sync_dir(dir: &Path) -> Result<(), SqlError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error(dir, "cannot sync", e))
}

/// Writes every table of `catalog` into directory `dir`; returns a one-line summary.
pub fn export_database(
    catalog: &Catalog,
    dir: &Path,
    compression: IpcCompression,
    ctl: &LoadControl,
) -> Result<String, SqlError> {
    let started = Instant::now();
    if let Ok(mut entries) = fs::read_dir(dir)
        && entries.next().is_some()
    {
        return Err(export_error(format!(
            "{} exists and is not empty; EXPORT DATABASE writes a new directory",
            dir.display()
        )));
    }
    if dir.exists() && !dir.is_dir() {
        return Err(export_error(format!(
            "{} exists and is not a directory",
            dir.display()
        )));
    }
    let name = dir
        .file_name()
        .ok_or_else(|| export_error(format!("{} names no directory", dir.display())))?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(|e| io_error(&parent, "cannot create", e))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = parent.join(format!(
        ".{}.export-{}-{nanos}",
        name.to_string_lossy(),
        std::process::id()
    ));
    fs::create_dir(&tmp).map_err(|e| io_error(&tmp, "cannot create", e))?;
    let result = write_export(catalog, &tmp, compression, ctl).and_then(|summary| {
        // an empty directory at the target is replaced
        if dir.is_dir() {
            fs::remove_dir(dir).map_err(|e| io_error(dir, "cannot replace", e))?;
        }
        fs::rename(&tmp, dir).map_err(|e| io_error(dir, "cannot rename the export to", e))?;
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
) -> Result<(usize, u64, u64), SqlError> {
    let names = catalog.table_names();
    let tables: Vec<Arc<Table>> = names.iter().filter_map(|n| catalog.table(n)).collect();
    let mut manifest_tables = Vec::new();
    let mut schema_sql = String::new();
    let (mut total_rows, mut total_bytes) = (0u64, 0u64);
    for (i, table) in tables.iter().enumerate() {
        let snapshot = table.snapshot();
        let create = create_table_sql(table.def());
        schema_sql.push_str(&create);
        schema_sql.push_str(";\n\n");
        // indexes made with CREATE INDEX (constraint indexes come with the table)
        let def = table.def();
        let extra: Vec<String> = snapshot
            .indexes
            .iter()
            .filter(|ix| !def.indexes.iter().any(|c| c.name == ix.def.name))
            .map(|ix| create_index_sql(def, &ix.def))
            .collect();
        for sql in &extra {
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
            let report = wireload_unload::ipc::write_arrow_file(
                &path,
                &snapshot.schema,
                &partition.chunks,
                compression,
                &ctl.cancel,
            )?;
            let crc = report.crc32.ok_or_else(|| {
                export_error(format!(
                    "{}: the writer reported no checksum",
                    path.display()
                ))
            })?;
            let bytes = report.bytes;
            total_rows += report.rows;
            total_bytes += bytes;
            files.push(json!({
                "file": file,
                "partition": p,
                "rows": report.rows,
                "bytes": bytes,
                "crc32": crc,
            }));
        }
        manifest_tables.push(json!({
            "name": table.name(),
            "create": create,
            "indexes": extra,
            "rows": snapshot.num_rows(),
            "files": files,
        }));
    }
    let schema_path = tmp.join("schema.sql");
    fs::write(&schema_path, &schema_sql).map_err(|e| io_error(&schema_path, "cannot write", e))?;
    let manifest = json!({
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "written_by": concat!("wireload ", env!("CARGO_PKG_VERSION")),
        "tables": manifest_tables,
    });
    let path = tmp.join(MANIFEST);
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| export_error(format!("cannot encode the manifest: {e}")))?;
    let mut f = File::create(&path).map_err(|e| io_error(&path, "cannot create", e))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| io_error(&path, "cannot write", e))?;
    File::open(&schema_path)
        .and_then(|f| f.sync_all())
        .map_err(|e| io_error(&schema_path, "cannot sync", e))?;
    sync_dir(tmp)?;
    Ok((tables.len(), total_rows, total_bytes))
}

/// One data file named by the manifest.
struct ManifestFile {
    file: String,
    rows: u64,
    bytes: u64,
    crc32: u32,
}

/// One table named by the manifest.
struct ManifestTable {
    name: String,
    create: String,
    /// CREATE INDEX statements (indexes other than the table's constraints)
    indexes: Vec<String>,
    rows: u64,
    files: Vec<ManifestFile>,
}

fn parse_manifest(dir: &Path) -> Result<Vec<ManifestTable>, SqlError> {
    let path = dir.join(MANIFEST);
    let text = fs::read_to_string(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound && dir.is_dir() {
            export_error(format!(
                "{} is not a wireload export: it has no {MANIFEST}",
                dir.display()
            ))
        } else {
            io_error(&path, "cannot read", e)
        }
    })?;
    let bad = |what: &str| {
        export_error(format!(
            "{} is damaged: {what}; nothing was imported",
            path.display()
        ))
    };
    let v: Value = serde_json::from_str(&text).map_err(|e| bad(&format!("invalid JSON ({e})")))?;
    if v["format"] != MANIFEST_FORMAT {
        return Err(bad("it is not a wireload export manifest"));
    }
    if v["version"].as_u64() != Some(MANIFEST_VERSION) {
        return Err(bad(&format!(
            "version {} is not supported (this wireload reads version {MANIFEST_VERSION})",
            v["version"]
        )));
    }
    let str_of = |v: &Value, k: &str| {
        v[k].as_str()
            .map(str::to_string)
            .ok_or_else(|| bad(&format!("\"{k}\" is missing or not a string")))
    };
    let u64_of = |v: &Value, k: &str| {
        v[k].as_u64()
            .ok_or_else(|| bad(&format!("\"{k}\" is missing or not a number")))
    };
    let tables = v["tables"]
        .as_array()
        .ok_or_else(|| bad("\"tables\" is missing"))?;
    tables
        .iter()
        .map(|t| {
            let files = t["files"]
                .as_array()
                .ok_or_else(|| bad("\"files\" is missing"))?
                .iter()
                .map(|f| {
                    let file = str_of(f, "file")?;
                    if file.contains(['/', '\\']) || file.starts_with('.') {
                        return Err(bad(&format!("file name {file:?} leaves the directory")));
                    }
                    Ok(ManifestFile {
                        file,
                        rows: u64_of(f, "rows")?,
                        bytes: u64_of(f, "bytes")?,
                        crc32: u32::try_from(u64_of(f, "crc32")?)
                            .map_err(|_| bad("a crc32 is out of range"))?,
                    })
                })
                .collect::<Result<_, _>>()?;
            Ok(ManifestTable {
                name: str_of(t, "name")?,
                create: str_of(t, "create")?,
                indexes: match &t["indexes"] {
                    Value::Null => Vec::new(),
                    Value::Array(a) => a
                        .iter()
                        .map(|v| {
                            v.as_str()
                                .map(str::to_string)
                                .ok_or_else(|| bad("an index is not a string"))
                        })
                        .collect::<Result<_, _>>()?,
                    _ => return Err(bad("\"indexes\" is not a list")),
                },
                rows: u64_of(t, "rows")?,
                files,
            })
        })
        .collect()
}

/// Reads the export in `dir` and adds its tables to `catalog` all at once; `taken` are
/// names of views that tables may not take. Returns a one-line summary.
pub fn import_database(
    catalog: &Catalog,
    dir: &Path,
    taken: &[String],
    ctl: &LoadControl,
) -> Result<String, SqlError> {
    let started = Instant::now();
    let manifest = parse_manifest(dir)?;
    // every check before any work: names, definitions, files
    let mut defs = Vec::with_capacity(manifest.len());
    for t in &manifest {
        if catalog.table(&t.name).is_some() || taken.contains(&t.name) {
            return Err(export_error(format!(
                "table \"{}\" already exists; IMPORT DATABASE adds tables and replaces none \
                 (drop it first); nothing was imported",
                t.name
            )));
        }
        let stmts = split_statements(&t.create)?;
        let def = match stmts.first() {
            Some(s) => parse_create_table(s)?.def,
            None => {
                return Err(export_error(format!(
                    "table \"{}\" has no definition",
                    t.name
                )));
            }
        };
        if def.name != t.name {
            return Err(export_error(format!(
                "{}: the definition of \"{}\" creates \"{}\"",
                dir.join(MANIFEST).display(),
                t.name,
                def.name
            )));
        }
        defs.push(def);
    }
    let files: Vec<(&ManifestTable, &ManifestFile)> = manifest
        .iter()
        .flat_map(|t| t.files.iter().map(move |f| (t, f)))
        .collect();
    files
        .par_iter()
        .try_for_each(|(_, f)| verify_file(dir, f))?;
    let mut tables = Vec::with_capacity(defs.len());
    let mut rows = 0u64;
    let mut bytes = 0u64;
    for (t, def) in manifest.iter().zip(defs) {
        let table = Arc::new(Table::new(def));
        let mut batches = Vec::new();
        let mut table_bytes = 0u64;
        for f in &t.files {
            let path = dir.join(&f.file);
            let (_, b, report) = wireload_unload::ipc::read_arrow_file(&path)?;
            if report.rows != f.rows {
                return Err(export_error(format!(
                    "{} holds {} rows, the manifest says {}; nothing was imported",
                    path.display(),
                    report.rows,
                    f.rows
                )));
            }
            table_bytes += f.bytes;
            batches.extend(b);
        }
        bytes += table_bytes;
        let name = format!("{} (table {})", dir.display(), t.name);
        let report = wireload_load::append_batches(&table, &name, table_bytes, batches, ctl)
            .map_err(|error| SqlError::Load {
                table: t.name.clone(),
                error,
            })?;
        if report.rows != t.rows {
            return Err(export_error(format!(
                "table \"{}\" has {} rows in its files, the manifest says {}; nothing was imported",
                t.name, report.rows, t.rows
            )));
        }
        for sql in &t.indexes {
            let stmts = split_statements(sql)?;
            let ci = match stmts.first() {
                Some(s) => parse_create_index(s)?,
                None => {
                    return Err(export_error(format!(
                        "table \"{}\": empty index definition",
                        t.name
                    )));
                }
            };
            let ix = ci.resolve(table.def())?;
            wireload_load::create_index(&table, ix).map_err(|error| SqlError::Load {
                table: t.name.clone(),
                error,
            })?;
        }
        rows += report.rows;
        tables.push(table);
    }
    let count = tables.len();
    catalog.attach(tables)?;
    Ok(format!(
        "IMPORT DATABASE: {count} tables, {rows} rows, {:.1} MB from {} in {:.3} s",
        bytes as f64 / 1e6,
        dir.display(),
        started.elapsed().as_secs_f64()
    ))
}

/// Checks a file's size and checksum against the manifest.
fn verify_file(dir: &Path, f: &ManifestFile) -> Result<(), SqlError> {
    let path = dir.join(&f.file);
    let len = fs::metadata(&path)
        .map_err(|e| io_error(&path, "cannot read", e))?
        .len();
    if len != f.bytes {
        return Err(export_error(format!(
            "{} is truncated or damaged: {len} bytes, the manifest says {}; nothing was imported",
            path.display(),
            f.bytes
        )));
    }
    let (crc, _) = checksum(&path)?;
    if crc != f.crc32 {
        return Err(export_error(format!(
            "{} is damaged: its CRC-32 is {crc:08x}, the manifest says {:08x}; nothing was imported",
            path.display(),
            f.crc32
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_sql(sql: &str) -> Result<Option<Statement>, SqlError> {
        parse(&split_statements(sql).unwrap()[0])
    }

    #[test]
    fn parses_export_and_import() {
        assert_eq!(
            parse_sql("EXPORT DATABASE '/x/y'").unwrap(),
            Some(Statement::Export {
                dir: "/x/y".into(),
                compression: IpcCompression::Lz4Frame
            })
        );
        assert_eq!(
            parse_sql("export database 'd' with (format arrow, compression zstd)").unwrap(),
            Some(Statement::Export {
                dir: "d".into(),
                compression: IpcCompression::Zstd
            })
        );
        assert_eq!(
            parse_sql("IMPORT DATABASE 'd'").unwrap(),
            Some(Statement::Import { dir: "d".into() })
        );
        assert_eq!(parse_sql("SELECT 1").unwrap(), None);
        assert_eq!(parse_sql("EXPORT foo").unwrap(), None);
        let err = |sql: &str| parse_sql(sql).unwrap_err().to_string();
        assert!(err("EXPORT DATABASE d").contains("quoted directory"));
        assert!(err("EXPORT DATABASE 'd' (COMPRESSION gzip)").contains("lz4, zstd or none"));
        assert!(err("EXPORT DATABASE 'd' (FORMAT parquet)").contains("arrow only"));
        assert!(err("IMPORT DATABASE 'd' extra").contains("end of the IMPORT"));
    }

    #[test]
    fn file_names_are_safe() {
        assert_eq!(file_stem(3, "Orders/../x y"), "003_Orders____x_y");
    }
}

//! `read_csv`: CSV files loaded by wireload's parallel loader into Arrow record batches that
//! Python takes over without a copy.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow::datatypes::Schema;
use pyo3::prelude::*;
use wireload_load::{Dialect, FieldSource, Fields, LoadControl, LoadOptions, OnError, Source};
use wireload_sniff::SniffOptions;
use wireload_storage::{Table, TableDef};
use wireload_types::{DateTimeFormat, Formats};

use crate::arrow::ArrowResult;
use crate::errors::{InternalError, ProgrammingError, load_error, sql_error};
use crate::run::{Progress, run_cancellable};

/// The name errors give the table `read_csv` loads.
const TABLE: &str = "read_csv";

/// Loads CSV files into Arrow record batches (see `wireload.read_csv`).
#[pyfunction]
#[pyo3(signature = (
    paths, schema=None, delimiter=None, quote=Some(String::from("\"")), escape=None,
    header=None, null=String::new(), threads=None, columns=None, on_error="stop",
    progress=false, memory_map=None, block_bytes=None, all_varchar=false,
    date_format=None, timestamp_format=None, filename=false
))]
#[allow(clippy::too_many_arguments)]
pub fn load_csv(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    schema: Option<String>,
    delimiter: Option<String>,
    quote: Option<String>,
    escape: Option<String>,
    header: Option<bool>,
    null: String,
    threads: Option<usize>,
    columns: Option<Vec<String>>,
    on_error: &str,
    progress: bool,
    memory_map: Option<bool>,
    block_bytes: Option<usize>,
    all_varchar: bool,
    date_format: Option<String>,
    timestamp_format: Option<String>,
    filename: bool,
) -> PyResult<ArrowResult> {
    let on_error = on_error
        .parse::<OnError>()
        .map_err(ProgrammingError::new_err)?;
    if paths.is_empty() {
        return Err(ProgrammingError::new_err(
            "read_csv needs at least one path",
        ));
    }
    if threads == Some(0) {
        return Err(ProgrammingError::new_err("threads must be at least 1"));
    }
    let quote = quote.map(|q| one_byte("quote", &q)).transpose()?;
    let delimiter = delimiter.map(|d| one_byte("delimiter", &d)).transpose()?;
    let dialect = Dialect {
        delimiter: delimiter.unwrap_or(b','),
        quote,
        // RFC 4180: a quote inside a quoted field is doubled
        escape: match escape {
            Some(e) => Some(one_byte("escape", &e)?),
            None => quote,
        },
        header: header.unwrap_or(true),
        null: null.into_bytes(),
    };
    dialect
        .validate()
        .map_err(|e| ProgrammingError::new_err(e.0))?;
    let format = |f: Option<String>| {
        f.map(|f| f.parse::<DateTimeFormat>())
            .transpose()
            .map_err(|e| ProgrammingError::new_err(e.to_string()))
    };
    let formats = Formats {
        date: format(date_format)?,
        timestamp: format(timestamp_format)?,
    };
    let options = LoadOptions {
        dialect,
        // None: rayon's global pool, one thread per core
        threads,
        on_error,
        formats,
        ..LoadOptions::default()
    };
    // the inputs' size (unknown sizes count as large: the load reports what is wrong)
    let total = paths
        .iter()
        .map(|p| std::fs::metadata(p).map_or(u64::MAX, |m| m.len()))
        .fold(0u64, u64::saturating_add);
    let bar = progress.then(|| Progress::new(Some(total)));
    // files are mapped by default: the load hands back the pages of each parsed chunk, so
    // mapping costs no more memory than blocks, and nothing is copied
    let sources = paths
        .iter()
        .map(|p| source(py, p, memory_map.unwrap_or(true), block_bytes))
        .collect::<PyResult<Vec<_>>>()?;
    if all_varchar && schema.is_some() {
        return Err(ProgrammingError::new_err(
            "all_varchar names the columns after the header: give it or a schema, not both",
        ));
    }
    // all_varchar: text columns named after the first file's header (no inference)
    let schema = match (schema, all_varchar) {
        (None, true) => match paths.iter().find(|p| has_record(p)) {
            Some(first) => Some(text_columns(py, first, &options.dialect)?),
            None => return Ok(ArrowResult::new(Arc::new(Schema::empty()), Vec::new())),
        },
        (Some(text), _) => {
            Some(wireload_sql::parse_table(TABLE, &text).map_err(|e| sql_error(py, &e))?)
        }
        (None, false) => None,
    };
    let (table, rejected, first) = match schema {
        Some(def) => {
            let (def, fields) = if filename {
                with_filename(def)?
            } else {
                (def, None)
            };
            let table = Arc::new(Table::new(def));
            let options = LoadOptions { fields, ..options };
            let (target, opts, ctl) = (table.clone(), options, LoadControl::default());
            let c = ctl.clone();
            let report = run_cancellable(py, &ctl, bar.as_ref(), move || {
                wireload_load::load_files(&target, &sources, &opts, &c)
            });
            if let Some(b) = &bar {
                b.finish();
            }
            let report = report?.map_err(|e| load_error(py, e, TABLE))?;
            (table, report.rejected, report.rejects.into_iter().next())
        }
        None => {
            // files of nothing but line breaks are no table at all (no columns, no rows), as
            // in pyarrow and DuckDB
            let sources: Vec<Source> = sources
                .into_iter()
                .zip(&paths)
                .filter(|(_, p)| has_record(p))
                .map(|(s, _)| s)
                .collect();
            if sources.is_empty() {
                if let Some(b) = &bar {
                    b.finish();
                }
                return Ok(ArrowResult::new(Arc::new(Schema::empty()), Vec::new()));
            }
            let spec = wireload_sql::ReadSpec {
                detect: SniffOptions {
                    delimiter,
                    quote: Some(quote),
                    escape: Some(options.dialect.escape),
                    header,
                    null: Some(options.dialect.null.clone()),
                    formats,
                    ..SniffOptions::default()
                },
                options,
                schema: None,
                // only the columns asked for are deserialized
                project: columns
                    .as_ref()
                    .map(|names| names.iter().map(|n| n.to_lowercase()).collect()),
                filename,
            };
            let ctl = LoadControl::default();
            let c = ctl.clone();
            let loaded = run_cancellable(py, &ctl, bar.as_ref(), move || {
                wireload_sql::load_inferred(TABLE, &sources, &spec, &c)
            });
            if let Some(b) = &bar {
                b.finish();
            }
            let loaded = loaded?.map_err(|e| sql_error(py, &e))?;
            for note in &loaded.replanned {
                warn(py, note)?;
            }
            (
                loaded.table,
                loaded.report.rejected,
                loaded.report.rejects.into_iter().next(),
            )
        }
    };
    if rejected > 0 {
        let first = first.map_or(String::new(), |r| format!("; the first: {r}"));
        warn(py, &format!("{rejected} rows were rejected{first}"))?;
    }
    let keep = match &columns {
        Some(names) => Some(projection(table.def(), names)?),
        None => None,
    };
    let snapshot = table.snapshot();
    let batches = snapshot
        .live_chunks()
        .map_err(|e| InternalError::new_err(e.to_string()))?;
    let schema = snapshot.scan_schema();
    Ok(match keep {
        None => ArrowResult::new(schema, batches),
        Some(indices) => {
            let schema = Arc::new(
                schema
                    .project(&indices)
                    .map_err(|e| InternalError::new_err(e.to_string()))?,
            );
            let batches = batches
                .iter()
                .map(|b| b.project(&indices))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| InternalError::new_err(e.to_string()))?;
            ArrowResult::new(schema, batches)
        }
    })
}

/// Issues a Python `UserWarning` with `message`.
fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    let text = std::ffi::CString::new(message.replace('\0', " "))
        .map_err(|e| InternalError::new_err(e.to_string()))?;
    PyErr::warn(py, &category, &text, 1)
}

/// The file at `path`, memory-mapped (the default: the load hands back the pages of the
/// chunks it has parsed) or streamed in blocks of `block_bytes` (default
/// [`wireload_load::BLOCK_BYTES`]).
fn source(
    py: Python<'_>,
    path: &Path,
    memory_map: bool,
    block_bytes: Option<usize>,
) -> PyResult<Source> {
    if memory_map || compressed(path) {
        // a compressed file is streamed through its decoder (its progress counts the
        // compressed bytes)
        return Ok(Source::File(path.to_path_buf()));
    }
    let file = std::fs::File::open(path).map_err(|e| {
        let error = wireload_load::LoadError::Io {
            path: path.display().to_string(),
            source: e,
        };
        load_error(py, error, TABLE)
    })?;
    let size = file.metadata().ok().map(|m| m.len());
    Ok(Source::Reader {
        name: path.display().to_string(),
        reader: Arc::new(Mutex::new(Some(Box::new(file)))),
        size,
        block: block_bytes
            .unwrap_or(wireload_load::BLOCK_BYTES)
            .max(1 << 16),
    })
}

/// True when the file starts with the gzip or zstd magic bytes.
fn compressed(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head.starts_with(&[0x1f, 0x8b]) || head == [0x28, 0xb5, 0x2f, 0xfd])
}

/// False when the file holds nothing but a BOM and line breaks (true when it cannot be
/// read: the load reports why).
fn has_record(path: &Path) -> bool {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(path) else {
        return true;
    };
    let mut reader = std::io::BufReader::new(file);
    let mut buf = [0u8; 8192];
    let mut first = true;
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => {
                let mut bytes = &buf[..n];
                if first {
                    bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
                    first = false;
                }
                if bytes.iter().any(|&b| b != b'\n' && b != b'\r') {
                    return true;
                }
            }
            Err(_) => return true,
        }
    }
}

/// `value` as the single byte of a dialect character.
fn one_byte(what: &str, value: &str) -> PyResult<u8> {
    match value.as_bytes() {
        [b] if b.is_ascii() => Ok(*b),
        _ => Err(ProgrammingError::new_err(format!(
            "{what} must be one ASCII character, got {value:?}"
        ))),
    }
}

/// A definition of TEXT columns named after the header of `path` (column1..N without one).
fn text_columns(py: Python<'_>, path: &Path, dialect: &Dialect) -> PyResult<TableDef> {
    let names = wireload_load::header_names(&Source::File(path.to_path_buf()), dialect)
        .map_err(|e| load_error(py, e, TABLE))?;
    // an empty name (R's row-name column) is named after its position, a repeated one
    // gets a suffix
    let columns = wireload_load::unique_column_names(&names)
        .into_iter()
        .map(|name| wireload_types::ColumnDef {
            name,
            ty: wireload_types::SqlType::Text,
            nullable: true,
        })
        .collect();
    TableDef::new(
        TABLE,
        wireload_types::TableSchema { columns },
        wireload_storage::Partitioning::Single,
    )
    .map_err(|e| ProgrammingError::new_err(e.to_string()))
}

/// `def` with a last column `filename` (the file each row comes from), and the fields the
/// load fills its columns from.
fn with_filename(def: TableDef) -> PyResult<(TableDef, Option<Fields>)> {
    let mut columns = def.schema.columns.clone();
    let added = wireload_sql::filename_column();
    if columns
        .iter()
        .any(|c| c.name.eq_ignore_ascii_case(&added.name))
    {
        return Err(ProgrammingError::new_err(format!(
            "filename=True adds a column \"{}\", and the table has one",
            added.name
        )));
    }
    let count = columns.len();
    let mut sources: Vec<FieldSource> = (0..count).map(FieldSource::Input).collect();
    columns.push(added);
    sources.push(FieldSource::FileName);
    let mut compression = def.compression.clone();
    compression.push(wireload_storage::Compression::Plain);
    let def = TableDef::new(
        def.name.clone(),
        wireload_types::TableSchema { columns },
        def.partitioning,
    )
    .and_then(|d| d.with_compression(compression))
    .and_then(|d| d.with_indexes(def.indexes.clone()))
    .map_err(|e| ProgrammingError::new_err(e.to_string()))?;
    Ok((
        def,
        Some(Fields {
            count,
            columns: sources,
        }),
    ))
}

/// The positions of `names` among the columns of `def`, in the order given.
fn projection(def: &TableDef, names: &[String]) -> PyResult<Vec<usize>> {
    let schema: &Schema = &def.arrow_schema;
    names
        .iter()
        .map(|name| {
            schema
                .fields()
                .iter()
                .position(|f| f.name() == name)
                .or_else(|| {
                    schema
                        .fields()
                        .iter()
                        .position(|f| f.name().eq_ignore_ascii_case(name))
                })
                .ok_or_else(|| {
                    ProgrammingError::new_err(format!(
                        "columns: no column {name:?}; the columns are {}",
                        schema
                            .fields()
                            .iter()
                            .map(|f| f.name().as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
        })
        .collect()
}

//! The Instant Loading pipeline: a CSV source is cut into chunks, rayon tasks scan and
//! deserialize each chunk into partition buffers (Arrow arrays), the buffers are merged
//! into a new table version, and that version is published in one atomic step.
//!
//! A load that fails (bad value, I/O error, cancel) publishes nothing: the table stays as it was.
#![deny(missing_docs)]

mod append;
mod error;
mod hints;
mod indexing;
mod merge;
mod options;
mod partition;
mod pipeline;
mod source;
mod task;

pub use append::{append_batches, append_validated_batches};
pub use error::{KeySite, LoadError, Position};
pub use options::{LoadControl, LoadOptions, LoadReport, MergeStrategy};
pub use pipeline::{data_start, default_chunk_size};
pub use source::{Input, Source};
pub use wireload_csv::{Dialect, ScanMode};

use wireload_csv::ScanConfig;
use wireload_storage::Table;

/// Loads `source` into `table` (appending to its rows) and publishes the new version.
/// Runs on the current rayon pool, or on a pool of `opts.threads` threads when set.
pub fn load_into(
    table: &Table,
    source: &Source,
    opts: &LoadOptions,
    ctl: &LoadControl,
) -> Result<LoadReport, LoadError> {
    match opts.threads {
        Some(n) if n != rayon::current_num_threads() => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n.max(1))
                .build()
                .map_err(|e| LoadError::Options(format!("cannot start {n} threads: {e}")))?;
            pool.install(|| pipeline::load(table, source, opts, ctl))
        }
        _ => pipeline::load(table, source, opts, ctl),
    }
}

/// Builds the index `index` over the rows `table` holds now, in parallel, and publishes the
/// version that has it. Returns the number of keys. Fails (publishing nothing) when the index
/// is unique and two rows have equal keys or a key is NULL.
pub fn create_index(table: &Table, index: wireload_storage::IndexDef) -> Result<usize, LoadError> {
    indexing::create_index(table, index)
}

/// The column names in the header record of `source` (the first record, parsed with `dialect`).
/// Without a header, `column1..columnN` after the first record's field count.
pub fn header_names(source: &Source, dialect: &Dialect) -> Result<Vec<String>, LoadError> {
    let scan = ScanConfig::new(dialect, ScanMode::Safe).map_err(|e| LoadError::Options(e.0))?;
    let input = source.open()?;
    let data = input.bytes();
    let file = source.name();
    let start = wireload_csv::skip_bom(data);
    let first = wireload_csv::reference::first_record(&scan, data, start).map_err(|e| {
        LoadError::Syntax {
            pos: Box::new(Position {
                file: file.clone(),
                line: wireload_csv::line_of(data, e.at),
                column: e.field,
                column_name: None,
                byte: e.at as u64,
            }),
            message: format!("in the first record: {}", e.kind),
            text: String::new(),
            expected: e.expected(),
        }
    })?;
    let Some((fields, _)) = first else {
        return Err(LoadError::Syntax {
            pos: Box::new(Position {
                file,
                line: 1,
                column: 1,
                column_name: None,
                byte: start as u64,
            }),
            message: "the input is empty, so there are no column names".into(),
            text: String::new(),
            expected: "at least one record".into(),
        });
    };
    if dialect.header {
        fields
            .into_iter()
            .enumerate()
            .map(|(i, f)| {
                String::from_utf8(f).map_err(|_| LoadError::Syntax {
                    pos: Box::new(Position {
                        file: file.clone(),
                        line: 1,
                        column: i + 1,
                        column_name: None,
                        byte: start as u64,
                    }),
                    message: "header field is not valid UTF-8".into(),
                    text: String::new(),
                    expected: "UTF-8 column names".into(),
                })
            })
            .collect()
    } else {
        Ok((1..=fields.len()).map(|i| format!("column{i}")).collect())
    }
}

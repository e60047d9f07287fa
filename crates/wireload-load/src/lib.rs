//! The load stages of wireload (Instant Loading): a source (a mapped file, bytes, or any
//! reader streamed in blocks) is cut into windows of whole records; the CSV parse stage cuts a
//! window into chunks that rayon tasks scan and deserialize into partition buffers (Arrow
//! arrays) with their buffer indexes: the units it hands to the write path
//! (`wireload_publish`), whose append/publish stage places the buffers, merges the indexes
//! and publishes the new table version in one atomic step. [`pool`] decides the threads
//! every load runs on.
//!
//! With [`LoadOptions::fields`] a table takes some of the input's fields, in any order
//! (projection pushdown): records are split into all their fields, but only the fields a
//! column reads are deserialized; errors name the input column and the table column.
//!
//! A load that fails (bad value, I/O error, cancel) publishes nothing: the table stays as it was.
//! With [`OnError::Ignore`] bad records are skipped instead and listed in the report
//! ([`LoadReport::rejects`]); a chunk that meets one is parsed again on a careful path, so
//! loads without bad records run the fast path unchanged (see `reject` for where a broken
//! record ends).
//!
//! An input in another [`Encoding`] than UTF-8 is transcoded to UTF-8 as it is read (after
//! decompression) and streamed, so the parse stays UTF-8-only. [`LoadOptions`] also bound
//! a load: `max_line_bytes` (the longest record, [`LoadError::LineTooLong`]) and
//! `memory_budget` (the bytes its buffers may hold, [`LoadError::MemoryBudget`]; see
//! [`default_memory_budget`]).
#![deny(missing_docs)]

mod compressed;
mod encoding;
mod files;
mod hints;
mod limits;
mod options;
mod parallel_decode;
mod parse;
mod pipeline;
mod reject;
mod source;
mod task;

pub use encoding::Encoding;

/// Test support for the fuzz targets (the `testing` feature).
#[cfg(feature = "testing")]
pub mod testing {
    pub use crate::parallel_decode::oracle::check as parallel_decode_matches;
}
pub use limits::{default_memory_budget, total_memory};
pub use options::{FieldSource, Fields, LoadOptions, OnError, RowFilter};
pub use parse::default_chunk_size;
pub use pipeline::data_start;
pub use source::{BLOCK_BYTES, Block, Blocks, Feed, Filler, Input, Recycler, Source, Whole};
pub use wireload_csv::{Dialect, ScanMode};
pub use wireload_types::unique_column_names;

// the write path's vocabulary, which a load's signatures and reports use
pub use wireload_publish::{
    BadValue, KeySite, LoadControl, LoadError, LoadReport, MAX_REJECTS, MergeStrategy, Position,
    RAW_LINE_CHARS, Reject, Schedule,
};

// the threads a load runs on
pub use wireload_publish::{
    apply_load_nice, install, pool, pool_cpu_seconds, set_load_nice, thread_cpu_seconds,
};

use arrow::record_batch::RecordBatch;
use wireload_csv::ScanConfig;
use wireload_publish::{Appender, Sink, Sites, Text};
use wireload_storage::Table;

/// Loads `source` into `table` (appending to its rows) and publishes the new version.
/// Parses on the current rayon pool, or on [`pool`]`(n)` when `opts.threads` is `Some(n)`;
/// a streamed input is read on the calling thread, so a slow stream keeps no pool thread
/// waiting.
pub fn load_into(
    table: &Table,
    source: &Source,
    opts: &LoadOptions,
    ctl: &LoadControl,
) -> Result<LoadReport, LoadError> {
    pipeline::load(table, source, opts, ctl)
}

/// Loads every source of `sources` into `table` as one load: each source with its own BOM
/// and header (skipped when `opts.dialect.header`), named by its own name and lines in
/// errors; the rows of all of them, in source order then input order, published in one step
/// at the end (a failure in any source publishes nothing). Sources parse concurrently on
/// the load's threads. Progress: `ctl.bytes_total` is the sum of the sources' sizes (a
/// compressed file's compressed size).
pub fn load_files(
    table: &Table,
    sources: &[Source],
    opts: &LoadOptions,
    ctl: &LoadControl,
) -> Result<LoadReport, LoadError> {
    files::load_files(table, sources, opts, ctl)
}

/// The files a path names: a path with glob characters (`*`, `?`, `[`) names the regular
/// files it matches, sorted by path (an error when none does); any other path names itself,
/// whether or not it exists (opening it reports a missing file).
pub fn expand_paths(pattern: &str) -> Result<Vec<std::path::PathBuf>, LoadError> {
    files::expand_paths(pattern)
}

/// Parses the CSV records of `source` as rows of `def` (BOM and header skipped as a load
/// skips them) without loading them: the buffers of each chunk go to `sink`, numbered in
/// input order, window after window (`sink.ready()` is asked before each), on
/// `opts.threads` threads. The input is read as a stream (blocks of `Source`'s block size
/// become the windows). Returns (bytes read, chunks). Errors name positions as a load's do.
/// `opts.on_error` and `opts.reject_limit` apply; the rejected records are not reported.
pub fn parse_source(
    def: &wireload_storage::TableDef,
    source: &Source,
    opts: &LoadOptions,
    ctl: &LoadControl,
    sink: &dyn Sink,
) -> Result<(u64, usize), LoadError> {
    let scan = ScanConfig::new(&opts.dialect, opts.mode).map_err(|e| LoadError::Options(e.0))?;
    let file = source.name();
    let (input, parse_ctl) = pipeline::open(source, ctl, opts)?;
    match input {
        Input::Stream(blocks) => {
            pipeline::store_stream_total(&blocks, ctl);
            pipeline::stream_windows(def, blocks, &scan, opts, &parse_ctl, &file, sink)
                .map(|(bytes, units, _)| (bytes, units))
        }
        Input::Whole(whole) => {
            let data = whole.bytes();
            ctl.bytes_total
                .store(data.len() as u64, std::sync::atomic::Ordering::Relaxed);
            let start = data_start(data, &scan, opts.dialect.header, &file)?;
            pipeline::check_whole(data, opts, &file)?;
            ctl.bytes_done
                .fetch_add(start as u64, std::sync::atomic::Ordering::Relaxed);
            let sample = &data[start..(start + (1 << 20)).min(data.len())];
            let parse = parse::CsvParse::new(def, opts, file.clone(), sample)?;
            let records = parse::Records {
                data,
                start,
                chunks: parse.chunker().chunks(data, start),
                lines: None,
                origin: parse::Origin {
                    byte: 0,
                    lines: 0,
                    whole: true,
                },
                release: Some(&whole),
            };
            sink.ready()?;
            let units = install(opts.threads, || parse.parse_window(records, 0, sink, ctl))??;
            Ok((data.len() as u64, units))
        }
    }
}

/// Parses the CSV records of `data` (whole records of a larger input, without header or
/// BOM, starting `byte` bytes and `lines` line ends into it) on the current rayon pool and
/// hands them to `appender` as units `first_unit..`; returns how many. Errors name
/// positions in the whole input. For loaders that parse most of an input themselves (the
/// GPU loader) and leave some ranges to the CPU.
pub fn parse_records(
    appender: &Appender<'_>,
    dialect: &Dialect,
    data: &[u8],
    byte: u64,
    lines: u64,
    first_unit: usize,
    ctl: &LoadControl,
) -> Result<usize, LoadError> {
    let file = appender.file().to_string();
    parse_range(
        appender,
        appender,
        dialect,
        &file,
        data,
        (byte, lines),
        first_unit,
        None,
        ctl,
    )
}

/// Parses the CSV records of `text` (whole records of input `file`, as a Shared Loading
/// client took them with [`Sink::take_text`]) on the current thread into unit `unit` of
/// `appender`; returns the rows. Errors name positions in `file`. `text` must not be empty.
pub fn parse_text(
    appender: &Appender<'_>,
    dialect: &Dialect,
    file: &str,
    text: Text<'_>,
    unit: usize,
    ctl: &LoadControl,
) -> Result<u64, LoadError> {
    if text.data.is_empty() {
        return Err(LoadError::Internal("an empty text makes no unit".into()));
    }
    let counted = Counted {
        inner: appender,
        rows: std::sync::atomic::AtomicU64::new(0),
    };
    let at = (text.byte, text.lines);
    // one chunk, one unit
    let chunk = Some(text.data.len());
    parse_range(
        appender, &counted, dialect, file, text.data, at, unit, chunk, ctl,
    )?;
    Ok(counted.rows.into_inner())
}

/// A sink that counts the rows it hands on.
struct Counted<'a> {
    inner: &'a dyn Sink,
    rows: std::sync::atomic::AtomicU64,
}

impl Sink for Counted<'_> {
    fn wants_sites(&self) -> bool {
        self.inner.wants_sites()
    }

    fn failed(&self) -> bool {
        self.inner.failed()
    }

    fn take(
        &self,
        n: usize,
        buffers: Vec<Option<RecordBatch>>,
        sites: Sites,
        input: Option<&[u8]>,
    ) -> Result<(), LoadError> {
        let rows: usize = buffers.iter().flatten().map(|b| b.num_rows()).sum();
        self.inner.take(n, buffers, sites, input)?;
        self.rows
            .fetch_add(rows as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

/// Parses `data` (whole records, `at` = (bytes, line ends) before them in input `file`)
/// for `appender`'s table into `sink` as units `first_unit..`, in chunks of `chunk` bytes
/// (the default size when None); returns how many.
#[allow(clippy::too_many_arguments)]
fn parse_range(
    appender: &Appender<'_>,
    sink: &dyn Sink,
    dialect: &Dialect,
    file: &str,
    data: &[u8],
    at: (u64, u64),
    first_unit: usize,
    chunk: Option<usize>,
    ctl: &LoadControl,
) -> Result<usize, LoadError> {
    let opts = LoadOptions {
        dialect: Dialect {
            header: false,
            ..dialect.clone()
        },
        chunk_size: chunk,
        ..LoadOptions::default()
    };
    let sample = &data[..data.len().min(1 << 20)];
    let parse = parse::CsvParse::new(appender.def(), &opts, file.to_string(), sample)?;
    let origin = parse::Origin {
        byte: at.0,
        lines: at.1,
        whole: false,
    };
    let window = parse::Records {
        data,
        start: 0,
        chunks: parse.chunker().chunks(data, 0),
        lines: None,
        origin,
        release: None,
    };
    parse.parse_window(window, first_unit, sink, ctl)
}

/// The start of a stream up to the end of its first record: a stream (a compressed file)
/// is read no further than needed.
fn first_record_bytes(mut blocks: Blocks, scan: &ScanConfig) -> Result<Vec<u8>, LoadError> {
    let mut data = Vec::new();
    while let Some(block) = blocks.next_block()? {
        data.extend_from_slice(block.bytes());
        blocks.recycle(block);
        // a record read whole: it ends with its delimiter (a `\r` not last: `\r\n` whole)
        let start = wireload_csv::skip_bom(&data);
        let whole = |next: usize| {
            next > start
                && matches!(data[next - 1], b'\n' | b'\r')
                && (data[next - 1] != b'\r' || next < data.len())
        };
        if let Ok(Some((_, next))) = wireload_csv::reference::first_record(scan, &data, start)
            && whole(next)
        {
            break;
        }
    }
    Ok(data)
}

/// The column names in the header record of `source` (the first record, parsed with `dialect`).
/// Without a header, `column1..columnN` after the first record's field count.
pub fn header_names(source: &Source, dialect: &Dialect) -> Result<Vec<String>, LoadError> {
    header_names_in(source, dialect, Encoding::Utf8)
}

/// [`header_names`] of a source in `encoding` (transcoded to UTF-8 as a load reads it).
pub fn header_names_in(
    source: &Source,
    dialect: &Dialect,
    encoding: Encoding,
) -> Result<Vec<String>, LoadError> {
    let scan = ScanConfig::new(dialect, ScanMode::Safe).map_err(|e| LoadError::Options(e.0))?;
    let input = source.open_encoded(encoding, &std::sync::Arc::default())?;
    let read;
    let data: &[u8] = match input {
        Input::Whole(ref whole) => whole.bytes(),
        Input::Stream(blocks) => {
            read = first_record_bytes(blocks, &scan)?;
            &read
        }
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_names_are_made_unique() {
        let names: Vec<String> = ["a", "", "a", "a", "b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            unique_column_names(&names),
            ["a", "column2", "a_2", "a_3", "b"]
        );
    }
}

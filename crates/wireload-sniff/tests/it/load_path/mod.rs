//! The whole CSV load path as a user hits it (`SELECT * FROM 'f.csv'`): sniff the bytes,
//! create a table from the sniffed columns, load the bytes into it with the sniffed
//! dialect, re-plan a column wider when a value does not fit; with the oracles the
//! `load` fuzz target and the regression tests check. Shared by
//! `fuzz/fuzz_targets/load.rs` and `tests/regressions.rs` (one copy of the rules).
//!
//! Oracles (each a panic when broken):
//! - nothing panics or hangs, whatever the bytes;
//! - safe mode: the bytes streamed in small blocks load as the whole input does (the same
//!   rows, rejects and error, lines and bytes included);
//! - a Stop load that succeeds loads as many rows as the `csv` crate reads records, where
//!   the `csv` crate reads every record with the sniffed column count (see [`csv_records`]
//!   for where the two dialects differ and are not compared);
//! - an Ignore load: loaded rows + rejected = records seen (the records of the toggle
//!   model of quoting, [`toggle_records`], which decides where a broken record ends);
//!   when the Stop load succeeded, Ignore loads the same rows and rejects none;
//! - when every byte was sampled, the sniffed types load every record (a Stop load fails
//!   with no `LoadError::Value`);
//! - a Stop load failing with a `LoadError::Value` in a column that is not TEXT: `widen`
//!   gives a wider type, and the load with that column re-planned gets past that field
//!   (TEXT rejects only invalid UTF-8 outside the sample: no re-plan, no check).
#![allow(dead_code)]

use std::sync::Arc;

use wireload_load::{LoadControl, LoadError, LoadOptions, LoadReport, OnError, ScanMode, Source};
use wireload_sniff::{DEFAULT_SAMPLE_BYTES, SniffOptions, Sniffed, sniff, widen};
use wireload_storage::{Partitioning, Table, TableDef};
use wireload_types::{ColumnDef, SqlType, TableSchema, ValueError};

/// How one run of the path is set up (the fuzz target takes it from the input's first bytes).
#[derive(Debug, Clone)]
pub struct Config {
    /// Load threads, 1 to 3.
    pub threads: usize,
    /// Chunk size in bytes (tiny: many chunks, orphans and widows).
    pub chunk_size: usize,
    /// Chunk boundaries by quote context (safe) or assumed outside quotes (fast).
    pub mode: ScanMode,
    /// Sniff a sample of this many bytes (None: the default, all of a small input).
    pub sample_bytes: Option<usize>,
    /// Sniff the bytes as the start of a stream.
    pub truncated: bool,
}

impl Config {
    /// The config encoded in `head` (3 bytes), as the fuzz target reads it.
    pub fn from_bytes(head: [u8; 3]) -> Config {
        Config {
            threads: 1 + (head[0] & 0x7f) as usize % 3,
            mode: if head[0] & 0x80 != 0 {
                ScanMode::Fast
            } else {
                ScanMode::Safe
            },
            chunk_size: 1 + head[1] as usize,
            sample_bytes: (head[2] & 1 != 0).then_some(16 + 4 * (head[2] >> 2) as usize),
            truncated: head[2] & 2 != 0,
        }
    }
}

/// Re-plans tried at most (as the SQL layer's `MAX_REPLANS` bounds them).
const MAX_REPLANS: usize = 16;

/// Runs the path on `data` with `cfg` and checks every oracle. Returns the Stop load's
/// rows when it succeeded (for tests that want exact values).
pub fn check(data: &[u8], cfg: &Config) -> Option<u64> {
    let opts = SniffOptions {
        sample_bytes: cfg.sample_bytes,
        truncated: cfg.truncated,
        ..SniffOptions::default()
    };
    // an error is a fine answer; a panic is not
    let Ok(sniffed) = sniff(data, &opts) else {
        return None;
    };
    let src = Source::Bytes {
        name: "fuzz.csv".into(),
        data: Arc::from(data),
    };
    let stop = load(&sniffed, &sniffed.columns, &src, cfg, OnError::Stop);
    let ignore = load(&sniffed, &sniffed.columns, &src, cfg, OnError::Ignore);
    if cfg.mode == ScanMode::Safe {
        // the same bytes streamed in small blocks: windows cut at record ends, quote states
        // and line counts carried from window to window
        let block = 1 + cfg.chunk_size * 3 / 2;
        for (on_error, whole) in [(OnError::Stop, &stop), (OnError::Ignore, &ignore)] {
            let stream =
                Source::reader_in_blocks("fuzz.csv", std::io::Cursor::new(data.to_vec()), block);
            let streamed = load(&sniffed, &sniffed.columns, &stream, cfg, on_error);
            assert_eq!(
                outcome(&streamed),
                outcome(whole),
                "{on_error:?}: a stream in blocks of {block} bytes loads otherwise than the \
                 whole input"
            );
        }
    }
    let whole_sample =
        !cfg.truncated && data.len() <= cfg.sample_bytes.unwrap_or(DEFAULT_SAMPLE_BYTES);
    let ncols = sniffed.columns.len();

    match &stop {
        Ok(report) => {
            assert_eq!(report.rejected, 0, "a Stop load rejected records");
            if let Some(n) = csv_records(data, &sniffed, ncols) {
                assert_eq!(
                    report.rows, n,
                    "Stop loaded {} rows, the csv crate reads {n} records",
                    report.rows
                );
            }
            let ignore = ignore.as_ref().expect("Ignore fails where Stop succeeds");
            assert_eq!(ignore.rejected, 0, "Ignore rejects what Stop loads");
            assert_eq!(
                ignore.rows, report.rows,
                "Ignore and Stop load different rows"
            );
        }
        Err(LoadError::Value { pos, text, .. }) => {
            assert!(
                !whole_sample,
                "every byte was sampled, yet the sniffed type of column {} does not load \
                 {text:?} ({pos}); sniffed {:?}",
                pos.column, sniffed.columns
            );
            replan(&sniffed, &src, cfg, stop.as_ref().unwrap_err());
        }
        Err(_) => {}
    }
    if let Ok(ignore) = &ignore
        && cfg.mode == ScanMode::Safe
    {
        let seen = toggle_records(data, &sniffed);
        assert_eq!(
            ignore.rows + ignore.rejected,
            seen,
            "Ignore loaded {} rows and rejected {}, but the input has {seen} records",
            ignore.rows,
            ignore.rejected
        );
    }
    stop.ok().map(|r| r.rows)
}

/// A load's rows, rejected count and rejects (with their lines and bytes), or its error's
/// text (which names the line and byte): what a streamed load gives as the whole one does.
fn outcome(r: &Result<LoadReport, LoadError>) -> Result<(u64, u64, String), String> {
    match r {
        Ok(report) => Ok((
            report.rows,
            report.rejected,
            format!("{:?}", report.rejects),
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Loads `src` into a new table of `columns` with the sniffed dialect.
fn load(
    sniffed: &Sniffed,
    columns: &[ColumnDef],
    src: &Source,
    cfg: &Config,
    on_error: OnError,
) -> Result<LoadReport, LoadError> {
    let def = TableDef::new(
        "t",
        TableSchema {
            columns: columns.to_vec(),
        },
        Partitioning::Single,
    )
    .expect("the sniffed columns make a table");
    let table = Table::new(def);
    let opts = LoadOptions {
        dialect: sniffed.dialect.clone(),
        mode: cfg.mode,
        chunk_size: Some(cfg.chunk_size),
        threads: Some(cfg.threads),
        on_error,
        formats: sniffed.formats,
        ..LoadOptions::default()
    };
    let report = load_checked(&table, src, &opts)?;
    assert_eq!(
        table.snapshot().num_rows() as u64,
        report.rows,
        "the table holds other rows than the report says"
    );
    Ok(report)
}

fn load_checked(table: &Table, src: &Source, opts: &LoadOptions) -> Result<LoadReport, LoadError> {
    let r = wireload_load::load_into(table, src, opts, &LoadControl::default());
    if r.is_err() {
        assert_eq!(
            table.snapshot().num_rows(),
            0,
            "a failed load published rows"
        );
    }
    r
}

/// The SQL layer's re-plan rule: after a `LoadError::Value` in a column that is not TEXT,
/// `widen` must give a type, and the load with it must get past that field.
fn replan(sniffed: &Sniffed, src: &Source, cfg: &Config, first: &LoadError) {
    let mut columns = sniffed.columns.clone();
    let mut error = first;
    let mut owned;
    for _ in 0..MAX_REPLANS {
        let LoadError::Value { pos, text, .. } = error else {
            return;
        };
        let c = pos.column - 1;
        assert!(
            c < columns.len(),
            "a value error names column {} of {}",
            pos.column,
            columns.len()
        );
        let ty = columns[c].ty;
        let Some(wider) = widen(&ty, text.as_bytes(), &sniffed.formats) else {
            // TEXT rejects only invalid UTF-8, which no re-plan fixes (the SQL layer
            // reports it); a sample that covered it fails the sniff instead
            assert_eq!(
                ty,
                SqlType::Text,
                "widen gives nothing for {ty} and {text:?}"
            );
            return;
        };
        columns[c].ty = wider;
        match load(sniffed, &columns, src, cfg, OnError::Stop) {
            Ok(_) => return,
            Err(e) => {
                if let LoadError::Value { pos: p2, error, .. } = &e {
                    // invalid UTF-8 fits no type, TEXT included
                    if *error == ValueError::InvalidUtf8 {
                        return;
                    }
                    assert!(
                        (p2.byte, p2.column) != (pos.byte, pos.column),
                        "re-planned column {} from {ty} to {wider}, still fails at the same \
                         field {text:?} ({pos})",
                        pos.column
                    );
                }
                owned = e;
                error = &owned;
            }
        }
    }
}

/// Records the `csv` crate reads from `data` with the sniffed dialect (header skipped), or
/// None where the two readers' rules differ and the count is not comparable: the `csv`
/// crate fails, or reads a record with other than `ncols` fields (the loader takes a
/// trailing delimiter as no field; the `csv` crate counts it). Both skip empty lines, end
/// records at `\n`, `\r` and `\r\n`, and skip a UTF-8 BOM (stripped here before the
/// `csv` crate sees it). NULLs and quoted empty strings make no difference to a count.
fn csv_records(data: &[u8], sniffed: &Sniffed, ncols: usize) -> Option<u64> {
    let d = &sniffed.dialect;
    let body = &data[wireload_csv_skip_bom(data)..];
    let mut b = csv::ReaderBuilder::new();
    b.delimiter(d.delimiter)
        .has_headers(d.header)
        .flexible(false)
        .terminator(csv::Terminator::CRLF)
        .comment(None);
    match d.quote {
        None => {
            b.quoting(false);
        }
        Some(q) => {
            b.quoting(true).quote(q);
            match d.escape {
                Some(e) if e == q => {
                    b.double_quote(true).escape(None);
                }
                Some(e) => {
                    b.double_quote(false).escape(Some(e));
                }
                None => {
                    b.double_quote(false).escape(None);
                }
            }
        }
    }
    let mut reader = b.from_reader(body);
    let mut n = 0u64;
    let mut rec = csv::ByteRecord::new();
    if d.header {
        let h = reader.byte_headers().ok()?;
        if h.len() != ncols {
            return None;
        }
    }
    loop {
        match reader.read_byte_record(&mut rec) {
            Ok(true) if rec.len() == ncols => n += 1,
            Ok(true) | Err(_) => return None,
            Ok(false) => return Some(n),
        }
    }
}

fn wireload_csv_skip_bom(data: &[u8]) -> usize {
    if data.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    }
}

/// Data records of `data` as the toggle model of quoting cuts them (the model that places
/// chunks and ends a broken record, `wireload_load::reject`): a record ends at a `\n` or
/// `\r` outside quotes, a quote outside quotes opens a quoted region, an escape (when it
/// is not the quote) makes the next quote or escape literal; empty lines are no records;
/// the header record (when the dialect has one) is not counted.
fn toggle_records(data: &[u8], sniffed: &Sniffed) -> u64 {
    let d = &sniffed.dialect;
    let q = d.quote;
    let e = d.escape.filter(|&e| Some(e) != q);
    let mut records = 0u64;
    let mut inside = false;
    let mut after_escape = false;
    let mut start = wireload_csv_skip_bom(data);
    for (i, &b) in data.iter().enumerate().skip(start) {
        if inside {
            if after_escape {
                after_escape = false;
                if Some(b) == q || Some(b) == e {
                    continue;
                }
            }
            if Some(b) == q {
                inside = false;
            } else if Some(b) == e {
                after_escape = true;
            }
        } else if b == b'\n' || b == b'\r' {
            if i > start {
                records += 1;
            }
            start = i + 1;
        } else if Some(b) == q {
            inside = true;
        }
    }
    if data.len() > start {
        records += 1;
    }
    records.saturating_sub(u64::from(d.header))
}

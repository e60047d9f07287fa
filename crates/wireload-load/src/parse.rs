//! The CSV parse stage: a window of the input (whole records; the whole input when it is
//! mapped) is cut into chunks, and chunk tasks run in parallel on the rayon pool, each
//! turning the records that start in its chunk into partition buffers and buffer indexes (a
//! `wireload_publish::Unit`) for the append/publish stage. Positions in errors are those of the whole input:
//! a window knows its byte offset and the line ends before it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;
use wireload_csv::{
    FieldBatch, ScanConfig, ScanError, ScanErrorKind, chunk_ranges, chunk_start_states,
    chunk_states_and_lines, line_ends, line_of,
};
use wireload_storage::{Partitioning, TableDef};
use wireload_types::{ColumnDef, Formats, SqlType, ValueError};

use crate::hints::Hints;
use crate::options::{FieldSource, Fields, LoadOptions, OnError};
use crate::reject::{ChunkRejects, Reject, RejectLog, WindowRejects, raw_line, record_end};
use crate::source::Whole;
use crate::task::{self, TaskFailure};
use wireload_publish::{LoadControl, Sink};
use wireload_publish::{LoadError, Position};

/// Longest piece of offending text quoted in an error message.
pub(crate) const SNIPPET: usize = 60;

/// Where a window lies in the whole input.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Origin {
    /// byte offset of the window's first byte
    pub byte: u64,
    /// line ends before the window
    pub lines: u64,
    /// the window is the whole input (kept until the load publishes)
    pub whole: bool,
}

/// Where the table's columns are in the input's records (see [`Fields`]).
#[derive(Debug, Clone)]
pub(crate) struct Projection {
    /// fields per input record (what the scanner splits)
    pub nfields: usize,
    /// the 0-based input field of each table column ([`GENERATED`] for a column the load
    /// fills itself, see `generated`)
    pub fields: Vec<usize>,
    /// the table column of each input field (None: a field no column reads)
    pub columns: Vec<Option<usize>>,
    /// the table columns in input field order (the order errors are looked for in);
    /// generated columns, which never fail, are not in it
    pub by_field: Vec<usize>,
    /// the input's fields were given ([`LoadOptions::fields`]), not the table's columns
    pub projected: bool,
    /// what each generated column holds (None for the columns read from the input)
    pub generated: Vec<Option<FieldSource>>,
}

/// The input field of a generated column in [`Projection::fields`].
pub(crate) const GENERATED: usize = usize::MAX;

impl Projection {
    /// The projection of `fields` onto the columns of `def`; without `fields`, the input's
    /// fields are the table's columns.
    pub(crate) fn new(def: &TableDef, fields: Option<&Fields>) -> Result<Self, LoadError> {
        let cols = &def.schema.columns;
        let Some(f) = fields else {
            let n = cols.len();
            return Ok(Projection {
                nfields: n,
                fields: (0..n).collect(),
                columns: (0..n).map(Some).collect(),
                by_field: (0..n).collect(),
                projected: false,
                generated: vec![None; n],
            });
        };
        if f.count == 0 {
            return Err(LoadError::Options(
                "the input's field count must be at least 1".into(),
            ));
        }
        if f.columns.len() != cols.len() {
            return Err(LoadError::Options(format!(
                "{} input fields are named for the {} columns of table {}; each column needs one",
                f.columns.len(),
                cols.len(),
                def.name
            )));
        }
        let key = match def.partitioning {
            Partitioning::Hash { column, .. } => Some(column),
            Partitioning::Single => None,
        };
        let mut columns: Vec<Option<usize>> = vec![None; f.count];
        let mut input_fields = Vec::with_capacity(cols.len());
        let mut generated = vec![None; cols.len()];
        for (c, &source) in f.columns.iter().enumerate() {
            let col = &cols[c];
            let field = match source {
                FieldSource::Input(field) => field,
                FieldSource::Null | FieldSource::FileName if key == Some(c) => {
                    return Err(LoadError::Options(format!(
                        "column {} partitions table {}: it must be read from the input",
                        col.name, def.name
                    )));
                }
                FieldSource::Null if !col.nullable => {
                    return Err(LoadError::Options(format!(
                        "column {} is NOT NULL: it must be read from the input",
                        col.name
                    )));
                }
                FieldSource::FileName
                    if !matches!(col.ty, SqlType::Text | SqlType::Varchar(None)) =>
                {
                    return Err(LoadError::Options(format!(
                        "column {} holds file names: it must be TEXT, not {}",
                        col.name, col.ty
                    )));
                }
                FieldSource::Null | FieldSource::FileName => {
                    generated[c] = Some(source);
                    input_fields.push(GENERATED);
                    continue;
                }
            };
            let Some(slot) = columns.get_mut(field) else {
                return Err(LoadError::Options(format!(
                    "column {} reads input field {}, but the input has {} fields",
                    col.name,
                    field + 1,
                    f.count
                )));
            };
            if let Some(other) = *slot {
                return Err(LoadError::Options(format!(
                    "input field {} is read by two columns, {} and {}",
                    field + 1,
                    cols[other].name,
                    col.name
                )));
            }
            *slot = Some(c);
            input_fields.push(field);
        }
        Ok(Projection {
            nfields: f.count,
            fields: input_fields,
            by_field: columns.iter().flatten().copied().collect(),
            columns,
            projected: true,
            generated,
        })
    }
}

/// Everything a chunk task reads.
pub(crate) struct LoadCtx<'a> {
    /// the window: whole records
    pub data: &'a [u8],
    /// where the window lies in the input
    pub origin: Origin,
    /// for a streamed input with unique keys: line ends before each chunk, from the window
    /// start (the tasks count lines of their records from there)
    pub chunk_lines: Vec<u64>,
    pub file: String,
    pub scan: ScanConfig,
    pub columns: &'a [ColumnDef],
    /// where the columns are in the input's records
    pub proj: &'a Projection,
    pub schema: SchemaRef,
    pub null: Vec<u8>,
    /// how non-ISO dates and timestamps are written
    pub formats: Formats,
    pub partitions: usize,
    pub key_column: Option<usize>,
    pub hints: &'a Hints,
    /// delimiter, quote and escape are ASCII, so fields never split a UTF-8 character
    pub ascii_specials: bool,
    pub ctl: &'a LoadControl,
    /// lowest index of a chunk that failed (usize::MAX: none)
    pub failed: AtomicUsize,
    /// where the tasks hand their buffers
    pub sink: &'a dyn Sink,
    /// ON_ERROR ignore: bad records are skipped and noted in `rejects`
    pub ignore: bool,
    /// the rejects of the window's chunks
    pub rejects: Mutex<WindowRejects>,
    /// how many more rejects the load keeps
    pub room: usize,
}

impl LoadCtx<'_> {
    /// The position of `byte`; its line is counted when `lined` (else 0: a reject counts
    /// its lines itself).
    fn position_lined(&self, byte: usize, column: usize, lined: bool) -> Box<Position> {
        Box::new(Position {
            file: self.file.clone(),
            line: if lined {
                self.origin.lines + line_of(self.data, byte)
            } else {
                0
            },
            column,
            column_name: self.column_name(column),
            byte: self.origin.byte + byte as u64,
        })
    }

    /// The name of the table column read from the 1-based input field `field`, if any.
    fn column_name(&self, field: usize) -> Option<String> {
        let c = (*self.proj.columns.get(field.checked_sub(1)?)?)?;
        self.columns.get(c).map(|c| c.name.clone())
    }

    /// The whole input, when the window is it (to name rows by line later).
    pub(crate) fn whole_input(&self) -> Option<&[u8]> {
        self.origin.whole.then_some(self.data)
    }

    fn snippet(&self, from: usize) -> String {
        let from = from.min(self.data.len());
        let rest = &self.data[from..(from + SNIPPET).min(self.data.len())];
        let end = rest
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .unwrap_or(rest.len());
        String::from_utf8_lossy(&rest[..end]).into_owned()
    }

    /// The load error for a structural error.
    #[cold]
    pub(crate) fn scan_error(&self, e: ScanError) -> LoadError {
        self.scan_error_lined(e, true)
    }

    fn scan_error_lined(&self, e: ScanError, lined: bool) -> LoadError {
        let pos = self.position_lined(e.at, e.field, lined);
        if e.kind == ScanErrorKind::QuotedRecordDelimiter {
            return LoadError::QuotedNewlineInFastMode { pos };
        }
        let text = match e.kind {
            ScanErrorKind::FieldCount { .. } => self.snippet(e.record_start),
            _ => self.snippet(e.at),
        };
        let message = match e.kind {
            ScanErrorKind::FieldCount { found, expected } if self.proj.projected => {
                format!("record has {found} fields, the input has {expected}")
            }
            kind => kind.to_string(),
        };
        LoadError::Syntax {
            pos,
            message,
            text,
            expected: e.expected(),
        }
    }

    /// The load error for an invalid value of table column `col` in record `row` of `batch`.
    #[cold]
    pub(crate) fn value_error(
        &self,
        batch: &FieldBatch,
        row: usize,
        col: usize,
        error: ValueError,
    ) -> LoadError {
        self.value_error_lined(batch, row, col, error, true)
    }

    fn value_error_lined(
        &self,
        batch: &FieldBatch,
        row: usize,
        col: usize,
        error: ValueError,
        lined: bool,
    ) -> LoadError {
        let field = self.proj.fields[col];
        let (bytes, _) = batch.field(self.data, row, field);
        let mut text = String::from_utf8_lossy(bytes).into_owned();
        if text.chars().count() > SNIPPET {
            text = text.chars().take(SNIPPET).collect::<String>() + "...";
        }
        let expected = error.expected();
        LoadError::Value {
            pos: self.position_lined(batch.field_offset(row, field), field + 1, lined),
            error,
            text,
            expected,
        }
    }

    /// Notes in `rejects` the record `row` of `batch`, whose table column `col` is invalid.
    #[cold]
    pub(crate) fn reject_value(
        &self,
        rejects: &mut ChunkRejects,
        batch: &FieldBatch,
        row: usize,
        col: usize,
        error: ValueError,
    ) {
        let rs = batch.row_start(row);
        rejects.note(self.data, rs, |lines| {
            let e = self.value_error_lined(batch, row, col, error, false);
            self.reject(rs, lines, Some(self.proj.fields[col] + 1), &e)
        });
    }

    /// Notes in `rejects` the record broken by `e`; returns where the next record starts.
    #[cold]
    pub(crate) fn reject_broken(&self, rejects: &mut ChunkRejects, e: ScanError) -> usize {
        let rs = e.record_start;
        let column = match e.kind {
            ScanErrorKind::FieldCount { .. } => None,
            _ => Some(e.field),
        };
        rejects.note(self.data, rs, |lines| {
            let err = self.scan_error_lined(e, false);
            self.reject(rs, lines, column, &err)
        });
        record_end(self.data, &self.scan, rs)
    }

    /// The reject of the record at `rs` for `error`; its line is `lines` (line ends from
    /// the chunk start, made absolute when the window is done).
    fn reject(&self, rs: usize, lines: u64, column: Option<usize>, error: &LoadError) -> Reject {
        Reject {
            file: self.file.clone(),
            line: lines,
            byte_offset: self.origin.byte + rs as u64,
            column,
            column_name: column.and_then(|f| self.column_name(f)),
            raw_line: raw_line(self.data, rs, record_end(self.data, &self.scan, rs)),
            error: error.detail(),
        }
    }
}

/// Default chunk size: a quarter of the L3 share of one thread (the paper's rule),
/// between 1 and 4 MiB (a VM may report a whole socket's L3; `cargo bench --bench load`
/// sweeps chunk sizes).
pub fn default_chunk_size(threads: usize) -> usize {
    let l3 = l3_bytes().unwrap_or(32 << 20);
    (l3 / threads.max(1) / 4).clamp(1 << 20, 4 << 20)
}

fn l3_bytes() -> Option<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index3/size").ok()?;
    let t = text.trim();
    let (num, mult) = match t.strip_suffix('K') {
        Some(n) => (n, 1 << 10),
        None => match t.strip_suffix('M') {
            Some(n) => (n, 1 << 20),
            None => (t, 1),
        },
    };
    num.parse::<usize>().ok().map(|n| n * mult)
}

/// The chunks of a window and the quote state each starts in.
pub(crate) type Chunks = (Vec<std::ops::Range<usize>>, Vec<wireload_csv::QuoteState>);

/// A window of whole records to parse.
pub(crate) struct Records<'d> {
    /// The window; its records start at `start`.
    pub data: &'d [u8],
    /// Where the first record starts (after a header).
    pub start: usize,
    /// [`Chunker::chunks`] of `data` from `start`.
    pub chunks: Chunks,
    /// [`chunk_lines`] of those chunks, when counted already.
    pub lines: Option<Vec<u64>>,
    /// Where `data` lies in the input.
    pub origin: Origin,
    /// The mapped input `data` is, whose pages of each parsed chunk are handed back
    /// ([`Whole::release`]); None: nothing is released.
    pub release: Option<&'d Whole>,
}

/// The line ends in `data` before each of `chunks` (which cover `data[start..]` in order),
/// and in all of `data` up to the last chunk's end.
pub(crate) fn chunk_lines(
    data: &[u8],
    start: usize,
    chunks: &[std::ops::Range<usize>],
) -> (Vec<u64>, u64) {
    let counts: Vec<u64> = chunks
        .par_iter()
        .map(|r| line_ends(data, r.clone()))
        .collect();
    lines_before(data, start, &counts)
}

/// [`chunk_lines`] from the line ends counted in each chunk (`counts`).
pub(crate) fn lines_before(data: &[u8], start: usize, counts: &[u64]) -> (Vec<u64>, u64) {
    let mut before = line_ends(data, 0..start);
    let lines = counts
        .iter()
        .map(|c| {
            let b = before;
            before += c;
            b
        })
        .collect();
    (lines, before)
}

/// How windows are split into chunks: what the stream's cutting thread needs of a parse.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chunker {
    pub scan: ScanConfig,
    pub mode: wireload_csv::ScanMode,
    pub size: usize,
}

impl Chunker {
    /// The chunks of `data[start..]` and the quote state each starts in.
    pub(crate) fn chunks(&self, data: &[u8], start: usize) -> Chunks {
        let chunks = chunk_ranges(start, data.len(), self.size);
        let states = chunk_start_states(data, &chunks, &self.scan, self.mode);
        (chunks, states)
    }

    /// The chunks of `data[start..end]`, the quote state each starts in, and the line ends
    /// in each (looking past `end` into `data` for a `\r\n`): one pass over the bytes.
    pub(crate) fn chunks_and_lines(
        &self,
        data: &[u8],
        start: usize,
        end: usize,
    ) -> (Chunks, Vec<u64>) {
        let chunks = chunk_ranges(start, end, self.size);
        let (states, lines) = chunk_states_and_lines(data, &chunks, &self.scan, self.mode);
        ((chunks, states), lines)
    }
}

/// How a load parses CSV: everything but the window, fixed for the whole load.
pub(crate) struct CsvParse<'a> {
    pub file: String,
    pub scan: ScanConfig,
    pub opts: &'a LoadOptions,
    pub def: &'a TableDef,
    pub schema: SchemaRef,
    pub partitions: usize,
    pub key_column: Option<usize>,
    /// where the table's columns are in the input's records
    pub proj: Projection,
    pub hints: Hints,
    pub ascii_specials: bool,
    pub chunk_size: usize,
    /// the records rejected so far (ON_ERROR ignore)
    pub log: Mutex<RejectLog>,
}

impl<'a> CsvParse<'a> {
    /// The parse of loads into `def` with `opts`; `sample` seeds the allocation hints.
    pub(crate) fn new(
        def: &'a TableDef,
        opts: &'a LoadOptions,
        file: String,
        sample: &[u8],
    ) -> Result<Self, LoadError> {
        let scan =
            ScanConfig::new(&opts.dialect, opts.mode).map_err(|e| LoadError::Options(e.0))?;
        if opts.reject_limit.is_some() && opts.on_error != OnError::Ignore {
            return Err(LoadError::Options(
                "a reject limit needs ON_ERROR ignore".into(),
            ));
        }
        let proj = Projection::new(def, opts.fields.as_ref())?;
        let (partitions, key_column) = match def.partitioning {
            Partitioning::Single => (1, None),
            Partitioning::Hash { column, count } => (count, Some(column)),
        };
        let threads = rayon::current_num_threads();
        let chunk_size = opts
            .chunk_size
            .unwrap_or_else(|| default_chunk_size(threads))
            // buffer row offsets are 32-bit, and bigger chunks gain nothing
            .clamp(1, 1 << 30);
        Ok(CsvParse {
            file,
            scan,
            opts,
            def,
            schema: def.arrow_schema.clone(),
            partitions,
            key_column,
            proj,
            hints: Hints::new(sample, def.schema.columns.len(), partitions),
            ascii_specials: [
                Some(opts.dialect.delimiter),
                opts.dialect.quote,
                opts.dialect.escape,
            ]
            .iter()
            .flatten()
            .all(|b| b.is_ascii()),
            chunk_size,
            log: Mutex::new(RejectLog::default()),
        })
    }

    /// The records rejected so far.
    pub(crate) fn take_rejects(&self) -> RejectLog {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// How this parse splits a window into chunks.
    pub(crate) fn chunker(&self) -> Chunker {
        Chunker {
            scan: self.scan,
            mode: self.opts.mode,
            size: self.chunk_size,
        }
    }

    /// The rows of a chunk's partition buffers the load's row filter keeps (all of them
    /// without a filter).
    fn keep_rows(
        &self,
        buffers: Vec<Option<RecordBatch>>,
        sink: &dyn Sink,
    ) -> Result<Vec<Option<RecordBatch>>, LoadError> {
        let Some(filter) = &self.opts.filter else {
            return Ok(buffers);
        };
        if sink.wants_sites() {
            // the rows' sites (for key errors) would no longer match the rows
            return Err(LoadError::Options(
                "a row filter cannot load a table with unique keys".into(),
            ));
        }
        buffers
            .into_iter()
            .map(|b| b.map_or(Ok(None), |b| filter.apply(b)))
            .collect()
    }

    /// Parses the records of a window on the current rayon pool, handing the buffers of
    /// chunk `i` to `sink` as unit `first_unit + i`; returns the number of units.
    pub(crate) fn parse_window(
        &self,
        window: Records<'_>,
        first_unit: usize,
        sink: &dyn Sink,
        ctl: &LoadControl,
    ) -> Result<usize, LoadError> {
        let Records {
            data,
            start,
            chunks: (chunks, states),
            lines,
            origin,
            release,
        } = window;
        let mut lines = lines;
        // a streamed input loses each window: rows of unique keys need their lines now
        let chunk_lines = if !origin.whole && sink.wants_sites() {
            lines
                .take()
                .unwrap_or_else(|| chunk_lines(data, start, &chunks).0)
        } else {
            Vec::new()
        };
        let ignore = self.opts.on_error == OnError::Ignore;
        let room = self.log.lock().unwrap_or_else(|e| e.into_inner()).room();
        let ctx = LoadCtx {
            data,
            origin,
            chunk_lines,
            file: self.file.clone(),
            scan: self.scan,
            columns: &self.def.schema.columns,
            proj: &self.proj,
            schema: self.schema.clone(),
            null: self.opts.dialect.null.clone(),
            formats: self.opts.formats,
            partitions: self.partitions,
            key_column: self.key_column,
            hints: &self.hints,
            ascii_specials: self.ascii_specials,
            ctl,
            failed: AtomicUsize::new(usize::MAX),
            sink,
            ignore,
            rejects: Mutex::new(WindowRejects::new(room)),
            room,
        };
        let results: Vec<Result<(), TaskFailure>> = chunks
            .par_iter()
            .zip(states.par_iter())
            .enumerate()
            .map(|(i, (range, &state))| {
                let r = task::run(&ctx, i, range.clone(), state).and_then(|(buffers, sites)| {
                    let buffers = self.keep_rows(buffers, sink)?;
                    sink.take(first_unit + i, buffers, sites, ctx.whole_input())?;
                    if let Some(whole) = release {
                        whole.release(range.clone());
                    }
                    Ok(())
                });
                if r.is_err() {
                    ctx.failed.fetch_min(i, Relaxed);
                }
                r
            })
            .collect();
        for r in results {
            match r {
                Ok(()) => {}
                Err(TaskFailure::Error(e)) => return Err(e),
                Err(TaskFailure::Careful(_)) => {
                    return Err(LoadError::Internal(
                        "a chunk left its careful path undone".into(),
                    ));
                }
                Err(TaskFailure::Abandoned) => {
                    return Err(if ctl.cancel.load(Relaxed) {
                        LoadError::Cancelled
                    } else if sink.failed() {
                        // the merge step's error is the load's (see Appender::run)
                        LoadError::Options("a merge step failed".into())
                    } else {
                        LoadError::Options(
                            "internal: a chunk was abandoned although none failed".into(),
                        )
                    });
                }
            }
        }
        if ctl.cancel.load(Relaxed) {
            return Err(LoadError::Cancelled);
        }
        if ignore {
            let window =
                std::mem::take(&mut *ctx.rejects.lock().unwrap_or_else(|e| e.into_inner()));
            self.log_rejects(
                window,
                &ctx.chunk_lines,
                lines,
                data,
                start,
                &chunks,
                origin,
            )?;
        }
        Ok(chunks.len())
    }

    /// Adds the rejects of a window to the load's, their lines made absolute (with the
    /// line ends before each chunk: `known` or `lines`, or counted now); fails when the
    /// load's reject limit is exceeded.
    #[allow(clippy::too_many_arguments)]
    fn log_rejects(
        &self,
        window: WindowRejects,
        known: &[u64],
        lines: Option<Vec<u64>>,
        data: &[u8],
        start: usize,
        chunks: &[std::ops::Range<usize>],
        origin: Origin,
    ) -> Result<(), LoadError> {
        if window.count == 0 {
            return Ok(());
        }
        let counted;
        let before: &[u64] = if !known.is_empty() {
            known
        } else if let Some(l) = &lines {
            l
        } else {
            counted = chunk_lines(data, start, chunks).0;
            &counted
        };
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.count += window.count;
        for (chunk, rejects) in window.by_chunk {
            log.kept.extend(rejects.into_iter().map(|mut r| {
                r.line += origin.lines + before[chunk] + 1;
                r
            }));
        }
        match self.opts.reject_limit {
            Some(limit) if log.count > limit => Err(LoadError::TooManyRejects {
                rejected: log.count,
                limit,
                first: Box::new(log.kept.first().cloned().ok_or_else(|| {
                    LoadError::Internal("records were rejected but none was kept".into())
                })?),
            }),
            _ => Ok(()),
        }
    }
}

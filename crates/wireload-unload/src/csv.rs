//! CSV unload: batches formatted in parallel and written in order.
//!
//! The batches are cut into *pieces* of about a megabyte of text (big batches into several
//! row ranges, so that even one huge batch keeps every thread busy). A *window* of two
//! pieces per thread is formatted in parallel on the current rayon pool while the calling
//! thread writes the previous window, one `write_all` per piece, in order; so memory stays
//! bounded by two windows whatever the table's size. Within a piece each column is
//! formatted into its own buffer by a loop specialised for its type (see `column`), then
//! the rows are assembled by copying slices.
//!
//! Quoting is minimal and always correct for wireload's reader (see `quote`): a field is
//! quoted only when it holds the delimiter, the quote, the escape, CR or LF, equals the
//! NULL string, would otherwise make an empty line, or starts the file with a BOM. A value
//! that cannot be written in the dialect is an [`UnloadError::Unrepresentable`].
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::AtomicBool;
//! use arrow::array::{Int32Array, RecordBatch, StringArray};
//! use arrow::datatypes::{DataType, Field, Schema};
//! use wireload_csv::Dialect;
//!
//! let schema = Arc::new(Schema::new(vec![
//!     Field::new("id", DataType::Int32, false),
//!     Field::new("name", DataType::Utf8, true),
//! ]));
//! let batch = RecordBatch::try_new(schema.clone(), vec![
//!     Arc::new(Int32Array::from(vec![1, 2, 3])),
//!     Arc::new(StringArray::from(vec![Some("plain"), Some("a,b"), None])),
//! ]).unwrap();
//! let dialect = Dialect { header: true, ..Dialect::default() };
//! let mut out = Vec::new();
//! let report = wireload_unload::csv::write_csv(&mut out, &schema, &[batch], &dialect,
//!     &AtomicBool::new(false)).unwrap();
//! assert_eq!(out, b"id,name\n1,plain\n2,\"a,b\"\n3,\n");
//! assert_eq!((report.rows, report.bytes), (3, out.len() as u64));
//! ```

mod column;
mod format;
mod out;
mod quote;

use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::SchemaRef;
use rayon::prelude::*;
use wireload_csv::Dialect;

use crate::files::AtomicFile;
use crate::{UnloadError, UnloadReport};
use column::{Cell, ColumnPlan, ColumnText, Kind, MAX_COLUMN_TEXT};
use out::Out;
use quote::Specials;

/// Bytes of text a piece aims at (estimated from the types' widest text).
const PIECE_BYTES: usize = 1 << 20;

/// Writes `batches` (all of `schema`) as CSV into the file at `path`, formatting batches in
/// parallel on the current rayon pool and writing them in order. The file appears only when
/// complete (written to a temporary name beside it, then renamed over `path`); a failed or
/// cancelled unload leaves nothing. In errors, rows are numbered from 1 in the output, the
/// header included.
pub fn write_csv_file(
    path: &Path,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    dialect: &Dialect,
    cancel: &AtomicBool,
) -> Result<UnloadReport, UnloadError> {
    let started = Instant::now();
    let job = Job::new(schema, batches, dialect, PIECE_BYTES)?;
    if cancel.load(Ordering::Relaxed) {
        return Err(UnloadError::Cancelled);
    }
    let temp = AtomicFile::create(path)?;
    let bytes = run(&mut temp.file(), &job, cancel, path)?;
    if cancel.load(Ordering::Relaxed) {
        return Err(UnloadError::Cancelled);
    }
    let committed = temp.commit()?;
    Ok(UnloadReport {
        crc32: Some(committed.crc32),
        ..job.report(bytes, started)
    })
}

/// Writes `batches` (all of `schema`) as CSV into `out`, as [`write_csv_file`] does but
/// without a temporary file: after an error `out` holds the pieces written before it.
pub fn write_csv<W: Write>(
    mut out: W,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    dialect: &Dialect,
    cancel: &AtomicBool,
) -> Result<UnloadReport, UnloadError> {
    let started = Instant::now();
    let job = Job::new(schema, batches, dialect, PIECE_BYTES)?;
    let bytes = run(&mut out, &job, cancel, Path::new("(output)"))?;
    out.flush().map_err(|source| UnloadError::Io {
        path: PathBuf::from("(output)"),
        source,
    })?;
    Ok(job.report(bytes, started))
}

/// A run of rows of one batch.
#[derive(Debug, Clone, PartialEq)]
struct Part {
    batch: usize,
    rows: Range<usize>,
}

/// Rows formatted as one unit and written with one `write_all`: a range of a big batch,
/// or several small batches together.
#[derive(Debug, Clone, PartialEq)]
struct Piece {
    parts: Vec<Part>,
}

/// Everything decided before the first value is formatted.
struct Job<'a> {
    batches: &'a [RecordBatch],
    schema: &'a SchemaRef,
    plans: Vec<ColumnPlan>,
    sp: Specials,
    header: bool,
    pieces: Vec<Piece>,
    /// Rows before each batch.
    rows_before: Vec<u64>,
    /// The first batch with rows (whose first row starts the file when there is no header).
    first_batch: usize,
}

impl<'a> Job<'a> {
    /// Checks the options and the batches against the schema, and plans the pieces.
    fn new(
        schema: &'a SchemaRef,
        batches: &'a [RecordBatch],
        dialect: &Dialect,
        piece_bytes: usize,
    ) -> Result<Self, UnloadError> {
        dialect
            .validate()
            .map_err(|e| UnloadError::Options(format!("invalid CSV options: {}", e.0)))?;
        let fields = schema.fields();
        if fields.is_empty() {
            return Err(UnloadError::Options(
                "a table without columns cannot be written as CSV".into(),
            ));
        }
        let sp = Specials::new(dialect);
        let plans = fields
            .iter()
            .enumerate()
            .map(|(c, f)| {
                ColumnPlan::new(f.data_type(), &sp).map_err(|e| {
                    UnloadError::Options(format!("column {} (\"{}\"): {e}", c + 1, f.name()))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut rows_before = Vec::with_capacity(batches.len());
        let mut rows = 0u64;
        for (b, batch) in batches.iter().enumerate() {
            check_batch(schema, b, batch)?;
            rows_before.push(rows);
            rows += batch.num_rows() as u64;
        }
        let first_batch = batches
            .iter()
            .position(|b| b.num_rows() > 0)
            .unwrap_or(usize::MAX);
        let pieces = plan_pieces(&plans, &sp, batches, piece_bytes);
        Ok(Job {
            batches,
            schema,
            plans,
            sp,
            header: dialect.header,
            pieces,
            rows_before,
            first_batch,
        })
    }

    fn rows(&self) -> u64 {
        self.batches.iter().map(|b| b.num_rows() as u64).sum()
    }

    fn report(&self, bytes: u64, started: Instant) -> UnloadReport {
        UnloadReport {
            rows: self.rows(),
            bytes,
            elapsed: started.elapsed(),
            crc32: None,
        }
    }

    /// The header record.
    fn header_text(&self) -> Result<Out, UnloadError> {
        let fields = self.schema.fields();
        let single = fields.len() == 1;
        let mut out = Out::default();
        for (c, field) in fields.iter().enumerate() {
            self.sp
                .push_field(&mut out, field.name().as_bytes(), single, c == 0)
                .map_err(|message| UnloadError::Unrepresentable {
                    row: 1,
                    column: c + 1,
                    column_name: field.name().clone(),
                    message: format!("in the header, {message}"),
                })?;
            out.push(if c + 1 == fields.len() {
                b'\n'
            } else {
                self.sp.delimiter
            });
        }
        Ok(out)
    }
}

/// Checks that `batch` has the schema's columns and types.
fn check_batch(schema: &SchemaRef, b: usize, batch: &RecordBatch) -> Result<(), UnloadError> {
    let fields = schema.fields();
    if batch.num_columns() != fields.len() {
        return Err(UnloadError::Options(format!(
            "batch {} has {} columns, but the schema has {}",
            b + 1,
            batch.num_columns(),
            fields.len()
        )));
    }
    for (c, (field, array)) in fields.iter().zip(batch.columns()).enumerate() {
        if array.data_type() != field.data_type() {
            return Err(UnloadError::Options(format!(
                "batch {}, column {} (\"{}\"): the data is {}, but the schema says {}",
                b + 1,
                c + 1,
                field.name(),
                array.data_type(),
                field.data_type()
            )));
        }
    }
    Ok(())
}

/// Cuts the batches into pieces of about `piece_bytes` of text: big batches into row
/// ranges, small ones together; no part has a column over [`MAX_COLUMN_TEXT`] bytes
/// unless it is a single row.
fn plan_pieces(
    plans: &[ColumnPlan],
    sp: &Specials,
    batches: &[RecordBatch],
    piece_bytes: usize,
) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut open = Vec::new();
    let mut open_bytes = 0usize;
    let mut ranges = Vec::new();
    for (b, batch) in batches.iter().enumerate() {
        let rows = batch.num_rows();
        if rows == 0 {
            continue;
        }
        let mut row_bytes = 0usize;
        for (plan, array) in plans.iter().zip(batch.columns()) {
            row_bytes += plan.width;
            if plan.is_string() {
                row_bytes += string_bytes(plan.kind, array, 0..rows) / rows;
            }
        }
        let mut start = 0;
        while start < rows {
            let room = piece_bytes.saturating_sub(open_bytes) / row_bytes;
            let end = (start + room.max(1)).min(rows);
            ranges.clear();
            split_oversized(plans, sp, batch, start..end, &mut ranges);
            for rows in ranges.drain(..) {
                open_bytes += rows.len() * row_bytes;
                open.push(Part { batch: b, rows });
                if open_bytes >= piece_bytes {
                    pieces.push(Piece {
                        parts: std::mem::take(&mut open),
                    });
                    open_bytes = 0;
                }
            }
            start = end;
        }
    }
    if !open.is_empty() {
        pieces.push(Piece { parts: open });
    }
    pieces
}

/// Pushes `rows`, halved until the widest text a column could take fits in
/// [`MAX_COLUMN_TEXT`].
fn split_oversized(
    plans: &[ColumnPlan],
    sp: &Specials,
    batch: &RecordBatch,
    rows: Range<usize>,
    out: &mut Vec<Range<usize>>,
) {
    let n = rows.len();
    let too_big = plans.iter().zip(batch.columns()).any(|(plan, array)| {
        // Quoting at most doubles a value and adds two quotes.
        let most = if plan.is_string() {
            2 * string_bytes(plan.kind, array, rows.clone()) + n * (3 + sp.null.len())
        } else {
            n * (2 * plan.width + 2)
        };
        most > MAX_COLUMN_TEXT
    });
    if too_big && n > 1 {
        let mid = rows.start + n / 2;
        split_oversized(plans, sp, batch, rows.start..mid, out);
        split_oversized(plans, sp, batch, mid..rows.end, out);
    } else {
        out.push(rows);
    }
}

/// Bytes of string data of `rows` (exact for contiguous strings, estimated for views).
fn string_bytes(kind: Kind, array: &dyn Array, rows: Range<usize>) -> usize {
    match kind {
        Kind::Utf8 => {
            let offsets = array.as_string::<i32>().value_offsets();
            (offsets[rows.end] - offsets[rows.start]) as usize
        }
        Kind::LargeUtf8 => {
            let offsets = array.as_string::<i64>().value_offsets();
            (offsets[rows.end] - offsets[rows.start]) as usize
        }
        Kind::Utf8View => {
            let views = array.as_string_view().views();
            views[rows].iter().map(|v| *v as u32 as usize).sum()
        }
        _ => 0,
    }
}

/// A piece being formatted or written, with buffers reused from window to window.
#[derive(Default)]
struct Slot {
    /// Index of the piece in the job.
    piece: Option<usize>,
    columns: Vec<ColumnText>,
    /// The rows of the piece, unless it is one part of one column.
    out: Out,
    /// Cursor per column while rows are assembled.
    cursors: Vec<usize>,
    error: Option<UnloadError>,
}

impl Slot {
    /// Formats the slot's piece (if any), keeping the first error.
    fn format(&mut self, job: &Job<'_>, cancel: &AtomicBool) {
        self.error = None;
        self.out.clear();
        let Some(piece) = self.piece.map(|k| &job.pieces[k]) else {
            return;
        };
        if cancel.load(Ordering::Relaxed) {
            self.error = Some(UnloadError::Cancelled);
            return;
        }
        let ncols = job.plans.len();
        self.columns.resize_with(ncols, ColumnText::default);
        let direct = ncols == 1 && piece.parts.len() == 1;
        for part in &piece.parts {
            if let Err(error) = self.format_part(job, part) {
                self.error = Some(error);
                return;
            }
            if !direct {
                interleave(
                    &mut self.out,
                    &self.columns,
                    part.rows.len(),
                    &mut self.cursors,
                );
            }
        }
    }

    /// Formats the columns of `part` into `self.columns`.
    fn format_part(&mut self, job: &Job<'_>, part: &Part) -> Result<(), UnloadError> {
        let batch = &job.batches[part.batch];
        let ncols = job.plans.len();
        for (c, (plan, array)) in job.plans.iter().zip(batch.columns()).enumerate() {
            let cx = Cell {
                sp: &job.sp,
                sep: if c + 1 == ncols {
                    b'\n'
                } else {
                    job.sp.delimiter
                },
                single: ncols == 1,
                first: if c == 0 && !job.header && part.batch == job.first_batch {
                    0
                } else {
                    usize::MAX
                },
            };
            let text = &mut self.columns[c];
            column::format_column(plan, array, part.rows.clone(), cx, text).map_err(|e| {
                UnloadError::Unrepresentable {
                    row: job.header as u64 + job.rows_before[part.batch] + e.index as u64 + 1,
                    column: c + 1,
                    column_name: job.schema.field(c).name().clone(),
                    message: e.message,
                }
            })?;
        }
        Ok(())
    }

    /// The formatted text of the piece.
    fn text(&self) -> &[u8] {
        if self.out.len() == 0 && self.columns.len() == 1 {
            self.columns[0].data.as_slice()
        } else {
            self.out.as_slice()
        }
    }
}

/// Appends `rows` rows assembled from the columns' text to `out`.
fn interleave(out: &mut Out, columns: &[ColumnText], rows: usize, cursors: &mut Vec<usize>) {
    out.reserve(columns.iter().map(|c| c.data.len()).sum());
    cursors.clear();
    cursors.resize(columns.len(), 0);
    for r in 0..rows {
        for (column, at) in columns.iter().zip(cursors.iter_mut()) {
            let end = column.ends[r] as usize;
            out.put_from(column.data.padded(), *at, end);
            *at = end;
        }
    }
}

/// Formats the slots' pieces in parallel on the current pool.
fn format_window(slots: &mut [Slot], job: &Job<'_>, cancel: &AtomicBool) {
    slots
        .par_iter_mut()
        .with_max_len(1)
        .for_each(|slot| slot.format(job, cancel));
}

/// Gives the slots the pieces `window` (none to the slots beyond it).
fn assign(slots: &mut [Slot], window: Range<usize>) {
    for (k, slot) in slots.iter_mut().enumerate() {
        slot.piece = Some(window.start + k).filter(|p| window.contains(p));
    }
}

/// Writes the formatted slots in order; returns the bytes written, or the first error.
fn write_window<W: Write>(
    out: &mut W,
    slots: &mut [Slot],
    cancel: &AtomicBool,
    path: &Path,
) -> Result<u64, UnloadError> {
    let mut bytes = 0u64;
    for slot in slots.iter_mut() {
        if slot.piece.is_none() {
            break;
        }
        if let Some(error) = slot.error.take() {
            return Err(error);
        }
        if cancel.load(Ordering::Relaxed) {
            return Err(UnloadError::Cancelled);
        }
        let text = slot.text();
        out.write_all(text).map_err(|source| UnloadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        bytes += text.len() as u64;
    }
    Ok(bytes)
}

/// Writes the header and every piece to `out`: each window is formatted in parallel while
/// this thread writes the one before. Returns the bytes written.
fn run<W: Write>(
    out: &mut W,
    job: &Job<'_>,
    cancel: &AtomicBool,
    path: &Path,
) -> Result<u64, UnloadError> {
    let io = |source| UnloadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = 0u64;
    if job.header {
        let header = job.header_text()?;
        let header = header.as_slice();
        out.write_all(header).map_err(io)?;
        bytes += header.len() as u64;
    }
    let per_window = 2 * rayon::current_num_threads().max(1);
    let mut current: Vec<Slot> = (0..per_window).map(|_| Slot::default()).collect();
    let mut upcoming: Vec<Slot> = (0..per_window).map(|_| Slot::default()).collect();
    let mut windows = (0..job.pieces.len())
        .step_by(per_window)
        .map(|start| start..(start + per_window).min(job.pieces.len()));
    let Some(first) = windows.next() else {
        return Ok(bytes);
    };
    assign(&mut current, first);
    format_window(&mut current, job, cancel);
    loop {
        let next = windows.next();
        if let Some(window) = next.clone() {
            assign(&mut upcoming, window);
        }
        let written = rayon::in_place_scope(|scope| {
            if next.is_some() {
                let slots = &mut upcoming;
                scope.spawn(move |_| format_window(slots, job, cancel));
            }
            write_window(out, &mut current, cancel, path)
        });
        bytes += written?;
        if next.is_none() {
            return Ok(bytes);
        }
        std::mem::swap(&mut current, &mut upcoming);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int32Array, StringArray};
    use arrow::datatypes::{Field, Schema};

    use super::*;

    fn batch(columns: Vec<(&str, ArrayRef)>) -> (SchemaRef, RecordBatch) {
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
                .collect::<Vec<_>>(),
        ));
        let batch =
            RecordBatch::try_new(schema.clone(), columns.into_iter().map(|c| c.1).collect())
                .unwrap();
        (schema, batch)
    }

    fn csv(
        schema: &SchemaRef,
        batches: &[RecordBatch],
        dialect: &Dialect,
    ) -> Result<String, UnloadError> {
        let mut out = Vec::new();
        write_csv(&mut out, schema, batches, dialect, &AtomicBool::new(false))?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn big_batches_are_cut_and_small_ones_joined() {
        let n = 300_000;
        let (schema, b) = batch(vec![(
            "s",
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("v{i}")),
            )),
        )]);
        let small: Vec<RecordBatch> = (0..100).map(|i| b.slice(i * 10, 10)).collect();
        let mut batches = vec![b.clone()];
        batches.extend(small);
        batches.push(b.slice(0, 0));
        batches.push(b.clone());
        let job = Job::new(&schema, &batches, &Dialect::default(), PIECE_BYTES).unwrap();
        let parts: Vec<&Part> = job.pieces.iter().flat_map(|p| &p.parts).collect();
        // every row once, in order
        let mut expected = (0, 0);
        for part in &parts {
            if part.batch != expected.0 {
                assert_eq!(expected.1, batches[expected.0].num_rows());
                expected = (part.batch, 0);
            }
            assert_eq!(part.rows.start, expected.1, "{part:?}");
            expected.1 = part.rows.end;
        }
        assert_eq!(expected, (102, n));
        // the big batches are cut; the small ones share pieces
        assert!(job.pieces.len() >= 4, "{}", job.pieces.len());
        assert!(job.pieces.len() < 20, "{}", job.pieces.len());
        assert!(job.pieces.iter().any(|p| p.parts.len() > 50));
    }

    /// The text of `batches` written with pieces of about `piece_bytes` on `threads` threads.
    fn text_with(
        batches: &[RecordBatch],
        dialect: &Dialect,
        piece_bytes: usize,
        threads: usize,
    ) -> Vec<u8> {
        let schema = batches[0].schema();
        let job = Job::new(&schema, batches, dialect, piece_bytes).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut out = Vec::new();
        pool.install(|| run(&mut out, &job, &AtomicBool::new(false), Path::new("x")))
            .unwrap();
        out
    }

    #[test]
    fn any_piece_size_and_thread_count_gives_the_same_bytes() {
        let n = 2000;
        let (_, b) = batch(vec![
            (
                "n",
                Arc::new(Int32Array::from_iter(
                    (0..n).map(|i| (i % 7 != 0).then_some(i)),
                )),
            ),
            (
                "s",
                Arc::new(StringArray::from_iter((0..n).map(|i| {
                    (i % 5 != 0).then(|| {
                        ["a", "b,c", "", "d\"e", "\u{feff}f"][i as usize % 5].repeat(i as usize % 4)
                    })
                }))),
            ),
        ]);
        let batches = vec![
            b.slice(0, 1),
            b.slice(1, 0),
            b.slice(1, 1500),
            b.slice(1501, 499),
        ];
        for dialect in [
            Dialect::default(),
            Dialect {
                header: true,
                escape: Some(b'\\'),
                null: b"\\N".to_vec(),
                ..Dialect::default()
            },
        ] {
            let reference = text_with(&batches, &dialect, PIECE_BYTES, 1);
            for piece_bytes in [1, 7, 100, 5000] {
                for threads in [1, 3] {
                    let text = text_with(&batches, &dialect, piece_bytes, threads);
                    assert!(text == reference, "{piece_bytes} bytes, {threads} threads");
                }
            }
        }
    }

    #[test]
    fn a_bom_at_the_start_of_the_file_is_quoted() {
        let (schema, b) = batch(vec![
            (
                "\u{feff}a",
                Arc::new(StringArray::from(vec!["\u{feff}x", "\u{feff}y"])),
            ),
            ("b", Arc::new(Int32Array::from(vec![1, 2]))),
        ]);
        let text = csv(&schema, std::slice::from_ref(&b), &Dialect::default()).unwrap();
        assert_eq!(text, "\"\u{feff}x\",1\n\u{feff}y,2\n");
        let header = Dialect {
            header: true,
            ..Dialect::default()
        };
        let text = csv(&schema, &[b], &header).unwrap();
        assert_eq!(text, "\"\u{feff}a\",b\n\u{feff}x,1\n\u{feff}y,2\n");
    }

    #[test]
    fn errors_number_rows_of_the_output_and_name_the_column() {
        let (schema, b) = batch(vec![
            ("n", Arc::new(Int32Array::from(vec![1, 2, 3]))),
            ("s", Arc::new(StringArray::from(vec!["a", "b", "c|d"]))),
        ]);
        let bare = Dialect {
            delimiter: b'|',
            quote: None,
            escape: None,
            header: true,
            null: b"\\N".to_vec(),
        };
        let err = csv(&schema, &[b], &bare).unwrap_err();
        match err {
            UnloadError::Unrepresentable {
                row,
                column,
                ref column_name,
                ref message,
            } => {
                assert_eq!((row, column, column_name.as_str()), (4, 2, "s"));
                assert!(message.contains("delimiter '|'"), "{message}");
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn batches_must_match_the_schema() {
        let (schema, _) = batch(vec![("n", Arc::new(Int32Array::from(vec![1])))]);
        let (_, other) = batch(vec![("n", Arc::new(StringArray::from(vec!["1"])))]);
        let err = csv(&schema, &[other], &Dialect::default()).unwrap_err();
        assert!(
            matches!(err, UnloadError::Options(ref m) if m.contains("Utf8")),
            "{err}"
        );
    }
}

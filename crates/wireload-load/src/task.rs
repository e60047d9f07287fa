//! One chunk task: scan the records that start in the chunk and deserialize them, column
//! by column, into the task's partition buffers.

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;

use arrow::array::ArrayRef;
use arrow::record_batch::RecordBatch;
use wireload_csv::{FieldBatch, QuoteState, Scanner, first_record_start, line_ends};
use wireload_types::{ColumnBuilder, Field};

use crate::error::LoadError;
use crate::parse::LoadCtx;
use crate::partition::partition_ids;
use crate::publish::Sites;

/// Records deserialized per batch: the field index of a batch stays in L2.
const BATCH_ROWS: usize = 2048;

/// Why a task stopped without output.
pub(crate) enum TaskFailure {
    /// a real error in this chunk
    Error(LoadError),
    /// an earlier chunk failed or the load was cancelled: this chunk's result does not matter
    Abandoned,
}

impl From<LoadError> for TaskFailure {
    fn from(e: LoadError) -> Self {
        TaskFailure::Error(e)
    }
}

/// What a chunk task makes: one buffer per partition (None when it got no rows) and where
/// their rows came from.
pub(crate) type Buffers = (Vec<Option<RecordBatch>>, Sites);

/// Runs the task of chunk `index` of the window.
pub(crate) fn run(
    ctx: &LoadCtx<'_>,
    index: usize,
    range: Range<usize>,
    state: QuoteState,
) -> Result<Buffers, TaskFailure> {
    let data = ctx.data;
    let start = if index == 0 {
        range.start
    } else {
        first_record_start(data, &ctx.scan, range.start, state)
    };
    let nparts = ctx.partitions;
    if start >= range.end {
        ctx.ctl.bytes_done.fetch_add(range.len() as u64, Relaxed);
        return Ok((vec![None; nparts], Sites::None));
    }
    let ncols = ctx.columns.len();
    let sizing = ctx.hints.sizing(range.len());
    let mut builders: Vec<Vec<ColumnBuilder>> = (0..nparts)
        .map(|p| {
            ctx.columns
                .iter()
                .enumerate()
                .map(|(c, col)| {
                    ColumnBuilder::new(
                        &col.ty,
                        col.nullable,
                        sizing.rows[p],
                        sizing.str_bytes[p][c],
                    )
                })
                .collect()
        })
        .collect();
    let mut scanner = Scanner::new(&ctx.scan, data, start, range.end, ncols);
    let mut batch = FieldBatch::new(ncols);
    let mut part_rows = vec![0usize; nparts];
    let track_rows = ctx.sink.wants_sites();
    // a streamed input is gone when keys are merged: count the rows' lines now
    let track_lines = track_rows && !ctx.origin.whole;
    let mut row_starts: Vec<Vec<u32>> = vec![Vec::new(); nparts];
    let mut row_lines: Vec<Vec<u32>> = vec![Vec::new(); nparts];
    let (mut line_pos, mut line_count) = (range.start, 0u64);
    let mut line_of_row = |at: usize| -> u32 {
        line_count += line_ends(data, line_pos..at);
        line_pos = at;
        line_count as u32
    };
    let mut pids: Vec<u32> = Vec::new();
    let mut order: Vec<u32> = Vec::new();
    let mut bounds: Vec<usize> = Vec::new();
    let mut done_at = range.start;
    loop {
        if ctx.ctl.cancel.load(Relaxed) || ctx.failed.load(Relaxed) < index || ctx.sink.failed() {
            return Err(TaskFailure::Abandoned);
        }
        let more = match scanner.next_batch(&mut batch, BATCH_ROWS) {
            Ok(more) => more,
            // records before the broken one may hold an earlier (value) error
            Err(e) => {
                return Err(first_value_error(ctx, &batch)
                    .unwrap_or_else(|| ctx.scan_error(e))
                    .into());
            }
        };
        let rows = batch.rows();
        let pos = scanner.position().min(data.len()).max(done_at);
        // One UTF-8 check for the whole batch: when its bytes are valid UTF-8 and the
        // special characters are ASCII, every field (cut at ASCII bytes) is valid UTF-8.
        let valid_utf8 = ctx.ascii_specials
            && simdutf8::basic::from_utf8(&data[batch_start(&batch, pos)..pos]).is_ok();
        if nparts == 1 {
            for (c, b) in builders[0].iter_mut().enumerate() {
                let fields = batch
                    .column(data, c)
                    .map(|(bytes, quoted)| Field { bytes, quoted });
                let appended = if valid_utf8 {
                    // SAFETY: the batch's bytes are valid UTF-8 (checked above) and fields
                    // are cut at ASCII delimiters, quotes and newlines, never inside a
                    // multi-byte character; unescaping only removes ASCII quotes/escapes.
                    unsafe { b.append_fields_valid_utf8(fields, &ctx.null) }
                } else {
                    b.append_fields(fields, &ctx.null)
                };
                appended.map_err(|e| earliest_error(ctx, &batch, e.index, c, e.error))?;
            }
            part_rows[0] += rows;
            if track_rows {
                row_starts[0].extend((0..rows).map(|r| (batch.row_start(r) - range.start) as u32));
            }
            if track_lines {
                row_lines[0].extend((0..rows).map(|r| line_of_row(batch.row_start(r))));
            }
        } else {
            let key = ctx.key_column.expect("partitioned table has a key");
            let mut kb = ColumnBuilder::new(&ctx.columns[key].ty, true, rows, 0);
            kb.append_fields((0..rows).map(|r| field(&batch, data, r, key)), &ctx.null)
                .map_err(|e| earliest_error(ctx, &batch, e.index, key, e.error))?;
            let key_array: ArrayRef = kb.finish();
            partition_ids(&key_array, nparts, &mut pids);
            if track_lines {
                for (r, &p) in pids.iter().enumerate() {
                    let line = line_of_row(batch.row_start(r));
                    row_lines[p as usize].push(line);
                }
            }
            group_rows(&pids, nparts, &mut order, &mut bounds);
            for p in 0..nparts {
                let rows_p = &order[bounds[p]..bounds[p + 1]];
                if rows_p.is_empty() {
                    continue;
                }
                for (c, b) in builders[p].iter_mut().enumerate() {
                    let fields = rows_p.iter().map(|&r| field(&batch, data, r as usize, c));
                    let appended = if valid_utf8 {
                        // SAFETY: as above, the batch was validated as UTF-8 at once.
                        unsafe { b.append_fields_valid_utf8(fields, &ctx.null) }
                    } else {
                        b.append_fields(fields, &ctx.null)
                    };
                    appended.map_err(|e| {
                        earliest_error(ctx, &batch, rows_p[e.index] as usize, c, e.error)
                    })?;
                }
                part_rows[p] += rows_p.len();
                if track_rows {
                    row_starts[p].extend(
                        rows_p
                            .iter()
                            .map(|&r| (batch.row_start(r as usize) - range.start) as u32),
                    );
                }
            }
        }
        ctx.ctl
            .bytes_done
            .fetch_add((pos - done_at) as u64, Relaxed);
        done_at = pos;
        if !more {
            break;
        }
    }
    // the bytes of the chunk before its first record belong to the previous task's widow
    ctx.ctl.bytes_done.fetch_add(
        (range.end.saturating_sub(done_at)).min(range.len()) as u64,
        Relaxed,
    );
    let str_bytes: Vec<usize> = (0..ncols)
        .map(|c| builders.iter().map(|bs| bs[c].value_bytes()).sum())
        .collect();
    ctx.hints
        .record(done_at.saturating_sub(start), &part_rows, &str_bytes);
    let buffers: Vec<Option<RecordBatch>> = builders
        .into_iter()
        .zip(&part_rows)
        .map(|(mut bs, &n)| {
            (n > 0).then(|| {
                let arrays: Vec<ArrayRef> = bs.iter_mut().map(ColumnBuilder::finish).collect();
                RecordBatch::try_new(ctx.schema.clone(), arrays).expect("builders match the schema")
            })
        })
        .collect();
    let sites = if track_rows {
        Sites::Chunk {
            start: ctx.origin.byte + range.start as u64,
            offsets: row_starts,
            lines: track_lines.then(|| (ctx.origin.lines + ctx.chunk_lines[index], row_lines)),
        }
    } else {
        Sites::None
    };
    Ok((buffers, sites))
}

/// The error of the first invalid field in input order (row by row, then column by column),
/// given an invalid field at `row`, `col` found by column-at-a-time deserialization.
#[cold]
#[inline(never)]
fn earliest_error(
    ctx: &LoadCtx<'_>,
    batch: &FieldBatch,
    row: usize,
    col: usize,
    error: wireload_types::ValueError,
) -> LoadError {
    let mut best = (row, col, error);
    for (c, column) in ctx.columns.iter().enumerate() {
        let upto = if c < best.1 { best.0 + 1 } else { best.0 };
        let mut b = ColumnBuilder::new(&column.ty, column.nullable, 0, 0);
        if let Err(e) = b.append_fields((0..upto).map(|r| field(batch, ctx.data, r, c)), &ctx.null)
            && (e.index, c) < (best.0, best.1)
        {
            best = (e.index, c, e.error);
        }
    }
    ctx.value_error(batch, best.0, best.1, best.2)
}

/// The first invalid value among the records of `batch`, in input order.
#[cold]
#[inline(never)]
fn first_value_error(ctx: &LoadCtx<'_>, batch: &FieldBatch) -> Option<LoadError> {
    let mut best: Option<(usize, usize, wireload_types::ValueError)> = None;
    for (c, column) in ctx.columns.iter().enumerate() {
        let mut b = ColumnBuilder::new(&column.ty, column.nullable, 0, 0);
        if let Err(e) = b.append_fields(
            (0..batch.rows()).map(|r| field(batch, ctx.data, r, c)),
            &ctx.null,
        ) && best.as_ref().is_none_or(|(r, _, _)| e.index < *r)
        {
            best = Some((e.index, c, e.error));
        }
    }
    best.map(|(r, c, e)| ctx.value_error(batch, r, c, e))
}

/// Offset of the first byte of `batch` (its first record, or `end` when it is empty).
fn batch_start(batch: &FieldBatch, end: usize) -> usize {
    if batch.rows() > 0 {
        batch.row_start(0).min(end)
    } else {
        end
    }
}

/// Field `c` of row `r` as the deserializers take it.
#[inline(always)]
fn field<'a>(batch: &'a FieldBatch, data: &'a [u8], r: usize, c: usize) -> Field<'a> {
    let (bytes, quoted) = batch.field(data, r, c);
    Field { bytes, quoted }
}

/// Counting sort of row numbers by partition: rows of partition `p` are
/// `order[bounds[p]..bounds[p + 1]]`, in input order.
fn group_rows(pids: &[u32], n: usize, order: &mut Vec<u32>, bounds: &mut Vec<usize>) {
    bounds.clear();
    bounds.resize(n + 1, 0);
    for &p in pids {
        bounds[p as usize + 1] += 1;
    }
    for p in 0..n {
        bounds[p + 1] += bounds[p];
    }
    order.clear();
    order.resize(pids.len(), 0);
    let mut next = bounds.clone();
    for (r, &p) in pids.iter().enumerate() {
        order[next[p as usize]] = r as u32;
        next[p as usize] += 1;
    }
}

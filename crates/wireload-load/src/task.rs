//! One chunk task: scan the records that start in the chunk and deserialize them, column
//! by column, into the task's partition buffers.

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;

use arrow::array::ArrayRef;
use arrow::record_batch::RecordBatch;
use wireload_csv::{FieldBatch, QuoteState, ScanErrorKind, Scanner, first_record_start, line_ends};
use wireload_types::{ColumnBuilder, Field};

use crate::options::FieldSource;
use crate::parse::{GENERATED, LoadCtx};
use crate::reject::ChunkRejects;
use wireload_publish::LoadError;
use wireload_publish::{Sites, partition_ids};

/// Records deserialized per batch: the field index of a batch stays in L2.
const BATCH_ROWS: usize = 2048;

/// The largest field batch a thread keeps for its next task (the span table of 2,048
/// records of up to 255 fields).
const KEPT_BATCH_BYTES: usize = 4 << 20;

thread_local! {
    /// The field batch of this thread's last fast-path task, kept for its next one: a new
    /// batch's span table (a few hundred KiB) is fresh memory, faulted in page by page
    /// again by every chunk.
    static SPARE_BATCH: std::cell::Cell<Option<FieldBatch>> = const { std::cell::Cell::new(None) };
}

/// An empty field batch for records of `ncols` fields: this thread's kept one if it has
/// that width.
fn field_batch(ncols: usize) -> FieldBatch {
    match SPARE_BATCH.take() {
        Some(batch) if batch.ncols() == ncols => batch,
        _ => FieldBatch::new(ncols),
    }
}

/// Keeps `batch` for this thread's next task, unless it is large.
fn keep_batch(batch: FieldBatch) {
    if batch.ncols() * BATCH_ROWS * 8 <= KEPT_BATCH_BYTES {
        SPARE_BATCH.set(Some(batch));
    }
}

/// Why a task stopped without output.
pub(crate) enum TaskFailure {
    /// a real error in this chunk
    Error(LoadError),
    /// an earlier chunk failed or the load was cancelled: this chunk's result does not matter
    Abandoned,
    /// ON_ERROR ignore: the fast path met a bad record, having counted the chunk's bytes
    /// up to this offset as done; the chunk goes again on the careful path
    Careful(usize),
}

impl From<LoadError> for TaskFailure {
    fn from(e: LoadError) -> Self {
        TaskFailure::Error(e)
    }
}

/// What a chunk task makes: one buffer per partition (None when it got no rows) and where
/// their rows came from.
pub(crate) type Buffers = (Vec<Option<RecordBatch>>, Sites);

/// Runs the task of chunk `index` of the window: the fast path, or (ON_ERROR ignore) the
/// careful path when the fast one meets a bad record.
pub(crate) fn run(
    ctx: &LoadCtx<'_>,
    index: usize,
    range: Range<usize>,
    state: QuoteState,
) -> Result<Buffers, TaskFailure> {
    let start = if index == 0 {
        range.start
    } else {
        first_record_start(ctx.data, &ctx.scan, range.start, state)
    };
    if start >= range.end {
        ctx.ctl.bytes_done.fetch_add(range.len() as u64, Relaxed);
        return Ok((vec![None; ctx.partitions], Sites::None));
    }
    match fast(ctx, index, range.clone(), start) {
        Err(TaskFailure::Careful(done_at)) => careful(ctx, index, range, start, done_at),
        other => other,
    }
}

/// The failure for the invalid field `col` of record `row` of `batch`: the error of the
/// first invalid field in input order, or (ON_ERROR ignore) the careful path.
#[cold]
#[inline(never)]
fn value_failure(
    ctx: &LoadCtx<'_>,
    batch: &FieldBatch,
    row: usize,
    col: usize,
    error: wireload_types::ValueError,
    done_at: usize,
) -> TaskFailure {
    if ctx.ignore {
        TaskFailure::Careful(done_at)
    } else {
        earliest_error(ctx, batch, row, col, error).into()
    }
}

/// Empty builders for the partition buffers of a chunk of `len` bytes.
fn new_builders(ctx: &LoadCtx<'_>, len: usize) -> Vec<Vec<ColumnBuilder>> {
    let sizing = ctx.hints.sizing(len);
    (0..ctx.partitions)
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
                    .with_formats(&ctx.formats)
                })
                .collect()
        })
        .collect()
}

/// The fast path of a chunk: batches of records deserialized column by column, with no
/// check beyond what deserializing does; stops at the first bad record.
fn fast(
    ctx: &LoadCtx<'_>,
    index: usize,
    range: Range<usize>,
    start: usize,
) -> Result<Buffers, TaskFailure> {
    let data = ctx.data;
    let nparts = ctx.partitions;
    // the input field of each column (the records may have fields no column reads)
    let fields = ctx.proj.fields.as_slice();
    let nfields = ctx.proj.nfields;
    let mut builders = new_builders(ctx, range.len());
    let mut scanner = Scanner::new(&ctx.scan, data, start, range.end, nfields);
    let mut batch = field_batch(nfields);
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
            Err(_) if ctx.ignore => return Err(TaskFailure::Careful(done_at)),
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
            for ((c, b), &f) in builders[0].iter_mut().enumerate().zip(fields) {
                if f == GENERATED {
                    append_generated(ctx, c, b, rows)?;
                    continue;
                }
                let values = batch
                    .column(data, f)
                    .map(|(bytes, quoted)| Field { bytes, quoted });
                let appended = if valid_utf8 {
                    // SAFETY: the batch's bytes are valid UTF-8 (checked above) and fields
                    // are cut at ASCII delimiters, quotes and newlines, never inside a
                    // multi-byte character; unescaping only removes ASCII quotes/escapes.
                    unsafe { b.append_fields_valid_utf8(values, &ctx.null) }
                } else {
                    b.append_fields(values, &ctx.null)
                };
                appended.map_err(|e| value_failure(ctx, &batch, e.index, c, e.error, done_at))?;
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
            let key_field = fields[key];
            let mut kb =
                ColumnBuilder::new(&ctx.columns[key].ty, true, rows, 0).with_formats(&ctx.formats);
            kb.append_fields(
                (0..rows).map(|r| field(&batch, data, r, key_field)),
                &ctx.null,
            )
            .map_err(|e| value_failure(ctx, &batch, e.index, key, e.error, done_at))?;
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
                for ((c, b), &f) in builders[p].iter_mut().enumerate().zip(fields) {
                    if f == GENERATED {
                        append_generated(ctx, c, b, rows_p.len())?;
                        continue;
                    }
                    let values = rows_p.iter().map(|&r| field(&batch, data, r as usize, f));
                    let appended = if valid_utf8 {
                        // SAFETY: as above, the batch was validated as UTF-8 at once.
                        unsafe { b.append_fields_valid_utf8(values, &ctx.null) }
                    } else {
                        b.append_fields(values, &ctx.null)
                    };
                    appended.map_err(|e| {
                        value_failure(ctx, &batch, rows_p[e.index] as usize, c, e.error, done_at)
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
    keep_batch(batch);
    finish(
        ctx,
        index,
        &range,
        start,
        done_at,
        builders,
        &part_rows,
        track_rows.then_some((row_starts, track_lines.then_some(row_lines))),
    )
}

/// The task's output: the rest of the chunk's bytes counted as done, the allocation hints
/// fed, the builders finished into buffers, and the rows' sites (`sites`: each buffer
/// row's offset from the chunk start and, for a streamed input, its line ends since it).
#[allow(clippy::too_many_arguments)]
#[allow(clippy::type_complexity)]
fn finish(
    ctx: &LoadCtx<'_>,
    index: usize,
    range: &Range<usize>,
    start: usize,
    done_at: usize,
    builders: Vec<Vec<ColumnBuilder>>,
    part_rows: &[usize],
    sites: Option<(Vec<Vec<u32>>, Option<Vec<Vec<u32>>>)>,
) -> Result<Buffers, TaskFailure> {
    let ncols = ctx.columns.len();
    // the bytes of the chunk before its first record belong to the previous task's widow
    ctx.ctl.bytes_done.fetch_add(
        (range.end.saturating_sub(done_at)).min(range.len()) as u64,
        Relaxed,
    );
    let str_bytes: Vec<usize> = (0..ncols)
        .map(|c| builders.iter().map(|bs| bs[c].value_bytes()).sum())
        .collect();
    ctx.hints
        .record(done_at.saturating_sub(start), part_rows, &str_bytes);
    let buffers: Vec<Option<RecordBatch>> = builders
        .into_iter()
        .zip(part_rows)
        .map(|(mut bs, &n)| {
            (n > 0).then(|| {
                let arrays: Vec<ArrayRef> = bs.iter_mut().map(ColumnBuilder::finish).collect();
                RecordBatch::try_new(ctx.schema.clone(), arrays).expect("builders match the schema")
            })
        })
        .collect();
    let sites = match sites {
        Some((row_starts, row_lines)) => Sites::Chunk {
            start: ctx.origin.byte + range.start as u64,
            offsets: row_starts,
            lines: row_lines.map(|l| (ctx.origin.lines + ctx.chunk_lines[index], l)),
        },
        None => Sites::None,
    };
    Ok((buffers, sites))
}

/// The careful path of a chunk (ON_ERROR ignore), taken when the fast path met a bad
/// record: the chunk is scanned again batch by batch; each column of a batch is first
/// deserialized into a scratch builder to find the records with an invalid value, and only
/// the other records are appended; a broken record is noted and the scan goes on after it
/// (where [`crate::reject::record_end`] ends it). Every rejected record is noted in
/// `ctx.rejects`. `done_at`: the chunk's bytes are counted as done up to there.
#[cold]
#[inline(never)]
fn careful(
    ctx: &LoadCtx<'_>,
    index: usize,
    range: Range<usize>,
    start: usize,
    mut done_at: usize,
) -> Result<Buffers, TaskFailure> {
    let data = ctx.data;
    let nfields = ctx.proj.nfields;
    let mut builders = new_builders(ctx, range.len());
    let track_rows = ctx.sink.wants_sites();
    let mut rows = GoodRows {
        part_rows: vec![0; ctx.partitions],
        row_starts: vec![Vec::new(); ctx.partitions],
        row_lines: (track_rows && !ctx.origin.whole).then(|| vec![Vec::new(); ctx.partitions]),
        track_rows,
        chunk_start: range.start,
        line_pos: range.start,
        line_count: 0,
    };
    let mut rejects = ChunkRejects::new(range.start, ctx.room);
    let mut batch = FieldBatch::new(nfields);
    let mut good: Vec<u32> = Vec::new();
    let mut progress = |pos: usize| {
        let pos = pos.min(data.len());
        if pos > done_at {
            ctx.ctl
                .bytes_done
                .fetch_add((pos - done_at) as u64, Relaxed);
            done_at = pos;
        }
    };
    let mut from = start;
    'records: while from < range.end {
        let mut scanner = Scanner::new(&ctx.scan, data, from, range.end, nfields);
        loop {
            if ctx.ctl.cancel.load(Relaxed) || ctx.failed.load(Relaxed) < index || ctx.sink.failed()
            {
                return Err(TaskFailure::Abandoned);
            }
            let scanned = scanner.next_batch(&mut batch, BATCH_ROWS);
            // the records in the batch are whole ones, before a broken one if any
            good_rows(ctx, &batch, &mut rejects, &mut good);
            rows.append(ctx, &batch, &good, &mut builders)?;
            match scanned {
                Ok(more) => {
                    progress(scanner.position());
                    if !more {
                        break 'records;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind,
                        ScanErrorKind::QuotedRecordDelimiter | ScanErrorKind::RecordTooLarge
                    ) =>
                {
                    // not a bad record but a load that cannot go on: MODE fast met a quoted
                    // record delimiter, or a record too large for wireload
                    return Err(ctx.scan_error(e).into());
                }
                Err(e) => {
                    from = ctx.reject_broken(&mut rejects, e);
                    progress(from);
                    continue 'records;
                }
            }
        }
    }
    ctx.rejects
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .add(index, rejects);
    let GoodRows {
        part_rows,
        row_starts,
        row_lines,
        ..
    } = rows;
    finish(
        ctx,
        index,
        &range,
        start,
        done_at,
        builders,
        &part_rows,
        track_rows.then_some((row_starts, row_lines)),
    )
}

/// The rows of `batch` whose every column's field is valid, into `good`; the others are
/// noted in `rejects` (each with its first invalid field in input order), in input order.
/// Fields no column reads are not looked at.
fn good_rows(
    ctx: &LoadCtx<'_>,
    batch: &FieldBatch,
    rejects: &mut ChunkRejects,
    good: &mut Vec<u32>,
) {
    let n = batch.rows();
    // the first invalid column of each bad row, with its error
    let mut bad: Vec<(usize, usize, wireload_types::ValueError)> = Vec::new();
    let mut is_bad = vec![false; n];
    for &c in &ctx.proj.by_field {
        let (column, f) = (&ctx.columns[c], ctx.proj.fields[c]);
        let mut from = 0;
        while from < n {
            let mut b =
                ColumnBuilder::new(&column.ty, column.nullable, 0, 0).with_formats(&ctx.formats);
            match b.append_fields((from..n).map(|r| field(batch, ctx.data, r, f)), &ctx.null) {
                Ok(()) => break,
                Err(e) => {
                    let r = from + e.index;
                    if !is_bad[r] {
                        is_bad[r] = true;
                        bad.push((r, c, e.error));
                    }
                    from = r + 1;
                }
            }
        }
    }
    bad.sort_by_key(|&(r, _, _)| r);
    good.clear();
    let mut next_bad = bad.into_iter().peekable();
    for r in 0..n {
        match next_bad.next_if(|&(row, _, _)| row == r) {
            Some((_, c, error)) => ctx.reject_value(rejects, batch, r, c, error),
            None => good.push(r as u32),
        }
    }
}

/// The good rows of a chunk on the careful path: rows per partition and their sites.
struct GoodRows {
    part_rows: Vec<usize>,
    row_starts: Vec<Vec<u32>>,
    /// for a streamed input with sites: line ends from the chunk start per row
    row_lines: Option<Vec<Vec<u32>>>,
    track_rows: bool,
    chunk_start: usize,
    /// line ends counted from the chunk start up to `line_pos`
    line_pos: usize,
    line_count: u64,
}

impl GoodRows {
    /// Appends the rows `rows` (valid ones) of `batch` to the partition builders.
    fn append(
        &mut self,
        ctx: &LoadCtx<'_>,
        batch: &FieldBatch,
        rows: &[u32],
        builders: &mut [Vec<ColumnBuilder>],
    ) -> Result<(), TaskFailure> {
        if rows.is_empty() {
            return Ok(());
        }
        let data = ctx.data;
        let nparts = ctx.partitions;
        let checked = |r: Result<(), wireload_types::FieldError>| {
            r.map_err(|e| {
                LoadError::Internal(format!("a value checked valid failed to load: {}", e.error))
            })
        };
        // the partition of each row, and rows grouped by partition (in input order)
        let mut pids = vec![0u32; rows.len()];
        if nparts > 1 {
            let key = ctx.key_column.expect("partitioned table has a key");
            let key_field = ctx.proj.fields[key];
            let mut kb = ColumnBuilder::new(&ctx.columns[key].ty, true, rows.len(), 0)
                .with_formats(&ctx.formats);
            checked(
                kb.append_fields(
                    rows.iter()
                        .map(|&r| field(batch, data, r as usize, key_field)),
                    &ctx.null,
                ),
            )?;
            let key_array: ArrayRef = kb.finish();
            partition_ids(&key_array, nparts, &mut pids);
        }
        let (mut order, mut bounds) = (Vec::new(), Vec::new());
        group_rows(&pids, nparts, &mut order, &mut bounds);
        if let Some(lines) = &mut self.row_lines {
            for (&r, &p) in rows.iter().zip(&pids) {
                let at = batch.row_start(r as usize);
                self.line_count += line_ends(data, self.line_pos..at);
                self.line_pos = at;
                lines[p as usize].push(self.line_count as u32);
            }
        }
        for p in 0..nparts {
            let rows_p = &order[bounds[p]..bounds[p + 1]];
            if rows_p.is_empty() {
                continue;
            }
            for ((c, b), &f) in builders[p].iter_mut().enumerate().zip(&ctx.proj.fields) {
                if f == GENERATED {
                    append_generated(ctx, c, b, rows_p.len())?;
                    continue;
                }
                checked(
                    b.append_fields(
                        rows_p
                            .iter()
                            .map(|&i| field(batch, data, rows[i as usize] as usize, f)),
                        &ctx.null,
                    ),
                )?;
            }
            self.part_rows[p] += rows_p.len();
            if self.track_rows {
                self.row_starts[p].extend(rows_p.iter().map(|&i| {
                    (batch.row_start(rows[i as usize] as usize) - self.chunk_start) as u32
                }));
            }
        }
        Ok(())
    }
}

/// The error of the first invalid field in input order (row by row, then field by field),
/// given an invalid value of column `col` at `row` found by column-at-a-time deserialization.
#[cold]
#[inline(never)]
fn earliest_error(
    ctx: &LoadCtx<'_>,
    batch: &FieldBatch,
    row: usize,
    col: usize,
    error: wireload_types::ValueError,
) -> LoadError {
    let fields = &ctx.proj.fields;
    let mut best = (row, col, error);
    for &c in &ctx.proj.by_field {
        let (column, f) = (&ctx.columns[c], fields[c]);
        let upto = if f < fields[best.1] {
            best.0 + 1
        } else {
            best.0
        };
        let mut b =
            ColumnBuilder::new(&column.ty, column.nullable, 0, 0).with_formats(&ctx.formats);
        if let Err(e) = b.append_fields((0..upto).map(|r| field(batch, ctx.data, r, f)), &ctx.null)
            && (e.index, f) < (best.0, fields[best.1])
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
    // in input field order: of two invalid fields in a row, the first is named
    for &c in &ctx.proj.by_field {
        let (column, f) = (&ctx.columns[c], ctx.proj.fields[c]);
        let mut b =
            ColumnBuilder::new(&column.ty, column.nullable, 0, 0).with_formats(&ctx.formats);
        if let Err(e) = b.append_fields(
            (0..batch.rows()).map(|r| field(batch, ctx.data, r, f)),
            &ctx.null,
        ) && best.as_ref().is_none_or(|(r, _, _)| e.index < *r)
        {
            best = Some((e.index, c, e.error));
        }
    }
    best.map(|(r, c, e)| ctx.value_error(batch, r, c, e))
}

/// Appends `rows` values of the generated column `c` (NULL, or the input's name), which
/// [`Projection::new`](crate::parse::Projection::new) made sure fit it.
fn append_generated(
    ctx: &LoadCtx<'_>,
    c: usize,
    b: &mut ColumnBuilder,
    rows: usize,
) -> Result<(), TaskFailure> {
    let value = match ctx.proj.generated[c] {
        Some(FieldSource::FileName) => Field::quoted(ctx.file.as_bytes()),
        _ => Field::unquoted(&ctx.null),
    };
    b.append_fields(std::iter::repeat_n(value, rows), &ctx.null)
        .map_err(|e| {
            LoadError::Internal(format!(
                "generated column {} refused its value: {}",
                ctx.columns[c].name, e.error
            ))
            .into()
        })
}

/// Offset of the first byte of `batch` (its first record, or `end` when it is empty).
fn batch_start(batch: &FieldBatch, end: usize) -> usize {
    if batch.rows() > 0 {
        batch.row_start(0).min(end)
    } else {
        end
    }
}

/// Input field `c` of row `r` as the deserializers take it.
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

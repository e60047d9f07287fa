//! The load of one source: open, header, chunks, parallel tasks, merge, publish.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use arrow::datatypes::SchemaRef;
use rayon::prelude::*;
use wireload_csv::{
    FieldBatch, ScanConfig, ScanError, ScanErrorKind, chunk_ranges, chunk_start_states, line_of,
    reference::first_record, skip_bom,
};
use wireload_storage::{Partitioning, RowId, Table, TableDef};
use wireload_types::{ColumnDef, ValueError};

use crate::error::{LoadError, Position};
use crate::hints::Hints;
use crate::indexing::{LoadIndexes, version_row};
use crate::merge::{InsertMerge, chunk_merge, copy_merge};
use crate::options::{LoadControl, LoadOptions, LoadReport, MergeStrategy};
use crate::source::Source;
use crate::task::{self, TaskFailure};

/// Longest piece of offending text quoted in an error message.
const SNIPPET: usize = 60;

/// Everything a chunk task reads.
pub(crate) struct LoadCtx<'a> {
    pub data: &'a [u8],
    pub file: String,
    pub scan: ScanConfig,
    pub columns: &'a [ColumnDef],
    pub schema: SchemaRef,
    pub null: Vec<u8>,
    pub partitions: usize,
    pub key_column: Option<usize>,
    pub hints: Hints,
    /// delimiter, quote and escape are ASCII, so fields never split a UTF-8 character
    pub ascii_specials: bool,
    pub ctl: &'a LoadControl,
    /// lowest index of a chunk that failed (usize::MAX: none)
    pub failed: AtomicUsize,
    /// the table's definition
    pub def: &'a TableDef,
    /// the indexes the tasks fill
    pub indexes: LoadIndexes,
}

impl LoadCtx<'_> {
    fn position(&self, byte: usize, column: usize) -> Box<Position> {
        Box::new(Position {
            file: self.file.clone(),
            line: line_of(self.data, byte),
            column,
            column_name: column
                .checked_sub(1)
                .and_then(|c| self.columns.get(c))
                .map(|c| c.name.clone()),
            byte: byte as u64,
        })
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
        let pos = self.position(e.at, e.field);
        if e.kind == ScanErrorKind::QuotedRecordDelimiter {
            return LoadError::QuotedNewlineInFastMode { pos };
        }
        let text = match e.kind {
            ScanErrorKind::FieldCount { .. } => self.snippet(e.record_start),
            _ => self.snippet(e.at),
        };
        LoadError::Syntax {
            pos,
            message: e.kind.to_string(),
            text,
            expected: e.expected(),
        }
    }

    /// The load error for an invalid value in field `col` of record `row` of `batch`.
    #[cold]
    pub(crate) fn value_error(
        &self,
        batch: &FieldBatch,
        row: usize,
        col: usize,
        error: ValueError,
    ) -> LoadError {
        let (bytes, _) = batch.field(self.data, row, col);
        let mut text = String::from_utf8_lossy(bytes).into_owned();
        if text.chars().count() > SNIPPET {
            text = text.chars().take(SNIPPET).collect::<String>() + "...";
        }
        let expected = error.expected();
        LoadError::Value {
            pos: self.position(batch.field_offset(row, col), col + 1),
            error,
            text,
            expected,
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

/// Where the data records of `data` start: after a BOM and, with a header, after the
/// header record (an error names the header's problem).
pub fn data_start(
    data: &[u8],
    scan: &ScanConfig,
    header: bool,
    file: &str,
) -> Result<usize, LoadError> {
    let start = skip_bom(data);
    if !header {
        return Ok(start);
    }
    match first_record(scan, data, start) {
        Ok(Some((_, next))) => Ok(next),
        Ok(None) => Err(LoadError::Syntax {
            pos: Box::new(Position {
                file: file.to_string(),
                line: 1,
                column: 1,
                column_name: None,
                byte: start as u64,
            }),
            message: "the input is empty, but a header record was expected".into(),
            text: String::new(),
            expected: "a header record".into(),
        }),
        Err(e) => Err(LoadError::Syntax {
            pos: Box::new(Position {
                file: file.to_string(),
                line: line_of(data, e.at),
                column: e.field,
                column_name: None,
                byte: e.at as u64,
            }),
            message: format!("in the header: {}", e.kind),
            text: String::from_utf8_lossy(&data[e.at..(e.at + SNIPPET).min(data.len())])
                .into_owned(),
            expected: e.expected(),
        }),
    }
}

/// See [`crate::load_into`].
pub(crate) fn load(
    table: &Table,
    source: &Source,
    opts: &LoadOptions,
    ctl: &LoadControl,
) -> Result<LoadReport, LoadError> {
    let t0 = Instant::now();
    let scan = ScanConfig::new(&opts.dialect, opts.mode).map_err(|e| LoadError::Options(e.0))?;
    let file = source.name();
    let input = source.open()?;
    let data = input.bytes();
    ctl.bytes_total.store(data.len() as u64, Relaxed);
    let start = data_start(data, &scan, opts.dialect.header, &file)?;

    let def = table.def();
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
    let chunks = chunk_ranges(start, data.len(), chunk_size);
    let states = chunk_start_states(data, &chunks, &scan, opts.mode);
    let sample = &data[start..(start + (1 << 20)).min(data.len())];
    // One writer at a time; readers keep their snapshots throughout.
    let guard = table.begin_write();
    let ctx = LoadCtx {
        data,
        file,
        scan,
        columns: &def.schema.columns,
        schema: def.arrow_schema.clone(),
        null: opts.dialect.null.clone(),
        partitions,
        key_column,
        hints: Hints::new(sample, def.schema.columns.len(), partitions),
        ascii_specials: [
            Some(opts.dialect.delimiter),
            opts.dialect.quote,
            opts.dialect.escape,
        ]
        .iter()
        .flatten()
        .all(|b| b.is_ascii()),
        ctl,
        failed: AtomicUsize::new(usize::MAX),
        def,
        indexes: LoadIndexes::new(def, guard.base()),
    };
    let insert = (opts.merge == MergeStrategy::Insert)
        .then(|| InsertMerge::new(&def.schema.columns, partitions));
    let results: Vec<Result<task::TaskOutput, TaskFailure>> = chunks
        .par_iter()
        .zip(states.par_iter())
        .enumerate()
        .map(|(i, (range, &state))| {
            let mut r = task::run(&ctx, i, range.clone(), state);
            match &mut r {
                Err(_) => {
                    ctx.failed.fetch_min(i, Relaxed);
                }
                // the insert merge takes the buffers now, so they are freed once inserted
                Ok(out) => {
                    if let Some(ins) = &insert {
                        ins.offer(i, std::mem::take(&mut out.buffers));
                    }
                }
            }
            r
        })
        .collect();

    let mut outputs = Vec::with_capacity(results.len());
    let mut rows = 0u64;
    let mut index_parts: Vec<Vec<wireload_index::Index>> = vec![Vec::new(); ctx.indexes.len()];
    let mut part_rows = Vec::with_capacity(results.len());
    let mut row_starts = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(out) => {
                rows += out.rows;
                outputs.push(out.buffers);
                for (all, mine) in index_parts.iter_mut().zip(out.indexes) {
                    all.extend(mine);
                }
                part_rows.push(out.part_rows);
                row_starts.push(out.row_starts);
            }
            Err(TaskFailure::Error(e)) => return Err(e),
            Err(TaskFailure::Abandoned) => {
                return Err(if ctl.cancel.load(Relaxed) {
                    LoadError::Cancelled
                } else {
                    unreachable!("a chunk is abandoned only after an earlier one failed")
                });
            }
        }
    }
    if ctl.cancel.load(Relaxed) {
        return Err(LoadError::Cancelled);
    }
    // where each buffer's first row lands: chunk merge appends each buffer as a chunk; copy
    // and insert merges make one chunk per partition with the buffers in task order
    let base = guard.base();
    let base_chunks = base.chunk_counts();
    let mut placement = vec![RowId::default(); part_rows.len() * partitions];
    for (p, &first_chunk) in base_chunks.iter().enumerate() {
        let (mut chunk, mut row) = (first_chunk, 0usize);
        for (t, pr) in part_rows.iter().enumerate() {
            if pr[p] == 0 {
                continue;
            }
            placement[t * partitions + p] = RowId {
                partition: p as u32,
                chunk: chunk as u32,
                row: row as u32,
            };
            match opts.merge {
                MergeStrategy::Chunk => chunk += 1,
                _ => row += pr[p],
            }
        }
    }
    // buffers and indexes merge side by side
    let (added, indexes) = rayon::join(
        || match (opts.merge, insert) {
            (MergeStrategy::Insert, Some(ins)) => ins.finish(&ctx.schema),
            (MergeStrategy::Copy, _) => copy_merge(outputs, partitions, &ctx.schema),
            _ => chunk_merge(outputs, partitions),
        },
        || {
            if ctx.indexes.is_empty() {
                return Ok(Vec::new());
            }
            ctx.indexes
                .merge(index_parts, &|slot| placement[slot as usize])
        },
    );
    let indexes = match indexes {
        Ok(ix) => ix,
        Err((i, dup)) => {
            // name both rows: new ones by their input line, old ones as table rows
            let site = |e: wireload_index::EntryRef| match ctx.indexes.slot(i, e) {
                Some(slot) => {
                    let (t, p) = (slot as usize / partitions, slot as usize % partitions);
                    let byte = chunks[t].start + row_starts[t][p][e.pos() as usize] as usize;
                    crate::error::KeySite::Line {
                        file: ctx.file.clone(),
                        line: line_of(data, byte),
                        byte: byte as u64,
                    }
                }
                None => crate::error::KeySite::Table,
            };
            let at = match ctx.indexes.slot(i, dup.second) {
                Some(slot) => {
                    let mut id = placement[slot as usize];
                    id.row += dup.second.pos();
                    let chunk = id.chunk as usize - base_chunks[id.partition as usize];
                    (&added[id.partition as usize][chunk], id.row as usize)
                }
                None => version_row(base, ctx.indexes.base_row(i, dup.second)),
            };
            let key = ctx.indexes.key_text(i, at.0, at.1);
            return Err(ctx.indexes.duplicate_error(
                def,
                i,
                key,
                site(dup.first),
                site(dup.second),
            ));
        }
    };
    let next = base.with_appended(added, indexes);
    guard.publish(next);
    Ok(LoadReport {
        table: table.name().to_string(),
        rows,
        bytes: data.len() as u64,
        seconds: t0.elapsed().as_secs_f64(),
        chunks: chunks.len(),
    })
}

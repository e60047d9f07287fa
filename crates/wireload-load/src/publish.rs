//! The append/publish stage, the one way rows enter a table: parse stages (CSV chunk tasks,
//! Arrow/Parquet batches, the GPU engine) hand over [`Unit`]s, numbered in input order; the
//! stage places every unit's partition buffers (chunk, copy or insert merge), merges their
//! buffer indexes into the table's indexes in parallel, and publishes the new version in one
//! step. Nothing is visible before that step, and a failure anywhere publishes nothing.
//!
//! A unit `n` of a table with `P` partitions fills *slots* `n * P .. n * P + P`, one per
//! partition buffer; slots name the buffers in the indexes until the merge places them.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow::record_batch::RecordBatch;
use wireload_csv::{FieldBatch, ScanConfig, Scanner, line_of};
use wireload_index::{EntryRef, Index};
use wireload_storage::{RowId, Table, TableDef, TableVersion};

use crate::error::{KeySite, LoadError};
use crate::indexing::{BufferKeyError, LoadIndexes, rebuild_indexes, version_row};
use crate::merge::{InsertMerge, chunk_merge, copy_merge};
use crate::options::{LoadControl, MergeStrategy};
use crate::partition::split_partitions;

/// What a parse stage hands to the append/publish stage: one buffer per table partition
/// (None when it got no rows), their buffer indexes, and where their rows came from.
pub struct Unit {
    pub(crate) buffers: Vec<Option<RecordBatch>>,
    /// rows of each partition buffer (kept when the insert merge takes the buffers)
    pub(crate) part_rows: Vec<usize>,
    /// `indexes[i]`: buffer indexes of table index `i`, one per non-empty buffer in
    /// partition order
    pub(crate) indexes: Vec<Vec<Index>>,
    pub(crate) sites: Sites,
}

impl Unit {
    /// Rows of every buffer.
    pub fn rows(&self) -> u64 {
        self.part_rows.iter().map(|&r| r as u64).sum()
    }
}

/// Where the rows of a unit came from, to name them in key errors. Only kept when the table
/// has a unique index (nothing else needs it).
#[derive(Debug, Clone, Default)]
pub enum Sites {
    /// Nothing to name the rows by.
    #[default]
    None,
    /// Records of a CSV chunk: each buffer row's record start, as an offset from the chunk
    /// start; with a streamed input also its line, as line ends between the chunk start and
    /// the record, after `lines_before` line ends before the chunk.
    Chunk {
        /// byte offset of the chunk in the input
        start: u64,
        /// per partition, per row: record start - chunk start
        offsets: Vec<Vec<u32>>,
        /// for streamed inputs: line ends before the chunk and per row since it
        lines: Option<(u64, Vec<Vec<u32>>)>,
    },
    /// Rows of a binary source (Arrow IPC, Parquet): each buffer row's row number in the
    /// source (0-based), when known.
    Rows {
        /// per partition, per row
        rows: Option<Vec<Vec<u64>>>,
    },
    /// Records of a range of a CSV input (the GPU engine's partitions): each buffer row's
    /// record number within the range, located by scanning the range when needed.
    Records {
        /// byte offset of the range in the input
        start: u64,
        /// byte length of the range
        len: u64,
        /// line ends before the range
        lines_before: u64,
        /// per partition, per row: the record number in the range
        records: Vec<Vec<u32>>,
        /// how to scan the range
        scan: ScanConfig,
        /// fields per record
        columns: usize,
    },
}

impl Sites {
    /// Where row `row` of partition buffer `p` came from; `input` is the whole input when the
    /// caller still has it.
    fn site(&self, file: &str, input: Option<&[u8]>, p: usize, row: usize) -> KeySite {
        match self {
            Sites::None => KeySite::Row {
                file: file.to_string(),
                row: None,
            },
            Sites::Chunk {
                start,
                offsets,
                lines,
            } => {
                let byte = start + u64::from(offsets[p][row]);
                let line = match (lines, input) {
                    (Some((before, per_row)), _) => before + u64::from(per_row[p][row]) + 1,
                    (None, Some(data)) => line_of(data, byte as usize),
                    (None, None) => 0,
                };
                KeySite::Line {
                    file: file.to_string(),
                    line,
                    byte,
                }
            }
            Sites::Rows { rows } => KeySite::Row {
                file: file.to_string(),
                row: rows.as_ref().map(|r| r[p][row] + 1),
            },
            Sites::Records {
                start,
                len,
                lines_before,
                records,
                scan,
                columns,
            } => {
                let record = records[p][row] as usize;
                let found = input.and_then(|data| {
                    let range = *start as usize..(*start + *len) as usize;
                    record_start(data.get(range)?, scan, *columns, record)
                });
                match (found, input) {
                    (Some(offset), Some(data)) => {
                        let range = &data[*start as usize..(*start + *len) as usize];
                        KeySite::Line {
                            file: file.to_string(),
                            line: lines_before + line_of(range, offset),
                            byte: start + offset as u64,
                        }
                    }
                    _ => KeySite::Row {
                        file: file.to_string(),
                        row: None,
                    },
                }
            }
        }
    }
}

/// The offset of record `n` (0-based) of `data`, scanning from its start (an error path).
fn record_start(data: &[u8], scan: &ScanConfig, columns: usize, n: usize) -> Option<usize> {
    let mut scanner = Scanner::new(scan, data, 0, data.len(), columns);
    let mut batch = FieldBatch::new(columns);
    let mut seen = 0usize;
    loop {
        let more = scanner.next_batch(&mut batch, 4096).ok()?;
        if n < seen + batch.rows() {
            return Some(batch.row_start(n - seen));
        }
        seen += batch.rows();
        if !more {
            return None;
        }
    }
}

/// The append/publish stage of one load. Parsing and indexing run beside every other
/// reader and writer; only [`Appender::publish`] (the merge) holds the table's writer lock.
/// Dropped without publishing, it publishes nothing.
pub struct Appender<'t> {
    table: &'t Table,
    /// the version the load began on (its indexes are what buffer indexes are built for)
    base: Arc<TableVersion>,
    file: String,
    merge: MergeStrategy,
    pub(crate) indexes: LoadIndexes,
    /// keep where rows came from (a unique index may have to name them)
    pub(crate) track_sites: bool,
    insert: Option<InsertMerge>,
    units: Mutex<BTreeMap<usize, Unit>>,
}

impl<'t> Appender<'t> {
    /// Starts appending to `table`, rows read from `file` (the name errors use), merged
    /// with `merge`. Takes no lock: other writes may publish until this one does.
    pub fn begin(table: &'t Table, file: &str, merge: MergeStrategy) -> Self {
        let base = table.snapshot();
        let def = table.def();
        let indexes = LoadIndexes::new(def, &base);
        let partitions = def.partitioning.count();
        Appender {
            table,
            file: file.to_string(),
            merge,
            track_sites: indexes.any_unique(),
            indexes,
            insert: (merge == MergeStrategy::Insert)
                .then(|| InsertMerge::new(&def.schema.columns, partitions)),
            units: Mutex::new(BTreeMap::new()),
            base,
        }
    }

    /// The name errors give the input.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The table's definition.
    pub fn def(&self) -> &TableDef {
        self.table.def()
    }

    /// True when units must say where their rows came from ([`Sites`]).
    pub fn wants_sites(&self) -> bool {
        self.track_sites
    }

    /// The unit of batch `batch` (rows in the table's Arrow schema, converted and checked
    /// already), number `n`: its rows split into the table's partitions and indexed. `sites`
    /// names the batch's rows in row order (split along with them); `input` is the whole
    /// input when the caller has it.
    pub fn unit_of_batch(
        &self,
        n: usize,
        batch: &RecordBatch,
        sites: Sites,
        input: Option<&[u8]>,
    ) -> Result<Unit, LoadError> {
        let def = self.def();
        let (parts, taken) =
            split_partitions(batch, def.partitioning, self.track_sites).map_err(|e| {
                LoadError::Mismatch {
                    file: self.file.clone(),
                    message: format!("cannot partition: {e}"),
                }
            })?;
        let sites = match (sites, taken) {
            (s, None) => s,
            (Sites::Rows { rows: Some(rows) }, Some(taken)) => Sites::Rows {
                rows: Some(
                    taken
                        .iter()
                        .map(|t| t.iter().map(|&i| rows[0][i as usize]).collect())
                        .collect(),
                ),
            },
            (
                Sites::Records {
                    start,
                    len,
                    lines_before,
                    records,
                    scan,
                    columns,
                },
                Some(taken),
            ) => Sites::Records {
                start,
                len,
                lines_before,
                records: taken
                    .iter()
                    .map(|t| t.iter().map(|&i| records[0][i as usize]).collect())
                    .collect(),
                scan,
                columns,
            },
            (s, Some(_)) => s,
        };
        let buffers: Vec<Option<RecordBatch>> = parts
            .into_iter()
            .map(|b| (b.num_rows() > 0).then_some(b))
            .collect();
        self.unit(n, buffers, sites, input)
    }

    /// The unit of partition buffers `buffers` (one per table partition, in the table's
    /// schema), number `n`: their buffer indexes built. `input` is the whole input when the
    /// caller has it (to name rows of a unique key by their line).
    pub fn unit(
        &self,
        n: usize,
        buffers: Vec<Option<RecordBatch>>,
        sites: Sites,
        input: Option<&[u8]>,
    ) -> Result<Unit, LoadError> {
        let nparts = buffers.len();
        let mut indexes: Vec<Vec<Index>> = vec![Vec::new(); self.indexes.len()];
        if !self.indexes.is_empty() {
            for (p, buf) in buffers.iter().enumerate() {
                let Some(batch) = buf else { continue };
                let slot = (n * nparts + p) as u32;
                let built = self.indexes.build(slot, batch).map_err(|e| {
                    let site = |row: usize| sites.site(&self.file, input, p, row);
                    self.buffer_key_error(e, batch, &site)
                })?;
                for (i, ix) in built.into_iter().enumerate() {
                    indexes[i].push(ix);
                }
            }
        }
        let part_rows = buffers
            .iter()
            .map(|b| b.as_ref().map_or(0, RecordBatch::num_rows))
            .collect();
        Ok(Unit {
            buffers,
            part_rows,
            indexes,
            sites: if self.track_sites { sites } else { Sites::None },
        })
    }

    /// The load error of a key problem inside one buffer.
    pub(crate) fn buffer_key_error(
        &self,
        e: BufferKeyError,
        batch: &RecordBatch,
        site: &dyn Fn(usize) -> KeySite,
    ) -> LoadError {
        let def = self.def();
        match e {
            BufferKeyError::Null { index, row, column } => {
                self.indexes.null_error(def, index, column, site(row))
            }
            BufferKeyError::Key { index, error } => self.indexes.key_error(index, error),
            BufferKeyError::Duplicate {
                index,
                first,
                second,
            } => self.indexes.duplicate_error(
                def,
                index,
                self.indexes.key_text(index, batch, second),
                site(first),
                site(second),
            ),
        }
    }

    /// Hands over unit `n` (numbers are dense from 0, in input order; any thread). The
    /// insert merge takes its buffers now, so they are freed once inserted.
    pub fn accept(&self, n: usize, mut unit: Unit) {
        if let Some(ins) = &self.insert {
            ins.offer(n, std::mem::take(&mut unit.buffers));
        }
        self.units
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(n, unit);
    }

    /// Places every unit, merges the indexes, and publishes the new version; says the rows
    /// added and how long the merge took. `input` is the whole input when the caller still
    /// has it (to name rows of a unique key by their line). Fails, publishing nothing, when
    /// a unique key is duplicated or the load was cancelled.
    ///
    /// The merge runs against the version the load began on, without the writer lock; the
    /// lock is taken to publish. When another write published meanwhile, the placed chunks
    /// are appended to that version instead and its indexes built anew over it (finding
    /// keys the other write added).
    pub fn publish(self, ctl: &LoadControl, input: Option<&[u8]>) -> Result<Published, LoadError> {
        if ctl.cancel.load(Relaxed) {
            return Err(LoadError::Cancelled);
        }
        let merge_start = Instant::now();
        let def = self.table.def();
        let partitions = def.partitioning.count();
        let units = self.units.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some((&last, _)) = units.last_key_value()
            && last + 1 != units.len()
        {
            return Err(LoadError::Options(format!(
                "internal: {} units handed over, the last numbered {last}",
                units.len()
            )));
        }
        let part_rows: Vec<Vec<usize>> = units.values().map(|u| u.part_rows.clone()).collect();
        let rows: u64 = part_rows.iter().flatten().map(|&r| r as u64).sum();
        // where each buffer's first row lands: chunk merge appends each buffer as a chunk;
        // copy and insert merges make one chunk per partition with the buffers in order
        let base = &self.base;
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
                match self.merge {
                    MergeStrategy::Chunk => chunk += 1,
                    _ => row += pr[p],
                }
            }
        }
        let mut index_parts: Vec<Vec<Index>> = vec![Vec::new(); self.indexes.len()];
        let mut outputs = Vec::with_capacity(units.len());
        let mut sites = Vec::with_capacity(units.len());
        for (_, unit) in units {
            for (all, mine) in index_parts.iter_mut().zip(unit.indexes) {
                all.extend(mine);
            }
            outputs.push(unit.buffers);
            sites.push(unit.sites);
        }
        let schema = def.arrow_schema.clone();
        let (added, indexes) = rayon::join(
            || match (self.merge, self.insert) {
                (MergeStrategy::Insert, Some(ins)) => ins.finish(&schema),
                (MergeStrategy::Copy, _) => copy_merge(outputs, partitions, &schema),
                _ => chunk_merge(outputs, partitions),
            },
            || {
                if self.indexes.is_empty() {
                    return Ok(Vec::new());
                }
                self.indexes
                    .merge(index_parts, &|slot| placement[slot as usize])
            },
        );
        let indexes = match indexes {
            Ok(ix) => ix,
            Err((i, dup)) => {
                // name both rows: new ones by where they came from, old ones as table rows
                let site = |e: EntryRef| match self.indexes.slot(i, e) {
                    Some(slot) => {
                        let (u, p) = (slot as usize / partitions, slot as usize % partitions);
                        sites[u].site(&self.file, input, p, e.pos() as usize)
                    }
                    None => KeySite::Table,
                };
                let at = match self.indexes.slot(i, dup.second) {
                    Some(slot) => {
                        let mut id = placement[slot as usize];
                        id.row += dup.second.pos();
                        let chunk = id.chunk as usize - base_chunks[id.partition as usize];
                        (&added[id.partition as usize][chunk], id.row as usize)
                    }
                    None => version_row(base, self.indexes.base_row(i, dup.second)),
                };
                let key = self.indexes.key_text(i, at.0, at.1);
                return Err(self.indexes.duplicate_error(
                    def,
                    i,
                    key,
                    site(dup.first),
                    site(dup.second),
                ));
            }
        };
        if ctl.cancel.load(Relaxed) {
            return Err(LoadError::Cancelled);
        }
        // no parallel work runs under the writer lock (a pool thread waiting for it could
        // hold the work the holder waits for): a version another write published meanwhile
        // gets the indexes rebuilt outside the lock, then the lock is taken again
        let (mut next, mut built_on) = (base.with_appended(added.clone(), indexes), base.number);
        loop {
            let guard = self.table.begin_write();
            let now = Arc::clone(guard.base());
            if now.number == built_on {
                if ctl.cancel.load(Relaxed) {
                    return Err(LoadError::Cancelled);
                }
                guard.publish(next);
                break;
            }
            drop(guard);
            next = rebuild_indexes(def, now.with_appended(added.clone(), now.indexes.clone()))?;
            built_on = now.number;
        }
        Ok(Published {
            rows,
            merge_seconds: merge_start.elapsed().as_secs_f64(),
        })
    }
}

/// What [`Appender::publish`] did.
#[derive(Debug, Clone, Copy)]
pub struct Published {
    /// Rows added.
    pub rows: u64,
    /// Seconds from the start of the merge to the new version's publication.
    pub merge_seconds: f64,
}

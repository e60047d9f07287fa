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
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Instant;

use arrow::array::ArrayData;
use arrow::record_batch::RecordBatch;
use wireload_csv::{FieldBatch, ScanConfig, Scanner, line_of};
use wireload_index::{EntryRef, Index};
use wireload_storage::{RowId, Table, TableDef, TableVersion};

use crate::dictionaries;
use crate::error::{KeySite, LoadError};
use crate::indexing::{BufferKeyError, LoadIndexes, rebuild_indexes, version_row};
use crate::merge::{InsertMerge, chunk_merge, copy_merge};
use crate::partition::split_partitions;
use crate::pool::{install, merge_pool, pool_cpu_seconds, thread_cpu_seconds};
use crate::report::{LoadControl, MergeStrategy, Schedule};

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
    /// the dictionary each column is coded against ([`dictionaries::coding`]), found once:
    /// the merger's wait asks for it at every wake-up
    pub(crate) coding: OnceLock<Vec<Option<ArrayData>>>,
}

impl Unit {
    /// Rows of every buffer.
    pub fn rows(&self) -> u64 {
        self.part_rows.iter().map(|&r| r as u64).sum()
    }

    /// The dictionary each column is coded against (None: plain); empty for a unit without
    /// rows.
    fn coding(&self) -> &[Option<ArrayData>] {
        self.coding.get_or_init(|| dictionaries::coding(self))
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

/// Where a CSV parse hands the partition buffers of each chunk: the append/publish stage
/// ([`Appender`]), or a consumer of fragments (a Shared Loading client).
pub trait Sink: Sync {
    /// True when the buffers must say where their rows came from ([`Sites`]).
    fn wants_sites(&self) -> bool;
    /// True when the consumer failed: the parse may stop (its error is the consumer's).
    fn failed(&self) -> bool;
    /// Takes the partition buffers of chunk `n` (numbers dense from 0 in input order, from
    /// any thread); `input` is the whole input when the parse has it.
    fn take(
        &self,
        n: usize,
        buffers: Vec<Option<RecordBatch>>,
        sites: Sites,
        input: Option<&[u8]>,
    ) -> Result<(), LoadError>;
    /// Waits until the consumer can take another window of chunks (streamed inputs call it
    /// before each window); an error stops the parse.
    fn ready(&self) -> Result<(), LoadError> {
        Ok(())
    }
    /// Offered the records of a streamed window before they are parsed: the sink may take
    /// them as text to be parsed elsewhere (a Shared Loading client sending them to its
    /// server), as unit `n`. True when taken: the window is then not parsed.
    fn take_text(&self, n: usize, text: Text<'_>) -> Result<bool, LoadError> {
        let _ = (n, text);
        Ok(false)
    }
}

/// The records of a window, unparsed: whole records, where they lie in the input.
#[derive(Debug, Clone, Copy)]
pub struct Text<'a> {
    /// The records' bytes.
    pub data: &'a [u8],
    /// The offset of `data` in the input.
    pub byte: u64,
    /// Line ends in the input before `data`.
    pub lines: u64,
}

impl Sink for Appender<'_> {
    fn wants_sites(&self) -> bool {
        self.track_sites
    }

    fn failed(&self) -> bool {
        self.stopped()
    }

    fn take(
        &self,
        n: usize,
        buffers: Vec<Option<RecordBatch>>,
        sites: Sites,
        input: Option<&[u8]>,
    ) -> Result<(), LoadError> {
        self.charge(&buffers)?;
        self.take_charged(n, buffers, sites, input)
    }
}

/// The append/publish stage of one load. Parsing and indexing run beside every other
/// reader and writer; the merge steps build the next version privately and only the
/// publication takes the table's writer lock ([`Appender::publish`], [`Appender::run`]).
/// Dropped without publishing, it publishes nothing.
pub struct Appender<'t> {
    table: &'t Table,
    /// the version the load began on (its indexes are what buffer indexes are built for)
    base: Arc<TableVersion>,
    file: String,
    merge: MergeStrategy,
    schedule: Schedule,
    pub(crate) indexes: LoadIndexes,
    /// keep where rows came from (a unique index may have to name them)
    pub(crate) track_sites: bool,
    insert: Option<InsertMerge>,
    pending: Mutex<Pending>,
    /// signalled when a unit is handed over or the input ends
    ready: Condvar,
    /// an interleaved merge step failed: the parse may stop, the load fails with that error
    merge_failed: AtomicBool,
    /// bytes the buffers taken may hold (None: no limit)
    budget: Option<u64>,
    /// bytes the buffers taken hold
    used: AtomicU64,
    /// what they held when they first went over the budget (0: never): the load fails
    over_budget: AtomicU64,
}

/// Units handed over and not merged yet.
#[derive(Default)]
struct Pending {
    units: BTreeMap<usize, Unit>,
    /// no more units will come (the parse ended, well or not)
    closed: bool,
}

/// What the merge steps of a load built so far: the load's base with the rows of every
/// step appended and merged into its indexes, not published.
struct Merged {
    version: TableVersion,
    /// where each merged slot's first row landed
    placement: Vec<RowId>,
    /// where each merged unit's rows came from
    sites: Vec<Sites>,
    rows: u64,
    /// units merged (the next step starts with this unit number)
    units: usize,
    steps: usize,
    /// when the first merge step began
    started: Option<Instant>,
    /// CPU seconds of the merge steps (interleaved schedule: the merge pool's and the
    /// merger's)
    cpu_seconds: f64,
}

impl<'t> Appender<'t> {
    /// Starts appending to `table`, rows read from `file` (the name errors use), merged
    /// with `merge` on the deferred schedule. Takes no lock: other writes may publish until
    /// this one does.
    pub fn begin(table: &'t Table, file: &str, merge: MergeStrategy) -> Self {
        let base = table.snapshot();
        let def = table.def();
        let indexes = LoadIndexes::new(def, &base);
        let partitions = def.partitioning.count();
        Appender {
            table,
            file: file.to_string(),
            merge,
            schedule: Schedule::Deferred,
            track_sites: indexes.any_unique(),
            indexes,
            insert: (merge == MergeStrategy::Insert)
                .then(|| InsertMerge::new(&def.schema.columns, partitions)),
            pending: Mutex::new(Pending::default()),
            ready: Condvar::new(),
            merge_failed: AtomicBool::new(false),
            budget: None,
            used: AtomicU64::new(0),
            over_budget: AtomicU64::new(0),
            base,
        }
    }

    /// This appender with a memory budget: once the buffers taken ([`Sink::take`]) hold
    /// more than `budget` bytes (their Arrow memory), the take fails, the parse is told to
    /// stop ([`Sink::failed`]) and [`Appender::run`] fails with
    /// [`LoadError::MemoryBudget`], publishing nothing. `None`: no limit.
    pub fn with_memory_budget(mut self, budget: Option<u64>) -> Self {
        self.budget = budget;
        self
    }

    /// Counts `buffers` against the memory budget: an error once the buffers taken hold
    /// more than it.
    pub fn charge(&self, buffers: &[Option<RecordBatch>]) -> Result<(), LoadError> {
        let Some(budget) = self.budget else {
            return Ok(());
        };
        let bytes: u64 = buffers
            .iter()
            .flatten()
            .map(|b| b.get_array_memory_size() as u64)
            .sum();
        let used = self.used.fetch_add(bytes, Relaxed) + bytes;
        if used <= budget {
            return Ok(());
        }
        let _ = self.over_budget.compare_exchange(0, used, Relaxed, Relaxed);
        Err(LoadError::MemoryBudget { used, budget })
    }

    /// The error of a load whose buffers went over the memory budget, when they did.
    fn budget_error(&self) -> Option<LoadError> {
        let used = self.over_budget.load(Relaxed);
        let budget = self.budget?;
        (used > 0).then_some(LoadError::MemoryBudget { used, budget })
    }

    /// True when the load will fail for a reason outside the parse (a merge step's error,
    /// the memory budget): parsing may stop.
    pub fn stopped(&self) -> bool {
        self.merge_failed() || self.over_budget.load(Relaxed) > 0
    }

    /// [`Sink::take`] of buffers counted against the memory budget already.
    pub fn take_charged(
        &self,
        n: usize,
        buffers: Vec<Option<RecordBatch>>,
        sites: Sites,
        input: Option<&[u8]>,
    ) -> Result<(), LoadError> {
        let unit = self.unit(n, buffers, sites, input)?;
        self.accept(n, unit);
        Ok(())
    }

    /// This appender with merge steps on `schedule`. The interleaved schedule merges step by
    /// step and so needs a merge that places each step on its own (chunk or copy).
    pub fn with_schedule(mut self, schedule: Schedule) -> Result<Self, LoadError> {
        if schedule == Schedule::Interleaved && self.merge == MergeStrategy::Insert {
            return Err(LoadError::Options(
                "the interleaved schedule merges step by step: it takes MERGE chunk or copy, \
                 not insert (which fills one chunk per partition for the whole load)"
                    .into(),
            ));
        }
        self.schedule = schedule;
        Ok(self)
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
            coding: OnceLock::new(),
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
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .units
            .insert(n, unit);
        self.ready.notify_one();
    }

    /// Runs `parse` (which hands over units with [`Appender::accept`]) on this thread and
    /// publishes what it handed over, merged on this appender's schedule: interleaved, a
    /// thread of its own merges on [`merge_pool`]`(threads)` as units arrive, in order;
    /// deferred, everything is merged after `parse` returns. `input` is the whole input when
    /// the caller has it (to name rows of a unique key by their line).
    pub fn run<R>(
        self,
        ctl: &LoadControl,
        input: Option<&[u8]>,
        threads: usize,
        parse: impl FnOnce(&Self) -> Result<R, LoadError>,
    ) -> Result<(R, Published), LoadError> {
        if self.schedule == Schedule::Deferred {
            let parsed = parse(&self);
            // the parse stopped (or failed in a task that was stopped) for the budget
            if let Some(e) = self.budget_error() {
                return Err(e);
            }
            let r = parsed?;
            return Ok((r, install(Some(threads), || self.publish(ctl, input))??));
        }
        let merged = std::thread::scope(|s| {
            let merger = std::thread::Builder::new()
                .name("wireload-merger".into())
                .spawn_scoped(s, || self.merge_as_ready(ctl, input, threads))
                .map_err(|e| LoadError::Threads {
                    threads: 1,
                    message: e.to_string(),
                })?;
            let parsed = parse(&self);
            self.close();
            let merged = merger
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            match (parsed, merged) {
                // the parse stopped for the merge's error (a duplicate key, say)
                (_, Err(e)) if self.merge_failed() => Err(e),
                // or for the memory budget
                _ if self.budget_error().is_some() => Err(self.budget_error().expect("checked")),
                // otherwise the parse's error: the merger stopped short of the units it lost
                (parsed, merged) => Ok((parsed?, merged?)),
            }
        })?;
        let (r, merged) = merged;
        Ok((
            r,
            install(Some(threads), || self.publish_merged(merged, ctl))??,
        ))
    }

    /// Says that no more units will come.
    fn close(&self) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .closed = true;
        self.ready.notify_one();
    }

    /// The interleaved schedule's merger: merge steps over the units handed over so far, in
    /// number order, until the input is closed and every unit merged.
    fn merge_as_ready(
        &self,
        ctl: &LoadControl,
        input: Option<&[u8]>,
        threads: usize,
    ) -> Result<Merged, LoadError> {
        let pool = merge_pool(threads)?;
        let mut merged = Merged::new(&self.base);
        let grows = self.table.def().has_dictionaries();
        loop {
            let step = {
                let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                let wanted = step_rows(&merged.version, grows);
                // wait for more rows only while the step could take them: a step ends
                // before a client's next partition, and waiting for that partition's rows
                // left the merger a partition behind (and idle at the end)
                let run = loop {
                    let run = next_run(&pending.units, merged.units, grows);
                    if pending.closed || run.bounded || run.rows >= wanted {
                        break run;
                    }
                    pending = self.ready.wait(pending).unwrap_or_else(|e| e.into_inner());
                };
                let step = run.take(&mut pending.units, merged.units);
                if step.is_empty() {
                    // closed, and nothing more in order: done, or the parse failed
                    return Ok(merged);
                }
                step
            };
            if ctl.cancel.load(Relaxed) {
                return Err(LoadError::Cancelled);
            }
            let (cpu0, own0) = (pool_cpu_seconds(&pool), thread_cpu_seconds());
            let stepped = pool.install(|| self.merge_step(&mut merged, step, input));
            merged.cpu_seconds += pool_cpu_seconds(&pool) - cpu0 + thread_cpu_seconds() - own0;
            if let Err(e) = stepped {
                self.merge_failed.store(true, Relaxed);
                return Err(e);
            }
        }
    }

    /// True when an interleaved merge step failed: the load will fail, so parsing may stop.
    pub(crate) fn merge_failed(&self) -> bool {
        self.merge_failed.load(Relaxed)
    }

    /// Places every unit, merges the indexes, and publishes the new version; says the rows
    /// added and how long the merge took. `input` is the whole input when the caller still
    /// has it (to name rows of a unique key by their line). Fails, publishing nothing, when
    /// a unique key is duplicated or the load was cancelled. (The deferred schedule:
    /// parse stages that hand over units themselves call this when done.)
    ///
    /// The merge runs against the version the load began on, without the writer lock; the
    /// lock is taken to publish. When another write published meanwhile, the placed chunks
    /// are appended to that version instead and its indexes built anew over it (finding
    /// keys the other write added).
    pub fn publish(self, ctl: &LoadControl, input: Option<&[u8]>) -> Result<Published, LoadError> {
        if ctl.cancel.load(Relaxed) {
            return Err(LoadError::Cancelled);
        }
        let mut units =
            std::mem::take(&mut self.pending.lock().unwrap_or_else(|e| e.into_inner()).units);
        let mut merged = Merged::new(&self.base);
        let all = units.len();
        let step = take_run(&mut units, 0, false);
        if step.len() != all {
            return Err(LoadError::Options(format!(
                "internal: {all} units handed over, not numbered 0..{all}"
            )));
        }
        self.merge_step(&mut merged, step, input)?;
        self.publish_merged(merged, ctl)
    }

    /// One merge step: places the buffers of `units` (the next units in number order) after
    /// the rows merged so far and merges their buffer indexes into `merged`'s indexes.
    fn merge_step(
        &self,
        merged: &mut Merged,
        units: Vec<Unit>,
        input: Option<&[u8]>,
    ) -> Result<(), LoadError> {
        let def = self.table.def();
        let partitions = def.partitioning.count();
        let first_unit = merged.units;
        merged.started.get_or_insert_with(Instant::now);
        // where each buffer's first row lands: chunk merge appends each buffer as a chunk;
        // copy and insert merges make one chunk per partition with the buffers in order
        let before = merged.version.chunk_counts();
        let mut placement = vec![RowId::default(); units.len() * partitions];
        for (p, &first_chunk) in before.iter().enumerate() {
            let (mut chunk, mut row) = (first_chunk, 0usize);
            for (t, unit) in units.iter().enumerate() {
                let rows = unit.part_rows[p];
                if rows == 0 {
                    continue;
                }
                placement[t * partitions + p] = RowId {
                    partition: p as u32,
                    chunk: chunk as u32,
                    row: row as u32,
                };
                match self.merge {
                    MergeStrategy::Chunk => chunk += 1,
                    _ => row += rows,
                }
            }
        }
        merged.placement.extend(placement);
        let mut index_parts: Vec<Vec<Index>> = vec![Vec::new(); self.indexes.len()];
        let mut outputs = Vec::with_capacity(units.len());
        for unit in units {
            merged.rows += unit.rows();
            for (all, mine) in index_parts.iter_mut().zip(unit.indexes) {
                all.extend(mine);
            }
            outputs.push(unit.buffers);
            merged.sites.push(unit.sites);
            merged.units += 1;
        }
        let schema = def.arrow_schema.clone();
        let slots = (first_unit * partitions) as u32..(merged.units * partitions) as u32;
        let into = std::mem::take(&mut merged.version.indexes);
        let placed = &merged.placement;
        let (added, indexes) = rayon::join(
            || match (self.merge, &self.insert) {
                (MergeStrategy::Insert, Some(ins)) => ins.finish(&schema),
                (MergeStrategy::Copy, _) => copy_merge(outputs, partitions, &schema),
                _ => chunk_merge(outputs, partitions),
            },
            || {
                self.indexes
                    .merge(into, index_parts, slots, &|slot| placed[slot as usize])
            },
        );
        let indexes = match indexes {
            Ok(ix) => ix,
            Err((i, dup)) => {
                // name both rows: new ones by where they came from, old ones as table rows
                let site = |e: EntryRef| match self.indexes.slot(i, e) {
                    Some(slot) => {
                        let (u, p) = (slot as usize / partitions, slot as usize % partitions);
                        merged.sites[u].site(&self.file, input, p, e.pos() as usize)
                    }
                    None => KeySite::Table,
                };
                let at = match self.indexes.slot(i, dup.second) {
                    Some(slot) => {
                        let mut id = merged.placement[slot as usize];
                        id.row += dup.second.pos();
                        let (p, chunk) = (id.partition as usize, id.chunk as usize);
                        match chunk.checked_sub(before[p]) {
                            Some(new) => (&added[p][new], id.row as usize),
                            None => version_row(&merged.version, id),
                        }
                    }
                    None => version_row(&self.base, self.indexes.base_row(i, dup.second)),
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
        let added = if def.has_dictionaries() {
            dictionaries::encode(def, &mut merged.version, added)?
        } else {
            added
        };
        merged.version.append(added);
        merged.version.indexes = indexes;
        merged.steps += 1;
        Ok(())
    }

    /// Publishes what the merge steps built, under the writer lock; see [`Appender::publish`].
    fn publish_merged(&self, merged: Merged, ctl: &LoadControl) -> Result<Published, LoadError> {
        if ctl.cancel.load(Relaxed) {
            return Err(LoadError::Cancelled);
        }
        let started = merged.started.unwrap_or_else(Instant::now);
        let (cpu_seconds, own0) = (merged.cpu_seconds, thread_cpu_seconds());
        let def = self.table.def();
        let base = &self.base;
        let mut next = merged.version;
        next.number = base.number + 1;
        // no parallel work runs under the writer lock (a pool thread waiting for it could
        // hold the work the holder waits for): a version another write published meanwhile
        // gets the indexes rebuilt outside the lock, then the lock is taken again
        let (added, mut built_on) = (self.added(&next), base.number);
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
            next = if def.has_dictionaries() {
                // encoded against this load's dictionaries: encoded again against theirs
                let mut rebuilt =
                    now.with_appended(vec![Vec::new(); added.len()], now.indexes.clone());
                let plain = added
                    .iter()
                    .map(|p| p.iter().map(wireload_storage::plain_batch).collect())
                    .collect::<Result<Vec<Vec<_>>, _>>()
                    .map_err(|e| LoadError::Mismatch {
                        file: self.file.clone(),
                        message: format!("cannot decode a dictionary column: {e}"),
                    })?;
                let encoded = dictionaries::encode(def, &mut rebuilt, plain)?;
                rebuilt.append(encoded);
                rebuild_indexes(def, rebuilt)?
            } else {
                rebuild_indexes(def, now.with_appended(added.clone(), now.indexes.clone()))?
            };
            built_on = now.number;
        }
        Ok(Published {
            rows: merged.rows,
            merge_seconds: started.elapsed().as_secs_f64(),
            merge_steps: merged.steps,
            merge_cpu_seconds: cpu_seconds + thread_cpu_seconds() - own0,
        })
    }

    /// The chunks `next` has beyond the load's base, per partition.
    fn added(&self, next: &TableVersion) -> Vec<Vec<RecordBatch>> {
        next.partitions
            .iter()
            .zip(&self.base.partitions)
            .map(|(n, b)| n.chunks[b.chunks.len()..].to_vec())
            .collect()
    }
}

/// The fewest ready rows an interleaved merge step takes once `merged` is merged. A step of
/// a table with dictionary columns re-encodes the rows of each open dictionary run whose
/// dictionary grew and rebuilds the dictionary, so it takes at least as many rows as the
/// largest open run holds: a run at least doubles each step, and the re-encoding stays
/// within the run's rows in all (as a vector's doubling bounds its copies), not a multiple
/// of the steps when units trickle in. Growing by half instead re-encoded twice the rows:
/// lineitem pushed under queries, 1.49-1.52 CPU seconds of merge against 1.09-1.12
/// (bench/RESULTS.md, "Shared Loading"). Runs are sealed at
/// [`crate::DICTIONARY_RUN_ROWS`] rows, so no step waits for more. Other tables take a unit
/// as soon as it is ready.
fn step_rows(merged: &TableVersion, grows: bool) -> u64 {
    if grows {
        (dictionaries::open_run_rows(merged) as u64).max(1)
    } else {
        1
    }
}

/// The units the next merge step would take: those numbered `from`, `from + 1`, ... as far
/// as they go without a gap. With `by_dictionary` (a table with dictionary columns) the step
/// also ends before a unit whose coding it may not take with its first unit's
/// ([`dictionaries::same_coding`]: a Shared Loading client's next partition where every
/// column is coded, or plain fragments after coded ones), so that the merge can take a
/// client's coded columns as they are ([`dictionaries`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    /// Units the step takes.
    units: usize,
    /// Their rows (a unit without rows counts as one, so that a step always takes it).
    rows: u64,
    /// True when the step ends before a unit that is ready (a client's next partition): it
    /// can take no more, however long it waits.
    bounded: bool,
}

impl Run {
    /// The run's units, taken out of `units` (from `from`, where it was found).
    fn take(self, units: &mut BTreeMap<usize, Unit>, from: usize) -> Vec<Unit> {
        (from..from + self.units)
            .filter_map(|k| units.remove(&k))
            .collect()
    }
}

/// The [`Run`] of `units` from `from`.
fn next_run(units: &BTreeMap<usize, Unit>, from: usize, by_dictionary: bool) -> Run {
    let mut run = Run {
        units: 0,
        rows: 0,
        bounded: false,
    };
    let mut first: Option<&[Option<ArrayData>]> = None;
    while let Some(u) = units.get(&(from + run.units)) {
        if by_dictionary {
            let coding = u.coding();
            match first {
                Some(first) if !dictionaries::same_coding(first, coding) => {
                    run.bounded = true;
                    break;
                }
                // a unit without rows has no coding: the next one sets it
                None if !coding.is_empty() => first = Some(coding),
                _ => {}
            }
        }
        run.units += 1;
        run.rows += u.rows().max(1);
    }
    run
}

/// The units of the next merge step ([`next_run`]), taken out.
fn take_run(units: &mut BTreeMap<usize, Unit>, from: usize, by_dictionary: bool) -> Vec<Unit> {
    next_run(units, from, by_dictionary).take(units, from)
}

impl Merged {
    /// Nothing merged yet onto `base`.
    fn new(base: &TableVersion) -> Self {
        Merged {
            version: base.clone(),
            placement: Vec::new(),
            sites: Vec::new(),
            rows: 0,
            units: 0,
            steps: 0,
            started: None,
            cpu_seconds: 0.0,
        }
    }
}

/// What [`Appender::publish`] did.
#[derive(Debug, Clone, Copy)]
pub struct Published {
    /// Rows added.
    pub rows: u64,
    /// Seconds of the merge transaction: from the start of the first merge step to the new
    /// version's publication.
    pub merge_seconds: f64,
    /// Merge steps taken.
    pub merge_steps: usize,
    /// CPU seconds of the merge steps and the publication, where measured: the interleaved
    /// schedule's merge pool and merger, and the publishing thread (0 for the deferred
    /// schedule's steps, which run on the parse's pool).
    pub merge_cpu_seconds: f64,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use std::sync::Arc;

    use arrow::array::{ArrayRef, DictionaryArray, StringArray, UInt8Array};
    use arrow::datatypes::UInt8Type;
    use arrow::record_batch::RecordBatch;

    use super::{Run, Sites, Unit, next_run, take_run};

    fn unit(rows: usize) -> Unit {
        Unit {
            buffers: Vec::new(),
            part_rows: vec![rows],
            indexes: Vec::new(),
            sites: Sites::default(),
            coding: Default::default(),
        }
    }

    #[test]
    fn a_step_stops_at_the_first_gap() {
        let units: BTreeMap<usize, Unit> =
            [(3, unit(10)), (4, unit(0)), (5, unit(7)), (7, unit(100))]
                .into_iter()
                .collect();
        let rows = |from| next_run(&units, from, false).rows;
        // an empty unit counts as one row, so a step always takes it
        assert_eq!(rows(3), 18);
        assert_eq!(rows(5), 7);
        assert_eq!(rows(6), 0);
        assert_eq!(rows(0), 0);
        assert!(!next_run(&units, 3, true).bounded);
    }

    /// A unit of one row, both columns coded against `dictionary` (SL_A).
    fn coded_unit(dictionary: &ArrayRef) -> Unit {
        let coded = || -> ArrayRef {
            Arc::new(
                DictionaryArray::<UInt8Type>::try_new(
                    UInt8Array::from(vec![0]),
                    Arc::clone(dictionary),
                )
                .unwrap(),
            )
        };
        let batch = RecordBatch::try_from_iter([("p", coded()), ("c", coded())]).unwrap();
        Unit {
            buffers: vec![Some(batch)],
            ..unit(1)
        }
    }

    /// A unit of one row: a plain column and one coded against `dictionary` (`auto`).
    fn mixed_unit(dictionary: &ArrayRef) -> Unit {
        let coded: ArrayRef = Arc::new(
            DictionaryArray::<UInt8Type>::try_new(
                UInt8Array::from(vec![0]),
                Arc::clone(dictionary),
            )
            .unwrap(),
        );
        let plain: ArrayRef = Arc::new(StringArray::from(vec!["p"]));
        let batch = RecordBatch::try_from_iter([("p", plain), ("c", coded)]).unwrap();
        Unit {
            buffers: vec![Some(batch)],
            ..unit(1)
        }
    }

    /// A unit of one row, both columns plain.
    fn plain_unit() -> Unit {
        let plain = |v: &str| -> ArrayRef { Arc::new(StringArray::from(vec![v])) };
        let batch = RecordBatch::try_from_iter([("p", plain("p")), ("c", plain("a"))]).unwrap();
        Unit {
            buffers: vec![Some(batch)],
            ..unit(1)
        }
    }

    #[test]
    fn a_step_of_a_dictionary_table_ends_at_a_clients_next_partition() {
        let strings = |v: &[&str]| -> ArrayRef { Arc::new(StringArray::from(v.to_vec())) };
        let (d1, d2) = (strings(&["a", "b"]), strings(&["a", "b"]));
        let units = || -> BTreeMap<usize, Unit> {
            [coded_unit(&d1), coded_unit(&d1), coded_unit(&d2), unit(1)]
                .into_iter()
                .enumerate()
                .collect()
        };
        // the step, and the rows a merger waits for, end before the next partition
        let run = |u: &BTreeMap<usize, Unit>, from| next_run(u, from, true);
        let expect = |units, rows, bounded| Run {
            units,
            rows,
            bounded,
        };
        assert_eq!(run(&units(), 0), expect(2, 2, true));
        // a partition not yet followed by the next one may still grow
        let mut first_two = units();
        first_two.remove(&2);
        assert_eq!(run(&first_two, 0), expect(2, 2, false));
        let mut by_dictionary = units();
        assert_eq!(take_run(&mut by_dictionary, 0, true).len(), 2);
        // the next step starts with the next partition; a unit without buffers goes with it
        assert_eq!(run(&by_dictionary, 2), expect(2, 2, false));
        assert_eq!(take_run(&mut by_dictionary, 2, true).len(), 2);
        assert_eq!(take_run(&mut units(), 0, false).len(), 4);
        // a unit without buffers first takes the coding of the unit after it
        let mut empty_first: BTreeMap<usize, Unit> = [unit(1), coded_unit(&d1), coded_unit(&d2)]
            .into_iter()
            .enumerate()
            .collect();
        assert_eq!(run(&empty_first, 0), expect(2, 2, true));
        assert_eq!(take_run(&mut empty_first, 0, true).len(), 2);
        // plain units (text the server parsed) and a client's partition go in steps apart
        let mut mixed: BTreeMap<usize, Unit> = [
            plain_unit(),
            plain_unit(),
            coded_unit(&d1),
            coded_unit(&d1),
            plain_unit(),
        ]
        .into_iter()
        .enumerate()
        .collect();
        assert_eq!(run(&mixed, 0), expect(2, 2, true));
        assert_eq!(take_run(&mut mixed, 0, true).len(), 2);
        assert_eq!(take_run(&mut mixed, 2, true).len(), 2);
        assert_eq!(run(&mixed, 4), expect(1, 1, false));
        // partitions with a plain column too go in one step (the plain column's merge
        // gains from larger steps; each partition's coded column stays a run of its own)
        let partitions: BTreeMap<usize, Unit> = [
            mixed_unit(&d1),
            mixed_unit(&d1),
            mixed_unit(&d2),
            plain_unit(),
        ]
        .into_iter()
        .enumerate()
        .collect();
        assert_eq!(run(&partitions, 0), expect(3, 3, true));
    }
}

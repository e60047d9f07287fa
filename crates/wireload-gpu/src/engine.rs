//! A GPU load end to end: partitions of the input are staged in page-locked memory and
//! streamed to the device by several workers, each with its own stream and buffers, so
//! copies up, kernels and copies down of different partitions overlap. Each partition's
//! buffers become an Arrow batch on the host; a partition the kernels flag (an error, or
//! more fallbacks than the list holds) is loaded by the CPU loader instead, which names
//! the error exactly as a CPU load would. The batches are appended to the table in one
//! atomic step, indexes and partitioning included.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow::record_batch::RecordBatch;
use wireload_csv::{FieldBatch, ScanConfig, ScanMode, Scanner, line_of};
use wireload_load::{
    Dialect, KeySite, LoadControl, LoadError, LoadOptions, LoadReport, Source,
    append_validated_batches, data_start, load_into,
};
use wireload_storage::{Partitioning, Table, TableDef};
use wireload_types::{ColumnDef, TableSchema};

use crate::assemble::{CpuReason, assemble};
use crate::buffers::PartitionBuffers;
use crate::device::Device;
use crate::error::GpuError;
use crate::partition::{Part, Partitioner};
use crate::passes::{Pooled, WorkspacePool};
use crate::plan::{GpuOptions, MAX_PARTITION, Plan};

/// What a GPU load did, beyond the load report.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuReport {
    /// The load.
    pub load: LoadReport,
    /// The device it ran on.
    pub device: String,
    /// Partitions streamed.
    pub partitions: usize,
    /// Partitions that ran the quoted passes.
    pub quoted: usize,
    /// Partitions the CPU loader loaded instead (flagged errors, fallback overflow).
    pub cpu: usize,
    /// Fields parsed on the host.
    pub fallbacks: u64,
}

impl std::fmt::Display for GpuReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} on {}: {} partitions ({} quoted, {} by the CPU), {} fields parsed on the host",
            self.load, self.device, self.partitions, self.quoted, self.cpu, self.fallbacks
        )
    }
}

/// What one partition gave.
struct PartResult {
    batches: Vec<RecordBatch>,
    quoted: bool,
    cpu: bool,
    fallbacks: u64,
}

/// Something that parses staged partitions: a device's workspace, or the reference.
pub trait Runner {
    /// A buffer for the next partition's `n` bytes (and padding), to fill.
    fn stage(&mut self, n: usize) -> Result<&mut [u8], GpuError>;
    /// Parses the `n` bytes staged last.
    fn parse(&mut self, n: usize) -> Result<PartitionBuffers, GpuError>;
}

impl<D: Device> Runner for Pooled<'_, D> {
    fn stage(&mut self, n: usize) -> Result<&mut [u8], GpuError> {
        self.get().staging(n)
    }

    fn parse(&mut self, n: usize) -> Result<PartitionBuffers, GpuError> {
        let ws = self.get();
        let r = ws.upload(n).and_then(|()| ws.run(false));
        if r.is_err() {
            // a device error may leave the workspace unfit for the next load
            self.discard();
        }
        r
    }
}

/// The passes of the reference (`testing::reference`) as a [`Runner`]: loads whose every
/// step but the kernels is the GPU engine's.
#[cfg(feature = "testing")]
#[derive(Debug)]
pub struct ReferenceRunner {
    plan: Arc<Plan>,
    opts: GpuOptions,
    input: Vec<u8>,
}

#[cfg(feature = "testing")]
impl ReferenceRunner {
    /// A runner for `plan`.
    pub fn new(plan: Arc<Plan>, opts: &GpuOptions) -> Self {
        ReferenceRunner {
            plan,
            opts: opts.clone(),
            input: Vec::new(),
        }
    }
}

#[cfg(feature = "testing")]
impl Runner for ReferenceRunner {
    fn stage(&mut self, n: usize) -> Result<&mut [u8], GpuError> {
        self.input.resize(n, 0);
        Ok(&mut self.input)
    }

    fn parse(&mut self, n: usize) -> Result<PartitionBuffers, GpuError> {
        Ok(crate::reference::run(
            &self.input[..n],
            &self.plan,
            &self.opts,
            false,
        ))
    }
}

/// Copies `src` into `dst` (of the same length) in pieces on the rayon pool: one thread
/// copies at a fraction of the memory bandwidth.
fn par_copy(dst: &mut [u8], src: &[u8]) {
    const PIECE: usize = 4 << 20;
    use rayon::prelude::*;
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// Whether partition `range` needs a record delimiter added for the kernels: it ends the
/// input, whose last record has none.
fn needs_newline(data: &[u8], range: &Range<usize>) -> bool {
    range.end == data.len() && !matches!(data.last(), Some(b'\n' | b'\r'))
}

/// Loads records `range` of `data` with the CPU loader (one more time, for what the GPU
/// left: errors to name, partitions with too many fallbacks). Positions in errors are
/// those of the whole input.
fn cpu_partition(
    columns: &[ColumnDef],
    dialect: &Dialect,
    file: &str,
    data: &[u8],
    range: Range<usize>,
) -> Result<Vec<RecordBatch>, LoadError> {
    let def = TableDef::new(
        "partition",
        TableSchema {
            columns: columns.to_vec(),
        },
        Partitioning::Single,
    )
    .map_err(|e| LoadError::Options(e.to_string()))?;
    let table = Table::new(def);
    let mut dialect = dialect.clone();
    dialect.header = false;
    // An empty line first: a partition that starts with the bytes of a BOM keeps them (the
    // CPU loader skips a BOM only at the start of its input), and the line is skipped.
    let mut bytes = Vec::with_capacity(range.len() + 1);
    bytes.push(b'\n');
    bytes.extend_from_slice(&data[range.clone()]);
    let src = Source::Bytes {
        name: file.to_string(),
        data: Arc::from(bytes),
    };
    let opts = LoadOptions {
        dialect,
        mode: ScanMode::Safe,
        ..LoadOptions::default()
    };
    match load_into(&table, &src, &opts, &LoadControl::default()) {
        Ok(_) => Ok(table.snapshot().chunks().cloned().collect()),
        Err(e) => Err(shift(e, range.start as u64, data)),
    }
}

/// `e` (a key error of the append, which counts the input's records) with the records of
/// `file` it names given by line and byte offset, as the CPU loader names them.
fn name_lines(
    e: LoadError,
    file: &str,
    data: &[u8],
    start: usize,
    scan: &ScanConfig,
    ncols: usize,
) -> LoadError {
    let row_of = |s: &KeySite| match s {
        KeySite::Row {
            file: f,
            row: Some(r),
        } if f == file => Some(*r),
        _ => None,
    };
    let rows: Vec<u64> = match &e {
        LoadError::DuplicateKey { first, second, .. } => [row_of(first), row_of(second)]
            .into_iter()
            .flatten()
            .collect(),
        LoadError::NullKey { site, .. } => row_of(site).into_iter().collect(),
        _ => return e,
    };
    let Some(&last) = rows.iter().max() else {
        return e;
    };
    // the wanted records' starts, scanning from the first record (an error path)
    let mut found = Vec::new();
    let mut scanner = Scanner::new(scan, data, start, data.len(), ncols);
    let mut batch = FieldBatch::new(ncols);
    let mut row = 0u64;
    while row < last {
        let Ok(more) = scanner.next_batch(&mut batch, 4096) else {
            break;
        };
        for r in 0..batch.rows() {
            row += 1;
            if rows.contains(&row) {
                found.push((row, batch.row_start(r)));
            }
        }
        if !more {
            break;
        }
    }
    let name = |s: KeySite| match row_of(&s).and_then(|r| found.iter().find(|f| f.0 == r)) {
        Some(&(_, byte)) => KeySite::Line {
            file: file.to_string(),
            line: line_of(data, byte),
            byte: byte as u64,
        },
        None => s,
    };
    match e {
        LoadError::DuplicateKey {
            index,
            columns,
            key,
            second,
            first,
        } => LoadError::DuplicateKey {
            index,
            columns,
            key,
            second: Box::new(name(*second)),
            first: Box::new(name(*first)),
        },
        LoadError::NullKey {
            index,
            column,
            site,
        } => LoadError::NullKey {
            index,
            column,
            site: name(site),
        },
        e => e,
    }
}

/// `e`, found in a partition starting at `start` loaded after one empty line, with its byte
/// offset and line those of the whole input `data`.
fn shift(mut e: LoadError, start: u64, data: &[u8]) -> LoadError {
    if let LoadError::Syntax { pos, .. }
    | LoadError::Value { pos, .. }
    | LoadError::QuotedNewlineInFastMode { pos } = &mut e
    {
        pos.byte = (pos.byte + start).saturating_sub(1);
        pos.line = line_of(data, pos.byte as usize);
    }
    e
}

/// Loads `source` into `table` on `dev` (with workspaces of its own, freed afterwards) and
/// publishes the new version; on any error the table is unchanged.
#[cfg(feature = "testing")]
pub fn load_into_on<D: Device>(
    dev: &Arc<D>,
    table: &Table,
    source: &Source,
    dialect: &Dialect,
    opts: &GpuOptions,
    ctl: &LoadControl,
) -> Result<GpuReport, GpuError> {
    let pool = WorkspacePool::new(Arc::clone(dev));
    load_into_pooled(&pool, table, source, dialect, opts, ctl)
}

/// Loads `source` into `table` on the device of `pool`, with workspaces from `pool`
/// (their buffers reused from earlier loads), and publishes the new version; on any error
/// the table is unchanged.
pub fn load_into_pooled<D: Device>(
    pool: &WorkspacePool<D>,
    table: &Table,
    source: &Source,
    dialect: &Dialect,
    opts: &GpuOptions,
    ctl: &LoadControl,
) -> Result<GpuReport, GpuError> {
    load_with(
        table,
        source,
        dialect,
        opts,
        ctl,
        &pool.device().describe(),
        &|plan| pool.take(plan, opts),
    )
}

/// Loads `source` into `table` with the reference passes in place of the kernels (every
/// other step is the GPU engine's), and publishes the new version.
#[cfg(feature = "testing")]
pub fn load_into_reference(
    table: &Table,
    source: &Source,
    dialect: &Dialect,
    opts: &GpuOptions,
    ctl: &LoadControl,
) -> Result<GpuReport, GpuError> {
    load_with(
        table,
        source,
        dialect,
        opts,
        ctl,
        "the reference passes",
        &|plan| Ok(ReferenceRunner::new(plan, opts)),
    )
}

/// The engine over any [`Runner`]: `runner` makes one per worker.
pub fn load_with<R: Runner>(
    table: &Table,
    source: &Source,
    dialect: &Dialect,
    opts: &GpuOptions,
    ctl: &LoadControl,
    device: &str,
    runner: &(dyn Fn(Arc<Plan>) -> Result<R, GpuError> + Sync),
) -> Result<GpuReport, GpuError> {
    let t0 = Instant::now();
    opts.validate()?;
    let def = table.def();
    let columns = &def.schema.columns;
    let plan = Arc::new(Plan::new(columns, dialect)?);
    let scan = ScanConfig::new(dialect, ScanMode::Safe).map_err(|e| LoadError::Options(e.0))?;
    let file = source.name();
    let input = source.open()?;
    let data = input.bytes();
    ctl.bytes_total.store(data.len() as u64, Relaxed);
    let start = data_start(data, &scan, dialect.header, &file)?;
    ctl.bytes_done.store(start as u64, Relaxed);
    let parts =
        Mutex::new(Partitioner::new(data, start, scan, dialect.quote, opts.partition).fuse());
    let results: Mutex<BTreeMap<usize, Result<PartResult, GpuError>>> = Mutex::new(BTreeMap::new());
    // a worker that could not start (its error wins over any partition's)
    let setup: Mutex<Option<GpuError>> = Mutex::new(None);
    // lowest partition that failed (usize::MAX: none); later ones need not run
    let failed = AtomicUsize::new(usize::MAX);
    let stop = AtomicBool::new(false);
    let workers = opts.streams.max(1);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let mut ws = match runner(Arc::clone(&plan)) {
                    Ok(ws) => Some(ws),
                    Err(e) => {
                        setup
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .get_or_insert(e);
                        stop.store(true, Relaxed);
                        None
                    }
                };
                while let Some(ws) = ws.as_mut() {
                    if stop.load(Relaxed) || ctl.cancel.load(Relaxed) {
                        break;
                    }
                    let Some(part) = parts.lock().unwrap_or_else(|p| p.into_inner()).next() else {
                        break;
                    };
                    if part.index > failed.load(Relaxed) {
                        break;
                    }
                    let r = run_partition(ws, &plan, columns, dialect, &file, data, &part);
                    ctl.bytes_done.fetch_add(part.range.len() as u64, Relaxed);
                    let bad = match &r {
                        Err(GpuError::Load(_)) => true,
                        Err(_) => {
                            stop.store(true, Relaxed);
                            true
                        }
                        Ok(_) => false,
                    };
                    if bad {
                        failed.fetch_min(part.index, Relaxed);
                    }
                    results
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(part.index, r);
                }
            });
        }
    });
    if ctl.cancel.load(Relaxed) {
        return Err(LoadError::Cancelled.into());
    }
    if let Some(e) = setup.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    let unplanned = parts
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .next()
        .is_some();
    let mut batches = Vec::new();
    let (mut partitions, mut quoted, mut cpu, mut fallbacks) = (0, 0, 0, 0u64);
    for (index, r) in results {
        let r = r?;
        // every partition up to here ran (workers stop early only after an error, which
        // was returned above)
        if index != partitions {
            return Err(GpuError::Unsupported(format!(
                "partition {partitions} did not run"
            )));
        }
        partitions += 1;
        quoted += r.quoted as usize;
        cpu += r.cpu as usize;
        fallbacks += r.fallbacks;
        batches.extend(r.batches);
    }
    if unplanned {
        return Err(GpuError::Unsupported(format!(
            "the load stopped after {partitions} partitions"
        )));
    }
    // the batches are the table's schema, NOT NULL and lengths checked by the passes (or
    // by the CPU loader)
    let mut report = append_validated_batches(table, &file, data.len() as u64, batches, ctl)
        .map_err(|e| name_lines(e, &file, data, start, &scan, columns.len()))?;
    report.seconds = t0.elapsed().as_secs_f64();
    Ok(GpuReport {
        load: report,
        device: device.to_string(),
        partitions,
        quoted,
        cpu,
        fallbacks,
    })
}

/// Stages, parses and assembles one partition (or loads it with the CPU loader).
fn run_partition<R: Runner>(
    ws: &mut R,
    plan: &Plan,
    columns: &[ColumnDef],
    dialect: &Dialect,
    file: &str,
    data: &[u8],
    part: &Part,
) -> Result<PartResult, GpuError> {
    let range = part.range.clone();
    let bytes = &data[range.clone()];
    let extra = needs_newline(data, &range) as usize;
    let n = bytes.len() + extra;
    if n > MAX_PARTITION + (1 << 20) {
        // positions are 31-bit: a partition that a very long record stretched past that
        // goes to the CPU loader
        return Ok(PartResult {
            batches: cpu_partition(columns, dialect, file, data, range)?,
            quoted: false,
            cpu: true,
            fallbacks: 0,
        });
    }
    {
        let staging = ws.stage(n)?;
        par_copy(&mut staging[..bytes.len()], bytes);
        if extra == 1 {
            staging[bytes.len()] = b'\n';
        }
    }
    let buffers = ws.parse(n)?;
    let quoted = buffers.quoted;
    let fallbacks = buffers.fallbacks.len() as u64;
    match assemble(plan, bytes, buffers) {
        Ok(batch) => Ok(PartResult {
            batches: vec![batch],
            quoted,
            cpu: false,
            fallbacks,
        }),
        Err(reason) => {
            let batches = cpu_partition(columns, dialect, file, data, range)?;
            // the CPU loader found nothing wrong in a partition the kernels flagged: keep
            // its rows (correct by definition), but say so when testing
            debug_assert!(
                reason == CpuReason::Overflow,
                "the kernels flagged {reason:?} in partition {} but the CPU loader loaded it",
                part.index
            );
            Ok(PartResult {
                batches,
                quoted,
                cpu: true,
                fallbacks,
            })
        }
    }
}

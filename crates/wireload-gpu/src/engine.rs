//! A GPU load end to end, a parse stage in front of the load's one append/publish stage:
//! partitions of the input are staged in page-locked memory and streamed to the device by
//! several workers, each with its own stream and buffers, so copies up, kernels and copies
//! down of different partitions overlap. Each partition's buffers become an Arrow batch on
//! the host (a unit of the append/publish stage); a partition the kernels flag (an error,
//! or more fallbacks than the list holds) is parsed by the CPU parse stage instead, in
//! place, which names the error exactly as a CPU load would. Line ends are counted while a
//! partition is staged, so every position names its line without scanning the input again.
//! The units are appended to the table in one atomic step, indexes and partitioning included.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow::record_batch::RecordBatch;
use rayon::prelude::*;
use wireload_csv::{ScanConfig, ScanMode, line_ends};
use wireload_load::{Dialect, Input, Source, data_start, parse_records};
use wireload_publish::{Appender, LoadControl, LoadError, LoadReport, MergeStrategy, Sites};
use wireload_storage::Table;

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
    /// the partition's bytes in the input
    range: Range<usize>,
    /// the GPU's rows (None: the CPU parse stage must parse the range)
    batch: Option<RecordBatch>,
    /// why the kernels left the range to the CPU (None: too long for them)
    flagged: Option<CpuReason>,
    quoted: bool,
    fallbacks: u64,
    /// line ends in the range
    lines: u64,
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

/// Bytes per piece of the parallel staging copy.
const PIECE: usize = 4 << 20;

/// Copies `data[range]` into `dst` (of the same length) in pieces on the rayon pool (one
/// thread copies at a fraction of the memory bandwidth); returns the line ends of the range,
/// counted piece by piece while the piece is in cache.
fn par_copy_lines(dst: &mut [u8], data: &[u8], range: Range<usize>) -> u64 {
    dst.par_chunks_mut(PIECE)
        .enumerate()
        .map(|(i, d)| {
            let from = range.start + i * PIECE;
            d.copy_from_slice(&data[from..from + d.len()]);
            line_ends(data, from..from + d.len())
        })
        .sum()
}

/// The line ends of `data[range]`, counted in parallel.
fn par_lines(data: &[u8], range: Range<usize>) -> u64 {
    range
        .clone()
        .step_by(PIECE)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|from| line_ends(data, from..(from + PIECE).min(range.end)))
        .sum()
}

/// Whether partition `range` needs a record delimiter added for the kernels: it ends the
/// input, whose last record has none.
fn needs_newline(data: &[u8], range: &Range<usize>) -> bool {
    range.end == data.len() && !matches!(data.last(), Some(b'\n' | b'\r'))
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
    // the GPU parses partitions of an input held whole (a stream is read in first)
    let input = match source.open()? {
        Input::Whole(w) => w,
        stream => wireload_load::Whole::Shared(stream.into_bytes()?),
    };
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
                    let r = run_partition(ws, &plan, data, &part);
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
    let (mut partitions, mut quoted, mut cpu, mut fallbacks) = (0, 0, 0, 0u64);
    let mut ordered = Vec::with_capacity(results.len());
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
        cpu += r.batch.is_none() as usize;
        fallbacks += r.fallbacks;
        ordered.push(r);
    }
    if unplanned {
        return Err(GpuError::Unsupported(format!(
            "the load stopped after {partitions} partitions"
        )));
    }
    // the append/publish stage; units numbered in input order: one per GPU partition, as
    // many as the CPU parse stage makes of a flagged one
    let appender = Appender::begin(table, &file, MergeStrategy::Chunk);
    let mut lines_before = line_ends(data, 0..start);
    let mut next_unit = 0;
    let mut gpu_units = Vec::new();
    for r in ordered {
        match r.batch {
            Some(batch) => {
                let sites = if appender.wants_sites() {
                    Sites::Records {
                        start: r.range.start as u64,
                        len: r.range.len() as u64,
                        lines_before,
                        records: vec![(0..batch.num_rows() as u32).collect()],
                        scan,
                        columns: columns.len(),
                    }
                } else {
                    Sites::None
                };
                gpu_units.push((next_unit, batch, sites));
                next_unit += 1;
            }
            None => {
                next_unit += parse_records(
                    &appender,
                    dialect,
                    &data[r.range.clone()],
                    r.range.start as u64,
                    lines_before,
                    next_unit,
                    ctl,
                )?;
                // the CPU parse stage found nothing wrong in a partition the kernels
                // flagged: its rows are correct by definition, but say so when testing
                debug_assert!(
                    matches!(r.flagged, None | Some(CpuReason::Overflow)),
                    "the kernels flagged {:?} in bytes {:?} but the CPU parse stage took them",
                    r.flagged,
                    r.range
                );
            }
        }
        lines_before += r.lines;
    }
    // the batches are the table's schema, NOT NULL and lengths checked by the passes:
    // split into the table's partitions and indexed in parallel
    gpu_units
        .into_par_iter()
        .try_for_each(|(n, batch, sites)| {
            let unit = appender.unit_of_batch(n, &batch, sites, Some(data))?;
            appender.accept(n, unit);
            Ok::<_, LoadError>(())
        })?;
    let published = appender.publish(ctl, Some(data))?;
    ctl.bytes_done.store(data.len() as u64, Relaxed);
    Ok(GpuReport {
        load: LoadReport {
            table: table.name().to_string(),
            rows: published.rows,
            bytes: data.len() as u64,
            seconds: t0.elapsed().as_secs_f64(),
            chunks: next_unit,
            merge_seconds: published.merge_seconds,
            merge_steps: published.merge_steps,
            rejected: 0,
            rejects: Vec::new(),
        },
        device: device.to_string(),
        partitions,
        quoted,
        cpu,
        fallbacks,
    })
}

/// Stages, parses and assembles one partition (or leaves it to the CPU parse stage).
fn run_partition<R: Runner>(
    ws: &mut R,
    plan: &Plan,
    data: &[u8],
    part: &Part,
) -> Result<PartResult, GpuError> {
    let range = part.range.clone();
    let bytes = &data[range.clone()];
    let extra = needs_newline(data, &range) as usize;
    let n = bytes.len() + extra;
    if n > MAX_PARTITION + (1 << 20) {
        // positions are 31-bit: a partition that a very long record stretched past that
        // goes to the CPU parse stage
        return Ok(PartResult {
            lines: par_lines(data, range.clone()),
            range,
            batch: None,
            flagged: None,
            quoted: false,
            fallbacks: 0,
        });
    }
    let lines = {
        let staging = ws.stage(n)?;
        let lines = par_copy_lines(&mut staging[..bytes.len()], data, range.clone());
        if extra == 1 {
            staging[bytes.len()] = b'\n';
        }
        lines
    };
    let buffers = ws.parse(n)?;
    let quoted = buffers.quoted;
    let fallbacks = buffers.fallbacks.len() as u64;
    // flagged: an error (the CPU parse stage names it) or a fallback overflow
    let (batch, flagged) = match assemble(plan, bytes, buffers) {
        Ok(batch) => (Some(batch), None),
        Err(reason) => (None, Some(reason)),
    };
    Ok(PartResult {
        range,
        batch,
        flagged,
        quoted,
        fallbacks,
        lines,
    })
}

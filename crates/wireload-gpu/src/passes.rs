//! One partition's passes on a [`Device`]: the launch sequence, the buffers it needs
//! (kept between partitions, grown when a partition needs more), and the copies back.
//!
//! ```text
//! input ─► count ─► scan ─► read totals ─┬─ fast:   index_fast (FieldsIndex in shared memory → tapes, spans)
//!                                        └─ quoted: index_quoted (sentinels) → compact_count → scan
//!                                                   → compact_scatter → read rows → fields_quoted
//!        ─► read status (a flagged error ends the passes here)
//!        ─► deserialize (tapes → values) ─► string_lengths → offsets scan → read sizes → string_gather
//!        ─► read status, outputs, fallbacks
//! ```

use std::sync::Arc;

use arrow::buffer::MutableBuffer;
use rayon::prelude::*;

use bytemuck::Pod;

use crate::buffers::{ColumnOut, PartitionBuffers, Trace, bitmap_words};
use crate::device::{Device, HostMemory};
use crate::error::GpuError;
use crate::layout::{
    ChunkCount, ColumnDesc, CompactCountArgs, CompactScatterArgs, CountArgs, DeserializeArgs,
    Fallback, FieldsQuotedArgs, IndexFastArgs, IndexQuotedArgs, Kernel, NONE, OffsetsArgs,
    ScanArgs, Span, Status, StringArgs, kind,
};
use crate::plan::{GpuOptions, PassMode, Plan};

/// Elements each thread of a scan or compaction block handles.
const PER_THREAD: u32 = 8;
/// Bytes of zeros after a partition's input, so every step's loads stay in bounds.
const INPUT_SLACK: usize = 256;

/// A device allocation that grows (never shrinks) as partitions need more.
#[derive(Debug, Default)]
struct Buf {
    ptr: u64,
    cap: usize,
}

impl Buf {
    fn ensure<D: Device>(&mut self, dev: &D, len: usize) -> Result<u64, GpuError> {
        if self.cap < len.max(1) {
            if self.ptr != 0 {
                // SAFETY: the buffer came from this device's alloc; the workspace syncs its
                // stream at the end of every partition, so no queued work uses it.
                unsafe { dev.free(self.ptr) };
                self.ptr = 0;
                self.cap = 0;
            }
            let cap = len.max(1).max(self.cap + self.cap / 4);
            self.ptr = dev.alloc(cap)?;
            self.cap = cap;
        }
        Ok(self.ptr)
    }

    fn release<D: Device>(&mut self, dev: &D) {
        if self.ptr != 0 {
            // SAFETY: as in `ensure`: ours, and nothing is queued when a workspace drops.
            unsafe { dev.free(self.ptr) };
        }
        self.ptr = 0;
        self.cap = 0;
    }
}

/// The device buffers of one column.
#[derive(Debug, Default)]
struct ColBufs {
    tape: Buf,
    values: Buf,
    validity: Buf,
    spans: Buf,
    offsets: Buf,
}

impl ColBufs {
    fn release<D: Device>(&mut self, dev: &D) {
        for b in [
            &mut self.tape,
            &mut self.values,
            &mut self.validity,
            &mut self.spans,
            &mut self.offsets,
        ] {
            b.release(dev);
        }
    }
}

/// Offsets in the small device buffer and its pinned twin.
mod small {
    /// ChunkCount: the combination of the chunk counts
    pub const TOTAL: usize = 0;
    /// ChunkCount: the combination of the compaction tiles
    pub const COMPACT: usize = 32;
    /// Status
    pub const STATUS: usize = 64;
    /// u32 per string column: its offsets[rows]
    pub const SIZES: usize = 128;
}

/// A stream with the device buffers of one partition at a time, and the host staging
/// buffers its copies go through.
pub struct Workspace<D: Device> {
    dev: Arc<D>,
    stream: D::Stream,
    plan: Arc<Plan>,
    opts: GpuOptions,
    input: Buf,
    counts: Buf,
    prefix: Buf,
    partials: Buf,
    small: Buf,
    descs: Buf,
    ids: Buf,
    fallbacks: Buf,
    index: Buf,
    tile_counts: Buf,
    tile_prefix: Buf,
    compacted: Buf,
    row_end: Buf,
    off_partials: Buf,
    cols: Vec<ColBufs>,
    /// pinned: the partition's input
    h_input: Option<D::Pinned>,
    /// pinned: scalars, descriptors and column numbers going up, totals coming down
    h_small: D::Pinned,
    /// pinned: the outputs coming down
    h_out: Option<D::Pinned>,
    /// bytes of input staged for the next run
    staged: usize,
}

/// A partition after [`Workspace::parse`].
#[derive(Debug)]
pub enum Parsed {
    /// Nothing to copy back (an unterminated quote stopped the passes).
    Done(PartitionBuffers),
    /// The outputs are on the device.
    OnDevice(OnDevice),
}

impl Parsed {
    /// Records in the partition.
    #[cfg(feature = "testing")]
    pub fn rows(&self) -> usize {
        match self {
            Parsed::Done(b) => b.rows,
            Parsed::OnDevice(p) => p.rows,
        }
    }
}

/// What is left on the device after the passes, and where.
#[derive(Debug)]
pub struct OnDevice {
    /// records
    pub rows: usize,
    /// the quoted passes ran
    pub quoted: bool,
    /// errors and the fallback count
    pub status: Status,
    descs: Vec<ColumnDesc>,
    sizes: Vec<u32>,
    fallback_list: u64,
    trace: Option<Trace>,
}

impl<D: Device> Drop for Workspace<D> {
    fn drop(&mut self) {
        // Queued work may still use the buffers: wait for it (errors cannot be reported
        // from a drop; the buffers are freed either way).
        let _ = self.dev.sync(&self.stream);
        let dev = Arc::clone(&self.dev);
        for b in [
            &mut self.input,
            &mut self.counts,
            &mut self.prefix,
            &mut self.partials,
            &mut self.small,
            &mut self.descs,
            &mut self.ids,
            &mut self.fallbacks,
            &mut self.index,
            &mut self.tile_counts,
            &mut self.tile_prefix,
            &mut self.compacted,
            &mut self.row_end,
            &mut self.off_partials,
        ] {
            b.release(&*dev);
        }
        for c in &mut self.cols {
            c.release(&*dev);
        }
    }
}

/// 64-bit decimals (as the kernels send them) widened to the 128 bits Arrow stores.
fn widen_decimals(bytes: &[u8]) -> MutableBuffer {
    let mut out = MutableBuffer::with_capacity(bytes.len() * 2);
    for v in bytes.chunks_exact(8) {
        let v = i64::from_le_bytes(v.try_into().expect("8 bytes")) as i128;
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

fn ceil_div(a: usize, b: usize) -> usize {
    a.div_ceil(b)
}

/// Size of the pinned scratch buffer for a plan.
fn small_bytes(ncols: usize) -> usize {
    small::SIZES + 4 * ncols + 2 * ncols * std::mem::size_of::<ColumnDesc>() + 8 * ncols + 64
}

impl<D: Device> Workspace<D> {
    /// A workspace on a new stream of `dev` for loads of `plan`.
    pub fn new(dev: Arc<D>, plan: Arc<Plan>, opts: &GpuOptions) -> Result<Self, GpuError> {
        opts.validate()?;
        let stream = dev.new_stream()?;
        let ncols = plan.ncols();
        let h_small = dev.alloc_pinned(small_bytes(ncols))?;
        Ok(Workspace {
            dev,
            stream,
            plan,
            opts: opts.clone(),
            input: Buf::default(),
            counts: Buf::default(),
            prefix: Buf::default(),
            partials: Buf::default(),
            small: Buf::default(),
            descs: Buf::default(),
            ids: Buf::default(),
            fallbacks: Buf::default(),
            index: Buf::default(),
            tile_counts: Buf::default(),
            tile_prefix: Buf::default(),
            compacted: Buf::default(),
            row_end: Buf::default(),
            off_partials: Buf::default(),
            cols: (0..ncols).map(|_| ColBufs::default()).collect(),
            h_input: None,
            h_small,
            h_out: None,
            staged: 0,
        })
    }

    /// Re-targets this idle workspace to loads of `plan` with `opts`, keeping its stream
    /// and buffers (which grow as partitions need).
    pub fn replan(&mut self, plan: Arc<Plan>, opts: &GpuOptions) -> Result<(), GpuError> {
        opts.validate()?;
        let ncols = plan.ncols();
        if self.h_small.size() < small_bytes(ncols) {
            self.h_small = self.dev.alloc_pinned(small_bytes(ncols))?;
        }
        while self.cols.len() > ncols {
            let mut c = self.cols.pop().expect("more columns than the plan has");
            c.release(&*self.dev);
        }
        self.cols.resize_with(ncols, ColBufs::default);
        self.plan = plan;
        self.opts = opts.clone();
        Ok(())
    }

    /// The stream.
    #[cfg(feature = "testing")]
    pub fn stream(&self) -> &D::Stream {
        &self.stream
    }

    /// Bytes the device input buffer needs for `n` bytes of input.
    fn padded(&self, n: usize) -> usize {
        ceil_div(n.max(1), self.opts.chunk) * self.opts.chunk + INPUT_SLACK
    }

    /// The pinned input buffer, at least `n` bytes of input plus padding, to fill before
    /// [`Workspace::upload`].
    pub fn staging(&mut self, n: usize) -> Result<&mut [u8], GpuError> {
        let need = self.padded(n);
        if self.h_input.as_ref().is_none_or(|h| h.size() < need) {
            let cap = need.max(self.h_input.as_ref().map_or(0, |h| h.size()) * 5 / 4);
            self.h_input = None;
            self.h_input = Some(self.dev.alloc_pinned(cap)?);
        }
        let h = self.h_input.as_mut().expect("allocated above");
        Ok(&mut h.bytes_mut()?[..need])
    }

    /// Queues the copy of the first `n` bytes of the staging buffer (zero-padded here) to
    /// the device.
    pub fn upload(&mut self, n: usize) -> Result<(), GpuError> {
        let need = self.padded(n);
        let dst = self.input.ensure(&*self.dev, need)?;
        let h = self
            .h_input
            .as_mut()
            .expect("staging() is called before upload()");
        h.bytes_mut()?[n..need].fill(0);
        // SAFETY: dst has `need` bytes; the pinned source lives in the workspace and is not
        // touched again before the stream is synchronized (at the latest when this
        // partition's passes end).
        unsafe { self.dev.h2d(&self.stream, dst, &h.bytes()?[..need])? };
        self.staged = n;
        Ok(())
    }

    /// Copies `bytes` to the device as the next partition (staging then upload).
    #[cfg(feature = "testing")]
    pub fn load_input(&mut self, bytes: &[u8]) -> Result<(), GpuError> {
        let n = bytes.len();
        self.staging(n)?[..n].copy_from_slice(bytes);
        self.upload(n)
    }

    fn put<T: Pod>(&mut self, at: usize, dst: u64, v: &[T]) -> Result<(), GpuError> {
        let bytes: &[u8] = bytemuck::cast_slice(v);
        let h = &mut self.h_small.bytes_mut()?[at..at + bytes.len()];
        h.copy_from_slice(bytes);
        // SAFETY: `dst` is an allocation of at least `bytes.len()` bytes (the callers
        // ensure it); the pinned source region is not rewritten before the stream syncs
        // (each region is written once per partition, and partitions end with a sync).
        unsafe {
            self.dev.h2d(
                &self.stream,
                dst,
                &self.h_small.bytes()?[at..at + bytes.len()],
            )
        }
    }

    fn get<T: Pod>(&mut self, src: u64, n: usize) -> Result<Vec<T>, GpuError> {
        let mut v = vec![T::zeroed(); n];
        // SAFETY: `src` holds at least n values (the callers' buffers), and `v` is not read
        // before the sync right after.
        unsafe {
            self.dev
                .d2h(&self.stream, bytemuck::cast_slice_mut(&mut v), src)?
        };
        self.dev.sync(&self.stream)?;
        Ok(v)
    }

    /// Exclusive scan of `n` ChunkCounts at `input` into `out`, the total at `total`.
    fn scan(&mut self, input: u64, out: u64, n: u32, total: u64) -> Result<(), GpuError> {
        let tile = self.dev.block_threads() * PER_THREAD;
        let tiles = ceil_div(n as usize, tile as usize) as u32;
        let partials = self.partials.ensure(
            &*self.dev,
            tiles as usize * std::mem::size_of::<ChunkCount>(),
        )?;
        let args = ScanArgs {
            input,
            out,
            partials,
            total,
            n,
            tile,
        };
        // SAFETY: input/out hold n ChunkCounts, partials one per tile, total one.
        unsafe {
            self.dev
                .launch(&self.stream, Kernel::ScanPartial, (tiles, 1), &args)?;
            self.dev
                .launch(&self.stream, Kernel::ScanFinish, (tiles, 1), &args)
        }
    }

    /// Blocks for a kernel with one warp per item.
    fn warp_grid(&self, items: usize) -> u32 {
        let warps = (self.dev.block_threads() / 32) as usize;
        ceil_div(items, warps).clamp(1, self.dev.multiprocessors() as usize * 64) as u32
    }

    /// Blocks for a kernel with one thread per item.
    fn thread_grid(&self, items: usize) -> u32 {
        ceil_div(items, self.dev.block_threads() as usize)
            .clamp(1, self.dev.multiprocessors() as usize * 32) as u32
    }

    /// Runs the passes over the partition uploaded last and copies everything back; with
    /// `trace`, every intermediate array too.
    pub fn run(&mut self, trace: bool) -> Result<PartitionBuffers, GpuError> {
        match self.parse(trace)? {
            Parsed::Done(b) => Ok(b),
            Parsed::OnDevice(p) => self.download(p),
        }
    }

    /// Runs the passes over the partition uploaded last and leaves the outputs on the
    /// device (what the on-GPU throughput measures): the status and row count come back.
    pub fn parse(&mut self, trace: bool) -> Result<Parsed, GpuError> {
        let n = self.staged;
        let dev = Arc::clone(&self.dev);
        let dev = &*dev;
        let plan = Arc::clone(&self.plan);
        let ncols = plan.ncols();
        let d = plan.dialect;
        let chunk = self.opts.chunk;
        let nchunks = ceil_div(n, chunk);
        let cc = std::mem::size_of::<ChunkCount>();
        let input = self.input.ptr;
        let small = self.small.ensure(dev, 256)?;
        self.put(
            small::STATUS,
            small + small::STATUS as u64,
            &[Status::default()],
        )?;
        self.put(
            small::TOTAL,
            small + small::TOTAL as u64,
            &[ChunkCount::default()],
        )?;
        let counts = self.counts.ensure(dev, nchunks * cc)?;
        let prefix = self.prefix.ensure(dev, nchunks * cc)?;
        let status = small + small::STATUS as u64;
        let mut tr = Trace::default();
        if nchunks > 0 {
            let args = CountArgs {
                input,
                counts,
                n: n as u32,
                chunk: chunk as u32,
                nchunks: nchunks as u32,
                pad: 0,
                d,
            };
            // SAFETY: the input holds the padded partition, counts one ChunkCount per chunk.
            unsafe {
                dev.launch(
                    &self.stream,
                    Kernel::Count,
                    (self.warp_grid(nchunks), 1),
                    &args,
                )?
            };
            self.scan(counts, prefix, nchunks as u32, small + small::TOTAL as u64)?;
        }
        let total: ChunkCount = self.get(small + small::TOTAL as u64, 1)?[0];
        tr.total = total;
        if trace {
            tr.counts = self.get(counts, nchunks)?;
            tr.prefix = self.get(prefix, nchunks)?;
        }
        if total.quotes % 2 == 1 {
            return Ok(Parsed::Done(PartitionBuffers::unterminated(
                trace.then_some(tr),
            )));
        }
        let quoted = self.opts.mode == PassMode::Quoted || (d.has_quote != 0 && total.quotes > 0);
        let cap = self.opts.fallbacks;
        let fallbacks = self
            .fallbacks
            .ensure(dev, cap * std::mem::size_of::<Fallback>())?;

        // find the fields: the row count, and (quoted) the compacted FieldsIndex
        let (rows, valid) = if quoted {
            let entries = total.fields as usize;
            let index = self.index.ensure(dev, entries * 4)?;
            let args = IndexQuotedArgs {
                input,
                prefix,
                index,
                status,
                n: n as u32,
                chunk: chunk as u32,
                nchunks: nchunks as u32,
                pad: 0,
                d,
            };
            let tile = dev.block_threads() * PER_THREAD;
            let tiles = ceil_div(entries, tile as usize);
            let tile_counts = self.tile_counts.ensure(dev, tiles * cc)?;
            let tile_prefix = self.tile_prefix.ensure(dev, tiles * cc)?;
            self.put(
                small::COMPACT,
                small + small::COMPACT as u64,
                &[ChunkCount::default()],
            )?;
            if entries > 0 {
                // SAFETY: index holds one u32 per candidate (total.fields), prefix one
                // ChunkCount per chunk, the tile arrays one per tile.
                unsafe {
                    dev.launch(
                        &self.stream,
                        Kernel::IndexQuoted,
                        (self.warp_grid(nchunks), 1),
                        &args,
                    )?;
                    let cargs = CompactCountArgs {
                        index,
                        counts: tile_counts,
                        entries: entries as u32,
                        tile,
                    };
                    dev.launch(
                        &self.stream,
                        Kernel::CompactCount,
                        (tiles as u32, 1),
                        &cargs,
                    )?;
                }
                self.scan(
                    tile_counts,
                    tile_prefix,
                    tiles as u32,
                    small + small::COMPACT as u64,
                )?;
            }
            let ctotal: ChunkCount = self.get(small + small::COMPACT as u64, 1)?[0];
            let (valid, rows) = (ctotal.fields as usize, ctotal.records as usize);
            let compacted = self.compacted.ensure(dev, valid * 4)?;
            let row_end = self.row_end.ensure(dev, rows * 4)?;
            if entries > 0 {
                let sargs = CompactScatterArgs {
                    index,
                    prefix: tile_prefix,
                    out: compacted,
                    row_end,
                    entries: entries as u32,
                    tile,
                };
                // SAFETY: out holds `valid` entries and row_end `rows`, as counted.
                unsafe {
                    dev.launch(
                        &self.stream,
                        Kernel::CompactScatter,
                        (tiles as u32, 1),
                        &sargs,
                    )?
                };
            }
            if trace {
                tr.index = self.get(index, entries)?;
                tr.compacted = self.get(compacted, valid)?;
                tr.row_end = self.get(row_end, rows)?;
            }
            (rows, valid)
        } else {
            (total.records as usize, 0)
        };

        // the column buffers for `rows` rows, and their descriptors
        let words = bitmap_words(rows);
        let mut descs: Vec<ColumnDesc> = Vec::with_capacity(ncols);
        for (c, cp) in plan.columns.iter().enumerate() {
            let b = &mut self.cols[c];
            let mut desc = cp.desc();
            desc.validity = b.validity.ensure(dev, words * 4)?;
            if cp.has_tape() {
                desc.tape = b.tape.ensure(dev, rows * cp.width as usize)?;
                let vbytes = if cp.kind == kind::BOOL {
                    words * 4
                } else {
                    rows * cp.device_value_size()
                };
                desc.values = b.values.ensure(dev, vbytes)?;
            } else {
                desc.spans = b.spans.ensure(dev, rows * std::mem::size_of::<Span>())?;
                desc.offsets = b.offsets.ensure(dev, (rows + 1) * 4)?;
            }
            descs.push(desc);
        }
        let desc_bytes = ncols * std::mem::size_of::<ColumnDesc>();
        let descs_ptr = self.descs.ensure(dev, desc_bytes)?;
        let ids_at = small::SIZES + 4 * ncols;
        let descs_at = ids_at + 4 * ncols;
        self.put(descs_at, descs_ptr, &descs)?;
        let ids: Vec<u32> = plan.numeric.iter().chain(&plan.strings).copied().collect();
        let ids_ptr = self.ids.ensure(dev, ids.len() * 4)?;
        self.put(ids_at, ids_ptr, &ids)?;
        let num_ids = ids_ptr;
        let str_ids = ids_ptr + 4 * plan.numeric.len() as u64;

        if rows > 0 {
            if quoted {
                let args = FieldsQuotedArgs {
                    input,
                    index: self.compacted.ptr,
                    row_end: self.row_end.ptr,
                    cols: descs_ptr,
                    status,
                    fallbacks,
                    rows: rows as u32,
                    ncols: ncols as u32,
                    entries: valid as u32,
                    fallback_cap: cap as u32,
                    d,
                };
                let grid = self.thread_grid(rows * ncols);
                // SAFETY: the compacted index and row_end were sized from the counts, the
                // column buffers for `rows` rows.
                unsafe { dev.launch(&self.stream, Kernel::FieldsQuoted, (grid, 1), &args)? };
            } else {
                let args = IndexFastArgs {
                    input,
                    prefix,
                    cols: descs_ptr,
                    status,
                    fallbacks,
                    n: n as u32,
                    chunk: chunk as u32,
                    nchunks: nchunks as u32,
                    ncols: ncols as u32,
                    rows: rows as u32,
                    fallback_cap: cap as u32,
                    d,
                };
                // SAFETY: as above; every field's row is below `rows` (checked in the kernel).
                unsafe {
                    dev.launch(
                        &self.stream,
                        Kernel::IndexFast,
                        (self.warp_grid(nchunks), 1),
                        &args,
                    )?
                };
            }
            // A flagged error ends the passes: the rows it is in may have cells and spans
            // no field was written to (their contents undefined, so not to be read: a
            // span's garbage offset would send the string pass out of bounds). The CPU
            // loader names the error.
            let st: Status = self.get(status, 1)?[0];
            if st.error_at != NONE || st.error_pos != NONE {
                return Ok(Parsed::Done(PartitionBuffers::flagged(
                    rows,
                    quoted,
                    st,
                    trace.then_some(tr),
                )));
            }
            if !plan.numeric.is_empty() {
                let args = DeserializeArgs {
                    cols: descs_ptr,
                    col_ids: num_ids,
                    status,
                    fallbacks,
                    rows: rows as u32,
                    fallback_cap: cap as u32,
                };
                let grid = (self.thread_grid(rows), plan.numeric.len() as u32);
                // SAFETY: tapes, values and validity hold `rows` rows.
                unsafe { dev.launch(&self.stream, Kernel::Deserialize, grid, &args)? };
            }
        }
        if trace {
            for (c, cp) in plan.columns.iter().enumerate() {
                if cp.has_tape() {
                    tr.tapes
                        .push(self.get(descs[c].tape, rows * cp.width as usize)?);
                    tr.spans.push(Vec::new());
                } else {
                    tr.tapes.push(Vec::new());
                    tr.spans.push(self.get(descs[c].spans, rows)?);
                }
            }
        }

        // strings: lengths, offsets, sizes, gather
        let nstr = plan.strings.len();
        let mut sizes = vec![0u32; nstr];
        if nstr > 0 && rows > 0 {
            let sargs = StringArgs {
                input,
                cols: descs_ptr,
                col_ids: str_ids,
                status,
                fallbacks,
                rows: rows as u32,
                fallback_cap: cap as u32,
                n: n as u32,
                pad: 0,
                d,
            };
            let tile = dev.block_threads() * PER_THREAD;
            let tiles = ceil_div(rows, tile as usize) as u32;
            let partials = self.off_partials.ensure(dev, tiles as usize * nstr * 4)?;
            let oargs = OffsetsArgs {
                cols: descs_ptr,
                col_ids: str_ids,
                partials,
                rows: rows as u32,
                tile,
                tiles,
                pad: 0,
            };
            let grid = (self.thread_grid(rows), nstr as u32);
            // SAFETY: spans and offsets (rows + 1) hold `rows` rows; partials one u32 per
            // column and tile.
            unsafe {
                dev.launch(&self.stream, Kernel::StringLengths, grid, &sargs)?;
                dev.launch(
                    &self.stream,
                    Kernel::OffsetsPartial,
                    (tiles, nstr as u32),
                    &oargs,
                )?;
                dev.launch(
                    &self.stream,
                    Kernel::OffsetsFinish,
                    (tiles, nstr as u32),
                    &oargs,
                )?;
            }
            for (k, &c) in plan.strings.iter().enumerate() {
                let at = descs[c as usize].offsets + 4 * rows as u64;
                // SAFETY: offsets holds rows + 1 entries; the pinned region SIZES + 4k is
                // read only after the sync below.
                unsafe {
                    let h = &mut self.h_small.bytes_mut()?
                        [small::SIZES + 4 * k..small::SIZES + 4 * k + 4];
                    dev.d2h(&self.stream, h, at)?;
                }
            }
            dev.sync(&self.stream)?;
            for (k, &c) in plan.strings.iter().enumerate() {
                let h = &self.h_small.bytes()?[small::SIZES + 4 * k..small::SIZES + 4 * k + 4];
                sizes[k] = u32::from_le_bytes(h.try_into().expect("4 bytes"));
                descs[c as usize].values = self.cols[c as usize]
                    .values
                    .ensure(dev, sizes[k] as usize)?;
            }
            self.put(descs_at + desc_bytes, descs_ptr, &descs)?;
            // SAFETY: each column's values hold offsets[rows] bytes.
            unsafe { dev.launch(&self.stream, Kernel::StringGather, grid, &sargs)? };
        }

        let st: Status = self.get(status, 1)?[0];
        Ok(Parsed::OnDevice(OnDevice {
            rows,
            quoted,
            status: st,
            descs,
            sizes,
            fallback_list: fallbacks,
            trace: trace.then_some(tr),
        }))
    }

    /// Copies a parsed partition's outputs and fallbacks back.
    pub fn download(&mut self, p: OnDevice) -> Result<PartitionBuffers, GpuError> {
        let OnDevice {
            rows,
            quoted,
            status: st,
            descs,
            sizes,
            fallback_list,
            trace,
        } = p;
        let dev = Arc::clone(&self.dev);
        let dev = &*dev;
        let plan = Arc::clone(&self.plan);
        let ncols = plan.ncols();
        let cap = self.opts.fallbacks;
        let words = bitmap_words(rows);
        let mut layout = Vec::with_capacity(ncols);
        let mut total_bytes = 0usize;
        for (c, cp) in plan.columns.iter().enumerate() {
            let vbytes = if cp.has_tape() {
                if cp.kind == kind::BOOL {
                    words * 4
                } else {
                    rows * cp.device_value_size()
                }
            } else {
                let k = plan
                    .strings
                    .iter()
                    .position(|&s| s as usize == c)
                    .expect("a string column");
                sizes[k] as usize
            };
            // (no rows: no kernel wrote the one offset, 0)
            let obytes = if cp.has_tape() || rows == 0 {
                0
            } else {
                (rows + 1) * 4
            };
            layout.push((total_bytes, vbytes, words * 4, obytes));
            total_bytes += (vbytes + words * 4 + obytes).next_multiple_of(64);
        }
        let nfb = (st.fallbacks as usize).min(cap);
        let fb_at = total_bytes;
        total_bytes += nfb * std::mem::size_of::<Fallback>();
        if self.h_out.as_ref().is_none_or(|h| h.size() < total_bytes) {
            let cap_bytes = total_bytes.max(self.h_out.as_ref().map_or(0, |h| h.size()) * 5 / 4);
            self.h_out = None;
            self.h_out = Some(dev.alloc_pinned(cap_bytes)?);
        }
        let h_out = self.h_out.as_mut().expect("allocated above");
        {
            let out = h_out.bytes_mut()?;
            for (c, &(at, vbytes, wbytes, obytes)) in layout.iter().enumerate() {
                // SAFETY: each region lies in the pinned buffer (sized above) and the
                // device buffers hold these many bytes; nothing reads the regions before
                // the sync below.
                unsafe {
                    if vbytes > 0 {
                        dev.d2h(&self.stream, &mut out[at..at + vbytes], descs[c].values)?;
                    }
                    if wbytes > 0 {
                        dev.d2h(
                            &self.stream,
                            &mut out[at + vbytes..at + vbytes + wbytes],
                            descs[c].validity,
                        )?;
                    }
                    if obytes > 0 {
                        let o = at + vbytes + wbytes;
                        dev.d2h(&self.stream, &mut out[o..o + obytes], descs[c].offsets)?;
                    }
                }
            }
            if nfb > 0 {
                let len = nfb * std::mem::size_of::<Fallback>();
                // SAFETY: as above; the fallback list holds `cap` >= nfb entries.
                unsafe { dev.d2h(&self.stream, &mut out[fb_at..fb_at + len], fallback_list)? };
            }
        }
        dev.sync(&self.stream)?;
        let out = h_out.bytes()?;
        // the copies out of pinned memory run in parallel, column by column
        let columns = layout
            .par_iter()
            .zip(&plan.columns)
            .map(|(&(at, vbytes, wbytes, obytes), cp)| {
                let bytes = &out[at..at + vbytes];
                let values = if cp.device_value_size() != cp.value_size() {
                    widen_decimals(bytes)
                } else {
                    let mut values = MutableBuffer::with_capacity(vbytes);
                    values.extend_from_slice(bytes);
                    values
                };
                let offsets = if cp.has_tape() {
                    Vec::new()
                } else if rows == 0 {
                    vec![0]
                } else {
                    bytemuck::pod_collect_to_vec(&out[at + vbytes + wbytes..][..obytes])
                };
                ColumnOut {
                    values,
                    validity: bytemuck::pod_collect_to_vec(&out[at + vbytes..][..wbytes]),
                    offsets,
                }
            })
            .collect();
        let fallbacks =
            bytemuck::pod_collect_to_vec(&out[fb_at..][..nfb * std::mem::size_of::<Fallback>()]);
        Ok(PartitionBuffers {
            rows,
            quoted,
            unterminated: false,
            status: st,
            fallbacks,
            columns,
            trace,
        })
    }
}

/// Idle workspaces of a device, kept between loads: allocating page-locked and device
/// buffers takes about as long as parsing them at the device's speed, so a load takes its
/// workspaces from here and gives them back. They keep their memory while idle
/// ([`WorkspacePool::clear`] frees it).
pub struct WorkspacePool<D: Device> {
    dev: Arc<D>,
    idle: std::sync::Mutex<Vec<Workspace<D>>>,
}

impl<D: Device> WorkspacePool<D> {
    /// An empty pool for `dev`.
    pub fn new(dev: Arc<D>) -> Self {
        WorkspacePool {
            dev,
            idle: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The device.
    pub fn device(&self) -> &Arc<D> {
        &self.dev
    }

    /// An idle workspace re-targeted to `plan`, or a new one.
    pub fn take(&self, plan: Arc<Plan>, opts: &GpuOptions) -> Result<Pooled<'_, D>, GpuError> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let ws = match idle {
            Some(mut ws) => {
                ws.replan(plan, opts)?;
                ws
            }
            None => Workspace::new(Arc::clone(&self.dev), plan, opts)?,
        };
        Ok(Pooled {
            ws: Some(ws),
            pool: self,
            healthy: true,
        })
    }

    /// Frees the idle workspaces' memory.
    #[cfg(feature = "testing")]
    pub fn clear(&self) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// A workspace on loan from a [`WorkspacePool`]; it goes back when dropped (unless a
/// device error made it unfit).
pub struct Pooled<'a, D: Device> {
    ws: Option<Workspace<D>>,
    pool: &'a WorkspacePool<D>,
    healthy: bool,
}

impl<D: Device> Pooled<'_, D> {
    /// The workspace.
    pub fn get(&mut self) -> &mut Workspace<D> {
        self.ws.as_mut().expect("present until dropped")
    }

    /// Marks the workspace as not to be reused (after a device error).
    pub fn discard(&mut self) {
        self.healthy = false;
    }
}

impl<D: Device> Drop for Pooled<'_, D> {
    fn drop(&mut self) {
        if let Some(ws) = self.ws.take()
            && self.healthy
            && ws.dev.sync(&ws.stream).is_ok()
        {
            self.pool
                .idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(ws);
        }
    }
}

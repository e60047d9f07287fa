//! What the passes need from a device: memory, copies, kernel launches on a stream. Two
//! devices implement it: a CUDA GPU (`cuda` feature) and the CPU emulator (`testing`
//! feature).

use bytemuck::Pod;

use crate::error::GpuError;
use crate::layout::Kernel;

/// A device the kernels run on.
///
/// Copies and launches are ordered on their stream and may run after the call returns;
/// [`Device::sync`] waits for all of them. Device memory is addressed by 64-bit numbers.
pub trait Device: Send + Sync + 'static {
    /// An ordered queue of copies and launches.
    type Stream: Send;
    /// Page-locked host memory (what copies run fastest from and to).
    type Pinned: HostMemory;

    /// The device's name, for reports.
    fn describe(&self) -> String;
    /// Streaming multiprocessors (grid sizes are a multiple of them).
    fn multiprocessors(&self) -> u32;
    /// Threads per block the kernels are launched with.
    fn block_threads(&self) -> u32;
    /// A new stream.
    fn new_stream(&self) -> Result<Self::Stream, GpuError>;
    /// Allocates `len` bytes (at least 256-byte aligned).
    fn alloc(&self, len: usize) -> Result<u64, GpuError>;
    /// Frees an allocation.
    ///
    /// # Safety
    /// `ptr` came from [`Device::alloc`] of this device and no queued work uses it.
    unsafe fn free(&self, ptr: u64);
    /// Allocates `len` bytes of page-locked host memory.
    fn alloc_pinned(&self, len: usize) -> Result<Self::Pinned, GpuError>;
    /// Queues a copy of `src` to device address `dst`.
    ///
    /// # Safety
    /// `dst..dst + src.len()` lies in one allocation, and `src` stays alive and unchanged
    /// until the stream is synchronized.
    unsafe fn h2d(&self, s: &Self::Stream, dst: u64, src: &[u8]) -> Result<(), GpuError>;
    /// Queues a copy from device address `src` into `dst`.
    ///
    /// # Safety
    /// `src..src + dst.len()` lies in one allocation, and `dst` is neither read nor moved
    /// until the stream is synchronized.
    unsafe fn d2h(&self, s: &Self::Stream, dst: &mut [u8], src: u64) -> Result<(), GpuError>;
    /// Queues kernel `k` over `grid` blocks of [`Device::block_threads`] threads with the
    /// argument struct `args` (the kernel's one parameter, passed by value).
    ///
    /// # Safety
    /// `A` is the kernel's argument struct (`kernels/layout.h`), and every device address
    /// in `args` points into a live allocation large enough for what the kernel reads and
    /// writes there.
    unsafe fn launch<A: Pod>(
        &self,
        s: &Self::Stream,
        k: Kernel,
        grid: (u32, u32),
        args: &A,
    ) -> Result<(), GpuError>;
    /// Waits until everything queued on `s` has run.
    fn sync(&self, s: &Self::Stream) -> Result<(), GpuError>;
}

/// Page-locked host memory of a device: the staging buffers of the copies.
pub trait HostMemory: Send {
    /// Bytes allocated.
    fn size(&self) -> usize;
    /// The bytes. Fails only when the device failed (a CUDA error recorded earlier).
    fn bytes(&self) -> Result<&[u8], GpuError>;
    /// The bytes, to write. Fails as [`HostMemory::bytes`].
    fn bytes_mut(&mut self) -> Result<&mut [u8], GpuError>;
}

//! The CPU emulator as a [`Device`]: device memory is host memory, streams run at once,
//! and kernels are the CUDA source compiled for the host with `kernels/simt.h`, every GPU
//! thread a fiber (see that file for what the emulation checks and what it cannot).

use std::alloc::Layout;
use std::collections::HashMap;
use std::ffi::c_char;
use std::sync::Mutex;

use bytemuck::Pod;

use crate::device::{Device, HostMemory};
use crate::error::GpuError;
use crate::layout::Kernel;

unsafe extern "C" {
    fn wl_emu_launch(
        kernel: u32,
        gx: u32,
        gy: u32,
        gz: u32,
        threads: u32,
        args: *const u8,
        err: *mut c_char,
        errlen: usize,
    ) -> i32;
    fn wl_emu_layout(out: *mut u32, cap: u32) -> u32;
}

/// Alignment of emulated device allocations (cudaMalloc gives at least 256).
const ALIGN: usize = 256;

/// The kernels run on the CPU.
#[derive(Debug)]
pub struct Emulator {
    threads: u32,
    allocations: Mutex<HashMap<u64, Layout>>,
}

impl Emulator {
    /// An emulator launching blocks of `threads` threads (a multiple of 32, at most 256).
    pub fn new(threads: u32) -> Self {
        assert!(
            threads > 0 && threads.is_multiple_of(32) && threads <= crate::layout::MAX_BLOCK,
            "threads per block must be a multiple of 32 up to 256"
        );
        Emulator {
            threads,
            allocations: Mutex::new(HashMap::new()),
        }
    }
}

impl Default for Emulator {
    /// Two warps per block: small enough to be quick, enough to exercise block barriers.
    fn default() -> Self {
        Emulator::new(64)
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let map = self
            .allocations
            .get_mut()
            .unwrap_or_else(|e| e.into_inner());
        for (ptr, layout) in map.drain() {
            // SAFETY: every entry is an allocation this emulator made with this layout and
            // has not freed.
            unsafe { std::alloc::dealloc(ptr as *mut u8, layout) };
        }
    }
}

/// Host memory standing in for page-locked memory.
#[derive(Debug)]
pub struct HostBuffer(Vec<u8>);

impl HostMemory for HostBuffer {
    fn size(&self) -> usize {
        self.0.len()
    }

    fn bytes(&self) -> Result<&[u8], GpuError> {
        Ok(&self.0)
    }

    fn bytes_mut(&mut self) -> Result<&mut [u8], GpuError> {
        Ok(&mut self.0)
    }
}

impl Device for Emulator {
    type Stream = ();
    type Pinned = HostBuffer;

    fn describe(&self) -> String {
        format!(
            "CPU emulator ({} threads per block, kernels from csv.cu)",
            self.threads
        )
    }

    fn multiprocessors(&self) -> u32 {
        2
    }

    fn block_threads(&self) -> u32 {
        self.threads
    }

    fn new_stream(&self) -> Result<(), GpuError> {
        Ok(())
    }

    fn alloc(&self, len: usize) -> Result<u64, GpuError> {
        let layout = Layout::from_size_align(len.max(1), ALIGN)
            .map_err(|e| GpuError::Unsupported(format!("allocation of {len} bytes: {e}")))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(GpuError::Emulator {
                kernel: "alloc",
                message: format!("out of memory allocating {len} bytes"),
            });
        }
        self.allocations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(ptr as u64, layout);
        Ok(ptr as u64)
    }

    unsafe fn free(&self, ptr: u64) {
        let layout = self
            .allocations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ptr);
        if let Some(layout) = layout {
            // SAFETY: `ptr` was allocated by `alloc` with this layout and is removed from
            // the map, so it is freed once.
            unsafe { std::alloc::dealloc(ptr as *mut u8, layout) };
        }
    }

    fn alloc_pinned(&self, len: usize) -> Result<HostBuffer, GpuError> {
        Ok(HostBuffer(vec![0; len]))
    }

    unsafe fn h2d(&self, _: &(), dst: u64, src: &[u8]) -> Result<(), GpuError> {
        // SAFETY: the caller guarantees dst..dst+len lies in one live allocation, which is
        // host memory here and does not overlap `src` (a Rust slice of other memory).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, src.len()) };
        Ok(())
    }

    unsafe fn d2h(&self, _: &(), dst: &mut [u8], src: u64) -> Result<(), GpuError> {
        // SAFETY: as in h2d, in the other direction.
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    unsafe fn launch<A: Pod>(
        &self,
        _: &(),
        k: Kernel,
        grid: (u32, u32),
        args: &A,
    ) -> Result<(), GpuError> {
        if grid.0 == 0 || grid.1 == 0 {
            return Ok(());
        }
        let mut err = [0 as c_char; 256];
        // SAFETY: `args` is the kernel's argument struct (the caller's contract; its size
        // matches the C struct, checked by the layout test); the caller guarantees its
        // device addresses point into live allocations, which are host memory here; `err`
        // is a writable buffer of the length passed.
        let rc = unsafe {
            wl_emu_launch(
                k as u32,
                grid.0,
                grid.1,
                1,
                self.threads,
                bytemuck::bytes_of(args).as_ptr(),
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if rc != 0 {
            // SAFETY: the emulator wrote a NUL-terminated message into `err`.
            let message = unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) }
                .to_string_lossy()
                .into_owned();
            return Err(GpuError::Emulator {
                kernel: k.name(),
                message,
            });
        }
        Ok(())
    }

    fn sync(&self, _: &()) -> Result<(), GpuError> {
        Ok(())
    }
}

/// The sizes and offsets of the shared structs as the C compiler laid them out.
pub fn c_layout() -> Vec<u32> {
    let mut out = vec![0u32; 64];
    // SAFETY: `out` has room for the 64 values passed as its capacity.
    let n = unsafe { wl_emu_layout(out.as_mut_ptr(), out.len() as u32) };
    out.truncate(n as usize);
    out
}

//! The CUDA GPU as a [`Device`], through cudarc (the driver and NVRTC loaded at run time),
//! and the kernels compiled by NVRTC for the GPU present (to a CUBIN for its architecture).
//!
//! cudarc's safe API holds the context, the module and its functions, the streams, the
//! events, the page-locked host buffers, and launches the kernels. Device memory stays
//! plain `cuMemAlloc` addresses with cudarc's thin driver calls: the kernels take their
//! buffers as 64-bit addresses inside their argument structs, and the passes copy between
//! regions of those buffers and regions of the page-locked staging buffers asynchronously,
//! which cudarc's typed slices do not express (their copies from host slices other than a
//! whole pinned buffer synchronize the stream, which would serialize copies and kernels).

use std::ffi::{CString, c_char};
use std::sync::{Arc, OnceLock};

use bytemuck::Pod;
use cudarc::driver::result as cu;
use cudarc::driver::sys;
use cudarc::driver::{
    CudaContext, CudaFunction, DeviceRepr, DriverError, LaunchConfig, PinnedHostSlice,
    PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use cudarc::nvrtc::result as rtc;
use cudarc::nvrtc::sys as nvrtc;

use crate::device::{Device, HostMemory};
use crate::error::GpuError;
use crate::layout::{Kernel, kernel_source};

/// Threads per block of every launch.
const BLOCK: u32 = 256;

fn cuda_err(what: &str, e: DriverError) -> GpuError {
    GpuError::Cuda {
        what: what.to_string(),
        message: format!("{e:?}"),
    }
}

/// Whether the NVRTC library can be loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: tries to open the library by its candidate names; no symbol is called.
    unsafe { nvrtc::is_culib_present() }
}

/// Loads NVRTC (and its builtins library, which it opens by name) from `dir`, so that the
/// later loads by name find them; for a library installed outside the loader's path (the
/// `nvidia-cuda-nvrtc` wheel the compile check uses).
#[cfg(feature = "testing")]
pub fn preload_nvrtc(dir: &std::path::Path) -> Result<(), GpuError> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    let names = nvrtc_files(dir)
        .map_err(|e| GpuError::NoGpu(format!("cannot read {}: {e}", dir.display())))?;
    if names.is_empty() {
        return Err(GpuError::NoGpu(format!("no libnvrtc in {}", dir.display())));
    }
    for p in names {
        // SAFETY: loading NVIDIA's NVRTC libraries runs their initializers, which have no
        // requirements on the caller; the handles are kept for the life of the process.
        let lib = unsafe { Library::open(Some(&p), RTLD_NOW | RTLD_GLOBAL) }
            .map_err(|e| GpuError::NoGpu(format!("cannot load {}: {e}", p.display())))?;
        std::mem::forget(lib);
    }
    Ok(())
}

/// The shared libraries of NVRTC in `dir`, the builtins first (NVRTC opens them by name):
/// shared objects only (a toolkit's lib64 also holds static archives), and not the
/// wheel's `.alt.` variants.
#[cfg(feature = "testing")]
pub fn nvrtc_files(dir: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut names: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("libnvrtc") && n.contains(".so") && !n.contains(".alt.")
            })
        })
        .collect();
    names.sort_by_key(|p| (!p.to_string_lossy().contains("builtins"), p.clone()));
    Ok(names)
}

/// The NVRTC version (major, minor).
#[cfg(feature = "testing")]
pub fn nvrtc_version() -> Result<(i32, i32), GpuError> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two valid out-pointers.
    unsafe { nvrtc::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| GpuError::Compile {
            log: format!("nvrtcVersion failed: {:?}", e.0),
        })?;
    Ok((major, minor))
}

/// The CUDA driver's version as "major.minor", when it answers (after a device opened).
#[cfg(feature = "testing")]
pub fn driver_version() -> Option<String> {
    let mut v = 0;
    // SAFETY: one valid out-pointer; called only after the driver library was found and
    // initialized (a `CudaDevice` opened).
    let rc = unsafe { sys::cuDriverGetVersion(&mut v) };
    (rc == sys::CUresult::CUDA_SUCCESS).then(|| format!("{}.{}", v / 1000, (v % 1000) / 10))
}

/// Compiles the kernels for `arch` (e.g. `sm_90` for a CUBIN, `compute_90` for PTX);
/// returns the image.
pub fn compile(arch: &str) -> Result<Vec<u8>, GpuError> {
    compile_source(&kernel_source(), arch)
}

/// An NVRTC program, destroyed when dropped.
struct Program(nvrtc::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by `rtc::create_program` and is destroyed once.
        let _ = unsafe { rtc::destroy_program(self.0) };
    }
}

/// The text of a NUL-terminated buffer from NVRTC.
fn c_text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Compiles CUDA C++ `source` for `arch` with the options the kernels use; returns the
/// image (a CUBIN for `sm_*`, NUL-terminated PTX for `compute_*`) or the compiler's log.
pub fn compile_source(source: &str, arch: &str) -> Result<Vec<u8>, GpuError> {
    if !nvrtc_present() {
        return Err(GpuError::NoGpu(
            "the NVRTC library (libnvrtc.so) was not found; install the CUDA toolkit or the \
             nvidia-cuda-nvrtc package and put it on the library path"
                .into(),
        ));
    }
    let fail = |what: &str, e: rtc::NvrtcError| GpuError::Compile {
        log: format!("{what} failed: {e:?}"),
    };
    let src = CString::new(source).map_err(|_| GpuError::Compile {
        log: "the source holds a NUL byte".into(),
    })?;
    let prog = Program(
        rtc::create_program(&src, Some(c"csv.cu")).map_err(|e| fail("nvrtcCreateProgram", e))?,
    );
    let opts = [format!("--gpu-architecture={arch}"), "-std=c++17".into()];
    // SAFETY: `prog` is a live program (its source and name outlive it here).
    if unsafe { rtc::compile_program(prog.0, &opts) }.is_err() {
        // SAFETY: as above.
        let log =
            unsafe { rtc::get_program_log(prog.0) }.map_err(|e| fail("nvrtcGetProgramLog", e))?;
        return Err(GpuError::Compile { log: c_text(&log) });
    }
    if !arch.starts_with("sm_") {
        // SAFETY: `prog` compiled; the PTX comes back NUL-terminated.
        let ptx = unsafe { rtc::get_ptx(prog.0) }.map_err(|e| fail("nvrtcGetPTX", e))?;
        return Ok(ptx.into_iter().map(|c| c as u8).collect());
    }
    // (cudarc wraps no CUBIN getter)
    let mut len = 0usize;
    // SAFETY: `prog` compiled for a real architecture; a valid out-pointer.
    unsafe { nvrtc::nvrtcGetCUBINSize(prog.0, &mut len) }
        .result()
        .map_err(|e| fail("nvrtcGetCUBINSize", e))?;
    let mut image = vec![0u8; len];
    // SAFETY: the buffer has the size NVRTC reported.
    unsafe { nvrtc::nvrtcGetCUBIN(prog.0, image.as_mut_ptr().cast()) }
        .result()
        .map_err(|e| fail("nvrtcGetCUBIN", e))?;
    Ok(image)
}

/// A CUDA GPU with the kernels loaded.
#[derive(Debug)]
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    /// the kernels in [`Kernel`] order (each keeps the module loaded)
    functions: Vec<CudaFunction>,
    name: String,
    arch: (i32, i32),
    sms: u32,
}

/// A CUDA stream.
#[derive(Debug)]
pub struct CudaStream(Arc<cudarc::driver::CudaStream>);

/// Page-locked host memory.
#[derive(Debug)]
pub struct Pinned {
    mem: PinnedHostSlice<u8>,
    len: usize,
}

impl HostMemory for Pinned {
    fn size(&self) -> usize {
        self.len
    }

    fn bytes(&self) -> Result<&[u8], GpuError> {
        let all = self
            .mem
            .as_slice()
            .map_err(|e| cuda_err("cuEventSynchronize", e))?;
        Ok(&all[..self.len])
    }

    fn bytes_mut(&mut self) -> Result<&mut [u8], GpuError> {
        let all = self
            .mem
            .as_mut_slice()
            .map_err(|e| cuda_err("cuEventSynchronize", e))?;
        Ok(&mut all[..self.len])
    }
}

/// A kernel's argument struct as the launch passes it: by value, as its bytes.
#[repr(transparent)]
struct ArgStruct<A>(A);

// SAFETY: `A` is `Pod` (`#[repr(C)]`, no padding, every bit pattern valid) and the wrapper
// is transparent, so the pointer the launch takes to it points at the struct's bytes,
// which the driver copies as the kernel's one parameter (its size and layout are the C
// struct's: the layout test).
unsafe impl<A: Pod> DeviceRepr for ArgStruct<A> {}

static SHARED: OnceLock<Result<Arc<CudaDevice>, String>> = OnceLock::new();

impl CudaDevice {
    /// The process's GPU 0 with the kernels compiled, opened on first use.
    pub fn shared() -> Result<Arc<CudaDevice>, GpuError> {
        SHARED
            .get_or_init(|| {
                CudaDevice::open(0).map(Arc::new).map_err(|e| match e {
                    GpuError::NoGpu(why) => why,
                    e => e.to_string(),
                })
            })
            .clone()
            .map_err(GpuError::NoGpu)
    }

    /// Opens GPU `ordinal` and loads the kernels, compiled for it.
    pub fn open(ordinal: usize) -> Result<CudaDevice, GpuError> {
        // SAFETY: tries to open the driver library by name; calls nothing.
        if !unsafe { sys::is_culib_present() } {
            return Err(GpuError::NoGpu(
                "no CUDA driver (libcuda.so) on this machine".into(),
            ));
        }
        cu::init().map_err(|e| GpuError::NoGpu(format!("the CUDA driver did not start: {e:?}")))?;
        let count = CudaContext::device_count().map_err(|e| cuda_err("cuDeviceGetCount", e))?;
        if count <= ordinal as i32 {
            return Err(GpuError::NoGpu(format!(
                "the CUDA driver sees {count} GPUs"
            )));
        }
        // the device's primary context, retained for the life of the device
        let ctx = CudaContext::new(ordinal).map_err(|e| cuda_err("cuDevicePrimaryCtxRetain", e))?;
        let name = ctx.name().map_err(|e| cuda_err("cuDeviceGetName", e))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| cuda_err("cuDeviceGetAttribute", e))?;
        let sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| cuda_err("cuDeviceGetAttribute", e))? as u32;
        let image = match compile(&format!("sm_{major}{minor}")) {
            Ok(cubin) => cubin,
            // an NVRTC that does not know this GPU yet: PTX for the driver to compile
            Err(GpuError::Compile { .. }) => {
                let mut ptx = compile(&format!("compute_{major}{minor}"))?;
                if ptx.last() != Some(&0) {
                    ptx.push(0);
                }
                ptx
            }
            Err(e) => return Err(e),
        };
        let module = ctx
            .load_module(Ptx::from_binary(image))
            .map_err(|e| cuda_err("cuModuleLoadData", e))?;
        let functions = Kernel::ALL
            .iter()
            .map(|k| {
                module
                    .load_function(k.name())
                    .map_err(|e| cuda_err(&format!("cuModuleGetFunction({})", k.name()), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(CudaDevice {
            ctx,
            functions,
            name,
            arch: (major, minor),
            sms,
        })
    }

    /// Makes the device's context current on this thread.
    fn bind(&self) -> Result<(), GpuError> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| cuda_err("cuCtxSetCurrent", e))
    }

    /// A pair of events timing work on a stream: record `start`, queue work, record `end`,
    /// then `elapsed_ms`.
    #[cfg(feature = "testing")]
    pub fn timer(&self) -> Result<Timer, GpuError> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self
            .ctx
            .new_event(flags)
            .map_err(|e| cuda_err("cuEventCreate", e))?;
        let end = self
            .ctx
            .new_event(flags)
            .map_err(|e| cuda_err("cuEventCreate", e))?;
        Ok(Timer { start, end })
    }
}

/// Two CUDA events.
#[cfg(feature = "testing")]
#[derive(Debug)]
pub struct Timer {
    start: cudarc::driver::CudaEvent,
    end: cudarc::driver::CudaEvent,
}

#[cfg(feature = "testing")]
impl Timer {
    /// Records the start on `s`.
    pub fn start(&self, s: &CudaStream) -> Result<(), GpuError> {
        self.start
            .record(&s.0)
            .map_err(|e| cuda_err("cuEventRecord", e))
    }

    /// Records the end on `s`.
    pub fn end(&self, s: &CudaStream) -> Result<(), GpuError> {
        self.end
            .record(&s.0)
            .map_err(|e| cuda_err("cuEventRecord", e))
    }

    /// Milliseconds between the two events (waits for the end).
    pub fn elapsed_ms(&self) -> Result<f32, GpuError> {
        self.start
            .elapsed_ms(&self.end)
            .map_err(|e| cuda_err("cuEventElapsedTime", e))
    }
}

impl Device for CudaDevice {
    type Stream = CudaStream;
    type Pinned = Pinned;

    fn describe(&self) -> String {
        format!(
            "{} (sm_{}{}, {} SMs)",
            self.name, self.arch.0, self.arch.1, self.sms
        )
    }

    fn multiprocessors(&self) -> u32 {
        self.sms
    }

    fn block_threads(&self) -> u32 {
        BLOCK
    }

    fn new_stream(&self) -> Result<CudaStream, GpuError> {
        // a non-blocking stream
        self.ctx
            .new_stream()
            .map(CudaStream)
            .map_err(|e| cuda_err("cuStreamCreate", e))
    }

    fn alloc(&self, len: usize) -> Result<u64, GpuError> {
        self.bind()?;
        // SAFETY: a plain allocation of `len` bytes, freed by `free`.
        unsafe { cu::malloc_sync(len.max(1)) }
            .map_err(|e| cuda_err(&format!("cuMemAlloc({len})"), e))
    }

    unsafe fn free(&self, ptr: u64) {
        if self.bind().is_ok() {
            // SAFETY: the caller guarantees `ptr` came from `alloc` and is unused.
            let _ = unsafe { cu::free_sync(ptr) };
        }
    }

    fn alloc_pinned(&self, len: usize) -> Result<Pinned, GpuError> {
        let fail = |e| cuda_err(&format!("cuMemHostAlloc({len})"), e);
        // Flags 0 (not cudarc's default, write-combined memory, which the host reads very
        // slowly: the outputs are read from these buffers).
        // SAFETY: the memory is uninitialized: it is zeroed below before any slice of it
        // is made.
        let mut mem =
            unsafe { self.ctx.alloc_pinned_with_flags::<u8>(len.max(1), 0) }.map_err(fail)?;
        let ptr = mem.as_mut_ptr().map_err(fail)?;
        // SAFETY: `ptr` points to the `len.max(1)` bytes `mem` owns.
        unsafe { ptr.write_bytes(0, len.max(1)) };
        Ok(Pinned { mem, len })
    }

    unsafe fn h2d(&self, s: &CudaStream, dst: u64, src: &[u8]) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: forwarded contract (destination inside an allocation, source alive until
        // the stream syncs).
        unsafe { cu::memcpy_htod_async(dst, src, s.0.cu_stream()) }
            .map_err(|e| cuda_err("cuMemcpyHtoDAsync", e))
    }

    unsafe fn d2h(&self, s: &CudaStream, dst: &mut [u8], src: u64) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: forwarded contract.
        unsafe { cu::memcpy_dtoh_async(dst, src, s.0.cu_stream()) }
            .map_err(|e| cuda_err("cuMemcpyDtoHAsync", e))
    }

    unsafe fn launch<A: Pod>(
        &self,
        s: &CudaStream,
        k: Kernel,
        grid: (u32, u32),
        args: &A,
    ) -> Result<(), GpuError> {
        if grid.0 == 0 || grid.1 == 0 {
            return Ok(());
        }
        // The kernel's one parameter is the argument struct, passed by value: the driver
        // copies it when the launch is queued.
        let arg = ArgStruct(*args);
        let cfg = LaunchConfig {
            grid_dim: (grid.0, grid.1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = s.0.launch_builder(&self.functions[k as usize]);
        launch.arg(&arg);
        // SAFETY: the function belongs to the loaded module and takes one parameter, the
        // argument struct `A` (the caller's contract), whose device addresses the caller
        // guarantees are valid for what the kernel reads and writes.
        unsafe { launch.launch(cfg) }
            .map(|_| ())
            .map_err(|e| cuda_err(&format!("cuLaunchKernel({})", k.name()), e))
    }

    fn sync(&self, s: &CudaStream) -> Result<(), GpuError> {
        s.0.synchronize()
            .map_err(|e| cuda_err("cuStreamSynchronize", e))
    }
}

//! The CUDA GPU as a [`Device`]: cudarc's thin driver bindings, loaded at run time, and
//! the kernels compiled by NVRTC for the GPU present (to a CUBIN for its architecture).

use std::ffi::{CString, c_char, c_void};
use std::sync::{Arc, OnceLock};

use cudarc::driver::result as cu;
use cudarc::driver::sys;
use cudarc::nvrtc::sys as nvrtc;

use crate::device::Device;
use crate::error::GpuError;
use crate::layout::{Kernel, kernel_source};

fn cuda_err(what: &str, e: cu::DriverError) -> GpuError {
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
pub fn preload_nvrtc(dir: &std::path::Path) -> Result<(), GpuError> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| GpuError::NoGpu(format!("cannot read {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            // shared objects only (a toolkit's lib64 also holds static archives), and not
            // the wheel's `.alt.` variants
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("libnvrtc") && n.contains(".so") && !n.contains(".alt.")
            })
        })
        .collect();
    // the builtins first: libnvrtc opens them by name
    names.sort_by_key(|p| !p.to_string_lossy().contains("builtins"));
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

/// The NVRTC version (major, minor).
pub fn nvrtc_version() -> Result<(i32, i32), GpuError> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two valid out-pointers.
    let rc = unsafe { nvrtc::nvrtcVersion(&mut major, &mut minor) };
    if rc != nvrtc::nvrtcResult::NVRTC_SUCCESS {
        return Err(GpuError::Compile {
            log: format!("nvrtcVersion failed: {rc:?}"),
        });
    }
    Ok((major, minor))
}

/// Compiles the kernels for `arch` (e.g. `sm_90` for a CUBIN, `compute_90` for PTX);
/// returns the image.
pub fn compile(arch: &str) -> Result<Vec<u8>, GpuError> {
    compile_source(&kernel_source(), arch)
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
    let fail = |what: &str, rc: nvrtc::nvrtcResult| GpuError::Compile {
        log: format!("{what} failed: {rc:?}"),
    };
    let src = CString::new(source).map_err(|_| GpuError::Compile {
        log: "the source holds a NUL byte".into(),
    })?;
    let name = CString::new("csv.cu").expect("no NUL");
    let mut prog: nvrtc::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: valid C strings and an out-pointer; no headers.
    let rc = unsafe {
        nvrtc::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if rc != nvrtc::nvrtcResult::NVRTC_SUCCESS {
        return Err(fail("nvrtcCreateProgram", rc));
    }
    let opts: Vec<CString> = [format!("--gpu-architecture={arch}"), "-std=c++17".into()]
        .into_iter()
        .map(|o| CString::new(o).expect("no NUL"))
        .collect();
    let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: `prog` was created above; the option pointers outlive the call.
    let rc = unsafe { nvrtc::nvrtcCompileProgram(prog, ptrs.len() as i32, ptrs.as_ptr()) };
    let result = if rc != nvrtc::nvrtcResult::NVRTC_SUCCESS {
        let mut len = 0usize;
        // SAFETY: `prog` is valid; the log buffer has the size NVRTC reported.
        let log = unsafe {
            nvrtc::nvrtcGetProgramLogSize(prog, &mut len);
            let mut buf = vec![0u8; len.max(1)];
            nvrtc::nvrtcGetProgramLog(prog, buf.as_mut_ptr().cast());
            String::from_utf8_lossy(&buf[..len.saturating_sub(1)]).into_owned()
        };
        Err(GpuError::Compile { log })
    } else if arch.starts_with("sm_") {
        let mut len = 0usize;
        // SAFETY: as above; the image buffer has the size NVRTC reported.
        unsafe {
            let rc = nvrtc::nvrtcGetCUBINSize(prog, &mut len);
            if rc != nvrtc::nvrtcResult::NVRTC_SUCCESS {
                Err(fail("nvrtcGetCUBINSize", rc))
            } else {
                let mut image = vec![0u8; len];
                let rc = nvrtc::nvrtcGetCUBIN(prog, image.as_mut_ptr().cast());
                if rc != nvrtc::nvrtcResult::NVRTC_SUCCESS {
                    Err(fail("nvrtcGetCUBIN", rc))
                } else {
                    Ok(image)
                }
            }
        }
    } else {
        let mut len = 0usize;
        // SAFETY: as above, for the PTX text (NUL-terminated by NVRTC).
        unsafe {
            let rc = nvrtc::nvrtcGetPTXSize(prog, &mut len);
            if rc != nvrtc::nvrtcResult::NVRTC_SUCCESS {
                Err(fail("nvrtcGetPTXSize", rc))
            } else {
                let mut image = vec![0u8; len];
                let rc = nvrtc::nvrtcGetPTX(prog, image.as_mut_ptr().cast());
                if rc != nvrtc::nvrtcResult::NVRTC_SUCCESS {
                    Err(fail("nvrtcGetPTX", rc))
                } else {
                    Ok(image)
                }
            }
        }
    };
    // SAFETY: `prog` is valid and destroyed once.
    unsafe { nvrtc::nvrtcDestroyProgram(&mut prog) };
    result
}

/// A CUDA GPU with the kernels loaded.
#[derive(Debug)]
pub struct CudaDevice {
    ctx: sys::CUcontext,
    /// the loaded kernels (the module is never unloaded: `functions` point into it)
    _module: sys::CUmodule,
    functions: Vec<sys::CUfunction>,
    name: String,
    arch: (i32, i32),
    sms: u32,
}

// SAFETY: the context, module and function handles are process-wide driver objects that
// may be used from any thread once the context is made current there (every method does).
unsafe impl Send for CudaDevice {}
// SAFETY: as above; the driver synchronizes concurrent calls.
unsafe impl Sync for CudaDevice {}

/// A CUDA stream.
#[derive(Debug)]
pub struct CudaStream(sys::CUstream);

// SAFETY: a stream handle may be used from any thread with the context current.
unsafe impl Send for CudaStream {}

impl Drop for CudaStream {
    fn drop(&mut self) {
        // SAFETY: the stream was created by `new_stream` and is destroyed once; pending
        // work completes before the driver releases it.
        let _ = unsafe { cu::stream::destroy(self.0) };
    }
}

/// Page-locked host memory.
#[derive(Debug)]
pub struct Pinned {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the memory is owned by this value alone.
unsafe impl Send for Pinned {}

impl AsRef<[u8]> for Pinned {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` bytes allocated (and zeroed) by `alloc_pinned`,
        // owned by this value.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl AsMut<[u8]> for Pinned {
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemHostAlloc in `alloc_pinned`, freed once.
        let _ = unsafe { cu::free_host(self.ptr.cast()) };
    }
}

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
    pub fn open(ordinal: i32) -> Result<CudaDevice, GpuError> {
        // SAFETY: tries to open the driver library by name; calls nothing.
        if !unsafe { sys::is_culib_present() } {
            return Err(GpuError::NoGpu(
                "no CUDA driver (libcuda.so) on this machine".into(),
            ));
        }
        cu::init().map_err(|e| GpuError::NoGpu(format!("the CUDA driver did not start: {e:?}")))?;
        let count = cu::device::get_count().map_err(|e| cuda_err("cuDeviceGetCount", e))?;
        if count <= ordinal {
            return Err(GpuError::NoGpu(format!(
                "the CUDA driver sees {count} GPUs"
            )));
        }
        let dev = cu::device::get(ordinal).map_err(|e| cuda_err("cuDeviceGet", e))?;
        let name = cu::device::get_name(dev).map_err(|e| cuda_err("cuDeviceGetName", e))?;
        use sys::CUdevice_attribute as A;
        // SAFETY: `dev` is a valid device handle.
        let attr = |a| unsafe { cu::device::get_attribute(dev, a) };
        let major = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
            .map_err(|e| cuda_err("cuDeviceGetAttribute", e))?;
        let minor = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
            .map_err(|e| cuda_err("cuDeviceGetAttribute", e))?;
        let sms = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| cuda_err("cuDeviceGetAttribute", e))? as u32;
        // SAFETY: `dev` is valid; the primary context is retained for the process's life.
        let ctx = unsafe { cu::primary_ctx::retain(dev) }
            .map_err(|e| cuda_err("cuDevicePrimaryCtxRetain", e))?;
        // SAFETY: `ctx` was just retained.
        unsafe { cu::ctx::set_current(ctx) }.map_err(|e| cuda_err("cuCtxSetCurrent", e))?;
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
        // SAFETY: `image` is a CUBIN or NUL-terminated PTX from NVRTC, alive during the call.
        let module = unsafe { cu::module::load_data(image.as_ptr().cast::<c_void>()) }
            .map_err(|e| cuda_err("cuModuleLoadData", e))?;
        let functions = Kernel::ALL
            .iter()
            .map(|k| {
                let name = CString::new(k.name()).expect("no NUL");
                // SAFETY: `module` was loaded above and is never unloaded.
                unsafe { cu::module::get_function(module, name) }
                    .map_err(|e| cuda_err(&format!("cuModuleGetFunction({})", k.name()), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(CudaDevice {
            ctx,
            _module: module,
            functions,
            name,
            arch: (major, minor),
            sms,
        })
    }

    /// Makes the device's context current on this thread.
    fn bind(&self) -> Result<(), GpuError> {
        // SAFETY: the primary context stays retained for the life of `self`.
        unsafe { cu::ctx::set_current(self.ctx) }.map_err(|e| cuda_err("cuCtxSetCurrent", e))
    }

    /// A pair of events timing work on a stream: record `start`, queue work, record `end`,
    /// then `elapsed_ms`.
    pub fn timer(&self) -> Result<Timer, GpuError> {
        self.bind()?;
        let flags = sys::CUevent_flags::CU_EVENT_DEFAULT;
        let start = cu::event::create(flags).map_err(|e| cuda_err("cuEventCreate", e))?;
        let end = cu::event::create(flags).map_err(|e| cuda_err("cuEventCreate", e))?;
        Ok(Timer { start, end })
    }
}

/// Two CUDA events.
#[derive(Debug)]
pub struct Timer {
    start: sys::CUevent,
    end: sys::CUevent,
}

impl Timer {
    /// Records the start on `s`.
    pub fn start(&self, s: &CudaStream) -> Result<(), GpuError> {
        // SAFETY: valid event and stream handles.
        unsafe { cu::event::record(self.start, s.0) }.map_err(|e| cuda_err("cuEventRecord", e))
    }

    /// Records the end on `s`.
    pub fn end(&self, s: &CudaStream) -> Result<(), GpuError> {
        // SAFETY: as above.
        unsafe { cu::event::record(self.end, s.0) }.map_err(|e| cuda_err("cuEventRecord", e))
    }

    /// Milliseconds between the two events (waits for the end).
    pub fn elapsed_ms(&self) -> Result<f32, GpuError> {
        // SAFETY: both events were recorded.
        unsafe {
            cu::event::synchronize(self.end).map_err(|e| cuda_err("cuEventSynchronize", e))?;
            cu::event::elapsed(self.start, self.end).map_err(|e| cuda_err("cuEventElapsedTime", e))
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        // SAFETY: created in `timer`, destroyed once.
        unsafe {
            let _ = cu::event::destroy(self.start);
            let _ = cu::event::destroy(self.end);
        }
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
        256
    }

    fn new_stream(&self) -> Result<CudaStream, GpuError> {
        self.bind()?;
        cu::stream::create(cu::stream::StreamKind::NonBlocking)
            .map(CudaStream)
            .map_err(|e| cuda_err("cuStreamCreate", e))
    }

    fn alloc(&self, len: usize) -> Result<u64, GpuError> {
        self.bind()?;
        // SAFETY: a plain allocation of `len` bytes.
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
        self.bind()?;
        // SAFETY: a plain page-locked allocation of `len` bytes.
        let ptr = unsafe { cu::malloc_host(len.max(1), 0) }
            .map_err(|e| cuda_err(&format!("cuMemHostAlloc({len})"), e))?
            .cast::<u8>();
        // SAFETY: `ptr` has `len` writable bytes; zeroed so that slices of it are
        // initialized.
        unsafe { std::ptr::write_bytes(ptr, 0, len) };
        Ok(Pinned { ptr, len })
    }

    unsafe fn h2d(&self, s: &CudaStream, dst: u64, src: &[u8]) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: forwarded contract (destination inside an allocation, source alive until
        // the stream syncs).
        unsafe { cu::memcpy_htod_async(dst, src, s.0) }
            .map_err(|e| cuda_err("cuMemcpyHtoDAsync", e))
    }

    unsafe fn d2h(&self, s: &CudaStream, dst: &mut [u8], src: u64) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: forwarded contract.
        unsafe { cu::memcpy_dtoh_async(dst, src, s.0) }
            .map_err(|e| cuda_err("cuMemcpyDtoHAsync", e))
    }

    unsafe fn launch_raw(
        &self,
        s: &CudaStream,
        k: Kernel,
        grid: (u32, u32),
        args: &[u8],
    ) -> Result<(), GpuError> {
        if grid.0 == 0 || grid.1 == 0 {
            return Ok(());
        }
        self.bind()?;
        // The kernel's one parameter is the argument struct, passed by value: the driver
        // copies `args` when the launch is queued.
        let mut params = [args.as_ptr() as *mut c_void];
        // SAFETY: the function belongs to the loaded module; its single parameter has the
        // size and layout of `args` (layout test); the caller guarantees the device
        // addresses inside are valid for the kernel.
        unsafe {
            cu::launch_kernel(
                self.functions[k as usize],
                (grid.0, grid.1, 1),
                (256, 1, 1),
                0,
                s.0,
                &mut params,
            )
        }
        .map_err(|e| cuda_err(&format!("cuLaunchKernel({})", k.name()), e))
    }

    fn sync(&self, s: &CudaStream) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: a valid stream handle.
        unsafe { cu::stream::synchronize(s.0) }.map_err(|e| cuda_err("cuStreamSynchronize", e))
    }
}

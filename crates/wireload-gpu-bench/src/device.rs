//! The devices the bench runs on (the CUDA GPU, or the CPU emulator for smoke runs), their
//! timers, and finding NVRTC on a machine where it is installed outside the loader's path.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use wireload_gpu::GpuError;
use wireload_gpu::testing::cuda::{self, CudaDevice, CudaStream, Timer};
use wireload_gpu::testing::{Device, Emulator};

/// A device the bench can time work on.
pub trait BenchDevice: Device {
    /// A pair of events on the device's timeline, where it has them.
    type Events;
    /// New events, or `None` where the device has none (the emulator: wall time).
    fn events(&self) -> Result<Option<Self::Events>, GpuError>;
    /// Records the start (`end` false) or the end (`end` true) on `s`.
    fn record(&self, e: &Self::Events, s: &Self::Stream, end: bool) -> Result<(), GpuError>;
    /// Seconds between the two records (waits for the end).
    fn elapsed(&self, e: &Self::Events) -> Result<f64, GpuError>;
    /// Whether this is the CPU emulator (its timings are no performance figures).
    fn emulated(&self) -> bool;
}

impl BenchDevice for CudaDevice {
    type Events = Timer;

    fn events(&self) -> Result<Option<Timer>, GpuError> {
        self.timer().map(Some)
    }

    fn record(&self, e: &Timer, s: &CudaStream, end: bool) -> Result<(), GpuError> {
        if end { e.end(s) } else { e.start(s) }
    }

    fn elapsed(&self, e: &Timer) -> Result<f64, GpuError> {
        Ok(e.elapsed_ms()? as f64 / 1e3)
    }

    fn emulated(&self) -> bool {
        false
    }
}

impl BenchDevice for Emulator {
    type Events = ();

    fn events(&self) -> Result<Option<()>, GpuError> {
        Ok(None)
    }

    fn record(&self, _: &(), _: &(), _: bool) -> Result<(), GpuError> {
        Ok(())
    }

    fn elapsed(&self, _: &()) -> Result<f64, GpuError> {
        Ok(0.0)
    }

    fn emulated(&self) -> bool {
        true
    }
}

/// One timed piece of work: seconds by the device's events (when it has them) and by the
/// host's clock.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Event seconds, or wall seconds on a device without events.
    pub seconds: f64,
    /// Wall seconds from queuing the work to its end.
    pub wall: f64,
}

/// A timing under way: the device's events (when it has them) and the host's clock.
pub struct Clock<E> {
    ev: Option<E>,
    t: Instant,
}

/// Starts timing the work queued next on `s`.
pub fn start<D: BenchDevice>(dev: &D, s: &D::Stream) -> Result<Clock<D::Events>, GpuError> {
    let ev = dev.events()?;
    if let Some(e) = &ev {
        dev.record(e, s, false)?;
    }
    Ok(Clock {
        ev,
        t: Instant::now(),
    })
}

/// Ends a timing: an event after the work queued on `s` since [`start`], then a sync of
/// `s`.
pub fn stop<D: BenchDevice>(
    dev: &D,
    s: &D::Stream,
    c: Clock<D::Events>,
) -> Result<Sample, GpuError> {
    if let Some(e) = &c.ev {
        dev.record(e, s, true)?;
    }
    dev.sync(s)?;
    let wall = c.t.elapsed().as_secs_f64();
    let seconds = match &c.ev {
        Some(e) => dev.elapsed(e)?,
        None => wall,
    };
    Ok(Sample { seconds, wall })
}

/// Which timer a device's samples come from, for the tables.
pub fn timer_name<D: BenchDevice>(dev: &D) -> &'static str {
    if dev.emulated() {
        "wall"
    } else {
        "CUDA events"
    }
}

/// Folders NVRTC is often installed in outside the loader's path: the CUDA toolkit's and
/// the `nvidia-cuda-nvrtc` wheel's (PyTorch's virtual environments included).
fn nvrtc_candidates() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(v) = std::env::var_os(var) {
            let p = PathBuf::from(v);
            dirs.push(p.join("lib64"));
            dirs.push(p.join("lib"));
        }
    }
    dirs.push("/usr/local/cuda/lib64".into());
    dirs.push("/usr/local/cuda/targets/x86_64-linux/lib".into());
    // versioned toolkits, newest name last
    if let Ok(rd) = std::fs::read_dir("/usr/local") {
        let mut v: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("cuda-"))
            })
            .collect();
        v.sort();
        dirs.extend(v.into_iter().map(|p| p.join("lib64")));
    }
    // Python environments: <prefix>/lib/python3.X/{site,dist}-packages/nvidia/{cu13,cuda_nvrtc}/lib
    let prefixes = [
        "/usr/local/lib",
        "/usr/lib",
        "/opt/torch/.venv/lib",
        "/opt/conda/lib",
    ];
    for prefix in prefixes {
        let Ok(rd) = std::fs::read_dir(prefix) else {
            continue;
        };
        for e in rd.filter_map(|e| e.ok()) {
            let name = e.file_name();
            if !name.to_string_lossy().starts_with("python3") {
                continue;
            }
            for pkgs in ["site-packages", "dist-packages"] {
                for sub in ["cu13", "cuda_nvrtc", "cu12"] {
                    dirs.push(e.path().join(pkgs).join("nvidia").join(sub).join("lib"));
                }
            }
        }
    }
    dirs
}

/// Whether `dir` holds NVRTC's shared libraries.
fn has_nvrtc(dir: &Path) -> bool {
    cuda::nvrtc_files(dir).is_ok_and(|f| !f.is_empty())
}

/// Loads NVRTC's libraries from `dir` globally, so that the later loads by name (cudarc's,
/// and NVRTC's of its builtins) find them.
fn preload(dir: &Path) -> Result<(), String> {
    cuda::preload_nvrtc(dir).map_err(|e| match e {
        GpuError::NoGpu(why) => why,
        e => e.to_string(),
    })
}

/// Makes NVRTC loadable: from `dir` when given, else as the loader finds it, else from the
/// usual install folders. Says where it came from.
pub fn find_nvrtc(dir: Option<&Path>) -> Result<String, String> {
    if let Some(dir) = dir {
        preload(dir)?;
        return if cuda::nvrtc_present() {
            Ok(format!("preloaded from {}", dir.display()))
        } else {
            Err(format!(
                "loaded the libraries of {} but NVRTC is still not found by name",
                dir.display()
            ))
        };
    }
    if cuda::nvrtc_present() {
        return Ok("found by the loader".into());
    }
    let mut tried = Vec::new();
    for d in nvrtc_candidates() {
        if !has_nvrtc(&d) {
            continue;
        }
        match preload(&d) {
            Ok(_) if cuda::nvrtc_present() => {
                return Ok(format!("preloaded from {}", d.display()));
            }
            Ok(_) => tried.push(format!("{}: loaded, not found by name", d.display())),
            Err(e) => tried.push(e),
        }
    }
    Err(format!(
        "NVRTC (libnvrtc.so) was not found by the loader nor in the usual folders ({}); \
         pass --nvrtc-dir DIR or set LD_LIBRARY_PATH",
        if tried.is_empty() {
            "none had it".to_string()
        } else {
            tried.join("; ")
        }
    ))
}

/// The device's description, with NVRTC's and the driver's versions for a GPU.
pub fn describe_cuda(dev: &Arc<CudaDevice>, nvrtc_from: &str) -> String {
    let nvrtc = cuda::nvrtc_version()
        .map(|(a, b)| format!("NVRTC {a}.{b} ({nvrtc_from})"))
        .unwrap_or_else(|e| format!("NVRTC version unknown: {e}"));
    let driver = cuda::driver_version()
        .map(|v| format!("CUDA driver API {v}"))
        .unwrap_or_else(|| "driver version unknown".into());
    format!("{}; {nvrtc}; {driver}", dev.describe())
}

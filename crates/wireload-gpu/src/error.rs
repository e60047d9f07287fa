//! Errors of the GPU engine.

use wireload_publish::LoadError;

/// Why a GPU load (or a step of it) failed. After any of these the table is unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// No usable GPU: no CUDA driver, no device, or no NVRTC library.
    #[error("ENGINE gpu needs an NVIDIA GPU with its CUDA driver and NVRTC: {0}")]
    NoGpu(String),
    /// A CUDA driver call failed.
    #[error("CUDA error in {what}: {message}")]
    Cuda {
        /// the call that failed
        what: String,
        /// the driver's message
        message: String,
    },
    /// NVRTC could not compile the kernels.
    #[error("NVRTC could not compile the CSV kernels:\n{log}")]
    Compile {
        /// the compiler's log
        log: String,
    },
    /// The CPU emulator of the kernels stopped (`testing` feature).
    #[cfg(feature = "testing")]
    #[error("the kernel emulator stopped in {kernel}: {message}")]
    Emulator {
        /// the kernel
        kernel: &'static str,
        /// why
        message: String,
    },
    /// The load needs something the GPU engine does not do.
    #[error("ENGINE gpu cannot load this: {0} (use ENGINE cpu)")]
    Unsupported(String),
    /// The load failed as a CPU load would have (bad input, a duplicate key...).
    #[error(transparent)]
    Load(#[from] LoadError),
}

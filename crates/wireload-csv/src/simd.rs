//! The SIMD backends of the structural scan, chosen once per process from the CPU's
//! features or forced with `WIRELOAD_SIMD=scalar|sse42|avx2|avx512|neon`.

use std::fmt;
use std::sync::OnceLock;

/// One implementation of the structural scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// The byte-at-a-time reference scanner (the paper's scalar baseline): no SIMD at all.
    Scalar,
    /// The paper's method: SSE 4.2 `pcmpestrm` (EQUAL_ANY) per 16 bytes, CLMUL quote mask.
    Sse42,
    /// AVX2 byte compares, 32 bytes at a time, CLMUL quote mask.
    Avx2,
    /// AVX-512BW compares straight into 64-bit masks, CLMUL quote mask.
    Avx512,
    /// AArch64 NEON compares, 16 bytes at a time.
    Neon,
}

/// Every backend, slowest first.
pub const ALL_BACKENDS: [Backend; 5] = [
    Backend::Scalar,
    Backend::Sse42,
    Backend::Avx2,
    Backend::Avx512,
    Backend::Neon,
];

/// The environment variable that forces a backend.
pub const SIMD_ENV: &str = "WIRELOAD_SIMD";

impl Backend {
    /// The name `WIRELOAD_SIMD` takes.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Scalar => "scalar",
            Backend::Sse42 => "sse42",
            Backend::Avx2 => "avx2",
            Backend::Avx512 => "avx512",
            Backend::Neon => "neon",
        }
    }

    /// The backend called `name` (as `WIRELOAD_SIMD` spells it).
    pub fn from_name(name: &str) -> Option<Backend> {
        ALL_BACKENDS
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether this machine's CPU can run the backend.
    pub fn supported(self) -> bool {
        match self {
            Backend::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Backend::Sse42 => {
                is_x86_feature_detected!("sse4.2")
                    && is_x86_feature_detected!("pclmulqdq")
                    && is_x86_feature_detected!("popcnt")
            }
            #[cfg(target_arch = "x86_64")]
            Backend::Avx2 => {
                is_x86_feature_detected!("avx2")
                    && is_x86_feature_detected!("pclmulqdq")
                    && is_x86_feature_detected!("popcnt")
            }
            #[cfg(target_arch = "x86_64")]
            Backend::Avx512 => {
                is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("pclmulqdq")
                    && is_x86_feature_detected!("popcnt")
            }
            #[cfg(target_arch = "aarch64")]
            Backend::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The backends this machine can run, slowest first.
    pub fn available() -> Vec<Backend> {
        ALL_BACKENDS.into_iter().filter(|b| b.supported()).collect()
    }

    /// The fastest backend this machine can run.
    pub fn best() -> Backend {
        *Backend::available()
            .last()
            .expect("scalar is always available")
    }

    /// The backend of this process: `WIRELOAD_SIMD` when set (and supported), else
    /// [`Backend::best`]. Decided once, at the first call.
    pub fn selected() -> Backend {
        static SELECTED: OnceLock<Backend> = OnceLock::new();
        *SELECTED.get_or_init(|| {
            let forced = std::env::var(SIMD_ENV).ok();
            match resolve(forced.as_deref()) {
                Ok(b) => b,
                Err(message) => {
                    eprintln!("wireload: {message}");
                    Backend::best()
                }
            }
        })
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The backend a value of `WIRELOAD_SIMD` asks for, or why it cannot be had.
pub fn resolve(forced: Option<&str>) -> Result<Backend, String> {
    let Some(name) = forced.filter(|s| !s.trim().is_empty()) else {
        return Ok(Backend::best());
    };
    let names: Vec<&str> = ALL_BACKENDS.iter().map(|b| b.name()).collect();
    match Backend::from_name(name) {
        None => Err(format!(
            "{SIMD_ENV}={name} is not a backend (one of {}); using {}",
            names.join(", "),
            Backend::best()
        )),
        Some(b) if !b.supported() => Err(format!(
            "{SIMD_ENV}={name}: this CPU cannot run it; using {}",
            Backend::best()
        )),
        Some(b) => Ok(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_scalar_is_always_there() {
        for b in ALL_BACKENDS {
            assert_eq!(Backend::from_name(b.name()), Some(b));
            assert_eq!(Backend::from_name(&b.name().to_uppercase()), Some(b));
        }
        assert!(Backend::available().contains(&Backend::Scalar));
        assert_eq!(resolve(None), Ok(Backend::best()));
        assert_eq!(resolve(Some("scalar")), Ok(Backend::Scalar));
        assert!(resolve(Some("sse5")).unwrap_err().contains("not a backend"));
        #[cfg(target_arch = "x86_64")]
        assert!(resolve(Some("neon")).unwrap_err().contains("cannot run"));
    }
}

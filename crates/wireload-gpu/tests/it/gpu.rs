//! On a machine with an NVIDIA GPU: the kernels compiled by NVRTC for it produce, byte for
//! byte, what the plain-Rust reference produces (every intermediate array and output), and
//! GPU loads equal CPU loads. Without a GPU (CI) each test says so on stderr and passes;
//! `wireload-gpu-bench verify` runs the same comparison from a carried binary.
#![cfg(feature = "cuda")]

use std::sync::Arc;

use crate::common::{Gen, case, cpu_load, rows, source, table};
use wireload_gpu::testing::check::check_device;
use wireload_gpu::testing::cuda::CudaDevice;
use wireload_gpu::testing::{Device, load_into_on};
use wireload_gpu::{GpuOptions, PassMode};
use wireload_load::LoadControl;

/// The GPU, or None (with a note) on a machine without one.
fn gpu() -> Option<Arc<CudaDevice>> {
    match CudaDevice::shared() {
        Ok(dev) => Some(dev),
        Err(e) => {
            eprintln!("no GPU here, the GPU comparison did not run: {e}");
            None
        }
    }
}

#[test]
fn gpu_passes_equal_the_reference_byte_for_byte() {
    let Some(dev) = gpu() else { return };
    let report = check_device(&dev, 0..400, 120).unwrap();
    assert!(
        report.failures.is_empty(),
        "{} of {} inputs differ on {}:\n{}",
        report.failures.len(),
        report.inputs,
        dev.describe(),
        report.failures.join("\n")
    );
    assert!(report.quoted > 50 && report.quoted < 350);
}

#[test]
fn gpu_loads_equal_cpu_loads() {
    let Some(dev) = gpu() else { return };
    for seed in 0..120u64 {
        let c = case(
            seed,
            Gen {
                rows: 1 + (seed as usize * 31) % 3000,
                errors: seed % 3 == 2,
                quotes: seed % 4 != 0,
                odd: seed % 2 == 0,
            },
        );
        let opts = GpuOptions {
            partition: [4 << 10, 64 << 10, 64 << 20][seed as usize % 3],
            mode: if seed % 5 == 0 {
                PassMode::Quoted
            } else {
                PassMode::Auto
            },
            ..GpuOptions::default()
        };
        let t = table(&c.columns);
        let got = load_into_on(
            &dev,
            &t,
            &source(&c),
            &c.dialect,
            &opts,
            &LoadControl::default(),
        )
        .map(|_| rows(&t))
        .map_err(|e| e.to_string());
        assert_eq!(got, cpu_load(&c), "seed {seed}");
    }
}

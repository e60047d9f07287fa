//! GPU CSV loading after CUDAFastCSV (Kumaigorodski, Lutz, Markl, BTW 2021).
//!
//! [`load_into`] loads a CSV source into a table on the process's NVIDIA GPU. The input is
//! cut into partitions of whole records, each staged in page-locked memory and streamed
//! to the device, where the passes run: per-chunk delimiter counts, a prefix sum, the
//! FieldsIndex (in shared memory in fast mode; with sentinels and a stream compaction in
//! quoted mode), column tapes, and column-wise deserialization into Arrow layouts. Back on
//! the host, the fields the kernels left to it are parsed with the CPU loader's parsers,
//! and the batches are appended to the table in one atomic step.
//!
//! The kernels are CUDA C++ (`kernels/csv.cu`), compiled at run time by NVRTC for the GPU
//! present (`cuda` feature; the CUDA driver and NVRTC are loaded at run time). Without the
//! feature, or without a GPU, [`load_into`] fails with [`GpuError::NoGpu`] and the table is
//! unchanged.
//!
//! The `testing` feature adds what the tests and the GPU benchmark need, public in the
//! module `testing`: a CPU emulator that runs the same kernel source (every GPU thread a
//! fiber; C++ compiled by the build script), a plain-Rust reference of every pass, an input
//! generator and a byte-for-byte comparison of a device with the reference, and the
//! engine's parts (devices, workspaces, plans, the kernels' structs). Only with it does
//! `WIRELOAD_GPU=emulate` send [`load_into`] to the emulator.
//!
//! ```
//! use std::sync::Arc;
//! use wireload_gpu::{GpuError, GpuOptions, load_into};
//! use wireload_load::{Dialect, LoadControl, Source};
//! use wireload_storage::{Partitioning, Table, TableDef};
//! use wireload_types::{ColumnDef, SqlType, TableSchema};
//!
//! let column = |name: &str, ty| ColumnDef { name: name.into(), ty, nullable: true };
//! let schema = TableSchema {
//!     columns: vec![column("id", SqlType::Integer), column("name", SqlType::Varchar(Some(10)))],
//! };
//! let table = Table::new(TableDef::new("t", schema, Partitioning::Single).unwrap());
//! let source = Source::Bytes {
//!     name: "t.csv".into(),
//!     data: Arc::from(&b"1,\"a,b\"\n2,c\n"[..]),
//! };
//! let (dialect, opts, ctl) = (Dialect::default(), GpuOptions::default(), LoadControl::default());
//! match load_into(&table, &source, &dialect, &opts, &ctl) {
//!     Ok(report) => assert_eq!(report.load.rows, 2),
//!     // no GPU here: the table is unchanged
//!     Err(GpuError::NoGpu(_)) => assert_eq!(table.snapshot().num_rows(), 0),
//!     Err(e) => panic!("{e}"),
//! }
//! ```
#![deny(missing_docs)]
// Without a device (neither `cuda` nor `testing`) nothing calls the engine.
#![cfg_attr(not(any(feature = "cuda", feature = "testing")), allow(dead_code))]

mod assemble;
mod buffers;
#[cfg(feature = "testing")]
mod check;
#[cfg(feature = "cuda")]
mod cuda;
mod device;
#[cfg(feature = "testing")]
mod emulator;
mod engine;
mod error;
// the whole of `kernels/layout.h`, of which the host side of a production build reads less
// than the reference and the tests do
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
mod layout;
mod partition;
mod passes;
mod plan;
#[cfg(feature = "testing")]
mod reference;
#[cfg(feature = "testing")]
pub mod testing;

pub use engine::GpuReport;
pub use error::GpuError;
pub use plan::{GpuOptions, PassMode};
use wireload_load::{Dialect, LoadControl, Source};
use wireload_storage::Table;

/// Loads `source` into `table` on the process's GPU and publishes the new version; on any
/// error the table is unchanged. Without a GPU (or in a build without the `cuda` feature)
/// this fails with [`GpuError::NoGpu`]. In a build with the `testing` feature,
/// `WIRELOAD_GPU=emulate` runs the load on the CPU emulator instead.
pub fn load_into(
    table: &Table,
    source: &Source,
    dialect: &Dialect,
    opts: &GpuOptions,
    ctl: &LoadControl,
) -> Result<GpuReport, GpuError> {
    #[cfg(feature = "testing")]
    if std::env::var(testing::BACKEND_VAR).as_deref() == Ok("emulate") {
        let dev = std::sync::Arc::new(emulator::Emulator::default());
        return engine::load_into_on(&dev, table, source, dialect, opts, ctl);
    }
    #[cfg(feature = "cuda")]
    {
        // the process's GPU, with its workspaces kept between loads
        static POOL: std::sync::OnceLock<passes::WorkspacePool<cuda::CudaDevice>> =
            std::sync::OnceLock::new();
        let dev = cuda::CudaDevice::shared()?;
        let pool = POOL.get_or_init(|| passes::WorkspacePool::new(dev));
        engine::load_into_pooled(pool, table, source, dialect, opts, ctl)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (table, source, dialect, opts, ctl);
        Err(GpuError::NoGpu(
            "this wireload was built without the cuda feature".into(),
        ))
    }
}

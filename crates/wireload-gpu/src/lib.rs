//! GPU CSV loading after CUDAFastCSV (Kumaigorodski, Lutz, Markl, BTW 2021).
//!
//! The input is cut into partitions of whole records ([`partition`]), each staged in
//! page-locked memory and streamed to the device, where the passes run ([`passes`]):
//! per-chunk delimiter counts, a prefix sum, the FieldsIndex (in shared memory in fast
//! mode; with sentinels and a stream compaction in quoted mode), column tapes, and
//! column-wise deserialization into Arrow layouts. Back on the host, the fields the kernels
//! left to it are parsed with the CPU loader's parsers ([`assemble`]), and the batches are
//! appended to the table in one atomic step ([`engine`]).
//!
//! The kernels are CUDA C++ (`kernels/csv.cu`), compiled at run time by NVRTC for the GPU
//! present (`cuda` feature, [`cuda`]). The same source also runs on the CPU ([`emulator`]),
//! every GPU thread a fiber, and [`reference`] computes every pass once more in plain
//! Rust: the tests compare the emulated kernels with the reference byte for byte, and the
//! reference's loads with the CPU loader's.
//!
//! ```
//! use std::sync::Arc;
//! use wireload_gpu::{Emulator, GpuOptions, Plan, Workspace, reference};
//! use wireload_load::Dialect;
//! use wireload_types::TableSchema;
//!
//! let schema = TableSchema::parse("id INT, name VARCHAR(10)").unwrap();
//! let plan = Arc::new(Plan::new(&schema.columns, &Dialect::default()).unwrap());
//! let input = b"1,\"a,b\"\n2,c\n";
//! let opts = GpuOptions::default();
//! let mut ws = Workspace::new(Arc::new(Emulator::default()), plan.clone(), &opts).unwrap();
//! ws.load_input(input).unwrap();
//! let gpu = ws.run(true).unwrap();
//! let cpu = reference::run(input, &plan, &opts, true);
//! assert_eq!((gpu.rows, gpu.quoted), (2, true));
//! assert_eq!(gpu.trace, cpu.trace);
//! ```
#![deny(missing_docs)]

pub mod assemble;
pub mod buffers;
pub mod check;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod device;
pub mod emulator;
pub mod engine;
mod error;
pub mod layout;
pub mod partition;
pub mod passes;
pub mod plan;
pub mod reference;

use std::sync::Arc;

pub use buffers::PartitionBuffers;
pub use device::Device;
pub use emulator::Emulator;
pub use engine::{GpuReport, load_into_on, load_into_pooled, load_into_reference};
pub use error::GpuError;
pub use passes::{Workspace, WorkspacePool};
pub use plan::{GpuOptions, PassMode, Plan};
use wireload_load::{Dialect, LoadControl, Source};
use wireload_storage::Table;

/// The environment variable that runs GPU loads on the CPU emulator (`emulate`): for
/// tests and for working on the kernels without a GPU; slow.
pub const BACKEND_VAR: &str = "WIRELOAD_GPU";

/// Loads `source` into `table` on the process's GPU (or on the emulator when
/// `WIRELOAD_GPU=emulate`) and publishes the new version; on any error the table is
/// unchanged. Without a GPU this fails with [`GpuError::NoGpu`].
pub fn load_into(
    table: &Table,
    source: &Source,
    dialect: &Dialect,
    opts: &GpuOptions,
    ctl: &LoadControl,
) -> Result<GpuReport, GpuError> {
    if std::env::var(BACKEND_VAR).as_deref() == Ok("emulate") {
        return load_into_on(
            &Arc::new(Emulator::default()),
            table,
            source,
            dialect,
            opts,
            ctl,
        );
    }
    #[cfg(feature = "cuda")]
    {
        // the process's GPU, with its workspaces kept between loads
        static POOL: std::sync::OnceLock<WorkspacePool<cuda::CudaDevice>> =
            std::sync::OnceLock::new();
        let dev = cuda::CudaDevice::shared()?;
        let pool = POOL.get_or_init(|| WorkspacePool::new(dev));
        load_into_pooled(pool, table, source, dialect, opts, ctl)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (table, source, dialect, opts, ctl);
        Err(GpuError::NoGpu(
            "this wireload was built without the cuda feature".into(),
        ))
    }
}

//! The machinery of the tests and of the GPU benchmark (`testing` feature; not in a
//! production build): the engine's parts, public here, and what only tests use.
//!
//! - [`Device`] and its two implementations: the CUDA GPU ([`cuda`], with the `cuda`
//!   feature) and the CPU [`Emulator`], which runs the same `kernels/csv.cu` compiled as
//!   host C++ with `kernels/simt.h`, every GPU thread a fiber (`WIRELOAD_GPU=emulate`
//!   sends [`crate::load_into`] there).
//! - [`Workspace`] (one partition's passes on a device: the launch sequence, its buffers
//!   and copies) and [`WorkspacePool`], [`Plan`] (what the kernels know of a table), the
//!   kernels' structs ([`layout`]).
//! - [`reference`](mod@reference): every pass once more in plain Rust; the tests compare the emulated
//!   kernels with it byte for byte, and its loads ([`load_into_reference`]) with the CPU
//!   loader's.
//! - [`check`]: a generator of adversarial CSV inputs and the comparison of a device with
//!   the reference.
//!
//! ```
//! use std::sync::Arc;
//! use wireload_gpu::GpuOptions;
//! use wireload_gpu::testing::check::column;
//! use wireload_gpu::testing::{Emulator, Plan, Workspace, reference};
//! use wireload_load::Dialect;
//! use wireload_types::SqlType;
//!
//! let columns = [column("id", SqlType::Integer), column("name", SqlType::Varchar(Some(10)))];
//! let plan = Arc::new(Plan::new(&columns, &Dialect::default()).unwrap());
//! let input = b"1,\"a,b\"\n2,c\n";
//! let opts = GpuOptions::default();
//! let mut ws = Workspace::new(Arc::new(Emulator::default()), plan.clone(), &opts).unwrap();
//! ws.load_input(input).unwrap();
//! let gpu = ws.run(true).unwrap();
//! let cpu = reference::run(input, &plan, &opts, true);
//! assert_eq!((gpu.rows, gpu.quoted), (2, true));
//! assert_eq!(gpu.trace, cpu.trace);
//! ```

pub use crate::buffers::{ColumnOut, PartitionBuffers, Trace};
pub use crate::device::{Device, HostMemory};
pub use crate::emulator::{Emulator, HostBuffer, c_layout};
pub use crate::engine::{
    ReferenceRunner, Runner, load_into_on, load_into_pooled, load_into_reference, load_with,
};
pub use crate::passes::{OnDevice, Parsed, Pooled, Workspace, WorkspacePool};
pub use crate::plan::{
    ColumnPlan, DEFAULT_CHUNK, DEFAULT_FALLBACKS, DEFAULT_PARTITION, DEFAULT_STREAMS,
    MAX_PARTITION, Plan,
};

/// The environment variable that runs GPU loads on the CPU emulator (`emulate`): for
/// tests and for working on the kernels without a GPU; slow. Production builds ignore it.
pub const BACKEND_VAR: &str = "WIRELOAD_GPU";

pub mod layout {
    //! The structs the kernels read and write, mirrored from `kernels/layout.h`, the
    //! kernels' numbers and names, and the layout the Rust side gives the structs.
    pub use crate::layout::*;
}

pub mod reference {
    //! The GPU passes in plain, sequential Rust: count, scan, index (the FieldsIndex,
    //! with sentinels and compaction in quoted mode), tapes, deserialization and strings.
    //! Each function produces exactly the bytes its kernel in `kernels/csv.cu` produces.
    pub use crate::reference::*;
}

pub mod check {
    //! Checking a device against the reference: a generator of adversarial CSV and a
    //! byte-for-byte comparison of a device's passes with [`super::reference`].
    pub use crate::check::*;
}

#[cfg(feature = "cuda")]
pub mod cuda {
    //! The CUDA GPU as a [`super::Device`], NVRTC (compiling the kernels, finding the
    //! library), and the events the benchmark times with.
    pub use crate::cuda::*;
}

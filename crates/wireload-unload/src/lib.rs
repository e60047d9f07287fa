//! Unload and reload: table contents written as CSV (formatted in parallel, minimal and
//! always-correct quoting), as Arrow IPC files with LZ4-frame compressed buffers, or as
//! Parquet, and Arrow IPC / Parquet files read back into Arrow batches in parallel; a
//! whole database exported to a directory of Arrow files and imported back.
#![deny(missing_docs)]

mod error;
mod files;
mod report;

pub mod csv;
pub mod export;
pub mod ipc;
pub mod parquet;

pub use error::UnloadError;
pub use report::UnloadReport;

//! What an unload or reload did.

use std::time::Duration;

/// Rows and bytes written (or read) and how long it took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnloadReport {
    /// Rows written or read.
    pub rows: u64,
    /// Bytes of the file written or read.
    pub bytes: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// CRC-32 of the file's bytes, for files written by the `write_*_file` functions
    /// (computed while writing); None for reads and for [`crate::csv::write_csv`].
    pub crc32: Option<u32>,
}

impl UnloadReport {
    /// Throughput in MB/s (10^6 bytes) of file bytes.
    pub fn mb_per_s(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.bytes as f64 / 1e6 / s
        } else {
            0.0
        }
    }
}

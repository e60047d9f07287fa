//! The vocabulary a write shares with whoever started it: how buffers are merged and when,
//! the control a caller keeps over a running write, what a finished load did, and the
//! records a load rejected.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

/// How partition buffers are moved into the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MergeStrategy {
    /// Values are appended one by one to the partition's shared storage, under a lock.
    Insert,
    /// Buffers are copied into one contiguous chunk per partition.
    Copy,
    /// Each buffer becomes a chunk of the table: a pointer append.
    #[default]
    Chunk,
}

impl std::str::FromStr for MergeStrategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "insert" => Ok(MergeStrategy::Insert),
            "copy" => Ok(MergeStrategy::Copy),
            "chunk" => Ok(MergeStrategy::Chunk),
            other => Err(format!(
                "unknown merge strategy '{other}' (expected insert, copy or chunk)"
            )),
        }
    }
}

/// When a load's merge steps run (Instant Loading, section 4.2, online transactional loading).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Schedule {
    /// Every merge step at the end, in one short merge transaction.
    #[default]
    Deferred,
    /// Merge steps beside chunk processing, as chunks finish: the merge transaction runs
    /// from the first merge step to the publication, and little merging is left at the end.
    Interleaved,
}

impl std::str::FromStr for Schedule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "deferred" => Ok(Schedule::Deferred),
            "interleaved" => Ok(Schedule::Interleaved),
            other => Err(format!(
                "unknown schedule '{other}' (expected deferred or interleaved)"
            )),
        }
    }
}

/// Most rejected records a load keeps (it counts them all).
pub const MAX_REJECTS: usize = 100_000;

/// Longest `raw_line` of a [`Reject`], in characters (then "..." follows).
pub const RAW_LINE_CHARS: usize = 1000;

/// One record a load skipped under ON_ERROR ignore.
#[derive(Debug, Clone, PartialEq)]
pub struct Reject {
    /// The source's name.
    pub file: String,
    /// 1-based physical line of the record's first byte.
    pub line: u64,
    /// 0-based byte offset of the record's start in the input.
    pub byte_offset: u64,
    /// 1-based field number, when the error is in one field.
    pub column: Option<usize>,
    /// The table column's name, when the field maps to one.
    pub column_name: Option<String>,
    /// The record's text (lossy UTF-8, at most [`RAW_LINE_CHARS`] characters, then "..."),
    /// without its record delimiter.
    pub raw_line: String,
    /// What the ON_ERROR stop policy would have said, without the position.
    pub error: String,
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: line {}", self.file, self.line)?;
        if let Some(c) = self.column {
            write!(f, ", column {c}")?;
            if let Some(name) = &self.column_name {
                write!(f, " ({name})")?;
            }
        }
        write!(f, ", byte {}: {}", self.byte_offset, self.error)
    }
}

/// Shared between a running load and whoever watches it.
#[derive(Debug, Clone, Default)]
pub struct LoadControl {
    /// Set to true to cancel; the load stops at its next batch and publishes nothing.
    pub cancel: Arc<AtomicBool>,
    /// Bytes of input scanned so far (for progress bars). For a compressed file (or one
    /// transcoded from another encoding than UTF-8): its own bytes the decoder consumed
    /// (decoded bytes are not counted).
    pub bytes_done: Arc<AtomicU64>,
    /// Total bytes of the input, known once the source is opened: a compressed (or
    /// transcoded) file's size on disk; for a load of many sources, the sum over its sources.
    pub bytes_total: Arc<AtomicU64>,
}

/// What a finished load did.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadReport {
    /// Table loaded into.
    pub table: String,
    /// Rows added.
    pub rows: u64,
    /// Bytes of input read.
    pub bytes: u64,
    /// Wall-clock seconds from opening the source to publishing.
    pub seconds: f64,
    /// Chunks the input was cut into.
    pub chunks: usize,
    /// Seconds of the merge transaction: from the start of the first merge step (placing
    /// chunks, merging indexes) to the publication of the new version.
    pub merge_seconds: f64,
    /// Merge steps the load took (1 with the deferred schedule).
    pub merge_steps: usize,
    /// Records skipped under ON_ERROR ignore.
    pub rejected: u64,
    /// The first [`MAX_REJECTS`] of them, in input order.
    pub rejects: Vec<Reject>,
}

impl LoadReport {
    /// Throughput in MB/s (10^6 bytes per second).
    pub fn mb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / 1e6 / self.seconds
        } else {
            0.0
        }
    }
}

impl std::fmt::Display for LoadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // sub-second loads keep microseconds, so tiny tables still get a rate
        let digits = if self.seconds < 1.0 { 6 } else { 3 };
        write!(
            f,
            "loaded {} rows into {}, {:.1} MB in {:.*} s ({:.0} MB/s; merge {:.*} s",
            self.rows,
            self.table,
            self.bytes as f64 / 1e6,
            digits,
            self.seconds,
            self.mb_per_s(),
            digits,
            self.merge_seconds
        )?;
        if self.merge_steps > 1 {
            write!(f, " in {} steps", self.merge_steps)?;
        }
        f.write_str(")")?;
        if self.rejected > 0 {
            let s = if self.rejected == 1 { "" } else { "s" };
            write!(f, "; {} row{s} rejected", self.rejected)?;
        }
        Ok(())
    }
}

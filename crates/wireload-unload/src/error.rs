//! Errors of unloading and reloading.

use std::path::PathBuf;

/// Why an unload or a reload failed. A failed unload leaves no file at the target path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UnloadError {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// the file
        path: PathBuf,
        /// the operating system's error
        source: std::io::Error,
    },
    /// A value cannot be written in the requested format (for example a delimiter inside a
    /// field when quoting is disabled).
    #[error("row {row}, column {column} (\"{column_name}\"): {message}")]
    Unrepresentable {
        /// 1-based row number in the output
        row: u64,
        /// 1-based column number
        column: usize,
        /// the column's name
        column_name: String,
        /// what is wrong and what to do
        message: String,
    },
    /// The file is not a valid Arrow IPC or Parquet file, or is damaged or truncated.
    #[error("{}: {message}", path.display())]
    Corrupt {
        /// the file
        path: PathBuf,
        /// what is wrong
        message: String,
    },
    /// Invalid options (such as a quote equal to the delimiter).
    #[error("{0}")]
    Options(String),
    /// Arrow failed while encoding or decoding.
    #[error(transparent)]
    Arrow(#[from] arrow::error::ArrowError),
    /// Parquet failed while encoding (errors while reading a file are reported as
    /// [`UnloadError::Corrupt`] with the path).
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
    /// The unload was cancelled; no file was left behind.
    #[error("the unload was cancelled")]
    Cancelled,
}

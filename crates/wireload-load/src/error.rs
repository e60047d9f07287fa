//! Load errors: each names the place in the input and what was expected.

use std::fmt;

/// A place in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// File name (or the source's name).
    pub file: String,
    /// 1-based physical line.
    pub line: u64,
    /// 1-based field number within the record.
    pub column: usize,
    /// Column name, when the field maps to a table column.
    pub column_name: Option<String>,
    /// 0-based byte offset of the field's first byte in the input.
    pub byte: u64,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: line {}, column {}",
            self.file, self.line, self.column
        )?;
        if let Some(name) = &self.column_name {
            write!(f, " ({name})")?;
        }
        write!(f, ", byte {}", self.byte)
    }
}

/// Why a load failed. After any of these the table is unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The source could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// the path
        path: String,
        /// the OS error
        source: std::io::Error,
    },
    /// The CSV structure is broken (unclosed quote, stray quote, wrong field count...).
    #[error("{pos}: {message}; found {text:?}, expected {expected}")]
    Syntax {
        /// where
        pos: Box<Position>,
        /// what is wrong
        message: String,
        /// the offending text (truncated)
        text: String,
        /// what would have been valid
        expected: String,
    },
    /// A field is not a valid value of its column's type.
    #[error("{pos}: {error}: {text:?}; expected {expected}")]
    Value {
        /// where
        pos: Box<Position>,
        /// what is wrong
        error: wireload_types::ValueError,
        /// the offending text (truncated)
        text: String,
        /// what would have been valid
        expected: &'static str,
    },
    /// `fast` mode met a record delimiter inside a quoted field.
    #[error(
        "{pos}: record delimiter inside a quoted field, which fast mode does not allow; load with MODE safe"
    )]
    QuotedNewlineInFastMode {
        /// where the quoted field with the newline starts
        pos: Box<Position>,
    },
    /// A binary source (Arrow IPC, Parquet) does not match the table's columns.
    #[error("{file}: {message}")]
    Mismatch {
        /// the source's name
        file: String,
        /// what does not match
        message: String,
    },
    /// A value of a binary source does not fit its table column.
    #[error("{file}: row {row}, column {column} ({column_name}): {message}")]
    ArrowValue {
        /// the source's name
        file: String,
        /// 1-based row number in the source
        row: u64,
        /// 1-based column number
        column: usize,
        /// the table column's name
        column_name: String,
        /// what is wrong
        message: String,
    },
    /// The dialect or options are invalid.
    #[error("invalid load options: {0}")]
    Options(String),
    /// The load was cancelled.
    #[error("load cancelled")]
    Cancelled,
}

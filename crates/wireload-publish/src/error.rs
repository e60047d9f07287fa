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

/// Where a key named in an error is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySite {
    /// A record of a CSV input.
    Line {
        /// the source's name
        file: String,
        /// 1-based physical line of the record's start
        line: u64,
        /// 0-based byte offset of the record
        byte: u64,
    },
    /// A row of a binary (Arrow IPC, Parquet) input.
    Row {
        /// the source's name
        file: String,
        /// 1-based row number, when known
        row: Option<u64>,
    },
    /// A row the table held before the load.
    Table,
}

impl fmt::Display for KeySite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySite::Line { file, line, byte } => write!(f, "{file}: line {line}, byte {byte}"),
            KeySite::Row {
                file,
                row: Some(row),
            } => write!(f, "{file}: row {row}"),
            KeySite::Row { file, row: None } => write!(f, "{file}"),
            KeySite::Table => write!(f, "a row already in the table"),
        }
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
    /// A value of a binary source (or of a statement's rows) does not fit its table column.
    #[error("{file}: row {row}, column {column} ({column_name}): {problem}")]
    ArrowValue {
        /// the source's name
        file: String,
        /// 1-based row number in the source
        row: u64,
        /// 1-based column number
        column: usize,
        /// the table column's name
        column_name: String,
        /// what is wrong (boxed: it keeps every `LoadError` small)
        problem: Box<BadValue>,
    },
    /// The load would give two rows of a unique index (PRIMARY KEY, UNIQUE) the same key.
    #[error(
        "duplicate key value violates unique constraint \"{index}\": key ({columns})=({key}) at {second} duplicates the key at {first}"
    )]
    DuplicateKey {
        /// the index (constraint) name
        index: String,
        /// the key columns, comma-separated
        columns: String,
        /// the key value, comma-separated
        key: String,
        /// where the second occurrence is
        second: Box<KeySite>,
        /// where the first occurrence is
        first: Box<KeySite>,
    },
    /// A unique index cannot be created: the table already holds two rows with equal keys.
    #[error("could not create unique index \"{index}\": key ({columns})=({key}) is duplicated")]
    DuplicateInTable {
        /// the index name
        index: String,
        /// the key columns, comma-separated
        columns: String,
        /// the key value, comma-separated
        key: String,
    },
    /// A NULL in a key column of a unique index.
    #[error("null value in column \"{column}\" violates unique constraint \"{index}\" at {site}")]
    NullKey {
        /// the index (constraint) name
        index: String,
        /// the key column
        column: String,
        /// where the row is
        site: KeySite,
    },
    /// The worker threads could not be started.
    #[error("cannot start {threads} worker threads: {message}")]
    Threads {
        /// how many were asked for
        threads: usize,
        /// the system's error
        message: String,
    },
    /// The dialect or options are invalid.
    #[error("invalid load options: {0}")]
    Options(String),
    /// The load was cancelled.
    #[error("load cancelled")]
    Cancelled,
    /// More records were rejected under ON_ERROR ignore than the load's reject limit allows.
    #[error(
        "{rejected} records were rejected, more than the reject limit of {limit}; the first: {first}"
    )]
    TooManyRejects {
        /// records rejected
        rejected: u64,
        /// the limit
        limit: u64,
        /// the first rejected record
        first: Box<crate::Reject>,
    },
    /// The input is not valid in the encoding it is read in.
    #[error(
        "{file}: byte {byte}: {problem}; the input is not valid {encoding} (load it with the ENCODING it is written in)"
    )]
    Encoding {
        /// the source's name
        file: String,
        /// 0-based byte offset of the bad bytes in the input as it is encoded (a
        /// compressed input's decompressed bytes)
        byte: u64,
        /// the encoding the input was read in
        encoding: wireload_csv::Encoding,
        /// what is wrong
        problem: String,
    },
    /// A record is longer than the load's `max_line_bytes`.
    #[error(
        "{file}: line {line}, byte {byte}: a record longer than the limit of {limit} bytes (MAX_LINE_SIZE); raise MAX_LINE_SIZE to load it"
    )]
    LineTooLong {
        /// the source's name
        file: String,
        /// 1-based physical line where the long line (or the record not ended) starts
        line: u64,
        /// 0-based byte offset of that line
        byte: u64,
        /// the limit in bytes
        limit: usize,
    },
    /// The buffers of the load came to more than its `memory_budget`.
    #[error(
        "the load's buffers hold {used} bytes, more than its memory budget of {budget} bytes (MEMORY_LIMIT); raise MEMORY_LIMIT or load the input in parts"
    )]
    MemoryBudget {
        /// bytes the buffers made so far hold
        used: u64,
        /// the budget in bytes
        budget: u64,
    },
    /// A broken invariant of wireload (a bug), not of the input.
    #[error("internal error: {0}")]
    Internal(String),
}

impl LoadError {
    /// Where in the CSV input the error is (file, line, column, byte), when it is there.
    pub fn position(&self) -> Option<&Position> {
        match self {
            LoadError::Syntax { pos, .. }
            | LoadError::Value { pos, .. }
            | LoadError::QuotedNewlineInFastMode { pos } => Some(pos),
            _ => None,
        }
    }
}

impl LoadError {
    /// What the error says without its position (the text after "file: line ..., byte N: ").
    pub fn detail(&self) -> String {
        match self {
            LoadError::Syntax {
                message,
                text,
                expected,
                ..
            } => format!("{message}; found {text:?}, expected {expected}"),
            LoadError::Value {
                error,
                text,
                expected,
                ..
            } => format!("{error}: {text:?}; expected {expected}"),
            LoadError::QuotedNewlineInFastMode { .. } => "record delimiter inside a quoted field, \
                 which fast mode does not allow; load with MODE safe"
                .into(),
            other => other.to_string(),
        }
    }
}

/// What is wrong with a value of a binary source or a statement's rows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadValue {
    /// NULL in a NOT NULL column.
    #[error("NULL in a NOT NULL column")]
    Null,
    /// A string longer than its CHAR(n)/VARCHAR(n) column takes.
    #[error("{0}")]
    TooLong(String),
    /// A value that does not convert to the column's type.
    #[error("{0}")]
    DoesNotFit(String),
}

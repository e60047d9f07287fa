//! Scan errors: what broke the CSV structure, and where.

use std::fmt;

/// An invalid dialect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DialectError(pub String);

/// What is wrong with the CSV structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScanErrorKind {
    /// A quote inside a field that did not start with a quote.
    QuoteInUnquotedField,
    /// Text after the closing quote of a quoted field.
    TextAfterClosingQuote,
    /// A quoted field still open at the end of the input.
    UnterminatedQuote,
    /// A record with the wrong number of fields.
    FieldCount {
        /// fields found
        found: usize,
        /// fields expected
        expected: usize,
    },
    /// Fast mode found a record delimiter inside a quoted field.
    QuotedRecordDelimiter,
    /// A record larger than the scanner can index (1 GiB).
    RecordTooLarge,
}

/// A structural error at a byte of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanError {
    /// What is wrong.
    pub kind: ScanErrorKind,
    /// Byte offset the error points at (see [`ScanErrorKind`]: the quote, the text after
    /// the closing quote, the opening quote, or the record start).
    pub at: usize,
    /// Byte offset where the record containing the error starts.
    pub record_start: usize,
    /// 1-based number of the field within its record.
    pub field: usize,
}

impl ScanError {
    /// What a valid input would have had at this place.
    pub fn expected(&self) -> String {
        match self.kind {
            ScanErrorKind::QuoteInUnquotedField => {
                "no quote inside an unquoted field (quote the whole field and double inner quotes)"
                    .into()
            }
            ScanErrorKind::TextAfterClosingQuote => {
                "a delimiter or the end of the record after a closing quote".into()
            }
            ScanErrorKind::UnterminatedQuote => {
                "a closing quote before the end of the input".into()
            }
            ScanErrorKind::FieldCount { expected, .. } => format!("{expected} fields"),
            ScanErrorKind::QuotedRecordDelimiter => {
                "no record delimiter inside quotes in fast mode (use MODE safe)".into()
            }
            ScanErrorKind::RecordTooLarge => "records under 1 GiB".into(),
        }
    }
}

impl fmt::Display for ScanErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScanErrorKind::QuoteInUnquotedField => {
                write!(f, "quote character inside an unquoted field")
            }
            ScanErrorKind::TextAfterClosingQuote => {
                write!(f, "text after the closing quote of a quoted field")
            }
            ScanErrorKind::UnterminatedQuote => write!(f, "quoted field is never closed"),
            ScanErrorKind::FieldCount { found, expected } => {
                write!(
                    f,
                    "record has {found} fields, the table has {expected} columns"
                )
            }
            ScanErrorKind::QuotedRecordDelimiter => write!(
                f,
                "record delimiter inside a quoted field, which fast mode does not allow; load with MODE safe"
            ),
            ScanErrorKind::RecordTooLarge => write!(f, "record larger than 1 GiB"),
        }
    }
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.kind, self.at)
    }
}

impl std::error::Error for ScanError {}

//! Errors of type parsing and value deserialization.

/// A type name or schema text that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TypeError {
    /// What was wrong, naming the offending text.
    pub message: String,
}

/// Why one field's text is not a valid value of its column's type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// The text is not in the type's input syntax.
    #[error("invalid input syntax for type {ty}")]
    InvalidSyntax {
        /// PostgreSQL's name of the type, e.g. `integer`.
        ty: &'static str,
    },
    /// The value does not fit the type.
    #[error("value out of range for type {ty}")]
    OutOfRange {
        /// PostgreSQL's name of the type.
        ty: &'static str,
    },
    /// A DECIMAL value has more integer digits than precision - scale allows.
    #[error("numeric field overflow: a field with precision {precision}, scale {scale} must round to an absolute value less than 10^{}", precision - scale)]
    NumericOverflow {
        /// declared precision
        precision: u8,
        /// declared scale
        scale: u8,
    },
    /// A date or time field is impossible (month 13, February 30, hour 25...).
    #[error("date/time field value out of range")]
    DateTimeOutOfRange,
    /// A string is longer than its declared length.
    #[error("value too long for type {ty}({max})")]
    TooLong {
        /// `character varying` or `character`
        ty: &'static str,
        /// declared length in characters
        max: u32,
    },
    /// The bytes are not valid UTF-8.
    #[error("invalid byte sequence for encoding UTF8")]
    InvalidUtf8,
    /// NULL in a column declared NOT NULL.
    #[error("null value violates not-null constraint")]
    NotNull,
}

impl ValueError {
    /// What a valid value of the type looks like, for error messages.
    pub fn expected(&self) -> &'static str {
        todo!()
    }
}

/// A [`ValueError`] at a position in a sequence of fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {index}: {error}")]
pub struct FieldError {
    /// Index of the failing field within the sequence passed to the builder.
    pub index: usize,
    /// What was wrong with it.
    pub error: ValueError,
}

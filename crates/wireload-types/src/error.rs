//! Errors of value deserialization.

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
    /// A DATE or TIMESTAMP value matches neither the load's format
    /// (`DATEFORMAT`/`TIMESTAMPFORMAT`) nor the ISO form.
    #[error(
        "invalid input syntax for type {ty}: the value matches neither the load's {ty} format nor ISO YYYY-MM-DD"
    )]
    FormatMismatch {
        /// `date` or `timestamp`
        ty: &'static str,
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

/// PostgreSQL's names of the types, as the errors carry them.
pub(crate) mod type_names {
    pub const BOOLEAN: &str = "boolean";
    pub const SMALLINT: &str = "smallint";
    pub const INTEGER: &str = "integer";
    pub const BIGINT: &str = "bigint";
    pub const REAL: &str = "real";
    pub const DOUBLE: &str = "double precision";
    pub const NUMERIC: &str = "numeric";
    pub const DATE: &str = "date";
    pub const TIMESTAMP: &str = "timestamp";
    pub const VARCHAR: &str = "character varying";
    pub const CHAR: &str = "character";
}

fn expected_value(ty: &str) -> &'static str {
    use type_names as t;
    match ty {
        t::BOOLEAN => "a boolean: true/false, yes/no, on/off, t/f or 1/0",
        t::SMALLINT => "an integer between -32768 and 32767",
        t::INTEGER => "an integer between -2147483648 and 2147483647",
        t::BIGINT => "an integer between -9223372036854775808 and 9223372036854775807",
        t::REAL => "a number such as 1.5, -2.5e-3, NaN or Infinity, at most 3.4e38 in magnitude",
        t::DOUBLE => "a number such as 1.5, -2.5e-3, NaN or Infinity, at most 1.8e308 in magnitude",
        t::NUMERIC => "a finite decimal number such as -12.34 or 1.5e3",
        t::DATE => "a date as YYYY-MM-DD",
        t::TIMESTAMP => "a timestamp as YYYY-MM-DD HH:MM[:SS[.ffffff]]",
        _ => "a valid value of the column's type",
    }
}

impl ValueError {
    /// What a valid value of the type looks like, for error messages.
    pub fn expected(&self) -> &'static str {
        match self {
            ValueError::InvalidSyntax { ty } | ValueError::OutOfRange { ty } => expected_value(ty),
            ValueError::NumericOverflow { .. } => {
                "a number with at most precision minus scale digits before the point after rounding"
            }
            ValueError::FormatMismatch { .. } => {
                "a value in the load's DATEFORMAT (for a date) or TIMESTAMPFORMAT (for a timestamp), or in ISO form"
            }
            ValueError::DateTimeOutOfRange => {
                "an existing date and time: month 1-12, a day of that month, time 00:00:00-24:00:00"
            }
            ValueError::TooLong { .. } => {
                "a string no longer than the declared length (excess trailing spaces are dropped)"
            }
            ValueError::InvalidUtf8 => "valid UTF-8 text",
            ValueError::NotNull => "a value (the column is NOT NULL)",
        }
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

//! The SQL types wireload stores and their Arrow representation.

use std::fmt;

use arrow::datatypes::{DataType, TimeUnit};

/// Largest declared length of `CHAR(n)` / `VARCHAR(n)` (PostgreSQL's limit).
pub const MAX_STRING_LENGTH: u32 = 10_485_760;

/// Largest DECIMAL precision (what Decimal128 holds).
pub const MAX_DECIMAL_PRECISION: u8 = 38;

/// A SQL column type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SqlType {
    /// `BOOLEAN`
    Boolean,
    /// `SMALLINT` (16-bit)
    SmallInt,
    /// `INTEGER` (32-bit)
    Integer,
    /// `BIGINT` (64-bit)
    BigInt,
    /// `REAL` (32-bit float)
    Real,
    /// `DOUBLE PRECISION` (64-bit float)
    Double,
    /// `DECIMAL(precision, scale)`, stored as Decimal128
    Decimal {
        /// total significant digits, 1..=38
        precision: u8,
        /// digits after the point, 0..=precision
        scale: u8,
    },
    /// `DATE`, stored as Date32
    Date,
    /// `TIMESTAMP` without time zone, stored in microseconds
    Timestamp,
    /// `CHAR(n)`: at most n characters (trailing spaces beyond n are dropped), stored as
    /// written without blank padding (as DuckDB does)
    Char(u32),
    /// `VARCHAR(n)` (None: unbounded)
    Varchar(Option<u32>),
    /// `TEXT`
    Text,
}

impl SqlType {
    /// The Arrow data type that holds this SQL type.
    pub fn arrow_type(&self) -> DataType {
        match *self {
            SqlType::Boolean => DataType::Boolean,
            SqlType::SmallInt => DataType::Int16,
            SqlType::Integer => DataType::Int32,
            SqlType::BigInt => DataType::Int64,
            SqlType::Real => DataType::Float32,
            SqlType::Double => DataType::Float64,
            SqlType::Decimal { precision, scale } => DataType::Decimal128(precision, scale as i8),
            SqlType::Date => DataType::Date32,
            SqlType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Text => DataType::Utf8,
        }
    }

    /// True for the string types (CHAR, VARCHAR, TEXT).
    pub fn is_string(&self) -> bool {
        matches!(self, SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Text)
    }
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SqlType::Boolean => f.write_str("BOOLEAN"),
            SqlType::SmallInt => f.write_str("SMALLINT"),
            SqlType::Integer => f.write_str("INTEGER"),
            SqlType::BigInt => f.write_str("BIGINT"),
            SqlType::Real => f.write_str("REAL"),
            SqlType::Double => f.write_str("DOUBLE"),
            SqlType::Decimal { precision, scale } => write!(f, "DECIMAL({precision},{scale})"),
            SqlType::Date => f.write_str("DATE"),
            SqlType::Timestamp => f.write_str("TIMESTAMP"),
            SqlType::Char(n) => write!(f, "CHAR({n})"),
            SqlType::Varchar(Some(n)) => write!(f, "VARCHAR({n})"),
            SqlType::Varchar(None) => f.write_str("VARCHAR"),
            SqlType::Text => f.write_str("TEXT"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_canonical() {
        let cases: &[(SqlType, &str)] = &[
            (SqlType::Boolean, "BOOLEAN"),
            (SqlType::SmallInt, "SMALLINT"),
            (SqlType::Integer, "INTEGER"),
            (SqlType::BigInt, "BIGINT"),
            (SqlType::Real, "REAL"),
            (SqlType::Double, "DOUBLE"),
            (
                SqlType::Decimal {
                    precision: 12,
                    scale: 2,
                },
                "DECIMAL(12,2)",
            ),
            (SqlType::Date, "DATE"),
            (SqlType::Timestamp, "TIMESTAMP"),
            (SqlType::Char(1), "CHAR(1)"),
            (SqlType::Varchar(Some(44)), "VARCHAR(44)"),
            (SqlType::Varchar(None), "VARCHAR"),
            (SqlType::Text, "TEXT"),
        ];
        for (ty, text) in cases {
            assert_eq!(ty.to_string(), *text);
        }
    }

    #[test]
    fn arrow_types() {
        use DataType as D;
        assert_eq!(SqlType::Boolean.arrow_type(), D::Boolean);
        assert_eq!(SqlType::SmallInt.arrow_type(), D::Int16);
        assert_eq!(SqlType::Integer.arrow_type(), D::Int32);
        assert_eq!(SqlType::BigInt.arrow_type(), D::Int64);
        assert_eq!(SqlType::Real.arrow_type(), D::Float32);
        assert_eq!(SqlType::Double.arrow_type(), D::Float64);
        assert_eq!(
            SqlType::Decimal {
                precision: 12,
                scale: 2
            }
            .arrow_type(),
            D::Decimal128(12, 2)
        );
        assert_eq!(SqlType::Date.arrow_type(), D::Date32);
        assert_eq!(
            SqlType::Timestamp.arrow_type(),
            D::Timestamp(TimeUnit::Microsecond, None)
        );
        for ty in [
            SqlType::Char(3),
            SqlType::Varchar(None),
            SqlType::Varchar(Some(4)),
            SqlType::Text,
        ] {
            assert_eq!(ty.arrow_type(), D::Utf8);
        }
    }
}

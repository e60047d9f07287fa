//! The SQL types wireload stores and their Arrow representation.

use std::fmt;
use std::str::FromStr;

use arrow::datatypes::DataType;

use crate::error::TypeError;

/// A SQL column type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// `CHAR(n)`: at most n characters (trailing spaces beyond n are dropped)
    Char(u32),
    /// `VARCHAR(n)` (None: unbounded)
    Varchar(Option<u32>),
    /// `TEXT`
    Text,
}

impl SqlType {
    /// The Arrow data type that holds this SQL type.
    pub fn arrow_type(&self) -> DataType {
        todo!()
    }
}

impl FromStr for SqlType {
    type Err = TypeError;
    /// Parses a SQL type name such as `INT`, `decimal(12, 2)` or `character varying(44)`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let _ = s;
        todo!()
    }
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let _ = f;
        todo!()
    }
}

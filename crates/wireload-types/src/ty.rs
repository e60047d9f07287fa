//! The SQL types wireload stores and their Arrow representation.

use std::fmt;
use std::str::FromStr;

use arrow::datatypes::{DataType, TimeUnit};

use crate::error::TypeError;

/// Largest declared length of `CHAR(n)` / `VARCHAR(n)` (PostgreSQL's limit).
pub const MAX_STRING_LENGTH: u32 = 10_485_760;

/// Largest DECIMAL precision (what Decimal128 holds).
pub const MAX_DECIMAL_PRECISION: u8 = 38;

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

fn type_error(text: &str, why: &str) -> TypeError {
    TypeError {
        message: format!("invalid type \"{}\": {why}", text.trim()),
    }
}

/// Splits `name words (args)` into the upper-cased, single-spaced name and the arguments.
fn split_type(text: &str) -> Result<(String, Vec<u32>), TypeError> {
    let (head, args) = match text.find('(') {
        None => (text, None),
        Some(open) => {
            let rest = &text[open + 1..];
            let close = rest
                .find(')')
                .ok_or_else(|| type_error(text, "missing ')'"))?;
            let after = &rest[close + 1..];
            // `TIMESTAMP(6) WITHOUT TIME ZONE` is not supported; anything after ')' is an error.
            if !after.trim().is_empty() {
                return Err(type_error(text, "unexpected text after ')'"));
            }
            (&text[..open], Some(&rest[..close]))
        }
    };
    let mut name = String::with_capacity(head.len());
    for word in head.split_ascii_whitespace() {
        if !word.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(type_error(text, "not a type name"));
        }
        if !name.is_empty() {
            name.push(' ');
        }
        name.push_str(&word.to_ascii_uppercase());
    }
    if name.is_empty() {
        return Err(type_error(text, "missing type name"));
    }
    let mut numbers = Vec::new();
    if let Some(args) = args {
        for arg in args.split(',') {
            let arg = arg.trim();
            let n: u32 = arg
                .parse()
                .ok()
                .filter(|_| arg.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| type_error(text, "type modifiers must be unsigned integers"))?;
            numbers.push(n);
        }
    }
    Ok((name, numbers))
}

fn no_args(text: &str, args: &[u32], ty: SqlType) -> Result<SqlType, TypeError> {
    if args.is_empty() {
        Ok(ty)
    } else {
        Err(type_error(text, "this type takes no modifiers"))
    }
}

fn string_length(text: &str, n: u32) -> Result<u32, TypeError> {
    if (1..=MAX_STRING_LENGTH).contains(&n) {
        Ok(n)
    } else {
        Err(type_error(
            text,
            &format!("length must be between 1 and {MAX_STRING_LENGTH}"),
        ))
    }
}

impl FromStr for SqlType {
    type Err = TypeError;
    /// Parses a SQL type name such as `INT`, `decimal(12, 2)` or `character varying(44)`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, args) = split_type(s)?;
        match name.as_str() {
            "BOOLEAN" | "BOOL" => no_args(s, &args, SqlType::Boolean),
            "SMALLINT" | "INT2" => no_args(s, &args, SqlType::SmallInt),
            "INTEGER" | "INT" | "INT4" => no_args(s, &args, SqlType::Integer),
            "BIGINT" | "INT8" => no_args(s, &args, SqlType::BigInt),
            "REAL" | "FLOAT4" => no_args(s, &args, SqlType::Real),
            "DOUBLE" | "DOUBLE PRECISION" | "FLOAT8" => no_args(s, &args, SqlType::Double),
            // PostgreSQL: FLOAT(1..=24) is REAL, FLOAT(25..=53) and bare FLOAT are DOUBLE.
            "FLOAT" => match args.as_slice() {
                [] => Ok(SqlType::Double),
                [1..=24] => Ok(SqlType::Real),
                [25..=53] => Ok(SqlType::Double),
                _ => Err(type_error(s, "FLOAT precision must be between 1 and 53")),
            },
            "DECIMAL" | "NUMERIC" | "DEC" => {
                let (precision, scale) = match args.as_slice() {
                    // DuckDB's default for a bare DECIMAL.
                    [] => (18, 3),
                    [p] => (*p, 0),
                    [p, s] => (*p, *s),
                    _ => return Err(type_error(s, "DECIMAL takes at most two modifiers")),
                };
                if !(1..=MAX_DECIMAL_PRECISION as u32).contains(&precision) {
                    return Err(type_error(
                        s,
                        &format!("DECIMAL precision must be between 1 and {MAX_DECIMAL_PRECISION}"),
                    ));
                }
                if scale > precision {
                    return Err(type_error(
                        s,
                        "DECIMAL scale must be between 0 and the precision",
                    ));
                }
                Ok(SqlType::Decimal {
                    precision: precision as u8,
                    scale: scale as u8,
                })
            }
            "DATE" => no_args(s, &args, SqlType::Date),
            "TIMESTAMP" | "TIMESTAMP WITHOUT TIME ZONE" => no_args(s, &args, SqlType::Timestamp),
            "CHAR" | "CHARACTER" => match args.as_slice() {
                [] => Ok(SqlType::Char(1)),
                [n] => Ok(SqlType::Char(string_length(s, *n)?)),
                _ => Err(type_error(s, "CHAR takes one length")),
            },
            "VARCHAR" | "CHARACTER VARYING" | "CHAR VARYING" => match args.as_slice() {
                [] => Ok(SqlType::Varchar(None)),
                [n] => Ok(SqlType::Varchar(Some(string_length(s, *n)?))),
                _ => Err(type_error(s, "VARCHAR takes one length")),
            },
            "STRING" => no_args(s, &args, SqlType::Varchar(None)),
            "TEXT" => no_args(s, &args, SqlType::Text),
            _ => Err(type_error(s, "unknown type")),
        }
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

    fn parse(s: &str) -> Result<SqlType, TypeError> {
        s.parse()
    }

    #[test]
    fn parses_every_spelling() {
        let cases: &[(&str, SqlType)] = &[
            ("BOOLEAN", SqlType::Boolean),
            ("bool", SqlType::Boolean),
            ("SMALLINT", SqlType::SmallInt),
            ("int2", SqlType::SmallInt),
            ("INTEGER", SqlType::Integer),
            ("Int", SqlType::Integer),
            ("INT4", SqlType::Integer),
            ("BIGINT", SqlType::BigInt),
            ("int8", SqlType::BigInt),
            ("REAL", SqlType::Real),
            ("float4", SqlType::Real),
            ("FLOAT(24)", SqlType::Real),
            ("DOUBLE", SqlType::Double),
            ("double   precision", SqlType::Double),
            ("FLOAT8", SqlType::Double),
            ("FLOAT", SqlType::Double),
            ("float(53)", SqlType::Double),
            (
                "DECIMAL(12,2)",
                SqlType::Decimal {
                    precision: 12,
                    scale: 2,
                },
            ),
            (
                "numeric( 5 , 5 )",
                SqlType::Decimal {
                    precision: 5,
                    scale: 5,
                },
            ),
            (
                "DECIMAL(7)",
                SqlType::Decimal {
                    precision: 7,
                    scale: 0,
                },
            ),
            (
                "decimal",
                SqlType::Decimal {
                    precision: 18,
                    scale: 3,
                },
            ),
            (
                "NUMERIC(38,0)",
                SqlType::Decimal {
                    precision: 38,
                    scale: 0,
                },
            ),
            ("DATE", SqlType::Date),
            ("timestamp", SqlType::Timestamp),
            ("TIMESTAMP WITHOUT TIME ZONE", SqlType::Timestamp),
            ("  timestamp\twithout  time zone ", SqlType::Timestamp),
            ("CHAR(1)", SqlType::Char(1)),
            ("char", SqlType::Char(1)),
            ("CHARACTER(10)", SqlType::Char(10)),
            ("VARCHAR(44)", SqlType::Varchar(Some(44))),
            ("character varying (44)", SqlType::Varchar(Some(44))),
            ("CHARACTER VARYING", SqlType::Varchar(None)),
            ("varchar", SqlType::Varchar(None)),
            ("STRING", SqlType::Varchar(None)),
            ("TEXT", SqlType::Text),
        ];
        for (text, ty) in cases {
            assert_eq!(parse(text), Ok(*ty), "{text}");
        }
    }

    #[test]
    fn rejects_bad_types_naming_the_text() {
        for text in [
            "",
            "  ",
            "INTEGRAL",
            "DECIMAL(0,0)",
            "DECIMAL(39,2)",
            "DECIMAL(5,6)",
            "DECIMAL(5,-1)",
            "DECIMAL(1,2,3)",
            "DECIMAL(5,2",
            "DECIMAL(a)",
            "VARCHAR(0)",
            "VARCHAR(10485761)",
            "CHAR(0)",
            "INT(4)",
            "FLOAT(54)",
            "FLOAT(0)",
            "TIMESTAMP WITH TIME ZONE",
            "VARCHAR(10) x",
            "DOUBLE-PRECISION",
        ] {
            let err = parse(text).expect_err(text);
            assert!(err.message.contains(text.trim()), "{text}: {}", err.message);
        }
    }

    #[test]
    fn display_is_canonical_and_parses_back() {
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
            assert_eq!(parse(text), Ok(*ty));
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

//! SQL types and column lists from sqlparser's AST (the `sql` feature): `ast::DataType` to
//! [`SqlType`], column definitions to [`ColumnDef`], and column-list text (`"id INT, name
//! VARCHAR(10) NOT NULL"`) parsed with sqlparser's PostgreSQL dialect, the parser of
//! `wireload-sql`'s front end (which uses this module for every type it maps).

use sqlparser::ast::{
    self, CharacterLength, ColumnOption, DataType, ExactNumberInfo, TimezoneInfo,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use crate::schema::{ColumnDef, TableSchema};
use crate::ty::{MAX_DECIMAL_PRECISION, MAX_STRING_LENGTH, SqlType};

/// Why a type or a column list cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ColumnsError {
    /// The text is not valid SQL.
    #[error("syntax error: {0}")]
    Syntax(#[from] ParserError),
    /// A type (or column option) wireload does not support.
    #[error("{0}")]
    NotSupported(String),
    /// A column list that cannot be a table's (a name twice).
    #[error("{0}")]
    Invalid(String),
    /// A type name that is no type at all (PostgreSQL's "type ... does not exist").
    #[error("{0}")]
    UnknownType(String),
}

/// The wireload type of a SQL type as the parser read it.
pub fn sql_type(t: &DataType) -> Result<SqlType, ColumnsError> {
    let bad = |why: &str| ColumnsError::NotSupported(format!("type {t}: {why}"));
    let no_width = |w: &Option<u64>, ty: SqlType| match w {
        None => Ok(ty),
        Some(_) => Err(bad("this type takes no modifiers")),
    };
    let length = |len: &Option<CharacterLength>| -> Result<Option<u32>, ColumnsError> {
        match len {
            None => Ok(None),
            Some(CharacterLength::IntegerLength { length, unit: None }) => {
                match u32::try_from(*length) {
                    Ok(n) if (1..=MAX_STRING_LENGTH).contains(&n) => Ok(Some(n)),
                    _ => Err(bad(&format!(
                        "length must be between 1 and {MAX_STRING_LENGTH}"
                    ))),
                }
            }
            Some(other) => Err(bad(&format!("length {other} is not supported"))),
        }
    };
    Ok(match t {
        DataType::Boolean | DataType::Bool => SqlType::Boolean,
        DataType::SmallInt(w) | DataType::Int2(w) => no_width(w, SqlType::SmallInt)?,
        DataType::Int(w) | DataType::Integer(w) | DataType::Int4(w) => {
            no_width(w, SqlType::Integer)?
        }
        DataType::BigInt(w) | DataType::Int8(w) => no_width(w, SqlType::BigInt)?,
        DataType::Real | DataType::Float4 => SqlType::Real,
        DataType::DoublePrecision | DataType::Float8 | DataType::Double(ExactNumberInfo::None) => {
            SqlType::Double
        }
        // PostgreSQL: FLOAT(1..=24) is REAL, FLOAT(25..=53) and bare FLOAT are DOUBLE
        DataType::Float(info) => match info {
            ExactNumberInfo::None => SqlType::Double,
            ExactNumberInfo::Precision(1..=24) => SqlType::Real,
            ExactNumberInfo::Precision(25..=53) => SqlType::Double,
            _ => return Err(bad("FLOAT precision must be between 1 and 53")),
        },
        DataType::Decimal(info) | DataType::Numeric(info) | DataType::Dec(info) => {
            let (precision, scale) = match info {
                // DuckDB's default for a bare DECIMAL
                ExactNumberInfo::None => (18, 3),
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => {
                    (*p, u64::try_from(*s).map_err(|_| bad("negative scale"))?)
                }
            };
            if !(1..=u64::from(MAX_DECIMAL_PRECISION)).contains(&precision) {
                return Err(bad(&format!(
                    "DECIMAL precision must be between 1 and {MAX_DECIMAL_PRECISION}"
                )));
            }
            if scale > precision {
                return Err(bad("DECIMAL scale must be between 0 and the precision"));
            }
            SqlType::Decimal {
                precision: precision as u8,
                scale: scale as u8,
            }
        }
        DataType::Date => SqlType::Date,
        DataType::Timestamp(None, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => {
            SqlType::Timestamp
        }
        DataType::Timestamp(..) => {
            return Err(bad(
                "only TIMESTAMP [WITHOUT TIME ZONE] without a precision is supported",
            ));
        }
        DataType::Char(len) | DataType::Character(len) => SqlType::Char(length(len)?.unwrap_or(1)),
        DataType::Varchar(len) | DataType::CharacterVarying(len) | DataType::CharVarying(len) => {
            SqlType::Varchar(length(len)?)
        }
        DataType::String(None) => SqlType::Varchar(None),
        DataType::Text => SqlType::Text,
        DataType::Custom(name, args) if args.is_empty() => {
            match name.to_string().to_ascii_lowercase().as_str() {
                "string" => SqlType::Varchar(None),
                "double" => SqlType::Double,
                _ => {
                    return Err(ColumnsError::UnknownType(format!(
                        "type \"{name}\" does not exist"
                    )));
                }
            }
        }
        _ => return Err(bad("unsupported type")),
    })
}

/// The name an identifier denotes: unquoted ones lower-cased, quoted ones as written
/// (PostgreSQL's rule).
pub fn ident_name(ident: &ast::Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// A column of a column list: name, type and `NULL`/`NOT NULL`, and the column's other
/// options (constraints), which are the caller's.
pub fn column_def(
    col: &ast::ColumnDef,
) -> Result<(ColumnDef, Vec<&ast::ColumnOptionDef>), ColumnsError> {
    let name = ident_name(&col.name);
    let ty = sql_type(&col.data_type).map_err(|e| match e {
        ColumnsError::NotSupported(m) => {
            ColumnsError::NotSupported(format!("column \"{name}\": {m}"))
        }
        ColumnsError::UnknownType(m) => {
            ColumnsError::UnknownType(format!("column \"{name}\": {m}"))
        }
        e => e,
    })?;
    let mut nullable = true;
    let mut rest = Vec::new();
    for opt in &col.options {
        match &opt.option {
            ColumnOption::Null => nullable = true,
            ColumnOption::NotNull => nullable = false,
            _ => rest.push(opt),
        }
    }
    Ok((ColumnDef { name, ty, nullable }, rest))
}

/// Parses a column list such as `id INT NOT NULL, name VARCHAR(10), "Odd name" DATE`.
pub fn parse_columns(text: &str) -> Result<TableSchema, ColumnsError> {
    let dialect = PostgreSqlDialect {};
    let mut p = Parser::new(&dialect).try_with_sql(text)?;
    let defs = p.parse_comma_separated(Parser::parse_column_def)?;
    let next = p.peek_token();
    if next.token != Token::EOF {
        return Err(ColumnsError::Syntax(ParserError::ParserError(format!(
            "Expected: a comma and the next column, or the end of the column list, found: {} at \
             Line: {}, Column: {}",
            next.token, next.span.start.line, next.span.start.column
        ))));
    }
    let mut columns = Vec::with_capacity(defs.len());
    for d in &defs {
        let (col, rest) = column_def(d)?;
        if let Some(opt) = rest.first() {
            return Err(ColumnsError::NotSupported(format!(
                "column \"{}\": {} is not supported in a column list (NULL and NOT NULL are)",
                col.name, opt.option
            )));
        }
        if columns.iter().any(|c: &ColumnDef| c.name == col.name) {
            return Err(ColumnsError::Invalid(format!(
                "column \"{}\" specified more than once",
                col.name
            )));
        }
        columns.push(col);
    }
    Ok(TableSchema { columns })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(text: &str) -> Result<SqlType, ColumnsError> {
        parse_columns(&format!("c {text}")).map(|s| s.columns[0].ty)
    }

    #[test]
    fn every_spelling() {
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
                "DEC(38,0)",
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
        for (text, want) in cases {
            assert_eq!(ty(text).unwrap(), *want, "{text}");
        }
    }

    #[test]
    fn display_parses_back() {
        for t in [
            SqlType::Boolean,
            SqlType::SmallInt,
            SqlType::Integer,
            SqlType::BigInt,
            SqlType::Real,
            SqlType::Double,
            SqlType::Decimal {
                precision: 38,
                scale: 10,
            },
            SqlType::Date,
            SqlType::Timestamp,
            SqlType::Char(3),
            SqlType::Varchar(Some(7)),
            SqlType::Varchar(None),
            SqlType::Text,
        ] {
            assert_eq!(ty(&t.to_string()).unwrap(), t, "{t}");
        }
    }

    #[test]
    fn rejects_bad_types_naming_them() {
        match ty("INTEGRAL") {
            Err(ColumnsError::UnknownType(m)) => {
                assert_eq!(m, "column \"c\": type \"INTEGRAL\" does not exist")
            }
            other => panic!("INTEGRAL: {other:?}"),
        }
        for text in [
            "DECIMAL(0,0)",
            "DECIMAL(39,2)",
            "DECIMAL(5,6)",
            "VARCHAR(0)",
            "VARCHAR(10485761)",
            "CHAR(0)",
            "INT(4)",
            "FLOAT(54)",
            "FLOAT(0)",
            "TIMESTAMP WITH TIME ZONE",
            "TIMESTAMP(3)",
            "JSON",
            "INT[]",
        ] {
            match ty(text) {
                Err(ColumnsError::NotSupported(m)) => {
                    assert!(m.contains("column \"c\""), "{text}: {m}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        for text in [
            "DECIMAL(5,2",
            "DECIMAL(a)",
            "VARCHAR(10) x",
            "DOUBLE-PRECISION",
        ] {
            assert!(ty(text).is_err(), "{text}");
        }
    }

    #[test]
    fn column_lists() {
        let s =
            parse_columns("id INT NOT NULL, \"First Name\" VARCHAR(10), Day DATE NULL").unwrap();
        let got: Vec<(&str, SqlType, bool)> = s
            .columns
            .iter()
            .map(|c| (c.name.as_str(), c.ty, c.nullable))
            .collect();
        assert_eq!(
            got,
            [
                ("id", SqlType::Integer, false),
                ("First Name", SqlType::Varchar(Some(10)), true),
                ("day", SqlType::Date, true)
            ]
        );
        // keywords as column names, quoted or not where PostgreSQL allows them
        let s = parse_columns("\"order\" INT, name TEXT, \"select\" TEXT").unwrap();
        assert_eq!(s.columns[0].name, "order");
        assert!(matches!(
            parse_columns("a INT, a TEXT"),
            Err(ColumnsError::Invalid(m)) if m.contains("more than once")
        ));
        assert!(matches!(
            parse_columns("a INT PRIMARY KEY"),
            Err(ColumnsError::NotSupported(_))
        ));
        assert!(matches!(
            parse_columns("a INT,"),
            Err(ColumnsError::Syntax(_))
        ));
        assert!(matches!(parse_columns(""), Err(ColumnsError::Syntax(_))));
    }
}

//! Column definitions and table schemas.

use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};

use crate::error::TypeError;
use crate::ty::SqlType;

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDef {
    /// Column name: unquoted identifiers lower-cased, double-quoted ones as written
    /// (PostgreSQL's rule); SQL lookups are done by the SQL layer.
    pub name: String,
    /// Its SQL type.
    pub ty: SqlType,
    /// False when declared `NOT NULL`.
    pub nullable: bool,
}

/// The ordered columns of a table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableSchema {
    /// Columns in table order.
    pub columns: Vec<ColumnDef>,
}

fn schema_error(message: String) -> TypeError {
    TypeError { message }
}

/// Splits `text` on commas that are outside parentheses and double quotes.
fn split_top_level(text: &str) -> Result<Vec<&str>, TypeError> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut quoted = false;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth = depth.checked_sub(1).ok_or_else(|| {
                    schema_error(format!("unbalanced ')' in column list \"{text}\""))
                })?
            }
            ',' if !quoted && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if quoted {
        return Err(schema_error(format!(
            "unterminated quoted identifier in \"{text}\""
        )));
    }
    if depth != 0 {
        return Err(schema_error(format!(
            "missing ')' in column list \"{text}\""
        )));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

/// Reads the column name at the start of `def`; returns it and the rest of the text.
fn column_name(def: &str) -> Result<(String, &str), TypeError> {
    if let Some(rest) = def.strip_prefix('"') {
        // A quoted identifier; `""` inside stands for one `"`.
        let mut name = String::new();
        let mut chars = rest.char_indices();
        while let Some((i, c)) = chars.next() {
            if c == '"' {
                if rest[i + 1..].starts_with('"') {
                    name.push('"');
                    chars.next();
                } else {
                    if name.is_empty() {
                        return Err(schema_error(format!(
                            "zero-length quoted identifier in \"{def}\""
                        )));
                    }
                    return Ok((name, &rest[i + 1..]));
                }
            } else {
                name.push(c);
            }
        }
        Err(schema_error(format!(
            "unterminated quoted identifier in \"{def}\""
        )))
    } else {
        let end = def
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(def.len());
        let name = &def[..end];
        let starts_well = name
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_');
        if !starts_well {
            return Err(schema_error(format!("missing column name in \"{def}\"")));
        }
        Ok((name.to_lowercase(), &def[end..]))
    }
}

/// Removes a trailing `NULL` or `NOT NULL`; returns the remaining type text and nullability.
fn strip_null_constraint(text: &str) -> (&str, bool) {
    let text = text.trim_end();
    let Some(before) = strip_suffix_word(text, "NULL") else {
        return (text, true);
    };
    match strip_suffix_word(before.trim_end(), "NOT") {
        Some(before_not) => (before_not, false),
        None => (before, true),
    }
}

/// `text` without the trailing word `word` (case-insensitive, preceded by whitespace).
fn strip_suffix_word<'t>(text: &'t str, word: &str) -> Option<&'t str> {
    let split = text.len().checked_sub(word.len())?;
    if !text.is_char_boundary(split) || !text[split..].eq_ignore_ascii_case(word) {
        return None;
    }
    let before = &text[..split];
    before
        .ends_with(|c: char| c.is_whitespace())
        .then_some(before)
}

impl TableSchema {
    /// Parses a column list such as `id INT NOT NULL, name VARCHAR(20), price DECIMAL(10,2)`.
    pub fn parse(text: &str) -> Result<Self, TypeError> {
        let mut columns: Vec<ColumnDef> = Vec::new();
        for part in split_top_level(text)? {
            let def = part.trim();
            if def.is_empty() {
                return Err(schema_error(format!(
                    "empty column definition in \"{}\"",
                    text.trim()
                )));
            }
            let (name, rest) = column_name(def)?;
            if !rest.starts_with(char::is_whitespace) {
                return Err(schema_error(format!(
                    "missing type after column name in \"{def}\""
                )));
            }
            let (type_text, nullable) = strip_null_constraint(rest);
            if type_text.trim().is_empty() {
                return Err(schema_error(format!("missing type in \"{def}\"")));
            }
            let ty: SqlType = type_text.parse().map_err(|e: TypeError| {
                schema_error(format!("column \"{name}\": {}", e.message))
            })?;
            if columns.iter().any(|c| c.name == name) {
                return Err(schema_error(format!(
                    "column \"{name}\" specified more than once"
                )));
            }
            columns.push(ColumnDef { name, ty, nullable });
        }
        Ok(TableSchema { columns })
    }

    /// The Arrow schema with one field per column.
    pub fn arrow_schema(&self) -> SchemaRef {
        let fields: Vec<arrow::datatypes::Field> = self
            .columns
            .iter()
            .map(|c| arrow::datatypes::Field::new(&c.name, c.ty.arrow_type(), c.nullable))
            .collect();
        Arc::new(Schema::new(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::DataType;

    fn col(name: &str, ty: SqlType, nullable: bool) -> ColumnDef {
        ColumnDef {
            name: name.to_string(),
            ty,
            nullable,
        }
    }

    #[test]
    fn parses_a_column_list() {
        let schema = TableSchema::parse(
            r#"id INT NOT NULL, "Name" VARCHAR(20), price DECIMAL(10,2) null, Flag bool NOT  null,
               "we""ird" character varying ( 4 ), ts timestamp without time zone"#,
        )
        .unwrap();
        assert_eq!(
            schema.columns,
            vec![
                col("id", SqlType::Integer, false),
                col("Name", SqlType::Varchar(Some(20)), true),
                col(
                    "price",
                    SqlType::Decimal {
                        precision: 10,
                        scale: 2
                    },
                    true
                ),
                col("flag", SqlType::Boolean, false),
                col("we\"ird", SqlType::Varchar(Some(4)), true),
                col("ts", SqlType::Timestamp, true),
            ]
        );
    }

    #[test]
    fn column_names_that_look_like_keywords() {
        let schema = TableSchema::parse("null_count BIGINT, notnull TEXT not null").unwrap();
        assert_eq!(
            schema.columns,
            vec![
                col("null_count", SqlType::BigInt, true),
                col("notnull", SqlType::Text, false)
            ]
        );
    }

    #[test]
    fn builds_the_arrow_schema() {
        let schema = TableSchema::parse("id INT NOT NULL, \"Price\" DECIMAL(10,2)").unwrap();
        let arrow = schema.arrow_schema();
        assert_eq!(arrow.fields().len(), 2);
        assert_eq!(arrow.field(0).name(), "id");
        assert_eq!(arrow.field(0).data_type(), &DataType::Int32);
        assert!(!arrow.field(0).is_nullable());
        assert_eq!(arrow.field(1).name(), "Price");
        assert_eq!(arrow.field(1).data_type(), &DataType::Decimal128(10, 2));
        assert!(arrow.field(1).is_nullable());
    }

    #[test]
    fn errors_name_the_offending_text() {
        let cases = [
            ("id INT, name FOO(3)", "FOO(3)"),
            ("id INT,, x INT", "empty column definition"),
            ("id INT,", "empty column definition"),
            ("", "empty column definition"),
            ("id", "missing type after column name in \"id\""),
            ("id NOT NULL", "missing type in \"id NOT NULL\""),
            ("1id INT", "1id INT"),
            ("\"unterminated INT", "unterminated"),
            ("\"\" INT", "zero-length"),
            ("p DECIMAL(5,2", "missing ')'"),
            ("p DECIMAL 5,2)", "unbalanced ')'"),
            ("a INT, A TEXT", "column \"a\" specified more than once"),
            ("a DECIMAL(40,2)", "DECIMAL(40,2)"),
        ];
        for (text, needle) in cases {
            let err = TableSchema::parse(text).expect_err(text);
            assert!(
                err.message.contains(needle),
                "{text}: {} lacks {needle}",
                err.message
            );
        }
    }
}

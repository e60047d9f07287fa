//! Statement parameters: `?` placeholders numbered as `$1, $2...`, and Python values (tagged
//! by the Python layer) as SQL values.

use pyo3::prelude::*;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};
use wireload_sql::ScalarValue;

use crate::errors::ProgrammingError;

/// `sql` with its `?` placeholders numbered as `$1, $2...` in the order they appear; the
/// SQL parser (PostgreSQL's dialect, where `?` is no placeholder) then reads them as
/// PostgreSQL's own. Only `?` tokens change: those in strings, quoted names and comments are
/// text. Mixing `?` and `$n` is an error. Text the tokenizer rejects is returned as it is,
/// for the parser to report.
pub fn number_placeholders(sql: &str) -> PyResult<String> {
    let dialect = PostgreSqlDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, sql).tokenize_with_location() else {
        return Ok(sql.to_string());
    };
    let mut marks = Vec::new();
    let mut numbered = false;
    for t in &tokens {
        match &t.token {
            // PostgreSQL's dialect reads a lone `?` as an operator token
            Token::Question => {
                marks.push(byte_offset(sql, t.span.start.line, t.span.start.column));
            }
            Token::Placeholder(p) if p.starts_with('$') => numbered = true,
            _ => {}
        }
    }
    if marks.is_empty() {
        return Ok(sql.to_string());
    }
    if numbered {
        return Err(ProgrammingError::new_err(
            "a statement takes either ? or $1, $2... placeholders, not both",
        ));
    }
    let mut out = String::with_capacity(sql.len() + marks.len() * 2);
    let mut from = 0;
    for (n, &at) in marks.iter().enumerate() {
        let Some(at) = at.filter(|&a| sql[a..].starts_with('?')) else {
            return Err(ProgrammingError::new_err(
                "cannot locate a ? placeholder in the statement",
            ));
        };
        out.push_str(&sql[from..at]);
        out.push_str(&format!("${}", n + 1));
        from = at + 1;
    }
    out.push_str(&sql[from..]);
    Ok(out)
}

/// The byte offset of the 1-based `line` and character `column` in `text`.
fn byte_offset(text: &str, line: u64, column: u64) -> Option<usize> {
    let mut start = 0;
    for _ in 1..line {
        start += text[start..].find('\n')? + 1;
    }
    let skip = usize::try_from(column.checked_sub(1)?).ok()?;
    text[start..]
        .char_indices()
        .nth(skip)
        .map(|(i, _)| start + i)
}

/// A Python value tagged by the Python layer (`null`, `bool`, `int`, `float`, `str`,
/// `bytes`, `date` in days since 1970-01-01, `timestamp` in microseconds since then,
/// `decimal` as its text) as a SQL value.
pub fn scalar(tag: &str, value: &Bound<'_, PyAny>) -> PyResult<ScalarValue> {
    Ok(match tag {
        "null" => ScalarValue::Null,
        "bool" => ScalarValue::Boolean(Some(value.extract()?)),
        "int" => ScalarValue::Int64(Some(value.extract().map_err(|_| {
            ProgrammingError::new_err(format!("parameter {value} does not fit a 64-bit integer"))
        })?)),
        "float" => ScalarValue::Float64(Some(value.extract()?)),
        "str" => ScalarValue::Utf8(Some(value.extract()?)),
        "bytes" => ScalarValue::Binary(Some(value.extract()?)),
        "date" => ScalarValue::Date32(Some(value.extract()?)),
        "timestamp" => ScalarValue::TimestampMicrosecond(Some(value.extract()?), None),
        "decimal" => decimal(&value.extract::<String>()?)?,
        other => {
            return Err(ProgrammingError::new_err(format!(
                "unsupported parameter kind {other:?}"
            )));
        }
    })
}

/// A decimal's text (`-12.340`, `5`, `1E+3`) as a Decimal128 of its own precision and scale.
fn decimal(text: &str) -> PyResult<ScalarValue> {
    let bad = || ProgrammingError::new_err(format!("parameter {text} is not a finite decimal"));
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i32>().map_err(|_| bad())?),
        None => (text, 0),
    };
    let (negative, digits) = match mantissa.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, mantissa.strip_prefix('+').unwrap_or(mantissa)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let mut all: String = format!("{whole}{fraction}");
    let mut scale = fraction.len() as i32 - exponent;
    if scale < 0 {
        all.extend(std::iter::repeat_n('0', (-scale) as usize));
        scale = 0;
    }
    let trimmed = all.trim_start_matches('0');
    let precision = trimmed.len().max(scale as usize).max(1);
    if precision > 38 || scale > 38 {
        return Err(ProgrammingError::new_err(format!(
            "parameter {text} has more than 38 digits"
        )));
    }
    let value: i128 = if trimmed.is_empty() {
        0
    } else {
        trimmed.parse().map_err(|_| bad())?
    };
    Ok(ScalarValue::Decimal128(
        Some(if negative { -value } else { value }),
        precision as u8,
        scale as i8,
    ))
}

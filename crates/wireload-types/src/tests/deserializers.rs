//! Every deserializer against PostgreSQL's answers, plus the cases PostgreSQL cannot be
//! asked (invalid UTF-8) and the documented differences.

use std::fmt::Debug;

use super::pg_answers as pg;
use crate::deser::*;
use crate::error::ValueError;

/// Runs `parse` over a table of inputs and PostgreSQL's answers; reports every mismatch.
fn check<T: Debug>(
    name: &str,
    table: &[(&str, Result<T, ValueError>)],
    parse: impl Fn(&[u8]) -> Result<T, ValueError>,
    same: impl Fn(&T, &T) -> bool,
) {
    let mut failures = Vec::new();
    for (input, expected) in table {
        let got = parse(input.as_bytes());
        let ok = match (&got, expected) {
            (Ok(a), Ok(b)) => same(a, b),
            (Err(a), Err(b)) => a == b,
            _ => false,
        };
        if !ok {
            failures.push(format!(
                "{input:?}: got {got:?}, PostgreSQL says {expected:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
}

fn syntax<T>(ty: &'static str) -> Result<T, ValueError> {
    Err(ValueError::InvalidSyntax { ty })
}

/// Like [`check`] for the string types, whose parsers borrow the input.
fn check_strings(
    name: &str,
    table: &[(&str, Result<&str, ValueError>)],
    parse: impl for<'b> Fn(&'b [u8]) -> Result<&'b str, ValueError>,
    stored: impl Fn(&str) -> &str,
) {
    let owned: Vec<(&str, Result<String, ValueError>)> = table
        .iter()
        .map(|(input, expected)| (*input, expected.clone().map(str::to_owned)))
        .collect();
    check(name, &owned, |b| parse(b).map(|s| stored(s).to_owned()), eq);
}

fn eq<T: PartialEq>(a: &T, b: &T) -> bool {
    a == b
}

/// Floats are equal when both are NaN or their bits are equal (so -0 differs from 0).
fn same_f64(a: &f64, b: &f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

fn same_f32(a: &f32, b: &f32) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

#[test]
fn integers_match_postgresql() {
    check("smallint", pg::SMALLINT, parse_i16, eq);
    check("integer", pg::INTEGER, parse_i32, eq);
    check("bigint", pg::BIGINT, parse_i64, eq);
}

#[test]
fn floats_match_postgresql() {
    check("real", pg::REAL, parse_f32, same_f32);
    check("double precision", pg::DOUBLE, parse_f64, same_f64);
}

#[test]
fn decimals_match_postgresql() {
    check(
        "numeric(5,2)",
        pg::NUMERIC_5_2,
        |b| parse_decimal(b, 5, 2),
        eq,
    );
    check(
        "numeric(3,3)",
        pg::NUMERIC_3_3,
        |b| parse_decimal(b, 3, 3),
        eq,
    );
    check(
        "numeric(38,0)",
        pg::NUMERIC_38_0,
        |b| parse_decimal(b, 38, 0),
        eq,
    );
    check(
        "numeric(38,38)",
        pg::NUMERIC_38_38,
        |b| parse_decimal(b, 38, 38),
        eq,
    );
    check(
        "numeric(3,0)",
        pg::NUMERIC_3_0,
        |b| parse_decimal(b, 3, 0),
        eq,
    );
    check(
        "numeric(18,10)",
        pg::NUMERIC_18_10,
        |b| parse_decimal(b, 18, 10),
        eq,
    );
}

#[test]
fn booleans_match_postgresql() {
    check("boolean", pg::BOOLEAN, parse_bool, eq);
}

#[test]
fn dates_and_timestamps_match_postgresql() {
    check("date", pg::DATE, parse_date, eq);
    check("timestamp", pg::TIMESTAMP, parse_timestamp, eq);
}

#[test]
fn strings_match_postgresql() {
    check_strings("varchar(3)", pg::VARCHAR_3, |b| parse_varchar(b, 3), |s| s);
    // PostgreSQL pads CHAR(n) with blanks and drops them again on output; we store no padding.
    check_strings(
        "char(3)",
        pg::CHAR_3,
        |b| parse_char(b, 3),
        |s| s.trim_end_matches(' '),
    );
}

#[test]
fn strings_keep_their_text() {
    assert_eq!(parse_text(b""), Ok(""));
    assert_eq!(parse_text(" a,b \"c\"\n".as_bytes()), Ok(" a,b \"c\"\n"));
    assert_eq!(parse_text("日本語".as_bytes()), Ok("日本語"));
    let long = "x".repeat(100_000);
    assert_eq!(parse_text(long.as_bytes()), Ok(long.as_str()));
    // CHAR(n) is stored as written, without blank padding.
    assert_eq!(parse_char(b"a", 3), Ok("a"));
    assert_eq!(parse_char(b"a ", 3), Ok("a "));
    assert_eq!(parse_varchar(b"", 1), Ok(""));
    assert_eq!(
        parse_varchar("ab日本".as_bytes(), 3),
        Err(ValueError::TooLong {
            ty: "character varying",
            max: 3
        })
    );
    assert_eq!(parse_varchar("ab日 ".as_bytes(), 3), Ok("ab日"));
}

#[test]
fn invalid_utf8_is_an_error_for_strings_and_bad_syntax_for_the_rest() {
    let invalid: &[&[u8]] = &[
        b"\xff",
        b"abc\x80",
        b"\xc3",             // truncated two-byte sequence
        b"\xe6\x97",         // truncated three-byte sequence
        b"\xc0\xaf",         // overlong '/'
        b"\xed\xa0\x80",     // surrogate
        b"\xf4\x90\x80\x80", // above U+10FFFF
        b"12\xff",
    ];
    for &bytes in invalid {
        assert_eq!(parse_text(bytes), Err(ValueError::InvalidUtf8), "{bytes:?}");
        assert_eq!(
            parse_varchar(bytes, 100),
            Err(ValueError::InvalidUtf8),
            "{bytes:?}"
        );
        assert_eq!(
            parse_varchar(bytes, 1),
            Err(ValueError::InvalidUtf8),
            "{bytes:?}"
        );
        assert_eq!(
            parse_char(bytes, 1),
            Err(ValueError::InvalidUtf8),
            "{bytes:?}"
        );
        assert_eq!(parse_i16(bytes), syntax("smallint"), "{bytes:?}");
        assert_eq!(parse_i32(bytes), syntax("integer"), "{bytes:?}");
        assert_eq!(parse_i64(bytes), syntax("bigint"), "{bytes:?}");
        assert_eq!(parse_f32(bytes), syntax("real"), "{bytes:?}");
        assert_eq!(parse_f64(bytes), syntax("double precision"), "{bytes:?}");
        assert_eq!(parse_decimal(bytes, 10, 2), syntax("numeric"), "{bytes:?}");
        assert_eq!(parse_bool(bytes), syntax("boolean"), "{bytes:?}");
        assert_eq!(parse_date(bytes), syntax("date"), "{bytes:?}");
        assert_eq!(parse_timestamp(bytes), syntax("timestamp"), "{bytes:?}");
    }
    // Non-ASCII digits and spaces are not digits and spaces.
    assert_eq!(
        parse_i32("\u{a0}1".as_bytes()),
        Err(ValueError::InvalidSyntax { ty: "integer" })
    );
    assert_eq!(
        parse_i32(b"1\0"),
        Err(ValueError::InvalidSyntax { ty: "integer" })
    );
}

/// Where we answer differently from PostgreSQL, on purpose (see the `deser` module docs).
#[test]
fn documented_differences_from_postgresql() {
    // PostgreSQL stores NaN in a numeric(p,s); Decimal128 cannot.
    assert_eq!(
        parse_decimal(b"NaN", 5, 2),
        Err(ValueError::OutOfRange { ty: "numeric" })
    );
    assert_eq!(
        parse_decimal(b" nan ", 5, 2),
        Err(ValueError::OutOfRange { ty: "numeric" })
    );
    // PostgreSQL reads hexadecimal floats through strtod (0x10 = 16).
    assert_eq!(
        parse_f64(b"0x10"),
        Err(ValueError::InvalidSyntax {
            ty: "double precision"
        })
    );
    // The top 30 years of PostgreSQL's timestamp range do not fit Arrow's i64 microseconds.
    assert_eq!(
        parse_timestamp(b"294276-12-31 23:59:59.999999"),
        Err(ValueError::OutOfRange { ty: "timestamp" })
    );
    assert_eq!(
        parse_timestamp(b"294247-01-10 04:00:54.775807"),
        Ok(i64::MAX)
    );
    assert_eq!(
        parse_timestamp(b"294247-01-10 04:00:54.775808"),
        Err(ValueError::OutOfRange { ty: "timestamp" })
    );
    // Only ISO dates: PostgreSQL also reads these DateStyle forms.
    for text in [
        "2023/01/01",
        "20230101",
        "Jan 1 2023",
        "2023-01-01 BC",
        "99-01-01",
        "2023-01-001",
    ] {
        assert_eq!(
            parse_date(text.as_bytes()),
            Err(ValueError::InvalidSyntax { ty: "date" }),
            "{text}"
        );
    }
    for text in [
        "now",
        "epoch",
        "infinity",
        "2023-01-01 10:00:",
        "2023-01-01 010:00",
        "2023-01-01 -10:00",
    ] {
        assert_eq!(
            parse_timestamp(text.as_bytes()),
            Err(ValueError::InvalidSyntax { ty: "timestamp" }),
            "{text}"
        );
    }
}

#[test]
fn expected_describes_valid_input() {
    let cases = [
        (
            ValueError::InvalidSyntax { ty: "integer" },
            "an integer between -2147483648 and 2147483647",
        ),
        (
            ValueError::OutOfRange { ty: "smallint" },
            "an integer between -32768 and 32767",
        ),
        (
            ValueError::InvalidSyntax { ty: "date" },
            "a date as YYYY-MM-DD",
        ),
        (ValueError::InvalidUtf8, "valid UTF-8 text"),
    ];
    for (error, expected) in cases {
        assert_eq!(error.expected(), expected);
    }
    // Every error a deserializer returns has its own description.
    let errors = [
        parse_i64(b"x").unwrap_err(),
        parse_f32(b"x").unwrap_err(),
        parse_f64(b"x").unwrap_err(),
        parse_decimal(b"x", 5, 2).unwrap_err(),
        parse_decimal(b"1000", 5, 2).unwrap_err(),
        parse_bool(b"x").unwrap_err(),
        parse_timestamp(b"x").unwrap_err(),
        parse_date(b"2023-02-30").unwrap_err(),
        parse_varchar(b"abcd", 3).unwrap_err(),
        ValueError::NotNull,
    ];
    for error in errors {
        assert!(
            !error.expected().starts_with("a valid value"),
            "{error:?} has no specific description"
        );
    }
}

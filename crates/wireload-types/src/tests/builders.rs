//! Column builders: NULL rules, NOT NULL, error positions, merging, capacity, reset.

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Date32Array, Decimal128Array, Float32Array,
    Float64Array, Int16Array, Int32Array, Int64Array, StringArray, TimestampMicrosecondArray,
};
use arrow::datatypes::DataType;

use crate::error::{FieldError, ValueError};
use crate::{ColumnBuilder, Field, SqlType};

/// The type a test names: `SqlType`'s own spelling (`INT` for INTEGER).
fn ty(text: &str) -> SqlType {
    use SqlType::*;
    let simple = [
        Boolean,
        SmallInt,
        Integer,
        BigInt,
        Real,
        Double,
        Date,
        Timestamp,
        Varchar(None),
        Text,
    ];
    if text == "INT" {
        return Integer;
    }
    if let Some(t) = simple.iter().find(|t| t.to_string() == text) {
        return *t;
    }
    let (name, args) = text
        .strip_suffix(')')
        .and_then(|t| t.split_once('('))
        .unwrap_or_else(|| panic!("test type {text}"));
    let n: Vec<u32> = args.split(',').map(|a| a.trim().parse().unwrap()).collect();
    match (name, n.as_slice()) {
        ("DECIMAL", &[precision, scale]) => Decimal {
            precision: precision as u8,
            scale: scale as u8,
        },
        ("CHAR", &[n]) => Char(n),
        ("VARCHAR", &[n]) => Varchar(Some(n)),
        _ => panic!("test type {text}"),
    }
}

fn unquoted(texts: &[&'static str]) -> Vec<Field<'static>> {
    texts
        .iter()
        .map(|t| Field::unquoted(t.as_bytes()))
        .collect()
}

/// Builds one array of `ty` from unquoted fields, NULL being the empty string.
fn build(ty_text: &str, texts: &[&'static str]) -> ArrayRef {
    let mut b = ColumnBuilder::new(&ty(ty_text), true, texts.len(), 0);
    b.append_fields(unquoted(texts).into_iter(), b"").unwrap();
    b.finish()
}

#[test]
fn builds_every_type() {
    let a = build("SMALLINT", &["1", "", "-32768"]);
    assert_eq!(
        a.as_primitive::<arrow::datatypes::Int16Type>(),
        &Int16Array::from(vec![Some(1), None, Some(-32768)])
    );
    let a = build("INT", &["1", "", " 7 "]);
    assert_eq!(
        a.as_primitive::<arrow::datatypes::Int32Type>(),
        &Int32Array::from(vec![Some(1), None, Some(7)])
    );
    let a = build("BIGINT", &["9223372036854775807", ""]);
    assert_eq!(
        a.as_primitive::<arrow::datatypes::Int64Type>(),
        &Int64Array::from(vec![Some(i64::MAX), None])
    );
    let a = build("REAL", &["1.5", "", "-inf"]);
    assert_eq!(
        a.as_primitive::<arrow::datatypes::Float32Type>(),
        &Float32Array::from(vec![Some(1.5), None, Some(f32::NEG_INFINITY)])
    );
    let a = build("DOUBLE", &["0.1", ""]);
    assert_eq!(
        a.as_primitive::<arrow::datatypes::Float64Type>(),
        &Float64Array::from(vec![Some(0.1), None])
    );
    let a = build("DECIMAL(5,2)", &["1.005", "", "-999.99"]);
    let expected = Decimal128Array::from(vec![Some(101), None, Some(-99999)])
        .with_precision_and_scale(5, 2)
        .unwrap();
    assert_eq!(a.data_type(), &DataType::Decimal128(5, 2));
    assert_eq!(
        a.as_primitive::<arrow::datatypes::Decimal128Type>(),
        &expected
    );
    let a = build("DATE", &["1970-01-02", ""]);
    assert_eq!(
        a.as_primitive::<arrow::datatypes::Date32Type>(),
        &Date32Array::from(vec![Some(1), None])
    );
    let a = build("TIMESTAMP", &["1970-01-01 00:00:01.5", ""]);
    assert_eq!(a.data_type(), &SqlType::Timestamp.arrow_type());
    assert_eq!(
        a.as_primitive::<arrow::datatypes::TimestampMicrosecondType>(),
        &TimestampMicrosecondArray::from(vec![Some(1_500_000), None])
    );
    let a = build("BOOLEAN", &["t", "", "off", "YES"]);
    assert_eq!(
        a.as_boolean(),
        &BooleanArray::from(vec![Some(true), None, Some(false), Some(true)])
    );
    for (string_type, last) in [
        ("TEXT", "xyz   "),
        ("VARCHAR", "xyz   "),
        ("VARCHAR(3)", "xyz"),
        ("CHAR(3)", "xyz"),
    ] {
        let a = build(string_type, &["ab", "", "日本語", "xyz   "]);
        let expected = StringArray::from(vec![Some("ab"), None, Some("日本語"), Some(last)]);
        assert_eq!(a.as_string::<i32>(), &expected, "{string_type}");
    }
}

#[test]
fn no_validity_bitmap_without_nulls() {
    let a = build("INT", &["1", "2"]);
    assert!(a.nulls().is_none());
    let a = build("TEXT", &["a", "b"]);
    assert!(a.nulls().is_none());
    let a = build("BOOLEAN", &["t", "f"]);
    assert!(a.nulls().is_none());
}

#[test]
fn quoted_fields_are_never_null() {
    // Default NULL string: the empty string.
    let mut b = ColumnBuilder::new(&SqlType::Text, true, 0, 0);
    let fields = [
        Field::unquoted(b""),
        Field::quoted(b""),
        Field::quoted(b"x"),
    ];
    b.append_fields(fields.into_iter(), b"").unwrap();
    let a = b.finish();
    assert_eq!(
        a.as_string::<i32>(),
        &StringArray::from(vec![None, Some(""), Some("x")])
    );

    // A quoted empty field is no number.
    let mut b = ColumnBuilder::new(&SqlType::Integer, true, 0, 0);
    let fields = [
        Field::unquoted(b"1"),
        Field::unquoted(b""),
        Field::quoted(b""),
    ];
    let err = b.append_fields(fields.into_iter(), b"").unwrap_err();
    assert_eq!(
        err,
        FieldError {
            index: 2,
            error: ValueError::InvalidSyntax { ty: "integer" }
        }
    );
    // A quoted number is a number.
    let mut b = ColumnBuilder::new(&SqlType::Integer, true, 0, 0);
    b.append_fields([Field::quoted(b"42")].into_iter(), b"")
        .unwrap();
    assert_eq!(
        b.finish()
            .as_primitive::<arrow::datatypes::Int32Type>()
            .value(0),
        42
    );
}

#[test]
fn custom_null_string() {
    let null = b"\\N";
    let mut b = ColumnBuilder::new(&SqlType::Varchar(Some(5)), true, 0, 0);
    let fields = [
        Field::unquoted(b"\\N"),
        Field::quoted(b"\\N"),
        Field::unquoted(b""),
        Field::unquoted(b"NULL"),
    ];
    b.append_fields(fields.into_iter(), null).unwrap();
    let a = b.finish();
    assert_eq!(
        a.as_string::<i32>(),
        &StringArray::from(vec![None, Some("\\N"), Some(""), Some("NULL")])
    );

    let mut b = ColumnBuilder::new(&SqlType::Date, true, 0, 0);
    b.append_fields(unquoted(&["\\N", "2000-01-01"]).into_iter(), null)
        .unwrap();
    let a = b.finish();
    assert_eq!(
        a.as_primitive::<arrow::datatypes::Date32Type>(),
        &Date32Array::from(vec![None, Some(10957)])
    );
    // With `\N` as NULL, an empty date is a syntax error.
    let mut b = ColumnBuilder::new(&SqlType::Date, true, 0, 0);
    let err = b
        .append_fields(unquoted(&["\\N", ""]).into_iter(), null)
        .unwrap_err();
    assert_eq!(
        err,
        FieldError {
            index: 1,
            error: ValueError::InvalidSyntax { ty: "date" }
        }
    );
}

#[test]
fn not_null_columns_reject_null() {
    for ty_text in ["INT", "TEXT", "BOOLEAN", "DECIMAL(4,1)"] {
        let mut b = ColumnBuilder::new(&ty(ty_text), false, 0, 0);
        let err = b
            .append_fields(unquoted(&["1", "0", ""]).into_iter(), b"")
            .unwrap_err();
        assert_eq!(
            err,
            FieldError {
                index: 2,
                error: ValueError::NotNull
            },
            "{ty_text}"
        );
        assert_eq!(b.append_null(), Err(ValueError::NotNull));
        assert_eq!(b.len(), 2, "{ty_text}");
        assert_eq!(b.finish().null_count(), 0);
    }
    // A quoted empty string is a value, fine in a NOT NULL text column.
    let mut b = ColumnBuilder::new(&SqlType::Text, false, 0, 0);
    b.append_fields([Field::quoted(b"")].into_iter(), b"")
        .unwrap();
    assert_eq!(b.finish().as_string::<i32>().value(0), "");
}

#[test]
fn error_names_the_failing_field_and_keeps_the_ones_before() {
    let cases: &[(&str, &[&'static str], usize, ValueError)] = &[
        (
            "INT",
            &["1", "2", "3x", "4"],
            2,
            ValueError::InvalidSyntax { ty: "integer" },
        ),
        (
            "SMALLINT",
            &["40000"],
            0,
            ValueError::OutOfRange { ty: "smallint" },
        ),
        (
            "DECIMAL(3,1)",
            &["1", "", "99.95"],
            2,
            ValueError::NumericOverflow {
                precision: 3,
                scale: 1,
            },
        ),
        (
            "DATE",
            &["2023-02-28", "2023-02-29"],
            1,
            ValueError::DateTimeOutOfRange,
        ),
        (
            "VARCHAR(2)",
            &["ab", "", "abc"],
            2,
            ValueError::TooLong {
                ty: "character varying",
                max: 2,
            },
        ),
        (
            "CHAR(1)",
            &["ab"],
            0,
            ValueError::TooLong {
                ty: "character",
                max: 1,
            },
        ),
        (
            "BOOLEAN",
            &["t", "maybe"],
            1,
            ValueError::InvalidSyntax { ty: "boolean" },
        ),
    ];
    for (ty_text, texts, index, error) in cases {
        let mut b = ColumnBuilder::new(&ty(ty_text), true, 0, 0);
        let err = b
            .append_fields(unquoted(texts).into_iter(), b"")
            .unwrap_err();
        assert_eq!(
            err,
            FieldError {
                index: *index,
                error: error.clone()
            },
            "{ty_text}"
        );
        assert_eq!(b.len(), *index, "{ty_text}");
        assert_eq!(b.finish().len(), *index, "{ty_text}");
    }
    let mut b = ColumnBuilder::new(&SqlType::Text, true, 0, 0);
    let fields = [Field::unquoted(b"ok"), Field::unquoted(b"\xff")];
    let err = b.append_fields(fields.into_iter(), b"").unwrap_err();
    assert_eq!(
        err,
        FieldError {
            index: 1,
            error: ValueError::InvalidUtf8
        }
    );
    assert_eq!(b.value_bytes(), 2);
}

#[test]
fn append_null_and_len() {
    let mut b = ColumnBuilder::new(&SqlType::BigInt, true, 4, 0);
    assert!(b.is_empty());
    b.append_fields(unquoted(&["5"]).into_iter(), b"").unwrap();
    b.append_null().unwrap();
    b.append_fields(unquoted(&["6"]).into_iter(), b"").unwrap();
    assert_eq!(b.len(), 3);
    assert_eq!(b.value_bytes(), 0);
    let a = b.finish();
    assert_eq!(
        a.as_primitive::<arrow::datatypes::Int64Type>(),
        &Int64Array::from(vec![Some(5), None, Some(6)])
    );

    let mut b = ColumnBuilder::new(&SqlType::Text, true, 4, 16);
    b.append_null().unwrap();
    b.append_fields(unquoted(&["abc", "日本"]).into_iter(), b"")
        .unwrap();
    assert_eq!(b.len(), 3);
    assert_eq!(b.value_bytes(), 3 + 6);
}

#[test]
fn finish_resets_the_builder() {
    for ty_text in ["INT", "TEXT", "BOOLEAN", "TIMESTAMP", "DECIMAL(10,2)"] {
        let mut b = ColumnBuilder::new(&ty(ty_text), true, 2, 8);
        b.append_fields(
            unquoted(&["1", ""]).into_iter().map(|f| {
                if f.bytes == b"1" && ty_text == "TIMESTAMP" {
                    Field::unquoted(b"2000-01-01")
                } else {
                    f
                }
            }),
            b"",
        )
        .unwrap();
        let first = b.finish();
        assert_eq!((first.len(), first.null_count()), (2, 1), "{ty_text}");
        assert_eq!((b.len(), b.value_bytes()), (0, 0), "{ty_text}");
        // The second array has its own values and no validity bitmap.
        let second = b.finish();
        assert_eq!(second.len(), 0, "{ty_text}");
        let value = if ty_text == "TIMESTAMP" {
            "2001-01-01"
        } else {
            "0"
        };
        b.append_fields(unquoted(&[value]).into_iter(), b"")
            .unwrap();
        let third = b.finish();
        assert_eq!((third.len(), third.null_count()), (1, 0), "{ty_text}");
        assert!(third.nulls().is_none(), "{ty_text}");
        assert_eq!(
            first.len(),
            2,
            "finishing again leaves earlier arrays alone"
        );
    }
}

#[test]
fn capacity_hints_size_the_buffers() {
    let rows: Vec<String> = (0..1000).map(|i| format!("{i:03}")).collect();
    for ty_text in [
        "SMALLINT",
        "INT",
        "BIGINT",
        "REAL",
        "DOUBLE",
        "DECIMAL(9,2)",
        "BOOLEAN",
        "TEXT",
        "CHAR(3)",
    ] {
        let mut b = ColumnBuilder::new(&ty(ty_text), true, 1000, 3000);
        let before = b.capacities();
        assert!(before.0 >= 1000, "{ty_text}");
        let fields = rows.iter().map(|r| {
            if ty_text == "BOOLEAN" {
                Field::unquoted(if r.ends_with('1') { b"t" } else { b"f" })
            } else {
                Field::unquoted(r.as_bytes())
            }
        });
        b.append_fields(fields, b"").unwrap();
        assert_eq!(b.len(), 1000);
        assert_eq!(
            b.capacities(),
            before,
            "{ty_text}: buffers were reallocated"
        );
        // finish() sizes the next buffers by the same hints.
        b.finish();
        assert_eq!(b.capacities(), before, "{ty_text}");
    }
    let b = ColumnBuilder::new(&SqlType::Text, true, 10, 500);
    assert!(b.capacities().1 >= 500);
}

/// Builds an array of `ty` with the given values through a builder.
fn array_of(ty: &SqlType, texts: &[&'static str]) -> ArrayRef {
    let mut b = ColumnBuilder::new(ty, true, 0, 0);
    b.append_fields(unquoted(texts).into_iter(), b"").unwrap();
    b.finish()
}

#[test]
fn append_array_concatenates() {
    let cases: &[(&str, &[&'static str], &[&'static str])] = &[
        ("SMALLINT", &["1", ""], &["2", "", "3"]),
        ("INT", &["1"], &["", "2"]),
        ("BIGINT", &[""], &["7"]),
        ("REAL", &["1.5"], &["", "2.5"]),
        ("DOUBLE", &["1.5", ""], &["2.5"]),
        ("DECIMAL(6,3)", &["1.5"], &["", "-2.25"]),
        ("DATE", &["2000-01-01"], &["", "1999-12-31"]),
        (
            "TIMESTAMP",
            &["2000-01-01 10:00"],
            &["", "1999-12-31 23:59:59.999999"],
        ),
        ("BOOLEAN", &["t", "", "f"], &["f", "", "t", "t"]),
        ("TEXT", &["ab", ""], &["", "日本語", "c"]),
        ("VARCHAR(4)", &["ab"], &["cd", ""]),
    ];
    for (ty_text, first, second) in cases {
        let ty = ty(ty_text);
        let all: Vec<&'static str> = first.iter().chain(second.iter()).copied().collect();
        let expected = array_of(&ty, &all);

        // Values already in the builder, then a whole array.
        let mut b = ColumnBuilder::new(&ty, true, 0, 0);
        b.append_fields(unquoted(first).into_iter(), b"").unwrap();
        b.append_array(&array_of(&ty, second));
        assert_eq!(b.len(), all.len());
        assert_eq!(&b.finish(), &expected, "{ty_text}");

        // Two arrays appended to an empty builder.
        let mut b = ColumnBuilder::new(&ty, true, 0, 0);
        b.append_array(&array_of(&ty, first));
        b.append_array(&array_of(&ty, second));
        assert_eq!(&b.finish(), &expected, "{ty_text}");

        // A slice of an array.
        let mut b = ColumnBuilder::new(&ty, true, 0, 0);
        b.append_array(&expected.slice(first.len(), second.len()));
        assert_eq!(&b.finish(), &array_of(&ty, second), "{ty_text}");
    }
}

#[test]
fn append_array_keeps_string_bytes_counted() {
    let ty = SqlType::Text;
    let source = array_of(&ty, &["abc", "", "de"]);
    let mut b = ColumnBuilder::new(&ty, true, 0, 0);
    b.append_fields(unquoted(&["xy"]).into_iter(), b"").unwrap();
    b.append_array(&source.slice(1, 2));
    assert_eq!(b.value_bytes(), 4);
    let a = b.finish();
    assert_eq!(
        a.as_string::<i32>(),
        &StringArray::from(vec![Some("xy"), None, Some("de")])
    );
}

#[test]
#[should_panic(expected = "array type differs")]
fn append_array_rejects_another_type() {
    let mut b = ColumnBuilder::new(&SqlType::Integer, true, 0, 0);
    b.append_array(&array_of(&SqlType::BigInt, &["1"]));
}

#[test]
fn lib_doc_example() {
    let ty = ty("DECIMAL(5,2)");
    let mut b = ColumnBuilder::new(&ty, true, 2, 0);
    let fields = [Field::unquoted(b"1.005"), Field::unquoted(b"")];
    b.append_fields(fields.into_iter(), b"").unwrap();
    let a = b.finish();
    let a = a.as_primitive::<arrow::datatypes::Decimal128Type>();
    assert_eq!(a.value(0), 101);
    assert!(a.is_null(1));
}

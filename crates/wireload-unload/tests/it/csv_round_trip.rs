//! CSV unload: random tables of every type written in several dialects and loaded back
//! with the real loader compare equal to the original (floats bitwise, NaN equal to NaN);
//! quoting is minimal; errors leave no file; parallel output equals serial output.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Date32Array, Decimal128Array, Float32Array,
    Float64Array, Int16Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Float32Type, Float64Type, SchemaRef, TimeUnit};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use wireload_csv::Dialect;
use wireload_load::{LoadControl, LoadOptions, Source, load_into};
use wireload_storage::{Catalog, Partitioning, Table, TableDef};
use wireload_types::deser::{parse_date, parse_timestamp};
use wireload_unload::UnloadError;
use wireload_unload::csv::{write_csv, write_csv_file};

/// Every table type, decimals at the largest precision and at scale = precision.
const ALL_TYPES: &str = "b BOOLEAN, i16 SMALLINT, i32 INTEGER, i64 BIGINT, f32 REAL, \
    f64 DOUBLE, d38 DECIMAL(38,10), d38i DECIMAL(38,0), d5 DECIMAL(5,5), d12 DECIMAL(12,2), \
    dt DATE, ts TIMESTAMP, s VARCHAR, t TEXT, c CHAR(40)";

/// Pieces of strings: every special byte of every dialect below, NULL strings, unicode.
const WILD: &[&str] = &[
    "", ",", "\"", "'", "\\", "|", "\t", "\r", "\n", "\r\n", "\\N", "N", "a", "NULL", " ", "ü",
    "✓", "日本", "-", "0", "x y", "\"\"", "''", "\\\\", "\\\"",
];

/// Pieces without the bytes that need quotes under `|` without quoting (and never the
/// NULL string, which is empty there).
const TAME: &[&str] = &[
    "a", "b c", "\"", "'", "\\", ",", "\t", "ü", "✓", "-", "0", "NULL",
];

fn dialect(
    delimiter: u8,
    quote: Option<u8>,
    escape: Option<u8>,
    header: bool,
    null: &str,
) -> Dialect {
    Dialect {
        delimiter,
        quote,
        escape,
        header,
        null: null.as_bytes().to_vec(),
    }
}

fn table(schema: &str) -> Arc<Table> {
    let catalog = Catalog::default();
    let def = TableDef::new(
        "t",
        wireload_types::sql::parse_columns(schema).unwrap(),
        Partitioning::Single,
    )
    .unwrap();
    catalog.create_table(def, false).unwrap()
}

fn arrow_schema(schema: &str) -> SchemaRef {
    wireload_types::sql::parse_columns(schema)
        .unwrap()
        .arrow_schema()
}

/// One random string of 0..5 pieces (at least one when `pieces` has no empty string).
fn random_string(rng: &mut StdRng, pieces: &[&str]) -> String {
    let least = (!pieces.contains(&"")) as usize;
    let n = rng.random_range(least..5);
    (0..n).map(|_| *pieces.choose(rng).unwrap()).collect()
}

fn days(text: &str) -> i32 {
    parse_date(text.as_bytes()).unwrap()
}

fn micros(text: &str) -> i64 {
    parse_timestamp(text.as_bytes()).unwrap()
}

/// A random array of `data_type` with NULLs and the type's extreme values.
fn random_array(rng: &mut StdRng, data_type: &DataType, rows: usize, pieces: &[&str]) -> ArrayRef {
    let null = |rng: &mut StdRng| rng.random_bool(0.1);
    macro_rules! column {
        ($array:ty, $value:expr) => {{
            let values: Vec<_> = (0..rows)
                .map(|_| {
                    if null(rng) {
                        None
                    } else {
                        Some($value(&mut *rng))
                    }
                })
                .collect();
            Arc::new(<$array>::from(values)) as ArrayRef
        }};
    }
    match data_type {
        DataType::Boolean => column!(BooleanArray, |r: &mut StdRng| r.random_bool(0.5)),
        DataType::Int16 => column!(Int16Array, |r: &mut StdRng| {
            *[i16::MIN, i16::MAX, 0, -1, r.random()].choose(r).unwrap()
        }),
        DataType::Int32 => column!(Int32Array, |r: &mut StdRng| {
            *[i32::MIN, i32::MAX, 0, -1, r.random()].choose(r).unwrap()
        }),
        DataType::Int64 => column!(Int64Array, |r: &mut StdRng| {
            *[
                i64::MIN,
                i64::MAX,
                0,
                -1,
                r.random(),
                r.random::<i16>() as i64,
            ]
            .choose(r)
            .unwrap()
        }),
        DataType::Float32 => column!(Float32Array, |r: &mut StdRng| {
            *[
                f32::MAX,
                f32::MIN,
                f32::MIN_POSITIVE,
                1e-45, // the smallest subnormal
                -0.0,
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                0.1,
                f32::from_bits(r.random()),
                r.random::<f32>(),
            ]
            .choose(r)
            .unwrap()
        }),
        DataType::Float64 => column!(Float64Array, |r: &mut StdRng| {
            *[
                f64::MAX,
                f64::MIN,
                f64::MIN_POSITIVE,
                5e-324,
                f64::from_bits(0x000f_ffff_ffff_ffff), // the largest subnormal
                -0.0,
                f64::NAN,
                -f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                1e300,
                1.5e-7,
                123456789.0,
                f64::from_bits(r.random()),
                f64::from_bits(r.random()),
                r.random::<f64>() * 1e6,
            ]
            .choose(r)
            .unwrap()
        }),
        DataType::Decimal128(precision, scale) => {
            let max = 10i128.pow(*precision as u32) - 1;
            let values: Vec<Option<i128>> = (0..rows)
                .map(|_| {
                    (!null(rng)).then(|| {
                        *[
                            max,
                            -max,
                            0,
                            5,
                            -5,
                            rng.random_range(-max..=max),
                            rng.random_range(-999..=999),
                        ]
                        .choose(rng)
                        .unwrap()
                    })
                })
                .collect();
            Arc::new(
                Decimal128Array::from(values)
                    .with_precision_and_scale(*precision, *scale)
                    .unwrap(),
            )
        }
        DataType::Date32 => {
            let (first, last) = (days("0001-01-01"), days("5874897-12-31"));
            column!(Date32Array, |r: &mut StdRng| {
                *[
                    first,
                    last,
                    0,
                    -1,
                    r.random_range(first..=last),
                    r.random_range(-30_000..30_000),
                ]
                .choose(r)
                .unwrap()
            })
        }
        DataType::Timestamp(TimeUnit::Microsecond, None) => {
            let first = micros("0001-01-01 00:00:00");
            column!(TimestampMicrosecondArray, |r: &mut StdRng| {
                let any = r.random_range(first..=i64::MAX);
                *[
                    first,
                    i64::MAX,
                    0,
                    -1,
                    any,
                    any / 1_000_000 * 1_000_000,
                    any / 1000 * 1000,
                    r.random_range(-1_000_000_000_000i64..1_000_000_000_000),
                ]
                .choose(r)
                .unwrap()
            })
        }
        DataType::Utf8 => {
            let values: Vec<Option<String>> = (0..rows)
                .map(|_| (!null(rng)).then(|| random_string(rng, pieces)))
                .collect();
            Arc::new(StringArray::from(values))
        }
        other => panic!("no generator for {other}"),
    }
}

/// Random batches of `schema`: `rows` rows cut into batches of uneven sizes (one empty).
fn random_batches(schema: &SchemaRef, rows: usize, seed: u64, pieces: &[&str]) -> Vec<RecordBatch> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut sizes = vec![1, 0, rows / 3];
    sizes.push(rows - sizes.iter().sum::<usize>());
    sizes
        .into_iter()
        .map(|n| {
            let columns = schema
                .fields()
                .iter()
                .map(|f| random_array(&mut rng, f.data_type(), n, pieces))
                .collect();
            RecordBatch::try_new(schema.clone(), columns).unwrap()
        })
        .collect()
}

/// Loads the CSV file at `path` into a new table of `schema` with the real loader.
fn reload(path: &Path, schema: &str, dialect: &Dialect) -> RecordBatch {
    let t = table(schema);
    let opts = LoadOptions {
        dialect: dialect.clone(),
        threads: Some(2),
        chunk_size: Some(8192),
        ..LoadOptions::default()
    };
    load_into(
        &t,
        &Source::File(path.to_path_buf()),
        &opts,
        &LoadControl::default(),
    )
    .unwrap_or_else(|e| panic!("{dialect:?}: {e}"));
    let snapshot = t.snapshot();
    let chunks: Vec<RecordBatch> = snapshot.live_chunks().unwrap();
    concat_batches(&t.def().arrow_schema, &chunks).unwrap()
}

/// Float bits with every NaN made the same.
fn float_bits(array: &dyn Array) -> Vec<Option<u64>> {
    let canonical = |bits: u64, nan: bool| if nan { u64::MAX } else { bits };
    match array.data_type() {
        DataType::Float32 => array
            .as_primitive::<Float32Type>()
            .iter()
            .map(|v| v.map(|v| canonical(v.to_bits() as u64, v.is_nan())))
            .collect(),
        DataType::Float64 => array
            .as_primitive::<Float64Type>()
            .iter()
            .map(|v| v.map(|v| canonical(v.to_bits(), v.is_nan())))
            .collect(),
        other => panic!("not a float: {other}"),
    }
}

/// Asserts that the loaded batch equals the original, naming the first differing value.
fn assert_same(original: &RecordBatch, loaded: &RecordBatch, context: &str) {
    assert_eq!(
        original.num_rows(),
        loaded.num_rows(),
        "{context}: row count"
    );
    for (c, field) in original.schema().fields().iter().enumerate() {
        let (a, b) = (original.column(c), loaded.column(c));
        assert_eq!(a.data_type(), b.data_type(), "{context}: {}", field.name());
        let same = if matches!(a.data_type(), DataType::Float32 | DataType::Float64) {
            float_bits(a.as_ref()) == float_bits(b.as_ref())
        } else {
            a.to_data() == b.to_data()
        };
        if !same {
            let row = (0..a.len())
                .find(|&r| {
                    let (x, y) = (a.slice(r, 1), b.slice(r, 1));
                    if matches!(a.data_type(), DataType::Float32 | DataType::Float64) {
                        float_bits(&x) != float_bits(&y)
                    } else {
                        x.to_data() != y.to_data()
                    }
                })
                .unwrap();
            panic!(
                "{context}: column {} row {row}: wrote {:?}, loaded {:?}",
                field.name(),
                a.slice(row, 1),
                b.slice(row, 1)
            );
        }
    }
}

/// Writes `batches` to a file with `dialect`, loads it back and compares.
fn round_trip(schema: &str, batches: &[RecordBatch], dialect: &Dialect) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.csv");
    let arrow = arrow_schema(schema);
    let report = write_csv_file(&path, &arrow, batches, dialect, &AtomicBool::new(false))
        .unwrap_or_else(|e| panic!("{dialect:?}: {e}"));
    let bytes = std::fs::read(&path).unwrap();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(report.rows, rows as u64);
    assert_eq!(report.bytes, bytes.len() as u64);
    let original = concat_batches(&arrow, batches).unwrap();
    let loaded = reload(&path, schema, dialect);
    assert_same(&original, &loaded, &format!("{dialect:?}"));
    bytes
}

#[test]
fn every_type_round_trips_in_every_dialect() {
    let schema = arrow_schema(ALL_TYPES);
    let cases: Vec<(Dialect, &[&str])> = vec![
        (Dialect::default(), WILD),
        (dialect(b'|', None, None, false, ""), TAME),
        (dialect(b'\t', Some(b'"'), Some(b'"'), true, ""), WILD),
        (dialect(b',', Some(b'\''), Some(b'\''), false, "\\N"), WILD),
        (dialect(b',', Some(b'"'), Some(b'\\'), true, "\\N"), WILD),
        (dialect(b';', Some(b'\''), Some(b'\\'), false, "NULL"), WILD),
    ];
    for (seed, (dialect, pieces)) in cases.iter().enumerate() {
        let batches = random_batches(&schema, 2500, seed as u64, pieces);
        round_trip(ALL_TYPES, &batches, dialect);
    }
}

#[test]
fn special_bytes_inside_numbers_dates_and_timestamps_are_quoted() {
    // Delimiters and NULL strings that occur in the text of non-string types.
    let schema = arrow_schema(ALL_TYPES);
    let cases = [
        dialect(b'-', Some(b'"'), Some(b'"'), false, ""),
        dialect(b':', Some(b'"'), Some(b'"'), true, "\\N"),
        dialect(b'.', Some(b'\''), Some(b'\\'), false, "0"),
        dialect(b' ', Some(b'"'), Some(b'"'), false, "NaN"),
        dialect(b'e', Some(b'"'), Some(b'"'), false, "NaN"),
        dialect(b';', Some(b'"'), Some(b'"'), true, "true"),
        dialect(b'0', Some(b'"'), Some(b'"'), false, "\\N"),
        dialect(b',', Some(b'"'), Some(b'"'), false, "1970-01-01"),
        dialect(b',', Some(b'"'), Some(b'"'), false, "-1"),
        dialect(b'a', Some(b'1'), Some(b'1'), false, ""),
        dialect(b',', Some(b'-'), Some(b'\\'), false, "Infinity"),
    ];
    for (seed, dialect) in cases.iter().enumerate() {
        let batches = random_batches(&schema, 600, 100 + seed as u64, WILD);
        round_trip(ALL_TYPES, &batches, dialect);
    }
}

/// Arrow types that query results (`COPY (SELECT ...) TO`) may have, loaded back into the
/// table type that holds them.
#[test]
fn query_result_types_round_trip_into_table_types() {
    use arrow::array::{
        Date64Array, Decimal32Array, Decimal64Array, Int8Array, LargeStringArray, StringViewArray,
        Time64MicrosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
        TimestampSecondArray, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
    };
    use arrow::compute::cast;
    use arrow::datatypes::{Field, Schema};

    let rows = 3000;
    let mut rng = StdRng::seed_from_u64(77);
    let maybe = |rng: &mut StdRng| !rng.random_bool(0.1);
    macro_rules! column {
        ($array:ty, $value:expr) => {{
            let values: Vec<_> = (0..rows)
                .map(|_| maybe(&mut rng).then(|| $value(&mut rng)))
                .collect();
            Arc::new(<$array>::from(values)) as ArrayRef
        }};
    }
    let first_day = days("0001-01-01") as i64;
    let last_day = days("5874897-12-31") as i64;
    let first_second = micros("0001-01-01 00:00:00") / 1_000_000;
    let columns: Vec<(&str, &str, ArrayRef)> = vec![
        (
            "a",
            "TEXT",
            column!(LargeStringArray, |r: &mut StdRng| random_string(r, WILD)),
        ),
        (
            "b",
            "TEXT",
            column!(StringViewArray, |r: &mut StdRng| random_string(r, WILD)
                .repeat(4)),
        ),
        (
            "c",
            "SMALLINT",
            column!(Int8Array, |r: &mut StdRng| r.random::<i8>()),
        ),
        (
            "d",
            "SMALLINT",
            column!(UInt8Array, |r: &mut StdRng| r.random::<u8>()),
        ),
        (
            "e",
            "INTEGER",
            column!(UInt16Array, |r: &mut StdRng| r.random::<u16>()),
        ),
        (
            "f",
            "BIGINT",
            column!(UInt32Array, |r: &mut StdRng| r.random::<u32>()),
        ),
        (
            "g",
            "DECIMAL(20,0)",
            column!(UInt64Array, |r: &mut StdRng| {
                *[u64::MAX, 0, r.random()].choose(r).unwrap()
            }),
        ),
        (
            "h",
            "DATE",
            column!(Date64Array, |r: &mut StdRng| {
                r.random_range(first_day..=last_day) * 86_400_000
            }),
        ),
        (
            "i",
            "TIMESTAMP",
            column!(TimestampSecondArray, |r: &mut StdRng| {
                r.random_range(first_second..=i64::MAX / 1_000_000)
            }),
        ),
        (
            "j",
            "TIMESTAMP",
            column!(TimestampMillisecondArray, |r: &mut StdRng| {
                r.random_range(first_second * 1000..=i64::MAX / 1000)
            }),
        ),
        (
            "k",
            "TIMESTAMP",
            column!(TimestampNanosecondArray, |r: &mut StdRng| {
                r.random::<i64>() / 1000 * 1000
            }),
        ),
        ("l", "DECIMAL(9,2)", {
            let values: Vec<_> = (0..rows)
                .map(|_| maybe(&mut rng).then(|| rng.random_range(-999_999_999..=999_999_999)))
                .collect();
            Arc::new(
                Decimal32Array::from(values)
                    .with_precision_and_scale(9, 2)
                    .unwrap(),
            )
        }),
        ("m", "DECIMAL(18,4)", {
            let max = 10i64.pow(18) - 1;
            let values: Vec<_> = (0..rows)
                .map(|_| maybe(&mut rng).then(|| rng.random_range(-max..=max)))
                .collect();
            Arc::new(
                Decimal64Array::from(values)
                    .with_precision_and_scale(18, 4)
                    .unwrap(),
            )
        }),
        (
            "n",
            "TEXT",
            column!(Time64MicrosecondArray, |r: &mut StdRng| {
                r.random_range(0..86_400_000_000i64)
            }),
        ),
    ];
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(name, _, array)| Field::new(*name, array.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.iter().map(|c| c.2.clone()).collect(),
    )
    .unwrap();
    let table_schema: String = columns
        .iter()
        .map(|(name, ty, _)| format!("{name} {ty}"))
        .collect::<Vec<_>>()
        .join(", ");
    for d in [
        Dialect::default(),
        dialect(b'|', Some(b'\''), Some(b'\\'), true, "\\N"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.csv");
        write_csv_file(
            &path,
            &schema,
            std::slice::from_ref(&batch),
            &d,
            &AtomicBool::new(false),
        )
        .unwrap();
        let loaded = reload(&path, &table_schema, &d);
        let expected = RecordBatch::try_new(
            loaded.schema(),
            batch
                .columns()
                .iter()
                .zip(loaded.columns())
                .map(|(a, b)| cast(a, b.data_type()).unwrap())
                .collect(),
        )
        .unwrap();
        assert_same(&expected, &loaded, &format!("{d:?}"));
    }
}

#[test]
fn one_column_tables_keep_empty_strings_and_nulls() {
    let schema_text = "s VARCHAR";
    let schema = arrow_schema(schema_text);
    let strings = StringArray::from(vec![Some(""), None, Some("a"), Some("\\N"), Some(""), None]);
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(strings)]).unwrap();
    let bytes = round_trip(
        schema_text,
        std::slice::from_ref(&batch),
        &dialect(b',', Some(b'"'), Some(b'"'), false, "\\N"),
    );
    assert_eq!(bytes, b"\"\"\n\\N\na\n\"\\N\"\n\"\"\n\\N\n");

    // without NULLs, an empty NULL string is fine: empty strings are quoted
    let strings = StringArray::from(vec!["", "b", ""]);
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(strings)]).unwrap();
    let bytes = round_trip(schema_text, &[batch], &Dialect::default());
    assert_eq!(bytes, b"\"\"\nb\n\"\"\n");

    for ty in ["BIGINT", "DATE", "DOUBLE", "BOOLEAN"] {
        let schema_text = format!("x {ty}");
        let schema = arrow_schema(&schema_text);
        let batches = random_batches(&schema, 300, 7, WILD);
        round_trip(
            &schema_text,
            &batches,
            &dialect(b',', Some(b'"'), Some(b'"'), true, "\\N"),
        );
    }
}

#[test]
fn a_file_with_a_header_only_or_no_rows() {
    let schema_text = "a INT, \"b,c\" TEXT";
    let schema = arrow_schema(schema_text);
    let empty = RecordBatch::new_empty(schema.clone());
    let mut out = Vec::new();
    let header = dialect(b',', Some(b'"'), Some(b'"'), true, "");
    write_csv(
        &mut out,
        &schema,
        std::slice::from_ref(&empty),
        &header,
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(out, b"a,\"b,c\"\n");
    out.clear();
    let report = write_csv(
        &mut out,
        &schema,
        &[],
        &Dialect::default(),
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!((report.rows, report.bytes, out.len()), (0, 0, 0));
    round_trip(schema_text, &[empty], &header);
}

#[test]
fn values_without_specials_are_never_quoted() {
    let schema = arrow_schema(ALL_TYPES);
    let plain: &[&str] = &["a", "b c", "ü", "✓", "x-y", "0", "NULL"];
    let batches = random_batches(&schema, 2000, 42, plain);
    // No generated text holds a '|', a '"', CR or LF, and the NULL string `\N` never occurs.
    let d = dialect(b'|', Some(b'"'), Some(b'"'), true, "\\N");
    let bytes = round_trip(ALL_TYPES, &batches, &d);
    assert!(!bytes.contains(&b'"'), "a value was quoted without need");
}

#[test]
fn each_special_byte_triggers_quotes_and_reads_back_with_the_csv_crate() {
    let schema_text = "s TEXT, n INT";
    let schema = arrow_schema(schema_text);
    let values = [
        "plain", "a,b", "a\"b", "a\nb", "a\rb", "a\\b", "", "\\N", "x",
    ];
    let strings = StringArray::from(values.to_vec());
    let numbers = Int32Array::from_iter_values(0..values.len() as i32);
    let batch =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(strings), Arc::new(numbers)]).unwrap();
    let cases = [
        // (dialect, expected text of each value)
        (
            Dialect::default(),
            vec![
                "plain",
                "\"a,b\"",
                "\"a\"\"b\"",
                "\"a\nb\"",
                "\"a\rb\"",
                "a\\b",
                "\"\"",
                "\\N",
                "x",
            ],
        ),
        (
            dialect(b',', Some(b'"'), Some(b'\\'), false, "\\N"),
            vec![
                "plain",
                "\"a,b\"",
                "\"a\\\"b\"",
                "\"a\nb\"",
                "\"a\rb\"",
                "\"a\\\\b\"",
                "",
                "\"\\\\N\"",
                "x",
            ],
        ),
    ];
    for (d, expected) in cases {
        let mut out = Vec::new();
        write_csv(
            &mut out,
            &schema,
            std::slice::from_ref(&batch),
            &d,
            &AtomicBool::new(false),
        )
        .unwrap();
        let want: String = expected
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{v},{i}\n"))
            .collect();
        assert_eq!(String::from_utf8(out.clone()).unwrap(), want, "{d:?}");

        // An independent RFC 4180 reader gets the strings back.
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .escape(d.has_distinct_escape().then_some(b'\\'))
            .double_quote(!d.has_distinct_escape())
            .from_reader(out.as_slice());
        let read: Vec<String> = reader
            .records()
            .map(|r| r.unwrap().get(0).unwrap().to_string())
            .collect();
        assert_eq!(read, values, "{d:?}");
    }
}

fn unrepresentable(err: UnloadError) -> (u64, usize, String, String) {
    match err {
        UnloadError::Unrepresentable {
            row,
            column,
            column_name,
            message,
        } => (row, column, column_name, message),
        other => panic!("expected Unrepresentable, got {other}"),
    }
}

/// Files in `dir` (an unload must leave none behind after an error).
fn files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Many rows of (id, text), the text of row `bad` being `bad_text`.
fn long_table(rows: usize, bad: usize, bad_text: &str) -> (SchemaRef, Vec<RecordBatch>) {
    let schema = arrow_schema("id BIGINT, s TEXT");
    let strings = StringArray::from_iter_values((0..rows).map(|i| {
        if i == bad {
            bad_text.to_string()
        } else {
            format!("value number {i}")
        }
    }));
    let ids = Int64Array::from_iter_values(0..rows as i64);
    let batch =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(strings)]).unwrap();
    let batches = vec![
        batch.slice(0, rows / 2),
        batch.slice(rows / 2, rows - rows / 2),
    ];
    (schema, batches)
}

#[test]
fn a_delimiter_without_quoting_is_an_error_and_leaves_no_file() {
    let rows = 200_000;
    let (schema, batches) = long_table(rows, rows - 10, "tab\there");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.tsv");
    let d = dialect(b'\t', None, None, true, "\\N");
    let err = write_csv_file(&path, &schema, &batches, &d, &AtomicBool::new(false)).unwrap_err();
    let (row, column, name, message) = unrepresentable(err);
    assert_eq!((row, column, name.as_str()), (rows as u64 - 10 + 2, 2, "s"));
    assert!(
        message.contains("delimiter '\\t'") && message.contains("QUOTE"),
        "{message}"
    );
    assert_eq!(files_in(dir.path()), Vec::<String>::new());

    // the same file with quoting is written, and an existing file is replaced
    std::fs::write(&path, b"old").unwrap();
    let d = dialect(b'\t', Some(b'"'), Some(b'"'), true, "\\N");
    write_csv_file(&path, &schema, &batches, &d, &AtomicBool::new(false)).unwrap();
    assert_eq!(files_in(dir.path()), vec!["out.tsv".to_string()]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("id\ts\n0\tvalue number 0\n"));
    assert!(text.contains("\"tab\there\""));
}

#[test]
fn a_null_in_a_one_column_table_needs_a_null_string() {
    let schema = arrow_schema("s TEXT");
    let strings = StringArray::from(vec![Some("a"), None]);
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(strings)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.csv");
    let err = write_csv_file(
        &path,
        &schema,
        &[batch],
        &Dialect::default(),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    let (row, column, name, message) = unrepresentable(err);
    assert_eq!((row, column, name.as_str()), (2, 1, "s"));
    assert!(message.contains("'\\N'"), "{message}");
    assert_eq!(files_in(dir.path()), Vec::<String>::new());
}

#[test]
fn other_unwritable_values_are_errors() {
    // a quote with ESCAPE none
    let (schema, batches) = long_table(10, 3, "say \"hi\"");
    let d = dialect(b',', Some(b'"'), None, false, "");
    let err = write_csv(Vec::new(), &schema, &batches, &d, &AtomicBool::new(false)).unwrap_err();
    let (row, _, _, message) = unrepresentable(err);
    assert_eq!(row, 4);
    assert!(message.contains("ESCAPE"), "{message}");
    // a BC date
    let schema = arrow_schema("d DATE");
    let dates = Date32Array::from(vec![0, days("0001-01-01") - 1]);
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(dates)]).unwrap();
    let err = write_csv(
        Vec::new(),
        &schema,
        &[batch],
        &Dialect::default(),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    let (row, _, name, message) = unrepresentable(err);
    assert_eq!((row, name.as_str()), (2, "d"));
    assert!(message.contains("0001-12-31 BC"), "{message}");
    // invalid options
    let err = write_csv(
        Vec::new(),
        &schema,
        &[],
        &dialect(b',', Some(b','), None, false, ""),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert!(matches!(err, UnloadError::Options(_)), "{err}");
}

#[test]
fn io_errors_name_the_path_and_leave_nothing() {
    let (schema, batches) = long_table(10, usize::MAX, "");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("out.csv");
    let err = write_csv_file(
        &path,
        &schema,
        &batches,
        &Dialect::default(),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert!(matches!(err, UnloadError::Io { .. }), "{err}");
    assert!(err.to_string().contains("out.csv"), "{err}");
    // the target is a directory: the rename fails and the temporary file is removed
    let target = dir.path().join("taken");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("inside"), b"x").unwrap();
    let err = write_csv_file(
        &target,
        &schema,
        &batches,
        &Dialect::default(),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert!(matches!(err, UnloadError::Io { .. }), "{err}");
    assert_eq!(files_in(dir.path()), vec!["taken".to_string()]);
}

/// A writer that raises the cancel flag once it has been written to.
struct CancelAfterFirstWrite<'a> {
    cancel: &'a AtomicBool,
    bytes: usize,
}

impl Write for CancelAfterFirstWrite<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.cancel.store(true, Ordering::Relaxed);
        self.bytes += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn cancel_stops_between_pieces_and_leaves_no_file() {
    let rows = 300_000;
    let (schema, batches) = long_table(rows, usize::MAX, "");
    let cancel = AtomicBool::new(false);
    let mut writer = CancelAfterFirstWrite {
        cancel: &cancel,
        bytes: 0,
    };
    let err = write_csv(&mut writer, &schema, &batches, &Dialect::default(), &cancel).unwrap_err();
    assert!(matches!(err, UnloadError::Cancelled), "{err}");
    assert!(
        writer.bytes > 0 && writer.bytes < rows * 20,
        "{}",
        writer.bytes
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.csv");
    let cancelled = AtomicBool::new(true);
    let err =
        write_csv_file(&path, &schema, &batches, &Dialect::default(), &cancelled).unwrap_err();
    assert!(matches!(err, UnloadError::Cancelled), "{err}");
    assert_eq!(files_in(dir.path()), Vec::<String>::new());
}

#[test]
fn parallel_output_equals_serial_output() {
    let schema = arrow_schema(ALL_TYPES);
    let batches = random_batches(&schema, 40_000, 9, WILD);
    let d = dialect(b',', Some(b'"'), Some(b'\\'), true, "\\N");
    let write = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut out = Vec::new();
            write_csv(&mut out, &schema, &batches, &d, &AtomicBool::new(false)).unwrap();
            out
        })
    };
    let serial = write(1);
    let parallel = write(3);
    assert!(
        serial.len() > 4 << 20,
        "{} bytes: too few pieces",
        serial.len()
    );
    assert!(serial == parallel, "1 and 3 threads wrote different bytes");
    // and the first error is the same whatever the thread count
    let (schema, batches) = long_table(300_000, 250_000, "a\nb");
    let bare = dialect(b',', None, None, false, "\\N");
    let first_error = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            write_csv(
                Vec::new(),
                &schema,
                &batches,
                &bare,
                &AtomicBool::new(false),
            )
        })
        .unwrap_err()
        .to_string()
    };
    assert_eq!(first_error(1), first_error(3));
}

/// Rough formatting throughput on lineitem-like data (run with `--ignored --release`).
#[test]
#[ignore]
fn lineitem_like_throughput() {
    let schema_text = "l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, l_linenumber INT, \
        l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), \
        l_tax DECIMAL(15,2), l_returnflag CHAR(1), l_linestatus CHAR(1), l_shipdate DATE, \
        l_commitdate DATE, l_receiptdate DATE, l_shipinstruct CHAR(25), l_shipmode CHAR(10), \
        l_comment VARCHAR(44)";
    let schema = arrow_schema(schema_text);
    let rows = 1_000_000;
    let mut rng = StdRng::seed_from_u64(1);
    let words = [
        "furiously",
        "slyly",
        "carefully",
        "blithely",
        "quickly",
        "fluffily",
        "pending",
        "ironic",
        "regular",
        "final",
        "accounts",
        "deposits",
        "packages",
        "requests",
        "foxes",
    ];
    let comments = StringArray::from_iter_values((0..rows).map(|_| {
        let n = rng.random_range(2..6);
        (0..n)
            .map(|_| *words.choose(&mut rng).unwrap())
            .collect::<Vec<_>>()
            .join(" ")
    }));
    let int64 = |rng: &mut StdRng, hi: i64| {
        Arc::new(Int64Array::from_iter_values(
            (0..rows).map(|_| rng.random_range(1..hi)),
        )) as ArrayRef
    };
    let dec = |rng: &mut StdRng, hi: i128| {
        Arc::new(
            Decimal128Array::from_iter_values((0..rows).map(|_| rng.random_range(0..hi)))
                .with_precision_and_scale(15, 2)
                .unwrap(),
        ) as ArrayRef
    };
    let date = |rng: &mut StdRng| {
        Arc::new(Date32Array::from_iter_values(
            (0..rows).map(|_| rng.random_range(8000..10600)),
        )) as ArrayRef
    };
    let pick = |rng: &mut StdRng, options: &[&str]| {
        Arc::new(StringArray::from_iter_values(
            (0..rows).map(|_| *options.choose(rng).unwrap()),
        )) as ArrayRef
    };
    let columns: Vec<ArrayRef> = vec![
        int64(&mut rng, 6_000_000),
        int64(&mut rng, 200_000),
        int64(&mut rng, 10_000),
        Arc::new(Int32Array::from_iter_values(
            (0..rows).map(|i| (i % 7) as i32 + 1),
        )),
        dec(&mut rng, 5_000),
        dec(&mut rng, 10_000_000),
        dec(&mut rng, 11),
        dec(&mut rng, 9),
        pick(&mut rng, &["A", "N", "R"]),
        pick(&mut rng, &["O", "F"]),
        date(&mut rng),
        date(&mut rng),
        date(&mut rng),
        pick(
            &mut rng,
            &[
                "DELIVER IN PERSON",
                "COLLECT COD",
                "NONE",
                "TAKE BACK RETURN",
            ],
        ),
        pick(
            &mut rng,
            &["AIR", "MAIL", "SHIP", "TRUCK", "RAIL", "REG AIR", "FOB"],
        ),
        Arc::new(comments),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let batches: Vec<RecordBatch> = (0..rows)
        .step_by(122_880)
        .map(|s| batch.slice(s, 122_880.min(rows - s)))
        .collect();
    let d = dialect(b'|', Some(b'"'), Some(b'"'), false, "");
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut best = f64::MAX;
        let mut bytes = 0;
        for _ in 0..5 {
            let mut sink = std::io::sink();
            let report = pool
                .install(|| write_csv(&mut sink, &schema, &batches, &d, &AtomicBool::new(false)))
                .unwrap();
            best = best.min(report.elapsed.as_secs_f64());
            bytes = report.bytes;
        }
        eprintln!(
            "{threads} thread(s): {rows} rows, {:.1} MB in {:.3} s: {:.0} MB/s",
            bytes as f64 / 1e6,
            best,
            bytes as f64 / 1e6 / best
        );
    }
}

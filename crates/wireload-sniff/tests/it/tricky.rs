//! Deliberately tricky inputs with the exact dialect and types expected.
//!
//! Each case says what DuckDB 2.0.0 infers for the same bytes (from real runs of
//! `DESCRIBE SELECT * FROM read_csv('f.csv')` and `sniff_csv('f.csv')`, with the bench
//! venv's duckdb) and why we differ where we do. DuckDB numbers generated columns from 0
//! (`column0`, and `a_1` for a repeated name); we follow the loader's
//! `unique_column_names` (`column1`, `a_2`), which is what the CLI and `read_csv` name
//! them. DuckDB reports quote `(empty)` for a file without quotes; we keep `"`, the COPY
//! default, which reads such a file the same.
//!
//! Every case also loads its whole input with the inferred dialect and types through
//! `wireload_csv`'s scanner and `wireload_types`' column builders: the inferred schema is
//! one the loader accepts.

use wireload_csv::{FieldBatch, ScanConfig, ScanMode, Scanner};
use wireload_sniff::{LineEnding, SniffError, SniffOptions, Sniffed, sniff};
use wireload_types::{ColumnBuilder, Field, SqlType};

use SqlType::{BigInt, Boolean, Date, Double, Text, Timestamp};

/// The date and timestamp formats as text.
fn format_of(s: &Sniffed) -> (Option<String>, Option<String>) {
    (
        s.formats.date.map(|f| f.to_string()),
        s.formats.timestamp.map(|f| f.to_string()),
    )
}

/// Sniffs with default options.
fn sniffed(data: &[u8]) -> Sniffed {
    sniff(data, &SniffOptions::default()).unwrap()
}

/// The columns as (name, type).
fn columns(s: &Sniffed) -> Vec<(String, SqlType)> {
    s.columns.iter().map(|c| (c.name.clone(), c.ty)).collect()
}

/// Asserts the dialect (delimiter, quote, escape, header) and columns of `data`, and that
/// all of it loads with them.
#[track_caller]
fn check(
    data: &[u8],
    dialect: (u8, Option<u8>, Option<u8>, bool),
    expected: &[(&str, SqlType)],
) -> Sniffed {
    let s = sniffed(data);
    let d = &s.dialect;
    assert_eq!(
        (d.delimiter, d.quote, d.escape, d.header),
        dialect,
        "dialect of {}",
        String::from_utf8_lossy(data)
    );
    let expected: Vec<(String, SqlType)> =
        expected.iter().map(|(n, t)| (n.to_string(), *t)).collect();
    assert_eq!(columns(&s), expected, "{}", String::from_utf8_lossy(data));
    assert!(s.columns.iter().all(|c| c.nullable));
    load_all(data, &s);
    s
}

/// Loads every record of `data` with the sniffed dialect into builders of the sniffed
/// types, as the loader does (BOM and header skipped); panics on any error.
#[track_caller]
fn load_all(data: &[u8], s: &Sniffed) -> usize {
    let cfg = ScanConfig::new(&s.dialect, ScanMode::Safe).unwrap();
    let mut start = wireload_csv::skip_bom(data);
    if s.dialect.header {
        start = match wireload_csv::reference::first_record(&cfg, data, start).unwrap() {
            Some((_, next)) => next,
            None => data.len(),
        };
    }
    let ncols = s.columns.len();
    let mut scanner = Scanner::new(&cfg, data, start, data.len(), ncols);
    let mut batch = FieldBatch::new(ncols);
    let mut rows = 0;
    loop {
        let more = scanner.next_batch(&mut batch, 1024).unwrap();
        for (c, col) in s.columns.iter().enumerate() {
            let mut b = ColumnBuilder::new(&col.ty, true, batch.rows(), 0).with_formats(&s.formats);
            let fields = batch
                .column(data, c)
                .map(|(bytes, quoted)| Field { bytes, quoted });
            if let Err(e) = b.append_fields(fields, &s.dialect.null) {
                panic!("column {} ({}): {e:?}", col.name, col.ty);
            }
        }
        rows += batch.rows();
        if !more {
            return rows;
        }
    }
}

const DQ: Option<u8> = Some(b'"');

// ---------------------------------------------------------------------------------------
// Values deep in the file
// ---------------------------------------------------------------------------------------

/// 200 000 rows of integers, then `n/a` ten rows before the end.
fn ints_then_na(rows: usize) -> Vec<u8> {
    let mut data = b"id,v\n".to_vec();
    for i in 0..rows {
        if i == rows - 10 {
            data.extend_from_slice(format!("{i},n/a\n").as_bytes());
        } else {
            data.extend_from_slice(format!("{i},{}\n", i * 7 % 1000).as_bytes());
        }
    }
    data
}

#[test]
fn text_after_many_integers_is_seen_because_the_end_is_sampled() {
    // DuckDB, on these bytes (200 000 rows, and 1 500 000 rows, 16.7 MB): id BIGINT,
    // v BIGINT; reading the file then fails: "Could not convert string "n/a" to
    // 'BIGINT'" (CSV Error on Line: 199992, and 1499992). DuckDB samples 20 480 rows
    // from the start; we sample the end too. DuckDB is wrong here.
    let data = ints_then_na(200_000);
    let opts = SniffOptions {
        sample_bytes: Some(256 << 10),
        ..SniffOptions::default()
    };
    let s = sniff(&data, &opts).unwrap();
    assert_eq!(columns(&s), [("id".into(), BigInt), ("v".into(), Text)]);
    // 256 KiB of rows of at least 4 bytes: a small part of the file was read
    assert!(s.rows_sampled < 256 << 8, "{}", s.rows_sampled);
    assert!(s.rows_sampled > 10_000, "{}", s.rows_sampled);
    load_all(&data, &s);

    // larger than the default sample: windows spread over 16.7 MB
    let data = ints_then_na(1_500_000);
    let s = sniffed(&data);
    assert_eq!(columns(&s), [("id".into(), BigInt), ("v".into(), Text)]);
    assert!(s.rows_sampled < 8 << 20 >> 3, "{}", s.rows_sampled);
}

#[test]
fn decimals_in_the_middle_make_a_double() {
    // x: integers, except rows 250 000 to 349 999 of 600 000 (`i.25`).
    // DuckDB: x BIGINT, and reading it silently rounds 250000.25 to 250000.
    let mut data = b"x\n".to_vec();
    for i in 0..600_000 {
        let row = if (250_000..350_000).contains(&i) {
            format!("{i}.25\n")
        } else {
            format!("{i}\n")
        };
        data.extend_from_slice(row.as_bytes());
    }
    let opts = SniffOptions {
        sample_bytes: Some(512 << 10),
        ..SniffOptions::default()
    };
    let s = sniff(&data, &opts).unwrap();
    assert_eq!(columns(&s), [("x".into(), Double)]);
    load_all(&data, &s);
}

#[test]
fn a_decimal_column_whose_first_thousand_values_are_integers() {
    // DuckDB: x DOUBLE.
    let mut data = b"x\n".to_vec();
    for i in 0..1000 {
        data.extend_from_slice(format!("{i}\n").as_bytes());
    }
    for i in 0..100 {
        data.extend_from_slice(format!("{i}.5\n").as_bytes());
    }
    check(&data, (b',', DQ, DQ, true), &[("x", Double)]);
}

#[test]
fn windows_that_start_inside_quoted_newlines_resynchronise() {
    // Every record has a quoted field with newlines and delimiters, so most windows start
    // inside one; a window read from a wrong start would break or miscount fields.
    // DuckDB: quote '"', escape '"'; id BIGINT, note VARCHAR, price DOUBLE.
    let mut data = b"id,note,price\n".to_vec();
    for i in 0..100_000 {
        let row = format!("{i},\"line one, {i}\nline \"\"two\"\"\n\",{}.5\n", i % 97);
        data.extend_from_slice(row.as_bytes());
    }
    let opts = SniffOptions {
        sample_bytes: Some(200 << 10),
        ..SniffOptions::default()
    };
    let s = sniff(&data, &opts).unwrap();
    assert_eq!(
        (s.dialect.delimiter, s.dialect.quote, s.dialect.escape),
        (b',', DQ, DQ)
    );
    assert_eq!(
        columns(&s),
        [
            ("id".into(), BigInt),
            ("note".into(), Text),
            ("price".into(), Double)
        ]
    );
    assert!(s.rows_sampled > 1000, "{}", s.rows_sampled);
    assert_eq!(load_all(&data, &s), 100_000);
}

// ---------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------

#[test]
fn dates_and_timestamps() {
    // DuckDB: d DATE, ts TIMESTAMP, tsT TIMESTAMP, tsfrac TIMESTAMP.
    check(
        b"d,ts,tsT,tsfrac\n\
          2024-01-05,2024-01-05 10:00:00,2024-01-05T10:00:00,2024-01-05 10:00:00.123456\n\
          1999-12-31,1999-12-31 23:59:59,1999-12-31T23:59:59,1999-12-31 23:59:59.5\n",
        (b',', DQ, DQ, true),
        &[
            ("d", Date),
            ("ts", Timestamp),
            ("tsT", Timestamp),
            ("tsfrac", Timestamp),
        ],
    );
}

#[test]
fn dates_beside_timestamps_widen_to_timestamp() {
    // DuckDB: a VARCHAR. The TIMESTAMP deserializer reads a date alone as midnight, so
    // TIMESTAMP holds both: more specific than DuckDB and still loadable.
    check(
        b"a\n2024-01-01\n2024-01-02 10:00:00\n",
        (b',', DQ, DQ, true),
        &[("a", Timestamp)],
    );
}

#[test]
fn dates_in_other_formats_get_a_format() {
    // DuckDB: a DATE, dateformat %d/%m/%Y. Both orders read `05/01/2024`; day first on a
    // tie, as DuckDB picks.
    let s = check(
        b"a\n05/01/2024\n06/01/2024\n",
        (b',', DQ, DQ, true),
        &[("a", Date)],
    );
    assert_eq!(format_of(&s), (Some("%d/%m/%Y".into()), None));
    // a day above 12 near the end settles it: month first (DuckDB reads only the start
    // and guesses %d/%m/%Y, then fails on 01/13/2024; see also
    // `numbers_that_turn_into_text_late`)
    let mut data = b"a\n".to_vec();
    for _ in 0..200_000 {
        data.extend_from_slice(b"01/02/2024\n");
    }
    data.extend_from_slice(b"01/13/2024\n");
    let s = check(&data, (b',', DQ, DQ, true), &[("a", Date)]);
    assert_eq!(format_of(&s), (Some("%m/%d/%Y".into()), None));
    // DuckDB: a VARCHAR, b TIMESTAMP (its TIMESTAMP reads `2024/02/01`) and the same
    // dateformat. Ours: one date format per input, so b gets the timestamp format that
    // reads dates alone as midnight: the same types.
    let s = check(
        b"a,b\n01/02/2024,2024/02/01\n",
        (b',', DQ, DQ, true),
        &[("a", Date), ("b", Timestamp)],
    );
    assert_eq!(
        format_of(&s),
        (Some("%d/%m/%Y".into()), Some("%Y/%m/%d %H:%M:%S".into()))
    );
}

#[test]
fn dates_with_month_names_and_12_hour_times() {
    // DuckDB: both VARCHAR (its sniffer tries neither month names nor AM/PM). Ours reads
    // both, which is more specific.
    let s = check(
        b"a,b\n1/5/2024 3:30 PM,08-Jan-1999\n12/25/2023 11:00 AM,09-Feb-2000\n",
        (b',', DQ, DQ, true),
        &[("a", Timestamp), ("b", Date)],
    );
    assert_eq!(
        format_of(&s),
        (Some("%d-%b-%Y".into()), Some("%m/%d/%Y %I:%M %p".into()))
    );
    // DuckDB: a VARCHAR.
    let s = check(
        b"a\n01.02.2024 10:00\n",
        (b',', DQ, DQ, true),
        &[("a", Timestamp)],
    );
    assert_eq!(format_of(&s), (None, Some("%d.%m.%Y %H:%M".into())));
}

#[test]
fn dates_that_no_format_reads_stay_text() {
    // DuckDB: a VARCHAR, b VARCHAR, c DATE (%m/%d/%Y, the year 999). Day 32, and two
    // orders in one column, fit no format. Inference wants four-digit years (a DATEFORMAT
    // given reads 1 to 4 digits): DuckDB's rule also makes version numbers dates, below.
    let s = check(
        b"a,b,c\n32/01/2024,01/13/2024,1/1/999\n01/01/2024,13/01/2024,1/2/999\n",
        (b',', DQ, DQ, true),
        &[("a", Text), ("b", Text), ("c", Text)],
    );
    assert_eq!(format_of(&s), (None, None));
    // DuckDB: v DATE (1.2.10 is February 1 of the year 10). Ours: version numbers stay
    // text.
    check(
        b"v\n1.2.10\n3.11.24\n",
        (b',', DQ, DQ, true),
        &[("v", Text)],
    );
    // two-digit years: 2024, not the year 24 (DuckDB: a DATE, %d/%m/%y, the same values)
    let s = check(b"a\n1/5/24\n2/6/99\n", (b',', DQ, DQ, true), &[("a", Date)]);
    assert_eq!(format_of(&s), (Some("%d/%m/%y".into()), None));
}

#[test]
fn timestamps_with_a_zone_stay_text() {
    // DuckDB: a TIMESTAMP WITH TIME ZONE. We have no TIMESTAMPTZ; TIMESTAMP would drop
    // the offset, so the values are kept as TEXT.
    check(
        b"a\n2024-01-01 10:00:00+02\n2024-01-02 11:00:00Z\n",
        (b',', DQ, DQ, true),
        &[("a", Text)],
    );
}

#[test]
fn booleans_in_the_words_postgresql_reads() {
    // DuckDB: a BOOLEAN, b BOOLEAN, c BOOLEAN, d BIGINT, e BOOLEAN (1/0 are integers
    // to both of us).
    check(
        b"a,b,c,d,e\ntrue,t,yes,1,TRUE\nfalse,f,no,0,False\n",
        (b',', DQ, DQ, true),
        &[
            ("a", Boolean),
            ("b", Boolean),
            ("c", Boolean),
            ("d", BigInt),
            ("e", Boolean),
        ],
    );
}

#[test]
fn empty_and_null_only_columns_are_text() {
    // DuckDB: a BIGINT, b VARCHAR, c VARCHAR.
    check(
        b"a,b,c\n1,,\n2,,\n3,,\n",
        (b',', DQ, DQ, true),
        &[("a", BigInt), ("b", Text), ("c", Text)],
    );
    // with NULL 'NA' (DuckDB, nullstr='NA': a BIGINT, b VARCHAR)
    let data = b"a,b\n1,NA\n2,NA\n";
    let opts = SniffOptions {
        null: Some(b"NA".to_vec()),
        ..SniffOptions::default()
    };
    let s = sniff(data, &opts).unwrap();
    assert_eq!(columns(&s), [("a".into(), BigInt), ("b".into(), Text)]);
    assert_eq!(s.dialect.null, b"NA");
    assert_eq!(
        s.copy_sql("t", "/d/f.csv"),
        "COPY t FROM '/d/f.csv' WITH (FORMAT csv, HEADER true, DELIMITER ',', NULL 'NA')"
    );
    load_all(data, &s);
    // without it, NA is text (DuckDB: a BIGINT, b VARCHAR)
    check(data, (b',', DQ, DQ, true), &[("a", BigInt), ("b", Text)]);
}

#[test]
fn quoted_numbers_are_numbers() {
    // DuckDB: a BIGINT, b DOUBLE, quote '"'. The loader parses a quoted "42" as 42.
    check(
        b"a,b\n\"42\",\"1.5\"\n\"7\",\"2.5\"\n",
        (b',', DQ, DQ, true),
        &[("a", BigInt), ("b", Double)],
    );
}

#[test]
fn leading_zero_codes_are_text() {
    // DuckDB: code VARCHAR, n BIGINT.
    check(
        b"code,n\n007,1\n00123,2\n042,3\n",
        (b',', DQ, DQ, true),
        &[("code", Text), ("n", BigInt)],
    );
}

#[test]
fn numbers_past_bigint_are_double() {
    // DuckDB: a HUGEINT. We have no 128-bit integer; DOUBLE holds the magnitude.
    check(
        b"a\n1\n99999999999999999999\n",
        (b',', DQ, DQ, true),
        &[("a", Double)],
    );
}

#[test]
fn special_floats_and_exponents_are_double() {
    // DuckDB: a DOUBLE (both files).
    check(
        b"a\n1.5\nNaN\ninf\n",
        (b',', DQ, DQ, true),
        &[("a", Double)],
    );
    check(b"a\n1e5\n2.5E-3\n", (b',', DQ, DQ, true), &[("a", Double)]);
}

#[test]
fn spaces_around_numbers() {
    // DuckDB: a BIGINT, b VARCHAR. PostgreSQL's int8in skips the spaces too.
    check(
        b"a,b\n 1 , x\n 2 , y\n",
        (b',', DQ, DQ, true),
        &[("a", BigInt), ("b", Text)],
    );
}

// ---------------------------------------------------------------------------------------
// Headers
// ---------------------------------------------------------------------------------------

#[test]
fn an_all_numeric_first_row_is_data() {
    // DuckDB: no header; column0..2 BIGINT.
    let s = check(
        b"1,2,3\n4,5,6\n7,8,9\n",
        (b',', DQ, DQ, false),
        &[
            ("column1", BigInt),
            ("column2", BigInt),
            ("column3", BigInt),
        ],
    );
    assert_eq!(s.rows_sampled, 3);
}

#[test]
fn no_header_over_mixed_columns() {
    // DuckDB: no header; column0 VARCHAR, column1 BIGINT.
    check(
        b"bob,1\nalice,2\ncarl,3\n",
        (b',', DQ, DQ, false),
        &[("column1", Text), ("column2", BigInt)],
    );
}

#[test]
fn text_over_text_is_taken_as_a_header() {
    // DuckDB: header; columns "bob", "paris" VARCHAR. Nothing tells the two apart; both
    // of us take unique, untyped names for a header.
    check(
        b"bob,paris\nalice,rome\ncarl,oslo\n",
        (b',', DQ, DQ, true),
        &[("bob", Text), ("paris", Text)],
    );
    // DuckDB: header; name VARCHAR, city VARCHAR.
    check(
        b"name,city\nbob,paris\nalice,rome\n",
        (b',', DQ, DQ, true),
        &[("name", Text), ("city", Text)],
    );
}

#[test]
fn a_header_whose_names_fit_the_types_is_data() {
    // DuckDB: no header; column0 VARCHAR, column1 BIGINT ("2023" fits BIGINT).
    check(
        b"name,2023\nbob,5\nalice,6\n",
        (b',', DQ, DQ, false),
        &[("column1", Text), ("column2", BigInt)],
    );
}

#[test]
fn r_style_blank_first_name() {
    // DuckDB: column0 BIGINT, x DOUBLE, y VARCHAR.
    check(
        b",x,y\n1,2.5,a\n2,3.5,b\n",
        (b',', DQ, DQ, true),
        &[("column1", BigInt), ("x", Double), ("y", Text)],
    );
}

#[test]
fn repeated_and_blank_names_are_made_unique() {
    // DuckDB: a, a_1, column2, b, all BIGINT.
    check(
        b"a,a,,b\n1,2,3,4\n",
        (b',', DQ, DQ, true),
        &[
            ("a", BigInt),
            ("a_2", BigInt),
            ("column3", BigInt),
            ("b", BigInt),
        ],
    );
}

#[test]
fn header_spelling_is_kept_and_trimmed() {
    // DuckDB: Person VARCHAR, Age BIGINT, order BIGINT.
    let s = check(
        b" Person , Age ,order\nbob,42,1\n",
        (b',', DQ, DQ, true),
        &[("Person", Text), ("Age", BigInt), ("order", BigInt)],
    );
    assert_eq!(
        s.create_table_sql("People"),
        "CREATE TABLE \"People\" (\"Person\" TEXT, \"Age\" BIGINT, \"order\" BIGINT)"
    );
}

#[test]
fn only_a_header() {
    // DuckDB: header; a, b, c VARCHAR.
    let s = check(
        b"a,b,c\n",
        (b',', DQ, DQ, true),
        &[("a", Text), ("b", Text), ("c", Text)],
    );
    assert_eq!(s.rows_sampled, 0);
}

#[test]
fn the_header_option_overrides_detection() {
    let data = b"id,n\n1,2\n";
    let opts = SniffOptions {
        header: Some(false),
        ..SniffOptions::default()
    };
    let s = sniff(data, &opts).unwrap();
    assert!(!s.dialect.header);
    assert_eq!(
        columns(&s),
        [("column1".into(), Text), ("column2".into(), Text)]
    );
    assert_eq!(s.rows_sampled, 2);
}

// ---------------------------------------------------------------------------------------
// Dialects
// ---------------------------------------------------------------------------------------

#[test]
fn pipe_semicolon_and_tab() {
    // DuckDB: '|'; a BIGINT, b VARCHAR, c DOUBLE.
    let s = check(
        b"a|b|c\n1|x, y|2.5\n2|z|3.5\n",
        (b'|', DQ, DQ, true),
        &[("a", BigInt), ("b", Text), ("c", Double)],
    );
    assert_eq!(
        s.copy_sql("t", "f.csv"),
        "COPY t FROM 'f.csv' WITH (FORMAT csv, HEADER true, DELIMITER '|')"
    );
    // DuckDB: ';'; a BIGINT, b VARCHAR (decimal comma), c VARCHAR.
    check(
        b"a;b;c\n1;1,5;x\n2;2,5;y\n",
        (b';', DQ, DQ, true),
        &[("a", BigInt), ("b", Text), ("c", Text)],
    );
    // DuckDB: '\t'; a BIGINT, b VARCHAR.
    let s = check(
        b"a\tb\n1\tx y\n2\tz\n",
        (b'\t', DQ, DQ, true),
        &[("a", BigInt), ("b", Text)],
    );
    assert_eq!(
        s.copy_sql("t", "f.tsv"),
        "COPY t FROM 'f.tsv' WITH (FORMAT csv, HEADER true, DELIMITER E'\\t')"
    );
}

#[test]
fn line_endings_and_bom() {
    // DuckDB: new line '\r\n'; a BIGINT, b VARCHAR.
    let s = check(
        b"a,b\r\n1,x\r\n2,y\r\n",
        (b',', DQ, DQ, true),
        &[("a", BigInt), ("b", Text)],
    );
    assert_eq!((s.line_ending, s.bom), (LineEnding::CrLf, false));
    // DuckDB: new line '\r'.
    let s = check(
        b"a,b\r1,x\r2,y\r",
        (b',', DQ, DQ, true),
        &[("a", BigInt), ("b", Text)],
    );
    assert_eq!(s.line_ending, LineEnding::Cr);
    // DuckDB: a BIGINT, b VARCHAR (BOM skipped).
    let s = check(
        b"\xEF\xBB\xBFa,b\n1,x\n2,y\n",
        (b',', DQ, DQ, true),
        &[("a", BigInt), ("b", Text)],
    );
    assert_eq!((s.line_ending, s.bom), (LineEnding::Lf, true));
    // no record delimiter at all (DuckDB: a VARCHAR, b VARCHAR)
    let s = check(b"a,b", (b',', DQ, DQ, true), &[("a", Text), ("b", Text)]);
    assert_eq!(s.line_ending, LineEnding::None);
}

#[test]
fn quoted_fields_with_delimiters_newlines_and_doubled_quotes() {
    // DuckDB: quote '"', escape '"'; id BIGINT, text VARCHAR.
    check(
        b"id,text\n1,\"a, b\"\n2,\"line1\nline2\"\n3,\"say \"\"hi\"\"\"\n",
        (b',', DQ, DQ, true),
        &[("id", BigInt), ("text", Text)],
    );
    // DuckDB: quote '"'; a BIGINT, b VARCHAR, c VARCHAR.
    let mut data = b"a,b,c\n".to_vec();
    for i in 0..50 {
        data.extend_from_slice(format!("{i},\"x\ny\",z\n").as_bytes());
    }
    check(
        &data,
        (b',', DQ, DQ, true),
        &[("a", BigInt), ("b", Text), ("c", Text)],
    );
}

#[test]
fn single_quotes_and_backslash_escapes() {
    // DuckDB: quote "'", escape (empty); a BIGINT, b VARCHAR. Our escape is the doubled
    // quote, which reads this file the same (it has no quote inside a field).
    let s = check(
        b"a,b\n1,'x, y'\n2,'z'\n",
        (b',', Some(b'\''), Some(b'\''), true),
        &[("a", BigInt), ("b", Text)],
    );
    assert_eq!(
        s.copy_sql("t", "f"),
        "COPY t FROM 'f' WITH (FORMAT csv, HEADER true, DELIMITER ',', QUOTE '''')"
    );
    // DuckDB: quote '"', escape '\'; a BIGINT, b VARCHAR.
    let s = check(
        b"a,b\n1,\"x \\\" y\"\n2,\"z\"\n",
        (b',', DQ, Some(b'\\'), true),
        &[("a", BigInt), ("b", Text)],
    );
    assert_eq!(
        s.copy_sql("t", "f"),
        "COPY t FROM 'f' WITH (FORMAT csv, HEADER true, DELIMITER ',', ESCAPE '\\')"
    );
}

#[test]
fn single_column_files() {
    // DuckDB: name VARCHAR; n BIGINT.
    check(
        b"name\nbob\nalice\ncarl\n",
        (b',', DQ, DQ, true),
        &[("name", Text)],
    );
    check(b"n\n1\n2\n3\n", (b',', DQ, DQ, true), &[("n", BigInt)]);
    // DuckDB: ','; header; "Smith" VARCHAR, "John" VARCHAR: it splits the names and
    // takes the first for a header. One column whose values hold commas gets the first
    // delimiter it does not contain.
    check(
        b"name\nSmith, John\nDoe, Jane\nRoe, Rick\n",
        (b'|', DQ, DQ, true),
        &[("name", Text)],
    );
}

#[test]
fn a_bad_row_does_not_change_the_delimiter() {
    // 100 rows of 3 fields and one of 2. DuckDB: '|', one column "a,b,c" VARCHAR (no
    // dialect read every row). We keep the comma: the load then reports the bad row
    // (line 102) instead of loading one useless column.
    let mut data = b"a,b,c\n".to_vec();
    for i in 0..100 {
        data.extend_from_slice(format!("{i},x,{i}.5\n").as_bytes());
    }
    data.extend_from_slice(b"7,8\n");
    let s = sniffed(&data);
    assert_eq!((s.dialect.delimiter, s.dialect.header), (b',', true));
    assert_eq!(
        columns(&s),
        [
            ("a".into(), BigInt),
            ("b".into(), Text),
            ("c".into(), Double)
        ]
    );
    assert_eq!(s.rows_sampled, 100);
}

#[test]
fn a_trailing_delimiter_is_no_column() {
    // DuckDB: a BIGINT, b VARCHAR, column2 VARCHAR (always NULL). The loader reads a
    // trailing delimiter as no field, so we infer the two real columns.
    check(
        b"a,b,\n1,x,\n2,y,\n",
        (b',', DQ, DQ, true),
        &[("a", BigInt), ("b", Text)],
    );
}

#[test]
fn an_empty_input_has_one_text_column() {
    // DuckDB: column0 VARCHAR, no header (for "\n\n" it reports a header, still
    // with column0 VARCHAR).
    for data in [&b""[..], b"\xEF\xBB\xBF", b"\n\n"] {
        let s = sniffed(data);
        assert_eq!(columns(&s), [("column1".into(), Text)]);
        assert!(!s.dialect.header);
        assert_eq!(s.rows_sampled, 0);
        assert_eq!(s.line_ending, LineEnding::None);
    }
}

#[test]
fn fixed_options_are_kept() {
    let data = b"a;b\n1;2\n";
    let opts = SniffOptions {
        delimiter: Some(b','),
        quote: Some(None),
        ..SniffOptions::default()
    };
    let s = sniff(data, &opts).unwrap();
    assert_eq!(
        (s.dialect.delimiter, s.dialect.quote, s.dialect.escape),
        (b',', None, None)
    );
    assert_eq!(columns(&s), [("a;b".into(), Text)]);
    assert_eq!(
        s.copy_sql("t", "f"),
        "COPY t FROM 'f' WITH (FORMAT csv, HEADER true, DELIMITER ',', QUOTE '')"
    );
}

#[test]
fn a_truncated_stream_drops_its_cut_record() {
    let data = b"a,b\n1,2\n3,4.5";
    let opts = SniffOptions {
        truncated: true,
        ..SniffOptions::default()
    };
    let s = sniff(data, &opts).unwrap();
    assert_eq!(columns(&s), [("a".into(), BigInt), ("b".into(), BigInt)]);
    assert_eq!(s.rows_sampled, 1);
    let s = sniffed(data);
    assert_eq!(columns(&s), [("a".into(), BigInt), ("b".into(), Double)]);
}

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

#[test]
fn invalid_utf8_is_reported_with_its_offset() {
    // DuckDB: "Invalid Input Error: CSV Error on Line: 3".
    let data = b"a,b\n1,ok\n2,caf\xE9\n";
    let err = sniff(data, &SniffOptions::default()).unwrap_err();
    assert_eq!(
        err,
        SniffError::InvalidUtf8 {
            offset: 14,
            line: 3
        }
    );
    assert_eq!(
        err.to_string(),
        "invalid byte sequence for encoding UTF8 at byte 14 (line 3): the input must be UTF-8"
    );
}

#[test]
fn a_fixed_quote_that_breaks_the_records_still_gives_a_dialect() {
    let data = b"a,b\n1,x\"y\n";
    let opts = SniffOptions {
        quote: Some(Some(b'"')),
        ..SniffOptions::default()
    };
    // DuckDB (quote='"'): reads `x"y` as a value. Ours: the dialect is still given (the
    // sniffer does not fail), and the load reports the break with its line (see
    // wireload-sql's `a_loosely_quoted_file_loads_up_to_its_error`).
    let s = sniff(data, &opts).unwrap();
    assert_eq!((s.dialect.delimiter, s.dialect.quote), (b',', Some(b'"')));
    assert!(s.dialect.header);
    assert_eq!(columns(&s), [("a".into(), Text), ("b".into(), Text)]);
    // left to detection, the quote is disabled instead (DuckDB: quote (empty);
    // a BIGINT, b VARCHAR)
    let s = sniffed(data);
    assert_eq!(s.dialect.quote, None);
    assert_eq!(columns(&s), [("a".into(), BigInt), ("b".into(), Text)]);
}

#[test]
fn a_wide_file() {
    // 3000 columns alternating BIGINT and TEXT, 100 rows: batches are cut by field count
    let ncols = 3000;
    let header: Vec<String> = (0..ncols).map(|c| format!("c{c}")).collect();
    let mut data = format!("{}\n", header.join(",")).into_bytes();
    for r in 0..100 {
        let row: Vec<String> = (0..ncols)
            .map(|c| {
                if c % 2 == 0 {
                    format!("{r}")
                } else {
                    format!("t{r}")
                }
            })
            .collect();
        data.extend_from_slice(format!("{}\n", row.join(",")).as_bytes());
    }
    let s = sniffed(&data);
    assert_eq!(s.columns.len(), ncols);
    assert!(s.dialect.header);
    assert_eq!(s.rows_sampled, 100);
    for (c, col) in s.columns.iter().enumerate() {
        assert_eq!(col.name, format!("c{c}"));
        assert_eq!(col.ty, if c % 2 == 0 { BigInt } else { Text });
    }
    assert_eq!(load_all(&data, &s), 100);
}

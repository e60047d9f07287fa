//! Every error path names file, line, column and byte offset, and leaves the table unchanged.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use wireload_load::{Dialect, LoadControl, LoadError, LoadOptions, ScanMode, Source, load_into};
use wireload_storage::Partitioning;

fn opts(chunk: usize) -> LoadOptions {
    LoadOptions {
        chunk_size: Some(chunk),
        threads: Some(2),
        ..LoadOptions::default()
    }
}

fn good_then_bad(chunk: usize, bad: &[u8], schema: &str) -> (String, common::Rows, common::Rows) {
    let t = common::table(schema, Partitioning::Single);
    common::load(&t, b"1,one\n2,two\n", &opts(chunk)).unwrap();
    let before = common::rows(&t);
    let version = t.snapshot().number;
    let err = common::load(&t, bad, &opts(chunk)).unwrap_err();
    assert_eq!(
        t.snapshot().number,
        version,
        "a failed load must not publish"
    );
    (err.to_string(), before, common::rows(&t))
}

#[test]
fn bad_value_names_file_line_column_byte_and_text() {
    let mut bad = Vec::new();
    for i in 0..1000 {
        bad.extend_from_slice(format!("{i},r\n").as_bytes());
    }
    let offset = bad.len() + 2;
    bad.extend_from_slice(b"7,x\n8,hello!\nx9,y\n");
    for chunk in [16, 100, 1 << 20] {
        let (msg, before, after) = good_then_bad(chunk, &bad, "a INT, b VARCHAR(5)");
        assert_eq!(before, after);
        // line 1001 is "7,x", line 1002 "8,hello!": VARCHAR(5) too long
        assert!(msg.contains("input.csv"), "{msg}");
        assert!(msg.contains("line 1002"), "{msg}");
        assert!(msg.contains("column 2 (b)"), "{msg}");
        assert!(msg.contains(&format!("byte {}", offset + 4)), "{msg}");
        assert!(msg.contains("\"hello!\""), "{msg}");
        assert!(msg.contains("value too long"), "{msg}");
    }
}

#[test]
fn first_error_in_input_order_wins_whatever_the_chunking() {
    let mut data = Vec::new();
    for i in 0..2000 {
        if i == 700 || i == 1500 {
            data.extend_from_slice(b"oops,1\n");
        } else {
            data.extend_from_slice(format!("{i},1\n").as_bytes());
        }
    }
    for chunk in [7, 64, 1000, 5000, 1 << 20] {
        let t = common::table("a INT, b INT", Partitioning::Single);
        let err = common::load(&t, &data, &opts(chunk))
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 701"), "chunk {chunk}: {err}");
        assert!(
            err.contains("invalid input syntax for type integer"),
            "{err}"
        );
        assert_eq!(t.snapshot().num_rows(), 0);
    }
}

#[test]
fn value_error_before_a_structural_error_is_reported_first() {
    for chunk in [1, 5, 1 << 20] {
        let t = common::table("a INT, b VARCHAR", Partitioning::Single);
        let err = common::load(&t, b"1,a\n2x,b\n3,\"c\n", &opts(chunk))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2") && err.contains("\"2x\""),
            "chunk {chunk}: {err}"
        );
    }
}

#[test]
fn structural_errors_name_their_place() {
    let cases: [(&[u8], &str, &str); 5] = [
        (
            b"1,a\n2,b\"c\n",
            "line 2",
            "quote character inside an unquoted field",
        ),
        (b"1,a\n2,\"b\"c\n", "line 2", "text after the closing quote"),
        (b"1,a\n2,\"b\n3,c\n", "line 2", "never closed"),
        (
            b"1,a\n2\n",
            "line 2",
            "record has 1 fields, the table has 2 columns",
        ),
        (b"1,a\n2,b,c,d\n", "line 2", "record has 4 fields"),
    ];
    for (data, line, what) in cases {
        for chunk in [1, 3, 1 << 20] {
            let t = common::table("a INT, b VARCHAR", Partitioning::Single);
            let err = common::load(&t, data, &opts(chunk))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(line) && err.contains(what),
                "chunk {chunk}: {err}"
            );
            assert!(err.contains("input.csv") && err.contains("byte "), "{err}");
            assert_eq!(t.snapshot().num_rows(), 0);
        }
    }
}

#[test]
fn fast_mode_refuses_quoted_newlines_and_names_safe_mode() {
    let mut data = Vec::new();
    for i in 0..300 {
        data.extend_from_slice(format!("{i},\"multi\nline\"\n").as_bytes());
    }
    for chunk in [10, 100, 1 << 20] {
        let t = common::table("a INT, b VARCHAR", Partitioning::Single);
        let o = LoadOptions {
            mode: ScanMode::Fast,
            ..opts(chunk)
        };
        let err = common::load(&t, &data, &o).unwrap_err();
        assert!(
            matches!(err, LoadError::QuotedNewlineInFastMode { .. }),
            "{err}"
        );
        let msg = err.to_string();
        assert!(msg.contains("MODE safe") && msg.contains("line 1"), "{msg}");
        // safe mode loads it
        let o = LoadOptions {
            mode: ScanMode::Safe,
            ..opts(chunk)
        };
        assert_eq!(common::load(&t, &data, &o).unwrap().rows, 300);
    }
}

#[test]
fn header_bom_null_string_trailing_delimiter_and_empty_lines() {
    let t = common::table("a INT, b VARCHAR, c DATE", Partitioning::Single);
    let data = "\u{FEFF}a|b|c|\r\n1|\\N|2024-02-29|\r\n\r\n2|\"\\N\"|\\N|\r\n3||1999-12-31|";
    let o = LoadOptions {
        dialect: Dialect {
            delimiter: b'|',
            header: true,
            null: b"\\N".to_vec(),
            ..Dialect::default()
        },
        ..opts(4)
    };
    common::load(&t, data.as_bytes(), &o).unwrap();
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        common::rows(&t),
        vec![
            vec![s("1"), None, s("2024-02-29")],
            vec![s("2"), s("\\N"), None],
            vec![s("3"), s(""), s("1999-12-31")],
        ]
    );
}

#[test]
fn empty_input_with_header_and_header_only_are_empty() {
    let o = LoadOptions {
        dialect: Dialect {
            header: true,
            ..Dialect::default()
        },
        ..opts(1 << 20)
    };
    let t = common::table("a INT", Partitioning::Single);
    // as PostgreSQL and DuckDB: an empty file with a header expected loads zero rows
    assert_eq!(common::load(&t, b"", &o).unwrap().rows, 0);
    assert_eq!(common::load(&t, b"\xEF\xBB\xBF\n\n", &o).unwrap().rows, 0);
    assert_eq!(common::load(&t, b"a\n", &o).unwrap().rows, 0);
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    let t = common::table("a INT", Partitioning::Single);
    let src = Source::File("/nonexistent/wireload/x.csv".into());
    let err = load_into(&t, &src, &LoadOptions::default(), &LoadControl::default()).unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/wireload/x.csv"),
        "{err}"
    );
}

#[test]
fn cancelled_load_publishes_nothing() {
    let t = common::table("a INT", Partitioning::Single);
    let data: Vec<u8> = (0..100_000)
        .flat_map(|i| format!("{i}\n").into_bytes())
        .collect();
    let ctl = LoadControl::default();
    ctl.cancel.store(true, Ordering::Relaxed);
    let src = Source::Bytes {
        name: "x".into(),
        data: Arc::from(data),
    };
    let err = load_into(&t, &src, &opts(1000), &ctl).unwrap_err();
    assert!(matches!(err, LoadError::Cancelled), "{err}");
    assert_eq!(t.snapshot().number, 0);
}

#[test]
fn invalid_utf8_is_an_error_naming_the_field() {
    for chunk in [2, 1 << 20] {
        let t = common::table("a INT, b VARCHAR", Partitioning::Single);
        let err = common::load(&t, b"1,ok\n2,caf\xc3\n3,x\n", &opts(chunk))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2") && err.contains("column 2 (b)") && err.contains("UTF8"),
            "{err}"
        );
        // valid multi-byte text next to an invalid integer: the integer error is reported
        let err = common::load(&t, "1,日本\n2x,é\n".as_bytes(), &opts(chunk))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2") && err.contains("column 1 (a)"),
            "{err}"
        );
        assert_eq!(t.snapshot().num_rows(), 0);
    }
}

#[test]
fn non_ascii_delimiter_checks_each_field_on_its_own() {
    // 0xFE is never part of UTF-8: the input as a whole is not UTF-8, its fields are.
    let t = common::table("a INT, b VARCHAR", Partitioning::Single);
    let o = LoadOptions {
        dialect: Dialect {
            delimiter: 0xFE,
            ..Dialect::default()
        },
        ..opts(3)
    };
    let mut data = b"1\xFEcaf\xC3\xA9\n2\xFEok\n".to_vec();
    common::load(&t, &data, &o).unwrap();
    assert_eq!(common::rows(&t)[0][1].as_deref(), Some("café"));
    data.extend_from_slice(b"3\xFEbad\xC3\n");
    let err = common::load(&t, &data, &o).unwrap_err().to_string();
    assert!(err.contains("line 3") && err.contains("UTF8"), "{err}");
}

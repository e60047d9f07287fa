//! ON_ERROR ignore: every bad record (a bad value in any column, a wrong field count, a
//! stray quote, text after a closing quote, a bad record spanning lines) is skipped and
//! reported exactly (line, byte, column, text, the error ON_ERROR stop gives), every good
//! record loads once and in order, whatever the chunk size, thread count and input kind
//! (whole or streamed in tiny blocks); REJECT_LIMIT fails the load atomically.

use crate::common;

use std::io::Cursor;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wireload_load::{
    Dialect, KeySite, LoadControl, LoadError, LoadOptions, OnError, Reject, Source, load_into,
};
use wireload_storage::{Catalog, IndexDef, IndexKind, Partitioning, Table, TableDef};

const SCHEMA: &str = "id INT, name TEXT, amount DOUBLE, d DATE";
const NAMES: [&str; 4] = ["id", "name", "amount", "d"];

/// An input with the rows and rejects a load of it must give.
#[derive(Default)]
struct Case {
    data: Vec<u8>,
    good: common::Rows,
    rejects: Vec<Reject>,
    /// line of the next record
    line: u64,
    crlf: bool,
}

impl Case {
    fn new(crlf: bool) -> Self {
        Case {
            line: 1,
            crlf,
            ..Case::default()
        }
    }

    fn nl(&self) -> &'static [u8] {
        if self.crlf { b"\r\n" } else { b"\n" }
    }

    /// Appends record text `text` and its record delimiter (unless `last_bare`).
    fn push_text(&mut self, text: &str, delimiter: bool) -> (u64, u64) {
        let at = (self.line, self.data.len() as u64);
        self.data.extend_from_slice(text.as_bytes());
        if delimiter {
            let nl = self.nl();
            self.data.extend_from_slice(nl);
        }
        self.line += text.matches('\n').count() as u64 + u64::from(delimiter);
        at
    }

    /// A good record `i` whose name is written in one of several ways.
    fn good(&mut self, i: usize, delimiter: bool) {
        let (text, name) = match i % 5 {
            0 => (format!("n{i}"), Some(format!("n{i}"))),
            1 => (format!("\"a,{i}\""), Some(format!("a,{i}"))),
            2 => (format!("\"l1\nl2 {i}\""), Some(format!("l1\nl2 {i}"))),
            3 => (
                format!("\"say \"\"hi\"\" {i}\""),
                Some(format!("say \"hi\" {i}")),
            ),
            _ => (String::new(), None),
        };
        let record = format!("{i},{text},{i}.5,2024-01-{:02}", i % 28 + 1);
        self.push_text(&record, delimiter);
        self.good.push(vec![
            Some(i.to_string()),
            name,
            Some(format!("{i}.5")),
            Some(format!("2024-01-{:02}", i % 28 + 1)),
        ]);
    }

    /// A bad record `i` of kind `kind % 9`.
    fn bad(&mut self, i: usize, kind: usize, delimiter: bool) {
        let (text, column) = match kind % 9 {
            0 => (format!("x{i},n{i},1.5,2024-01-02"), Some(1)),
            1 => (format!("{i},n{i},abc,2024-01-02"), Some(3)),
            2 => (format!("{i},n{i},1.5,2024-13-01"), Some(4)),
            3 => (format!("{i},n{i},1.5"), None),
            4 => (format!("{i},n{i},1.5,2024-01-02,extra"), None),
            5 => (format!("{i},\"multi\nline {i}\",bad,2024-01-02"), Some(3)),
            6 => (format!("{i},n\"{i}\"x,1.5,2024-01-02"), Some(2)),
            7 => (format!("{i},\"q{i}\"x,1.5,2024-01-02"), Some(2)),
            _ => (format!("x{i},n,bad,2024-01-02"), Some(1)),
        };
        let (line, byte_offset) = self.push_text(&text, delimiter);
        self.rejects.push(Reject {
            file: "input.csv".into(),
            line,
            byte_offset,
            column,
            column_name: column.map(|c| NAMES[c - 1].to_string()),
            raw_line: text.clone(),
            error: stop_error(&text).detail(),
        });
    }
}

fn table(partitioning: Partitioning, keyed: bool) -> Arc<Table> {
    let mut def = TableDef::new(
        "t",
        wireload_types::sql::parse_columns(SCHEMA).unwrap(),
        partitioning,
    )
    .unwrap();
    if keyed {
        def = def
            .with_indexes(vec![IndexDef {
                name: "t_pkey".into(),
                columns: vec![0],
                unique: true,
                primary: true,
                kind: IndexKind::Art,
            }])
            .unwrap();
    }
    Catalog::default().create_table(def, false).unwrap()
}

/// The error ON_ERROR stop gives for the one record `text`.
fn stop_error(text: &str) -> LoadError {
    let t = table(Partitioning::Single, false);
    let e = common::load(&t, format!("{text}\n").as_bytes(), &LoadOptions::default()).unwrap_err();
    let pos = e.position().expect("a CSV error has a position");
    // the detail is the error's text after its position
    assert_eq!(e.to_string(), format!("{pos}: {}", e.detail()));
    e
}

fn ignore(chunk: usize, threads: usize) -> LoadOptions {
    LoadOptions {
        chunk_size: Some(chunk),
        threads: Some(threads),
        on_error: OnError::Ignore,
        ..LoadOptions::default()
    }
}

/// The input whole, and streamed in blocks of 7 and 64 bytes.
fn sources(data: &[u8]) -> Vec<(&'static str, Source)> {
    let stream = |block| Source::reader_in_blocks("input.csv", Cursor::new(data.to_vec()), block);
    vec![
        (
            "whole",
            Source::Bytes {
                name: "input.csv".into(),
                data: Arc::from(data.to_vec()),
            },
        ),
        ("blocks of 7", stream(7)),
        ("blocks of 64", stream(64)),
    ]
}

/// Loads `case` at every chunk size from 16 to 256 (threads 1 to 4 in turn), whole and
/// streamed, and checks rows and rejects exactly.
fn check(case: &Case, what: &str) {
    assert!(!case.rejects.is_empty() && !case.good.is_empty());
    for chunk in (16..=256).step_by(3) {
        let threads = 1 + chunk % 4;
        for (kind, source) in sources(&case.data) {
            let t = table(Partitioning::Single, false);
            let report = load_into(
                &t,
                &source,
                &ignore(chunk, threads),
                &LoadControl::default(),
            )
            .unwrap_or_else(|e| panic!("{what}, {kind}, chunk {chunk}: {e}"));
            let at = format!("{what}, {kind}, chunk {chunk}, threads {threads}");
            assert_eq!(common::rows(&t), case.good, "{at}");
            assert_eq!(report.rows, case.good.len() as u64, "{at}");
            assert_eq!(report.rejected, case.rejects.len() as u64, "{at}");
            assert_eq!(report.rejects, case.rejects, "{at}");
        }
    }
}

#[test]
fn bad_first_and_last_rows_with_and_without_final_newline() {
    for crlf in [false, true] {
        for final_newline in [true, false] {
            for kind in 0..9 {
                let mut case = Case::new(crlf);
                case.bad(0, kind, true);
                for i in 1..12 {
                    case.good(i, true);
                }
                case.bad(12, kind + 4, final_newline);
                check(
                    &case,
                    &format!("kind {kind}, crlf {crlf}, final newline {final_newline}"),
                );
            }
        }
    }
}

#[test]
fn bad_rows_anywhere_straddling_chunk_boundaries() {
    let mut rng = StdRng::seed_from_u64(11);
    for round in 0..4 {
        let mut case = Case::new(round == 3);
        let n = 60;
        for i in 0..n {
            if rng.random_bool(0.3) {
                case.bad(i, rng.random_range(0..9), true);
            } else {
                case.good(i, true);
            }
        }
        // a run of bad records, then the last record, with a final newline or not
        for i in n..n + 5 {
            case.bad(i, i, true);
        }
        case.good(n + 5, round % 2 == 0);
        check(&case, &format!("round {round}"));
    }
}

#[test]
fn one_known_reject_in_full() {
    let mut data = b"1,a,1.5,2024-01-02\n".to_vec();
    data.extend_from_slice(b"2,\"x\ny\",oops,2024-01-03\n3,b,2.5\n4,c,3.5,2024-01-04\n");
    let t = table(Partitioning::Single, false);
    let report = common::load(&t, &data, &ignore(16, 2)).unwrap();
    assert_eq!(report.rows, 2);
    assert_eq!(report.rejected, 2);
    assert_eq!(
        report.rejects[1],
        Reject {
            file: "input.csv".into(),
            line: 4,
            byte_offset: 43,
            column: None,
            column_name: None,
            raw_line: "3,b,2.5".into(),
            error:
                "record has 3 fields, the table has 4 columns; found \"3,b,2.5\", expected 4 fields"
                    .into(),
        }
    );
    assert_eq!(
        (
            report.rejects[0].line,
            report.rejects[0].byte_offset,
            report.rejects[0].column,
        ),
        (2, 19, Some(3))
    );
    assert_eq!(report.rejects[0].column_name.as_deref(), Some("amount"));
    assert_eq!(report.rejects[0].raw_line, "2,\"x\ny\",oops,2024-01-03");
    assert!(
        report.to_string().ends_with("; 2 rows rejected"),
        "{report}"
    );
    assert_eq!(
        report.rejects[0].to_string(),
        format!(
            "input.csv: line 2, column 3 (amount), byte 19: {}",
            report.rejects[0].error
        )
    );
}

#[test]
fn hash_partitioned_tables_get_every_good_row() {
    let mut case = Case::new(false);
    for i in 0..80 {
        if i % 7 == 3 {
            case.bad(i, i, true);
        } else {
            case.good(i, true);
        }
    }
    let mut want = case.good.clone();
    want.sort();
    for chunk in [16, 37, 100, 1 << 20] {
        for (kind, source) in sources(&case.data) {
            let t = table(
                Partitioning::Hash {
                    column: 0,
                    count: 3,
                },
                false,
            );
            let report =
                load_into(&t, &source, &ignore(chunk, 3), &LoadControl::default()).unwrap();
            let mut got = common::rows(&t);
            got.sort();
            assert_eq!(got, want, "{kind}, chunk {chunk}");
            assert_eq!(report.rejects, case.rejects, "{kind}, chunk {chunk}");
        }
    }
}

#[test]
fn unique_keys_name_rows_by_their_exact_line_after_rejects() {
    // good rows, bad ones among them, then a duplicate of key 2 in a chunk with rejects
    let mut case = Case::new(false);
    for i in 0..30 {
        if i % 4 == 1 {
            case.bad(100 + i, i, true);
        } else {
            case.good(i, true);
        }
    }
    case.bad(200, 1, true);
    let dup_line = case.line;
    let dup_byte = case.data.len() as u64;
    case.push_text("2,again,1.5,2024-01-01", true);
    case.bad(201, 3, true);
    for partitioning in [
        Partitioning::Single,
        Partitioning::Hash {
            column: 0,
            count: 2,
        },
    ] {
        for chunk in [16, 50, 1 << 20] {
            for (kind, source) in sources(&case.data) {
                let t = table(partitioning, true);
                let before = t.snapshot().number;
                let err =
                    load_into(&t, &source, &ignore(chunk, 2), &LoadControl::default()).unwrap_err();
                let LoadError::DuplicateKey { second, first, .. } = &err else {
                    panic!("{kind}, chunk {chunk}: {err}");
                };
                assert_eq!(
                    **second,
                    KeySite::Line {
                        file: "input.csv".into(),
                        line: dup_line,
                        byte: dup_byte
                    },
                    "{kind}, chunk {chunk}: {err}"
                );
                // key 2 is the third record, on lines 3 and 4 (a quoted two-line name)
                let KeySite::Line { line, .. } = **first else {
                    panic!("{err}")
                };
                assert_eq!(line, 3, "{kind}, chunk {chunk}: {err}");
                assert_eq!(t.snapshot().number, before);
            }
        }
    }
}

#[test]
fn reject_limit_reached_loads_exceeded_fails_and_stop_fails_atomically() {
    let mut case = Case::new(false);
    for i in 0..20 {
        if i % 6 == 2 {
            case.bad(i, i, true);
        } else {
            case.good(i, true);
        }
    }
    assert_eq!(case.rejects.len(), 3);
    for (kind, source) in sources(&case.data) {
        let t = table(Partitioning::Single, false);
        common::load(&t, b"1000,seed,1.5,2024-01-01\n", &LoadOptions::default()).unwrap();
        let seeded = common::rows(&t);
        let limited = |n| LoadOptions {
            reject_limit: Some(n),
            ..ignore(32, 2)
        };
        // exceeded: nothing published, the error names the count and the first reject
        let err = load_into(&t, &source, &limited(2), &LoadControl::default()).unwrap_err();
        match &err {
            LoadError::TooManyRejects {
                rejected,
                limit,
                first,
            } => {
                assert_eq!((*rejected, *limit), (3, 2));
                assert_eq!(**first, case.rejects[0]);
            }
            other => panic!("{kind}: {other}"),
        }
        let msg = err.to_string();
        assert!(
            msg.starts_with("3 records were rejected, more than the reject limit of 2"),
            "{msg}"
        );
        assert!(msg.contains("input.csv: line 3, column"), "{msg}");
        assert_eq!(common::rows(&t), seeded, "{kind}");
        // ON_ERROR stop: the first bad record fails the load, nothing published
        let stop = LoadOptions {
            chunk_size: Some(32),
            threads: Some(2),
            ..LoadOptions::default()
        };
        let source = sources(&case.data).remove(0).1;
        let err = load_into(&t, &source, &stop, &LoadControl::default()).unwrap_err();
        assert_eq!(err.position().unwrap().line, 3, "{err}");
        assert_eq!(common::rows(&t), seeded, "{kind}");
        // reached, not exceeded: loads
        let source = sources(&case.data).remove(0).1;
        let report = load_into(&t, &source, &limited(3), &LoadControl::default()).unwrap();
        assert_eq!(report.rejected, 3);
        let mut want = seeded.clone();
        want.extend(case.good.iter().cloned());
        assert_eq!(common::rows(&t), want, "{kind}");
    }
    // a limit needs ON_ERROR ignore
    let t = table(Partitioning::Single, false);
    let o = LoadOptions {
        reject_limit: Some(1),
        ..LoadOptions::default()
    };
    assert!(matches!(
        common::load(&t, b"1,a,1.5,2024-01-01\n", &o),
        Err(LoadError::Options(_))
    ));
}

#[test]
fn a_quote_never_closed_rejects_the_rest_of_the_input_as_one_record() {
    // the quote opened in record 3 runs to the end of the input (chunks and stream windows
    // place records by the same toggle model): one reject, from its first line on
    let data =
        b"1,a,1.5,2024-01-01\n2,b,2.5,2024-01-02\n3,\"open,3.5,2024-01-03\n4,d,4.5,2024-01-04\n";
    // a stray (odd) quote in an unquoted field opens a quoted region the same way
    let stray =
        b"1,a,1.5,2024-01-01\n2,b,2.5,2024-01-02\n3,c\"x,3.5,2024-01-03\n4,d,4.5,2024-01-04\n";
    for (input, column, error) in [
        (
            &data[..],
            Some(2),
            "quoted field is never closed; found \"\\\"open,3.5,2024-01-03\", expected a closing quote before the end of the input",
        ),
        (
            &stray[..],
            Some(2),
            "quote character inside an unquoted field; found \"\\\"x,3.5,2024-01-03\", expected no quote inside an unquoted field (quote the whole field and double inner quotes)",
        ),
    ] {
        for chunk in [16, 23, 64, 1 << 20] {
            for (kind, source) in sources(input) {
                let t = table(Partitioning::Single, false);
                let report =
                    load_into(&t, &source, &ignore(chunk, 2), &LoadControl::default()).unwrap();
                assert_eq!(report.rows, 2, "{kind}, chunk {chunk}");
                assert_eq!(
                    report.rejects,
                    vec![Reject {
                        file: "input.csv".into(),
                        line: 3,
                        byte_offset: 38,
                        column,
                        column_name: Some("name".into()),
                        raw_line: String::from_utf8_lossy(&input[38..input.len() - 1]).into(),
                        error: error.into(),
                    }],
                    "{kind}, chunk {chunk}"
                );
            }
        }
    }
}

#[test]
fn empty_input_with_header_loads_zero_rows() {
    let o = LoadOptions {
        dialect: Dialect {
            header: true,
            ..Dialect::default()
        },
        ..ignore(16, 2)
    };
    for input in [&b""[..], b"\xEF\xBB\xBF", b"\n\n"] {
        for (kind, source) in sources(input) {
            let t = table(Partitioning::Single, false);
            let report = load_into(&t, &source, &o, &LoadControl::default()).unwrap();
            assert_eq!((report.rows, report.rejected), (0, 0), "{kind}");
        }
    }
}

#[test]
fn on_error_parses_stop_and_ignore() {
    assert_eq!("STOP".parse::<OnError>(), Ok(OnError::Stop));
    assert_eq!("Ignore".parse::<OnError>(), Ok(OnError::Ignore));
    assert_eq!(
        "skip".parse::<OnError>(),
        Err("unknown ON_ERROR policy 'skip' (expected stop or ignore)".into())
    );
    assert_eq!(OnError::default(), OnError::Stop);
}

#[test]
fn escape_dialects_skip_bad_records_and_fast_mode_still_fails_on_quoted_newlines() {
    let escaped = LoadOptions {
        dialect: Dialect {
            escape: Some(b'\\'),
            ..Dialect::default()
        },
        ..ignore(16, 2)
    };
    let data = b"1,\"a\\\"b\",1.5,2024-01-01\n2,x,bad,2024-01-02\n3,\"c\\\\\",3.5,2024-01-03\n4,y\n5,z,5.5,2024-01-05\n";
    for chunk in [16, 20, 1 << 20] {
        for (kind, source) in sources(data) {
            let t = table(Partitioning::Single, false);
            let o = LoadOptions {
                chunk_size: Some(chunk),
                ..escaped.clone()
            };
            let report = load_into(&t, &source, &o, &LoadControl::default()).unwrap();
            let names: Vec<_> = common::rows(&t).into_iter().map(|r| r[1].clone()).collect();
            assert_eq!(
                names,
                [Some("a\"b".into()), Some("c\\".into()), Some("z".into())],
                "{kind}, chunk {chunk}"
            );
            let at: Vec<_> = report
                .rejects
                .iter()
                .map(|r| (r.line, r.byte_offset, r.column, r.raw_line.as_str()))
                .collect();
            assert_eq!(
                at,
                [(2, 24, Some(3), "2,x,bad,2024-01-02"), (4, 66, None, "4,y")],
                "{kind}, chunk {chunk}"
            );
        }
    }
    // MODE fast cannot go on past a quoted record delimiter: the load fails, as with stop
    let fast = LoadOptions {
        mode: wireload_load::ScanMode::Fast,
        ..ignore(1 << 20, 1)
    };
    let t = table(Partitioning::Single, false);
    let err = common::load(&t, b"1,\"a\nb\",1.5,2024-01-01\n", &fast).unwrap_err();
    assert!(
        matches!(err, LoadError::QuotedNewlineInFastMode { .. }),
        "{err}"
    );
    assert!(common::rows(&t).is_empty());
}

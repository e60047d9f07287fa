//! Load limits: a record longer than `max_line_bytes` fails the load naming its line (a
//! stream before it buffers more than the limit of it), one at the limit loads; a load
//! whose buffers exceed `memory_budget` fails and leaves the table as it was, one within
//! it loads.

use crate::common;

use std::io::Cursor;
use std::sync::Arc;

use wireload_load::{
    Dialect, LoadControl, LoadError, LoadOptions, MergeStrategy, ScanMode, Schedule, Source,
    default_memory_budget, load_files, load_into,
};
use wireload_storage::{Partitioning, Table};

fn table() -> Arc<Table> {
    common::table("id INT NOT NULL, s TEXT", Partitioning::Single)
}

fn opts(threads: usize, chunk: usize) -> LoadOptions {
    LoadOptions {
        dialect: Dialect {
            header: true,
            ..Dialect::default()
        },
        mode: ScanMode::Safe,
        chunk_size: Some(chunk),
        threads: Some(threads),
        ..LoadOptions::default()
    }
}

/// A header and `rows` records `i,wordN` with record `long` (0-based) `long_len` bytes
/// long; returns the text, and the line and byte offset where the long record starts.
fn csv(rows: usize, long: usize, long_len: usize) -> (Vec<u8>, u64, u64) {
    let mut out = b"id,s\n".to_vec();
    let (mut line, mut byte) = (0, 0);
    for i in 0..rows {
        let mut record = format!("{i},word{}", i % 97);
        if i == long {
            (line, byte) = (i as u64 + 2, out.len() as u64);
            let pad = long_len - record.len();
            record.push_str(&"x".repeat(pad));
        }
        out.extend_from_slice(record.as_bytes());
        out.push(b'\n');
    }
    (out, line, byte)
}

fn bytes(data: &[u8]) -> Source {
    Source::Bytes {
        name: "in.csv".into(),
        data: Arc::from(data.to_vec()),
    }
}

fn stream(data: &[u8], block: usize) -> Source {
    Source::reader_in_blocks("in.csv", Cursor::new(data.to_vec()), block)
}

#[test]
fn a_record_over_the_limit_fails_naming_its_line() {
    let (data, line, byte) = csv(5000, 3100, 9000);
    let mut o = opts(3, 4096);
    o.max_line_bytes = Some(8999);
    // streams in blocks smaller and larger than the record, and the whole input
    for source in [
        stream(&data, 1000),
        stream(&data, 20_000),
        stream(&data, 1 << 20),
        bytes(&data),
    ] {
        let t = table();
        let err = load_into(&t, &source, &o, &LoadControl::default()).unwrap_err();
        let LoadError::LineTooLong {
            file,
            line: l,
            byte: b,
            limit,
        } = &err
        else {
            panic!("not LineTooLong: {err}");
        };
        assert_eq!(
            (file.as_str(), *l, *b, *limit),
            ("in.csv", line, byte, 8999)
        );
        assert_eq!(
            err.to_string(),
            format!(
                "in.csv: line {line}, byte {byte}: a record longer than the limit of 8999 \
                 bytes (MAX_LINE_SIZE); raise MAX_LINE_SIZE to load it"
            )
        );
        assert!(common::rows(&t).is_empty());
    }
}

#[test]
fn records_at_the_limit_load() {
    let (data, _, _) = csv(5000, 3100, 9000);
    let mut o = opts(3, 4096);
    o.max_line_bytes = Some(9000);
    for source in [stream(&data, 1000), bytes(&data)] {
        let t = table();
        let report = load_into(&t, &source, &o, &LoadControl::default()).unwrap();
        assert_eq!(report.rows, 5000);
        let rows = common::rows(&t);
        assert_eq!(rows[3100][1].as_ref().map(String::len), Some(9000 - 5));
    }
}

#[test]
fn a_stream_stops_reading_a_record_that_does_not_end() {
    // an unclosed quote: every byte after it is one record, with short lines
    let mut data = b"id,s\n1,a\n2,\"open\n".to_vec();
    data.extend(b"3,b\n".repeat(100_000));
    let mut o = opts(2, 4096);
    o.max_line_bytes = Some(10_000);
    let t = table();
    let err = load_into(&t, &stream(&data, 4096), &o, &LoadControl::default()).unwrap_err();
    assert!(
        matches!(
            &err,
            LoadError::LineTooLong {
                line: 3,
                byte: 9,
                limit: 10_000,
                ..
            }
        ),
        "{err}"
    );
    // without a limit the record is read whole and found broken
    let err = load_into(
        &t,
        &stream(&data, 4096),
        &opts(2, 4096),
        &LoadControl::default(),
    )
    .unwrap_err();
    assert!(!matches!(err, LoadError::LineTooLong { .. }), "{err}");
}

#[test]
fn a_long_header_fails_too() {
    let mut data = b"id,".to_vec();
    data.extend(b"s".repeat(5000));
    data.extend(b"\n1,a\n");
    let mut o = opts(1, 4096);
    o.max_line_bytes = Some(1000);
    for source in [stream(&data, 100), stream(&data, 1 << 20), bytes(&data)] {
        let err = load_into(&table(), &source, &o, &LoadControl::default()).unwrap_err();
        assert!(
            matches!(
                &err,
                LoadError::LineTooLong {
                    line: 1,
                    byte: 0,
                    ..
                }
            ),
            "{err}"
        );
    }
}

/// 200,000 rows of text: some megabytes of buffers.
fn big() -> Vec<u8> {
    let mut out = b"id,s\n".to_vec();
    for i in 0..200_000 {
        out.extend_from_slice(format!("{i},some text for row {i}\n").as_bytes());
    }
    out
}

#[test]
fn a_load_over_its_memory_budget_fails_and_leaves_the_table() {
    let data = big();
    let t = table();
    common::load(&t, b"id,s\n1,a\n2,b\n", &opts(1, 4096)).unwrap();
    let before = common::rows(&t);
    for schedule in [Schedule::Deferred, Schedule::Interleaved] {
        for merge in [MergeStrategy::Chunk, MergeStrategy::Copy] {
            let mut o = opts(3, 64 << 10);
            o.schedule = schedule;
            o.merge = merge;
            o.memory_budget = Some(1 << 20);
            let many = [bytes(&data[..data.len() / 2]), bytes(&data)];
            for (i, source) in [bytes(&data), stream(&data, 256 << 10)].iter().enumerate() {
                let err = load_into(&t, source, &o, &LoadControl::default()).unwrap_err();
                let LoadError::MemoryBudget { used, budget } = err else {
                    panic!("not MemoryBudget ({schedule:?} {merge:?} {i}): {err}");
                };
                assert_eq!(budget, 1 << 20);
                assert!(used > budget, "{used}");
                assert!(
                    err.to_string().ends_with(
                        "more than its memory budget of 1048576 bytes (MEMORY_LIMIT); raise \
                         MEMORY_LIMIT or load the input in parts"
                    ),
                    "{err}"
                );
                assert_eq!(common::rows(&t), before);
            }
            let err = load_files(&t, &many, &o, &LoadControl::default()).unwrap_err();
            assert!(matches!(err, LoadError::MemoryBudget { .. }), "{err}");
            assert_eq!(common::rows(&t), before);
        }
    }
}

#[test]
fn a_load_within_its_memory_budget_loads() {
    let data = big();
    let mut o = opts(3, 64 << 10);
    o.memory_budget = Some(1 << 30);
    for source in [bytes(&data), stream(&data, 256 << 10)] {
        let t = table();
        let report = load_into(&t, &source, &o, &LoadControl::default()).unwrap();
        assert_eq!(report.rows, 200_000);
    }
    assert!(default_memory_budget() > 1 << 20);
}

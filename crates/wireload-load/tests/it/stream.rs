//! Streamed loads (any reader, read in blocks, parsed window by window) equal loads of the
//! same bytes held whole: the same rows in the same order, or the same error, named by the
//! same file, line, column and byte, whatever the block and chunk sizes; quoted newlines
//! and `\r\n` across block boundaries included; and loads merged on the interleaved
//! schedule equal loads merged on the deferred one.

use crate::common;

use std::io::Read;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wireload_load::{
    Dialect, LoadControl, LoadOptions, MergeStrategy, ScanMode, Schedule, Source, load_into,
};
use wireload_storage::{Catalog, IndexDef, IndexKind, Partitioning, Table, TableDef};

/// A reader that hands out at most `step` bytes per read (as a pipe does).
struct Trickle {
    data: Vec<u8>,
    at: usize,
    step: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// `id INT, s TEXT, n INT` rows with quoted fields holding newlines and delimiters.
fn random_csv(rng: &mut StdRng, rows: usize, crlf: bool) -> Vec<u8> {
    let nl: &[u8] = if crlf { b"\r\n" } else { b"\n" };
    let mut out = Vec::new();
    for i in 0..rows {
        out.extend_from_slice(i.to_string().as_bytes());
        out.push(b',');
        match rng.random_range(0..5) {
            0 => out.extend_from_slice(b"\"multi\nline, \"\"quoted\"\"\""),
            1 => out.extend_from_slice(b"\"a\r\nb\""),
            2 => {}
            _ => out.extend_from_slice(format!("w{}", rng.random_range(0..1000)).as_bytes()),
        }
        out.push(b',');
        out.extend_from_slice(rng.random_range(-50..50).to_string().as_bytes());
        out.extend_from_slice(nl);
    }
    out
}

fn table(keyed: bool, partitioning: Partitioning) -> Arc<Table> {
    let mut def = TableDef::new(
        "t",
        wireload_types::sql::parse_columns("id INT NOT NULL, s TEXT, n INT").unwrap(),
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

/// The rows of a load of `source`, or its error's text.
fn load(
    source: &Source,
    keyed: bool,
    partitioning: Partitioning,
    opts: &LoadOptions,
) -> Result<common::Rows, String> {
    let t = table(keyed, partitioning);
    load_into(&t, source, opts, &LoadControl::default()).map_err(|e| e.to_string())?;
    Ok(common::rows(&t))
}

fn whole(data: &[u8]) -> Source {
    Source::Bytes {
        name: "input.csv".into(),
        data: Arc::from(data.to_vec()),
    }
}

fn streamed(data: &[u8], block: usize, step: usize) -> Source {
    let reader = Trickle {
        data: data.to_vec(),
        at: 0,
        step,
    };
    Source::reader_in_blocks("input.csv", reader, block)
}

/// Bad input at a random place: a value that is no integer, a wrong field count, an
/// unclosed quote, or a duplicate key.
fn spoil(rng: &mut StdRng, data: &mut Vec<u8>) {
    let lines: Vec<usize> = data
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b == b'\n' && i + 1 < data.len() && data[i + 1].is_ascii_digit())
        .map(|(i, _)| i + 1)
        .collect();
    let Some(&at) = lines.get(rng.random_range(0..lines.len().max(1))) else {
        return;
    };
    let bad: &[u8] = match rng.random_range(0..4) {
        0 => b"x1,bad,1\n",
        1 => b"7,too,many,fields\n",
        2 => b"0,dup,1\n",
        _ => b"8,\"unclosed,1\n",
    };
    data.splice(at..at, bad.iter().copied());
}

#[test]
fn streamed_loads_equal_whole_loads() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut compared_errors = 0;
    for case in 0..60 {
        let rows = rng.random_range(0..3000);
        let crlf = rng.random_bool(0.3);
        let mut data = random_csv(&mut rng, rows, crlf);
        if case % 3 == 0 {
            spoil(&mut rng, &mut data);
        }
        if rng.random_bool(0.2) {
            // a last record without its newline
            while matches!(data.last(), Some(b'\n' | b'\r')) {
                data.pop();
            }
        }
        let keyed = rng.random_bool(0.5);
        let partitioning = if rng.random_bool(0.3) {
            Partitioning::Hash {
                column: 2,
                count: 3,
            }
        } else {
            Partitioning::Single
        };
        let opts = LoadOptions {
            dialect: Dialect {
                header: false,
                ..Dialect::default()
            },
            mode: ScanMode::Safe,
            chunk_size: Some([7, 100, 4096, 1 << 16][rng.random_range(0..4)]),
            threads: Some(rng.random_range(1..=3)),
            ..LoadOptions::default()
        };
        let want = load(&whole(&data), keyed, partitioning, &opts);
        if want.is_err() {
            compared_errors += 1;
        }
        let interleaved = LoadOptions {
            schedule: Schedule::Interleaved,
            merge: [MergeStrategy::Chunk, MergeStrategy::Copy][case % 2],
            ..opts.clone()
        };
        assert_eq!(
            load(&whole(&data), keyed, partitioning, &interleaved),
            want,
            "case {case}: interleaved, {:?} merge, chunk {:?}, keyed {keyed}",
            interleaved.merge,
            opts.chunk_size
        );
        for (i, block) in [1, 13, 1000, 64 << 10].into_iter().enumerate() {
            let step = rng.random_range(1..5000);
            if block == 1 && data.len() > 16 << 10 {
                // a block per byte hands every byte between two threads: on the larger
                // inputs that took most of this test's 80 s, and the smaller ones cut
                // every record at every byte already
                continue;
            }
            let opts = if i % 2 == 1 { &interleaved } else { &opts };
            let got = load(&streamed(&data, block, step), keyed, partitioning, opts);
            assert_eq!(
                got, want,
                "case {case}: block {block}, step {step}, chunk {:?}, keyed {keyed}, {:?}",
                opts.chunk_size, opts.schedule
            );
        }
    }
    assert!(
        compared_errors >= 10,
        "only {compared_errors} errors compared"
    );
}

#[test]
fn streams_with_a_header_and_a_bom() {
    let mut data = b"\xEF\xBB\xBFid,s,n\r\n".to_vec();
    data.extend(random_csv(&mut StdRng::seed_from_u64(3), 500, true));
    let opts = LoadOptions {
        dialect: Dialect {
            header: true,
            ..Dialect::default()
        },
        chunk_size: Some(333),
        ..LoadOptions::default()
    };
    let want = load(&whole(&data), false, Partitioning::Single, &opts).unwrap();
    assert_eq!(want.len(), 500);
    for block in [1, 2, 5, 17, 4096] {
        let got = load(
            &streamed(&data, block, 3),
            false,
            Partitioning::Single,
            &opts,
        )
        .unwrap();
        assert_eq!(got, want, "block {block}");
    }
    // an empty stream with a header expected loads zero rows, as an empty file does
    for block in [1, 2, 16] {
        let empty = load(&streamed(b"", block, 1), false, Partitioning::Single, &opts).unwrap();
        assert!(empty.is_empty());
        let blank = load(
            &streamed(b"\n\n\n", block, 1),
            false,
            Partitioning::Single,
            &opts,
        );
        assert_eq!(blank.unwrap().len(), 0);
    }
    // blank lines before the header do not make it data
    let late = load(
        &streamed(b"\n\n\nid,s,n\n1,a,2\n", 1, 1),
        false,
        Partitioning::Single,
        &opts,
    );
    assert_eq!(late.unwrap().len(), 1);
}

#[test]
fn a_stream_is_read_once_and_errors_of_the_reader_are_reported() {
    /// `1,a,2\n` over and over, then an error after `left` bytes.
    struct Failing {
        at: usize,
        left: usize,
    }
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.left == 0 {
                return Err(std::io::Error::other("connection reset"));
            }
            let n = self.left.min(buf.len());
            for b in &mut buf[..n] {
                *b = b"1,a,2\n"[self.at % 6];
                self.at += 1;
            }
            self.left -= n;
            Ok(n)
        }
    }
    let src = Source::reader_in_blocks("socket", Failing { at: 0, left: 600 }, 64);
    let t = table(false, Partitioning::Single);
    let e = load_into(&t, &src, &LoadOptions::default(), &LoadControl::default()).unwrap_err();
    assert!(e.to_string().contains("socket") && e.to_string().contains("connection reset"));
    assert_eq!(
        t.snapshot().num_rows(),
        0,
        "a failed load publishes nothing"
    );
    let again = load_into(&t, &src, &LoadOptions::default(), &LoadControl::default());
    assert!(again.unwrap_err().to_string().contains("read already"));
}

#[test]
fn an_interleaved_merge_that_fails_stops_the_load_reading() {
    /// `i,a,1` rows for ever (key 0 twice at the start), counting the bytes handed out.
    struct Endless {
        next: u64,
        pending: Vec<u8>,
        read: Arc<std::sync::atomic::AtomicU64>,
    }
    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            while self.pending.len() < buf.len() {
                let id = self.next.saturating_sub(1);
                self.pending
                    .extend_from_slice(format!("{id},a,1\n").as_bytes());
                self.next += 1;
            }
            let n = buf.len();
            buf.copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            self.read
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            // a load that never stops must still end the test
            if self.read.load(std::sync::atomic::Ordering::Relaxed) > 4 << 30 {
                return Ok(0);
            }
            Ok(n)
        }
    }
    let read = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let reader = Endless {
        next: 0,
        pending: Vec::new(),
        read: Arc::clone(&read),
    };
    let t = table(true, Partitioning::Single);
    let opts = LoadOptions {
        dialect: Dialect {
            header: false,
            ..Dialect::default()
        },
        chunk_size: Some(4096),
        threads: Some(2),
        schedule: Schedule::Interleaved,
        ..LoadOptions::default()
    };
    let source = Source::reader_in_blocks("endless", reader, 64 << 10);
    let e = load_into(&t, &source, &opts, &LoadControl::default()).unwrap_err();
    assert!(
        e.to_string().contains("duplicate") && e.to_string().contains("line 2"),
        "{e}"
    );
    // the merge of the first window found it; the reader was not drained to its end
    let bytes = read.load(std::sync::atomic::Ordering::Relaxed);
    assert!(bytes < 256 << 20, "{bytes} bytes read");
    assert_eq!(t.snapshot().num_rows(), 0);
}

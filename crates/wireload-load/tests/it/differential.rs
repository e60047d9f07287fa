//! Loads of random RFC 4180 files, every chunk size and 1-4 threads, equal the `csv` crate.

use crate::common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wireload_load::{Dialect, LoadOptions, MergeStrategy, ScanMode, Schedule};
use wireload_storage::Partitioning;

fn random_file(rng: &mut StdRng, d: u8, q: u8) -> (Vec<u8>, usize) {
    let ncols = rng.random_range(1..6);
    let nrows = rng.random_range(0..60);
    let pieces: [&[u8]; 10] = [
        b"a",
        b"word",
        &[d],
        &[q],
        b"\n",
        b"\r\n",
        b" ",
        "ü".as_bytes(),
        "😀".as_bytes(),
        b"42",
    ];
    let crlf = rng.random_bool(0.4);
    let mut out = Vec::new();
    for _ in 0..nrows {
        for c in 0..ncols {
            let mut v = Vec::new();
            for _ in 0..rng.random_range(0..4) {
                v.extend_from_slice(pieces[rng.random_range(0..pieces.len())]);
            }
            let special = v
                .iter()
                .any(|&b| b == d || b == q || b == b'\n' || b == b'\r');
            if special || (ncols == 1 && v.is_empty()) || rng.random_bool(0.2) {
                out.push(q);
                for &b in &v {
                    if b == q {
                        out.push(q);
                    }
                    out.push(b);
                }
                out.push(q);
            } else {
                out.extend_from_slice(&v);
            }
            if c + 1 < ncols {
                out.push(d);
            }
        }
        out.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
    }
    (out, ncols)
}

#[test]
fn all_varchar_loads_equal_csv_crate_for_every_chunk_size_and_thread_count() {
    let mut rng = StdRng::seed_from_u64(11);
    for case in 0..120 {
        let d = [b',', b'|', b'\t', b';'][rng.random_range(0..4)];
        let q = [b'"', b'\''][rng.random_range(0..2)];
        let (data, ncols) = random_file(&mut rng, d, q);
        // csv crate: NULL rule applied on top (unquoted empty = NULL): compare strings with NULL as ""
        let expected: Vec<Vec<Option<String>>> = csv::ReaderBuilder::new()
            .has_headers(false)
            .delimiter(d)
            .quote(q)
            .from_reader(&data[..])
            .records()
            .map(|r| r.unwrap().iter().map(|f| Some(f.to_string())).collect())
            .collect();
        for &chunk in &[1usize, 2, 5, 64, 333, 4096, 1 << 20] {
            let threads = rng.random_range(1..=4);
            let merge = [
                MergeStrategy::Chunk,
                MergeStrategy::Copy,
                MergeStrategy::Insert,
            ][rng.random_range(0..3)];
            let t = common::table(&common::varchar_schema(ncols), Partitioning::Single);
            let opts = LoadOptions {
                dialect: Dialect {
                    delimiter: d,
                    quote: Some(q),
                    escape: Some(q),
                    ..Dialect::default()
                },
                mode: ScanMode::Safe,
                chunk_size: Some(chunk),
                threads: Some(threads),
                merge,
                // the interleaved schedule merges step by step: not with the insert merge
                schedule: if merge != MergeStrategy::Insert && rng.random_bool(0.5) {
                    Schedule::Interleaved
                } else {
                    Schedule::Deferred
                },
                ..LoadOptions::default()
            };
            let report = common::load(&t, &data, &opts).unwrap();
            assert_eq!(report.rows as usize, expected.len());
            let got: Vec<Vec<Option<String>>> = common::rows(&t)
                .into_iter()
                .map(|r| r.into_iter().map(|v| Some(v.unwrap_or_default())).collect())
                .collect();
            assert_eq!(
                got, expected,
                "case {case} chunk {chunk} threads {threads} {merge:?} {:?}",
                opts.schedule
            );
        }
    }
}

#[test]
fn partitioned_load_puts_every_row_in_its_hash_partition_once() {
    let mut data = String::new();
    for i in 0..5000 {
        data.push_str(&format!("{},{}\n", i % 997, i));
    }
    let t = common::table(
        "k INT, v INT",
        Partitioning::Hash {
            column: 0,
            count: 4,
        },
    );
    let opts = LoadOptions {
        chunk_size: Some(4096),
        threads: Some(2),
        ..LoadOptions::default()
    };
    common::load(&t, data.as_bytes(), &opts).unwrap();
    let snap = t.snapshot();
    assert_eq!(snap.num_rows(), 5000);
    let mut seen = std::collections::HashMap::new();
    let mut values = Vec::new();
    for (p, part) in snap.partitions.iter().enumerate() {
        assert!(
            part.num_rows() > 500,
            "partition {p} has {} rows",
            part.num_rows()
        );
        for b in &part.chunks {
            let k = b
                .column(0)
                .as_any()
                .downcast_ref::<arrow::array::Int32Array>()
                .unwrap();
            let v = b
                .column(1)
                .as_any()
                .downcast_ref::<arrow::array::Int32Array>()
                .unwrap();
            for i in 0..b.num_rows() {
                assert_eq!(
                    *seen.entry(k.value(i)).or_insert(p),
                    p,
                    "key {} in two partitions",
                    k.value(i)
                );
                values.push(v.value(i));
            }
        }
    }
    values.sort();
    assert_eq!(values, (0..5000).collect::<Vec<_>>());
}

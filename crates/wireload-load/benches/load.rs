//! Load throughput of TPC-H lineitem held in memory: threads x chunk size x mode, median
//! of 5 runs, MB/s. Asserts the row count of every run.
//!
//! `cargo bench -p wireload-load --bench load` (scale factor from `WIRELOAD_BENCH_SF`, default
//! 0.1, or the lineitem file `WIRELOAD_BENCH_CSV`; `WIRELOAD_BENCH_QUICK=1`: safe mode and the default chunk size only;
//! `WIRELOAD_BENCH_THREADS`, `WIRELOAD_BENCH_ROUNDS`: one thread count, runs per figure; the
//! scan backend from `WIRELOAD_SIMD`, as in every wireload process)

use std::fmt::Write;
use std::sync::Arc;
use std::time::Instant;

use tpchgen::generators::LineItemGenerator;
use wireload_load::{
    Dialect, LoadControl, LoadOptions, ScanMode, Source, default_chunk_size, load_into,
};
use wireload_storage::{Catalog, Partitioning, TableDef};

const SCHEMA: &str = "l_orderkey BIGINT, l_partkey INTEGER, l_suppkey INTEGER, l_linenumber INTEGER, \
    l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), l_tax DECIMAL(15,2), \
    l_returnflag CHAR(1), l_linestatus CHAR(1), l_shipdate DATE, l_commitdate DATE, l_receiptdate DATE, \
    l_shipinstruct CHAR(25), l_shipmode CHAR(10), l_comment VARCHAR(44)";

/// Touches and frees `n` bytes, so the timed load does not pay for memory the host took back.
fn warm_memory(n: usize) {
    let mut v = vec![0u8; n];
    for i in (0..n).step_by(4096) {
        v[i] = 1;
    }
    std::hint::black_box(&v);
}

fn main() {
    let sf: f64 = std::env::var("WIRELOAD_BENCH_SF")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.1);
    let csv = std::env::var("WIRELOAD_BENCH_CSV").ok();
    let source = match &csv {
        Some(path) => path.clone(),
        None => format!("lineitem SF {sf}"),
    };
    let (data, rows): (Arc<[u8]>, u64) = match csv {
        Some(path) => {
            let bytes = std::fs::read(&path).expect("WIRELOAD_BENCH_CSV is readable");
            let rows = memchr::memchr_iter(b'\n', &bytes).count() as u64;
            (Arc::from(bytes), rows)
        }
        None => {
            let mut text = String::new();
            let mut rows = 0u64;
            for r in LineItemGenerator::new(sf, 1, 1).iter() {
                writeln!(text, "{r}").unwrap();
                rows += 1;
            }
            (Arc::from(text.into_bytes()), rows)
        }
    };
    let schema = wireload_types::sql::parse_columns(SCHEMA).unwrap();
    println!(
        "{source}: {:.1} MB, {rows} rows; default chunk size {} KiB",
        data.len() as f64 / 1e6,
        default_chunk_size(2) >> 10
    );
    println!(
        "{:>7} {:>6} {:>10} {:>10}",
        "threads", "mode", "chunk KiB", "MB/s"
    );
    let quick = std::env::var("WIRELOAD_BENCH_QUICK").is_ok_and(|v| v == "1");
    println!("scan backend: {}", wireload_csv::Backend::selected());
    let modes: &[ScanMode] = if quick {
        &[ScanMode::Safe]
    } else {
        &[ScanMode::Safe, ScanMode::Fast]
    };
    let thread_counts: Vec<usize> = match std::env::var("WIRELOAD_BENCH_THREADS") {
        Ok(t) => vec![t.parse().expect("WIRELOAD_BENCH_THREADS is a number")],
        Err(_) => vec![1, 2],
    };
    let runs: usize = std::env::var("WIRELOAD_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    for threads in thread_counts {
        let chunks: Vec<usize> = if quick {
            vec![default_chunk_size(threads)]
        } else {
            vec![256 << 10, 1 << 20, 4 << 20, 16 << 20]
        };
        for &mode in modes {
            for &chunk in &chunks {
                let mut mbs = Vec::new();
                for _ in 0..runs {
                    warm_memory(data.len() * 3 / 2);
                    let catalog = Catalog::default();
                    let t = catalog
                        .create_table(
                            TableDef::new("lineitem", schema.clone(), Partitioning::Single)
                                .unwrap(),
                            false,
                        )
                        .unwrap();
                    let opts = LoadOptions {
                        dialect: Dialect {
                            delimiter: b'|',
                            ..Dialect::default()
                        },
                        mode,
                        chunk_size: Some(chunk),
                        threads: Some(threads),
                        ..LoadOptions::default()
                    };
                    let src = Source::Bytes {
                        name: "lineitem".into(),
                        data: Arc::clone(&data),
                    };
                    let t0 = Instant::now();
                    let report = load_into(&t, &src, &opts, &LoadControl::default()).unwrap();
                    let secs = t0.elapsed().as_secs_f64();
                    assert_eq!(report.rows, rows);
                    mbs.push(data.len() as f64 / 1e6 / secs);
                }
                mbs.sort_by(f64::total_cmp);
                println!(
                    "{threads:>7} {:>6} {:>10} {:>10.0}",
                    format!("{mode:?}"),
                    chunk >> 10,
                    mbs[mbs.len() / 2]
                );
            }
        }
    }
}

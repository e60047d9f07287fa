//! The structural scan alone, per SIMD backend and thread count, against a memchr newline
//! count over the same bytes (the bar: the scan at >= 30% of the count). Median of
//! 7 runs, GB/s; every backend must find the same records.
//!
//! `cargo bench -p wireload-csv --bench scan` reads `WIRELOAD_BENCH_CSV` (a `|`-separated
//! file such as TPC-H's `lineitem.tbl`, default `/dev/shm/wireload-tpch-sf1/lineitem.tbl`)
//! or, when it is missing, generates lineitem at scale factor 0.1. `WIRELOAD_SIMD` limits
//! it to one backend and `WIRELOAD_BENCH_ROUNDS` sets the runs (for counting instructions
//! and branch misses under `valgrind --tool=cachegrind --branch-sim=yes`).

use std::fmt::Write;
use std::time::Instant;

use tpchgen::generators::LineItemGenerator;
use wireload_csv::{Backend, Dialect, FieldBatch, ScanConfig, ScanMode, Scanner};

/// Runs per measurement (`WIRELOAD_BENCH_ROUNDS`, default 7).
fn rounds() -> usize {
    std::env::var("WIRELOAD_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7)
}

/// The input and where it came from.
fn input() -> (Vec<u8>, String) {
    let path = std::env::var("WIRELOAD_BENCH_CSV")
        .unwrap_or_else(|_| "/dev/shm/wireload-tpch-sf1/lineitem.tbl".into());
    if let Ok(data) = std::fs::read(&path) {
        return (data, path);
    }
    let mut text = String::new();
    for r in LineItemGenerator::new(0.1, 1, 1).iter() {
        writeln!(text, "{r}").unwrap();
    }
    (text.into_bytes(), "generated lineitem SF 0.1".into())
}

/// Splits `data` into `n` ranges that start at record starts.
fn split(data: &[u8], n: usize) -> Vec<(usize, usize)> {
    let mut cuts = vec![0];
    for k in 1..n {
        let at = data.len() * k / n;
        let nl = memchr::memchr(b'\n', &data[at..]).map_or(data.len(), |i| at + i + 1);
        cuts.push(nl);
    }
    cuts.push(data.len());
    cuts.windows(2).map(|w| (w[0], w[1])).collect()
}

/// Scans `data[start..end]` with `backend`; returns the records found.
fn scan(backend: Backend, cfg: &ScanConfig, data: &[u8], start: usize, end: usize) -> u64 {
    let mut scanner = Scanner::with_backend(backend, cfg, data, start, end, 16);
    let mut batch = FieldBatch::new(16);
    let mut rows = 0;
    loop {
        let more = scanner.next_batch(&mut batch, 2048).expect("valid input");
        rows += batch.rows() as u64;
        if !more {
            return rows;
        }
    }
}

/// Runs `f` over the ranges in parallel (one thread each); returns the summed result.
fn parallel(ranges: &[(usize, usize)], f: impl Fn(usize, usize) -> u64 + Sync) -> u64 {
    std::thread::scope(|s| {
        let handles: Vec<_> = ranges
            .iter()
            .map(|&(a, b)| {
                let f = &f;
                s.spawn(move || f(a, b))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

/// Median GB/s of [`rounds`] runs of `f` over `bytes` bytes; asserts every run returns `want`.
fn measure(bytes: usize, want: Option<u64>, f: impl Fn() -> u64) -> (f64, u64) {
    let mut rates = Vec::new();
    let mut got = 0;
    for _ in 0..rounds() {
        let t = Instant::now();
        got = std::hint::black_box(f());
        rates.push(bytes as f64 / t.elapsed().as_secs_f64() / 1e9);
        if let Some(w) = want {
            assert_eq!(got, w, "record count");
        }
    }
    rates.sort_by(f64::total_cmp);
    (rates[rates.len() / 2], got)
}

fn main() {
    let (data, source) = input();
    let dialect = Dialect {
        delimiter: b'|',
        ..Dialect::default()
    };
    let cfg = ScanConfig::new(&dialect, ScanMode::Safe).unwrap();
    println!(
        "{source}: {:.1} MB; backends here: {:?}; selected {}",
        data.len() as f64 / 1e6,
        Backend::available(),
        Backend::selected()
    );
    println!(
        "{:<22} {:>7} {:>8} {:>14}",
        "routine", "threads", "GB/s", "vs memchr count"
    );
    for threads in [1, 2] {
        let ranges = split(&data, threads);
        let (count, lines) = measure(data.len(), None, || {
            parallel(&ranges, |a, b| {
                memchr::memchr_iter(b'\n', &data[a..b]).count() as u64
            })
        });
        println!(
            "{:<22} {threads:>7} {count:>8.2} {:>14}",
            "memchr newline count", "1.00"
        );
        let backends = match std::env::var(wireload_csv::simd::SIMD_ENV) {
            Ok(_) => vec![Backend::selected()],
            Err(_) => Backend::available(),
        };
        for backend in backends {
            let (rate, _) = measure(data.len(), Some(lines), || {
                parallel(&ranges, |a, b| scan(backend, &cfg, &data, a, b))
            });
            println!(
                "{:<22} {threads:>7} {rate:>8.2} {:>14.2}",
                format!("scan {backend}"),
                rate / count
            );
        }
    }
}

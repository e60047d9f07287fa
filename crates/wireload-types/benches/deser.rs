//! Text-to-value deserializers, scalar twin vs fast path, on TPC-H-like fields: ns per
//! value and MB/s, best of 11 runs over 1M values. Asserts that every value parsed and
//! that both paths agree on the sum of the values.
//!
//! `cargo bench -p wireload-types --bench deser` (values per case from
//! `WIRELOAD_BENCH_VALUES`, default 1,000,000)

use std::hint::black_box;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wireload_types::ValueError;
use wireload_types::deser::{self, scalar};

/// Fields stored as in a CSV buffer: one byte string and the end of each field.
struct Column {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl Column {
    fn new(count: usize, mut value: impl FnMut() -> String) -> Self {
        let mut data = Vec::new();
        let mut ends = Vec::with_capacity(count);
        for _ in 0..count {
            data.extend_from_slice(value().as_bytes());
            ends.push(data.len());
        }
        Column { data, ends }
    }
}

/// Timed runs of each path per case.
const RUNS: usize = 11;

/// The fastest run: on a shared machine, noise only ever adds time.
fn best(runs: Vec<f64>) -> f64 {
    runs.into_iter().fold(f64::INFINITY, f64::min)
}

/// Parses every field of `column` once: ns per value and a checksum. Never inlined, so
/// that every case's loop is compiled alike, apart from the rest of `main`.
#[inline(never)]
fn measure<T>(
    column: &Column,
    parse: impl Fn(&[u8]) -> Result<T, ValueError>,
    sum: impl Fn(T) -> u64,
) -> (f64, u64) {
    let data = black_box(&column.data[..]);
    let start = Instant::now();
    let mut total = 0u64;
    let mut begin = 0;
    for &end in &column.ends {
        let value = parse(&data[begin..end]).expect("every benchmark value is valid");
        total = total.wrapping_add(sum(value));
        begin = end;
    }
    let ns = start.elapsed().as_secs_f64() * 1e9 / column.ends.len() as f64;
    (ns, black_box(total))
}

#[inline(never)]
fn row<T>(
    name: &str,
    column: &Column,
    slow: impl Fn(&[u8]) -> Result<T, ValueError>,
    fast: impl Fn(&[u8]) -> Result<T, ValueError>,
    sum: impl Fn(T) -> u64 + Copy,
) {
    // Alternate the two, so that a busy machine slows both alike.
    let (mut slow_runs, mut fast_runs) = (Vec::new(), Vec::new());
    let (mut slow_sum, mut fast_sum) = (0, 0);
    for _ in 0..RUNS {
        let (ns, s) = measure(column, &slow, sum);
        slow_runs.push(ns);
        slow_sum = s;
        let (ns, s) = measure(column, &fast, sum);
        fast_runs.push(ns);
        fast_sum = s;
    }
    let (slow_ns, fast_ns) = (best(slow_runs), best(fast_runs));
    assert_eq!(slow_sum, fast_sum, "{name}: the paths disagree");
    let bytes_per_value = column.data.len() as f64 / column.ends.len() as f64;
    println!(
        "{name:<34} {bytes_per_value:>6.1} {slow_ns:>10.2} {fast_ns:>10.2} {:>8.2}x {:>9.0}",
        slow_ns / fast_ns,
        bytes_per_value * 1e3 / fast_ns
    );
}

fn main() {
    let count: usize = std::env::var("WIRELOAD_BENCH_VALUES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mut rng = StdRng::seed_from_u64(42);
    let mut r = |lo: i64, hi: i64| rng.random_range(lo..=hi);
    println!("{count} values per case; ns/value, best of 11 runs");
    println!(
        "{:<34} {:>6} {:>10} {:>10} {:>9} {:>9}",
        "case", "bytes", "scalar", "fast", "speedup", "MB/s fast"
    );

    let as_u64 = |v: i64| v as u64;
    // Integers by width, then TPC-H's keys.
    for digits in [1u32, 2, 3, 4, 6, 8, 9, 12, 16, 19] {
        let lo = 10i64.pow(digits - 1);
        let hi = (10i128.pow(digits) - 1).min(i64::MAX as i128) as i64;
        let column = Column::new(count, || r(lo, hi).to_string());
        row(
            &format!("BIGINT {digits} digits"),
            &column,
            scalar::parse_i64,
            deser::parse_i64,
            as_u64,
        );
    }
    let column = Column::new(count, || r(1, 6_000_000).to_string());
    row(
        "BIGINT l_orderkey 1..6e6",
        &column,
        scalar::parse_i64,
        deser::parse_i64,
        as_u64,
    );
    let column = Column::new(count, || r(1, 200_000).to_string());
    row(
        "INTEGER l_partkey 1..2e5",
        &column,
        scalar::parse_i32,
        deser::parse_i32,
        |v| v as u64,
    );
    let column = Column::new(count, || r(1, 10_000).to_string());
    row(
        "INTEGER l_suppkey 1..1e4",
        &column,
        scalar::parse_i32,
        deser::parse_i32,
        |v| v as u64,
    );
    let column = Column::new(count, || r(1, 7).to_string());
    row(
        "INTEGER l_linenumber 1..7",
        &column,
        scalar::parse_i32,
        deser::parse_i32,
        |v| v as u64,
    );
    let column = Column::new(count, || r(-32768, 32767).to_string());
    row(
        "SMALLINT -32768..32767",
        &column,
        scalar::parse_i16,
        deser::parse_i16,
        |v| v as u64,
    );

    // DECIMAL(15,2) as TPC-H writes it.
    let cents = |c: i64| format!("{}.{:02}", c / 100, c % 100);
    // The type is a run-time value, as in a load (constants would fold into the parser).
    let (p, s) = black_box((15u8, 2u8));
    let d152 = |b: &[u8]| deser::parse_decimal(b, p, s);
    let s152 = |b: &[u8]| scalar::parse_decimal(b, p, s);
    let as_u = |v: i128| v as u64;
    let column = Column::new(count, || cents(r(1, 50) * 100));
    row("DECIMAL(15,2) l_quantity 17.00", &column, s152, d152, as_u);
    let column = Column::new(count, || cents(r(90_000, 10_494_950)));
    row("DECIMAL(15,2) l_extendedprice", &column, s152, d152, as_u);
    let column = Column::new(count, || cents(r(0, 10)));
    row("DECIMAL(15,2) l_discount 0.04", &column, s152, d152, as_u);
    let column = Column::new(count, || format!("-{}", cents(r(0, 99_999_999_999))));
    row("DECIMAL(15,2) -1e9..0, 13 bytes", &column, s152, d152, as_u);
    let column = Column::new(count, || cents(r(1, 50) * 100 + r(0, 99)) + "7");
    row("DECIMAL(15,2) 3 fraction digits", &column, s152, d152, as_u);

    // Dates and timestamps of TPC-H's range.
    let date = |r: &mut dyn FnMut(i64, i64) -> i64| {
        format!("{}-{:02}-{:02}", r(1992, 1998), r(1, 12), r(1, 28))
    };
    let column = Column::new(count, || date(&mut r));
    row(
        "DATE YYYY-MM-DD",
        &column,
        scalar::parse_date,
        deser::parse_date,
        |v| v as u64,
    );
    let column = Column::new(count, || {
        format!(
            "{} {:02}:{:02}:{:02}",
            date(&mut r),
            r(0, 23),
            r(0, 59),
            r(0, 59)
        )
    });
    row(
        "TIMESTAMP YYYY-MM-DD HH:MM:SS",
        &column,
        scalar::parse_timestamp,
        deser::parse_timestamp,
        as_u64,
    );
    let column = Column::new(count, || {
        format!(
            "{} {:02}:{:02}:{:02}.{:06}",
            date(&mut r),
            r(0, 23),
            r(0, 59),
            r(0, 59),
            r(0, 999_999)
        )
    });
    row(
        "TIMESTAMP with .ffffff",
        &column,
        scalar::parse_timestamp,
        deser::parse_timestamp,
        as_u64,
    );

    // Floating point: TPC-H prices as DOUBLE, and random doubles at full precision.
    let bits64 = |v: f64| v.to_bits();
    let column = Column::new(count, || cents(r(90_000, 10_494_950)));
    row(
        "DOUBLE l_extendedprice",
        &column,
        scalar::parse_f64,
        deser::parse_f64,
        bits64,
    );
    let mut rng2 = StdRng::seed_from_u64(7);
    let column = Column::new(count, || format!("{}", rng2.random::<f64>() * 1e6));
    row(
        "DOUBLE random, 17 digits",
        &column,
        scalar::parse_f64,
        deser::parse_f64,
        bits64,
    );
    let column = Column::new(count, || {
        format!("{:e}", f64::from_bits(rng2.random::<u64>() >> 2))
    });
    row(
        "DOUBLE random bits, {:e}",
        &column,
        scalar::parse_f64,
        deser::parse_f64,
        bits64,
    );
    let column = Column::new(count, || cents(r(0, 10_000)));
    row(
        "REAL 0.00..100.00",
        &column,
        scalar::parse_f32,
        deser::parse_f32,
        |v| v.to_bits() as u64,
    );
}

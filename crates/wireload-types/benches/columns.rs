//! The typed loops of `ColumnBuilder` on TPC-H lineitem, column by column, as the loader
//! runs them: records scanned into field batches of 2,048 (`wireload-csv`), then each
//! column appended batch by batch from the batch's column iterator. ns per
//! value, median of 7 runs; asserts that every value parsed.
//!
//! `cargo bench -p wireload-types --bench columns` (lineitem from `WIRELOAD_BENCH_CSV`,
//! default `/dev/shm/wireload-tpch-sf0.1/lineitem.tbl`, else generated at SF 0.1). Under
//! cachegrind, `WIRELOAD_BENCH_RUNS=1` and a single column (`WIRELOAD_BENCH_COLUMN=4`)
//! give instructions per value.

use std::fmt::Write;
use std::hint::black_box;
use std::time::Instant;

use tpchgen::generators::LineItemGenerator;
use wireload_csv::{Dialect, FieldBatch, ScanConfig, ScanMode, Scanner};
use wireload_types::{ColumnBuilder, Field, SqlType};

/// Records per batch, as the loader's parse tasks cut them.
const BATCH_ROWS: usize = 2048;

/// lineitem's columns and types, as `wireload gen tpch` declares them.
const COLUMNS: [(&str, SqlType); 16] = [
    ("l_orderkey", SqlType::BigInt),
    ("l_partkey", SqlType::BigInt),
    ("l_suppkey", SqlType::BigInt),
    ("l_linenumber", SqlType::Integer),
    (
        "l_quantity",
        SqlType::Decimal {
            precision: 15,
            scale: 2,
        },
    ),
    (
        "l_extendedprice",
        SqlType::Decimal {
            precision: 15,
            scale: 2,
        },
    ),
    (
        "l_discount",
        SqlType::Decimal {
            precision: 15,
            scale: 2,
        },
    ),
    (
        "l_tax",
        SqlType::Decimal {
            precision: 15,
            scale: 2,
        },
    ),
    ("l_returnflag", SqlType::Char(1)),
    ("l_linestatus", SqlType::Char(1)),
    ("l_shipdate", SqlType::Date),
    ("l_commitdate", SqlType::Date),
    ("l_receiptdate", SqlType::Date),
    ("l_shipinstruct", SqlType::Char(25)),
    ("l_shipmode", SqlType::Char(10)),
    ("l_comment", SqlType::Varchar(Some(44))),
];

/// Scans `text` (`|`-delimited, a `|` after the last field) into batches of fields, as
/// a load's task does.
fn batches(text: &[u8]) -> Vec<FieldBatch> {
    let dialect = Dialect {
        delimiter: b'|',
        ..Dialect::default()
    };
    let cfg = ScanConfig::new(&dialect, ScanMode::Fast).expect("a valid dialect");
    let mut scanner = Scanner::new(&cfg, text, 0, text.len(), COLUMNS.len());
    let mut batch = FieldBatch::new(COLUMNS.len());
    let mut out = Vec::new();
    loop {
        let more = scanner
            .next_batch(&mut batch, BATCH_ROWS)
            .expect("lineitem scans");
        if batch.rows() > 0 {
            out.push(batch.clone());
        }
        if !more {
            return out;
        }
    }
}

/// Appends every batch to one builder per column, batch by batch and column by column
/// within a batch, as the loader does (its input checked as UTF-8 at once); returns each column's nanoseconds per value.
#[inline(never)]
fn build(text: &[u8], batches: &[FieldBatch], columns: &[usize], rows: usize) -> Vec<f64> {
    let mut builders: Vec<ColumnBuilder> = columns
        .iter()
        .map(|&c| ColumnBuilder::new(&COLUMNS[c].1, true, rows, 0))
        .collect();
    let mut ns = vec![0u128; columns.len()];
    for batch in batches {
        for ((builder, &col), ns) in builders.iter_mut().zip(columns).zip(&mut ns) {
            let start = Instant::now();
            let fields = batch
                .column(text, col)
                .map(|(bytes, quoted)| Field { bytes, quoted });
            // SAFETY: `text` is valid UTF-8 (checked in `main`) and fields are cut at ASCII
            // bytes, as the loader's batches are.
            unsafe { builder.append_fields_valid_utf8(fields, black_box(b"")) }
                .expect("every lineitem value is valid");
            *ns += start.elapsed().as_nanos();
        }
    }
    for builder in &mut builders {
        assert_eq!(black_box(builder.finish()).len(), rows);
    }
    ns.into_iter().map(|t| t as f64 / rows as f64).collect()
}

fn main() {
    let path = std::env::var("WIRELOAD_BENCH_CSV")
        .unwrap_or_else(|_| "/dev/shm/wireload-tpch-sf0.1/lineitem.tbl".into());
    let runs: usize = std::env::var("WIRELOAD_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let only: Option<usize> = std::env::var("WIRELOAD_BENCH_COLUMN")
        .ok()
        .and_then(|s| s.parse().ok());
    let text = std::fs::read(&path).unwrap_or_else(|_| {
        let mut t = String::new();
        for r in LineItemGenerator::new(0.1, 1, 1).iter() {
            writeln!(t, "{r}").unwrap();
        }
        t.into_bytes()
    });
    std::str::from_utf8(&text).expect("lineitem is UTF-8");
    let batches = batches(&text);
    let rows: usize = batches.iter().map(|b| b.rows()).sum();
    println!(
        "input: {:.1} MB of lineitem, {rows} rows; ns per value, median of {runs} runs",
        text.len() as f64 / 1e6
    );
    let columns: Vec<usize> = (0..COLUMNS.len())
        .filter(|&c| only.is_none_or(|o| o == c))
        .collect();
    let mut runs: Vec<Vec<f64>> = (0..runs)
        .map(|_| build(&text, &batches, &columns, rows))
        .collect();
    let median = |i: usize, runs: &mut Vec<Vec<f64>>| {
        runs.sort_by(|a, b| a[i].total_cmp(&b[i]));
        runs[runs.len() / 2][i]
    };
    let mut total = 0.0;
    for (i, &col) in columns.iter().enumerate() {
        let (name, ty) = &COLUMNS[col];
        let ns = median(i, &mut runs);
        total += ns;
        println!("{name:<16} {:<14} {ns:>7.2}", ty.to_string());
    }
    println!("{:<31} {total:>7.2}", "all (per row)");
}

//! `wireload-bench lookup`: point lookups on TPC-H `orders` by its primary key, answered by
//! the index against the same lookups answered by scanning, and end to end through SQL.

use std::hint::black_box;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use arrow::array::{AsArray, Int64Array, Scalar};
use arrow::compute::filter_record_batch;
use arrow::compute::kernels::cmp::eq;
use arrow::datatypes::Int64Type;
use serde_json::json;
use wireload_load::{Dialect, LoadOptions, Source};
use wireload_sql::StatementOutput;

use wireload_tpch::{Session, tables};

use crate::cli::LookupArgs;
use crate::runner::Runner;

/// Deterministic pseudo-random numbers (splitmix64), so every run looks up the same keys.
pub(crate) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Runs `wireload-bench lookup`.
pub fn lookup(args: &LookupArgs, threads: Option<usize>) -> Result<()> {
    let path = args.data.join("orders.tbl");
    if !path.exists() {
        bail!(
            "{} does not exist (write it with `wireload gen tpch --out {}`)",
            path.display(),
            args.data.display()
        );
    }
    let runner = Runner::new(threads)?;
    let orders = tables::schema(true)?
        .into_iter()
        .find(|d| d.name == "orders")
        .context("the TPC-H schema has no orders table")?;
    runner.create_table(orders)?;
    let options = LoadOptions {
        dialect: Dialect {
            delimiter: b'|',
            ..Dialect::default()
        },
        ..LoadOptions::default()
    };
    let started = Instant::now();
    runner.load("orders", Source::File(path.clone()), options)?;
    let load_seconds = started.elapsed().as_secs_f64();
    let table = runner
        .catalog()
        .table("orders")
        .context("orders was created")?;
    let version = table.snapshot();
    let pk = version
        .index("orders_pkey")
        .context("orders has its primary key")?;
    let encoder = pk.def.encoder(&table.def().schema)?;
    let key_col = pk.def.columns[0];

    // the keys to look up: keys of random rows
    let chunks = version.live_chunks()?;
    let total: usize = chunks.iter().map(|c| c.num_rows()).sum();
    let mut seed = 42u64;
    let mut pick = |n: usize| -> Vec<i64> {
        (0..n)
            .map(|_| {
                let mut r = (splitmix(&mut seed) % total as u64) as usize;
                let c = chunks
                    .iter()
                    .find(|c| {
                        if r < c.num_rows() {
                            true
                        } else {
                            r -= c.num_rows();
                            false
                        }
                    })
                    .expect("row in range");
                c.column(key_col).as_primitive::<Int64Type>().value(r)
            })
            .collect()
    };
    let keys = pick(args.lookups);
    let encoded = encoder.encode(&[std::sync::Arc::new(Int64Array::from(keys.clone()))])?;

    // index: key -> row id
    let mut out = Vec::new();
    let started = Instant::now();
    let mut found = 0usize;
    for i in 0..encoded.len() {
        out.clear();
        pk.index.lookup(encoded.get(i), &mut out);
        for &e in &out {
            black_box(pk.index.row_id(e));
            found += 1;
        }
    }
    let rowid_us = started.elapsed().as_secs_f64() * 1e6 / keys.len() as f64;
    if found != keys.len() {
        bail!("the index found {found} of {} keys", keys.len());
    }
    // index: key -> row id -> the whole row (a zero-copy one-row slice of its chunk)
    let started = Instant::now();
    let mut found = 0usize;
    for i in 0..encoded.len() {
        out.clear();
        pk.index.lookup(encoded.get(i), &mut out);
        for &e in &out {
            let id = pk.index.row_id(e);
            let chunk = &version.partitions[id.partition as usize].chunks[id.chunk as usize];
            let row = chunk.slice(id.row as usize, 1);
            found += black_box(row).num_rows();
        }
    }
    let index_seconds = started.elapsed().as_secs_f64();
    if found != keys.len() {
        bail!("the index found {found} of {} keys", keys.len());
    }
    let index_us = index_seconds * 1e6 / keys.len() as f64;

    // scan: compare the key column of every chunk, then take the matching row
    let scan_keys = pick(args.scans);
    let started = Instant::now();
    let mut found = 0usize;
    for &k in &scan_keys {
        let needle = Scalar::new(Int64Array::from(vec![k]));
        for c in &chunks {
            let mask = eq(c.column(key_col), &needle)?;
            if mask.true_count() > 0 {
                found += black_box(filter_record_batch(c, &mask)?.num_rows());
            }
        }
    }
    let scan_seconds = started.elapsed().as_secs_f64();
    if found != scan_keys.len() {
        bail!("the scan found {found} of {} keys", scan_keys.len());
    }
    let scan_us = scan_seconds * 1e6 / scan_keys.len() as f64;

    // SQL, end to end: with the index pushed down, and with a predicate it cannot use
    let sql_keys = pick(args.sql);
    let sql_time = |template: &str| -> Result<f64> {
        let started = Instant::now();
        for &k in &sql_keys {
            let q = template.replace("{k}", &k.to_string());
            let outs = runner.run(&q)?;
            let rows: usize = outs
                .iter()
                .map(|o| match o {
                    StatementOutput::Rows { batches, .. } => {
                        batches.iter().map(|b| b.num_rows()).sum()
                    }
                    _ => 0,
                })
                .sum();
            if rows != 1 {
                bail!("{q} returned {rows} rows");
            }
        }
        Ok(started.elapsed().as_secs_f64() * 1e6 / sql_keys.len() as f64)
    };
    let sql_index_us = sql_time("SELECT * FROM orders WHERE o_orderkey = {k}")?;
    let sql_scan_us = sql_time("SELECT * FROM orders WHERE o_orderkey + 0 = {k}")?;

    let doc = json!({
        "benchmark": "orders-point-lookup",
        "rows": total,
        "load_seconds": load_seconds,
        "index": { "lookups": keys.len(), "us_per_lookup": index_us, "us_to_row_id": rowid_us },
        "scan": { "lookups": scan_keys.len(), "us_per_lookup": scan_us },
        "scan_over_index": scan_us / index_us,
        "sql_index_us": sql_index_us,
        "sql_scan_us": sql_scan_us,
        "sql_queries": sql_keys.len(),
        "index_bytes_per_key": pk.index.heap_bytes() as f64 / total as f64,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "orders: {total} rows, loaded with its primary key in {load_seconds:.3} s\n\
             index lookup to row id: {rowid_us:.3} us per key; with the row: {index_us:.3} us ({} keys)\n\
             scan of o_orderkey + row fetch: {scan_us:.0} us per key ({} keys)\n\
             scan / index: {:.0}x\n\
             SQL `WHERE o_orderkey = k`: {sql_index_us:.0} us per query with the index, \
             {sql_scan_us:.0} us without ({} queries each)",
            keys.len(),
            scan_keys.len(),
            scan_us / index_us,
            sql_keys.len()
        );
    }
    Ok(())
}

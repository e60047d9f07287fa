//! `wireload demo`: generate TPC-H, create and load the 8 tables reporting MB/s per
//! table, run TPC-H Q1 and Q6 and show their results.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use wireload_load::LoadReport;
use wireload_sql::StatementOutput;

use crate::cli::DemoArgs;
use crate::engine::Engine;
use crate::generate;
use crate::reference;
use crate::render;
use crate::sqlgen::{self, CopyOptions};
use crate::statements;
use crate::tpch::{self, GeneratedTable};

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// One line of the load report table.
fn load_line(name: &str, rows: u64, bytes: u64, seconds: f64) -> String {
    let rate = if seconds > 0.0 {
        mb(bytes) / seconds
    } else {
        0.0
    };
    format!(
        "  {name:<10} {:>13} {:>10.1} {:>8.3} {:>9.0}",
        thousands(rows),
        mb(bytes),
        seconds,
        rate
    )
}

/// Runs the demo.
pub fn run(engine: &Engine, args: &DemoArgs, threads: usize) -> Result<()> {
    if !(args.sf > 0.0 && args.sf.is_finite()) {
        bail!("--sf must be a positive number, got {}", args.sf);
    }
    println!(
        "wireload demo: TPC-H at scale factor {}, {threads} threads\n",
        args.sf
    );

    let temp;
    let dir: PathBuf = match &args.keep {
        Some(dir) => dir.clone(),
        None => {
            temp = tempfile::Builder::new()
                .prefix("wireload-tpch-")
                .tempdir()
                .context("cannot create a temporary directory")?;
            temp.path().to_path_buf()
        }
    };
    println!("Generating TPC-H data with tpchgen into {}", dir.display());
    let (tables, gen_seconds) = generate::tpch_files(args.sf, &dir, threads)?;
    let gen_bytes: u64 = tables.iter().map(|t| t.bytes).sum();
    println!(
        "  {} files, {:.1} MB in {:.2} s ({:.0} MB/s)\n",
        tables.len(),
        mb(gen_bytes),
        gen_seconds,
        mb(gen_bytes) / gen_seconds.max(1e-9)
    );

    for statement in statements::split(tpch::SCHEMA_SQL) {
        engine
            .run(statement.text)
            .with_context(|| format!("schema.sql, line {}", statement.line))?;
    }
    println!("Created the 8 TPC-H tables");

    load_all(engine, &tables)?;

    run_query(engine, 1, "pricing summary report", tpch::Q1_SQL, args.sf)?;
    run_query(
        engine,
        6,
        "forecasting revenue change",
        tpch::Q6_SQL,
        args.sf,
    )?;
    if let Some(dir) = &args.keep {
        println!("The .tbl files are in {}", dir.display());
    }
    Ok(())
}

/// Loads every table with COPY, printing a line per table and the total.
fn load_all(engine: &Engine, tables: &[GeneratedTable]) -> Result<()> {
    println!("Loading with COPY ... WITH (FORMAT csv, DELIMITER '|')\n");
    println!(
        "  {:<10} {:>13} {:>10} {:>8} {:>9}",
        "table", "rows", "MB", "s", "MB/s"
    );
    let opts = CopyOptions {
        delimiter: Some(b'|'),
        ..CopyOptions::default()
    };
    let started = Instant::now();
    let (mut rows, mut bytes) = (0u64, 0u64);
    for t in tables {
        let outputs = engine.run(&sqlgen::copy_from(t.table.name(), &t.path, &opts))?;
        let report: Option<&LoadReport> = outputs.iter().find_map(|o| match o {
            StatementOutput::Loaded(r) => Some(r),
            _ => None,
        });
        let Some(report) = report else {
            bail!("COPY {} reported no load", t.table.name())
        };
        println!(
            "{}",
            load_line(t.table.name(), report.rows, report.bytes, report.seconds)
        );
        rows += report.rows;
        bytes += report.bytes;
    }
    println!("  {}", "─".repeat(53));
    println!(
        "{}\n",
        load_line("total", rows, bytes, started.elapsed().as_secs_f64())
    );
    Ok(())
}

/// Runs TPC-H query `number` and prints its result, time and, at SF 1, the check against the reference answer.
fn run_query(engine: &Engine, number: i32, title: &str, sql: &str, sf: f64) -> Result<()> {
    println!("TPC-H Q{number}: {title}");
    let started = Instant::now();
    let outputs = engine
        .run(sql)
        .with_context(|| format!("TPC-H Q{number}"))?;
    let seconds = started.elapsed().as_secs_f64();
    for output in outputs {
        if let StatementOutput::Rows { schema, batches } = output {
            println!("{}", render::table(&schema, &batches, None)?);
            match reference::check(number, sf, &batches) {
                Some(Ok(())) => println!("matches the TPC-H reference answer for SF 1"),
                Some(Err(difference)) => {
                    println!("DIFFERS from the TPC-H reference answer for SF 1: {difference}")
                }
                None => {}
            }
        }
    }
    println!("Time: {seconds:.3} s\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(6001215), "6,001,215");
    }
}

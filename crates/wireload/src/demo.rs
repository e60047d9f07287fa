//! `wireload demo`: generate TPC-H, then the load–work–unload cycle (load the 8 tables,
//! run the 22 queries, unload to compressed Arrow, reload), printing every phase.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use wireload_tpch::{Answer, answers, cycle};

use crate::cli::DemoArgs;
use crate::generate;
use crate::render;
use crate::runner::Runner;

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
pub fn run(runner: &Runner, args: &DemoArgs, threads: usize) -> Result<()> {
    if !(args.sf > 0.0 && args.sf.is_finite()) {
        bail!("--sf must be a positive number, got {}", args.sf);
    }
    println!(
        "wireload demo: the load-work-unload cycle on TPC-H at scale factor {}, {threads} threads\n",
        args.sf
    );

    let temp = tempfile::Builder::new()
        .prefix("wireload-tpch-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let dir: PathBuf = match &args.keep {
        Some(dir) => dir.clone(),
        None => temp.path().to_path_buf(),
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

    println!(
        "Load: COPY ... WITH (FORMAT csv, DELIMITER '|') into the 8 tables; work: the 22 TPC-H"
    );
    println!("queries; unload: EXPORT DATABASE (Arrow IPC, LZ4); reload: IMPORT DATABASE\n");
    let export_dir = temp.path().join("export");
    let report = cycle::run(
        runner,
        &tables,
        &export_dir,
        true,
        wireload_storage::Compression::Plain,
        &mut |_| {},
    )?;

    println!(
        "  {:<10} {:>13} {:>10} {:>8} {:>9}",
        "table", "rows", "MB", "s", "MB/s"
    );
    for r in &report.tables {
        println!("{}", load_line(&r.table, r.rows, r.bytes, r.seconds));
    }
    println!("  {}", "─".repeat(53));
    println!(
        "{}\n",
        load_line(
            "total",
            report.load.rows,
            report.load.bytes,
            report.load.seconds
        )
    );

    println!("  query {:<36} {:>7} {:>9}", "", "rows", "s");
    for q in &report.queries {
        println!(
            "  Q{:<5} {:<36} {:>7} {:>9.3}",
            q.query.number, q.query.name, q.rows, q.seconds
        );
    }
    println!();
    for q in report.queries.iter().filter(|q| q.query.number == 1) {
        println!("TPC-H Q1: {}", q.query.name);
        println!("{}", render::table(&q.result.0, &q.result.1, None)?);
    }
    for q in &report.queries {
        let answer = Answer::from_batches(&q.result.0, &q.result.1)?;
        match answers::check_reference(q.query.number, args.sf, &answer) {
            Some(c) if c.ok() => println!(
                "Q{} matches the TPC-H reference answer for SF 1",
                q.query.number
            ),
            Some(c) => println!(
                "Q{} DIFFERS from the TPC-H reference answer for SF 1: {}",
                q.query.number, c.differences[0]
            ),
            None => {}
        }
    }
    println!("\n{}", report.phase_table(gen_bytes));
    if let Some(dir) = &args.keep {
        println!("\nThe .tbl files are in {}", dir.display());
    }
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

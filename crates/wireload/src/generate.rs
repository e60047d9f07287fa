//! `wireload gen tpch`: write the 8 TPC-H `.tbl` files into a directory.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use anyhow::{Context, Result};
use wireload_load::LoadControl;
use wireload_tpch::tables::{self, GeneratedTable};

use crate::cli::GenTpchArgs;
use crate::progress::ProgressWatch;

/// Generates TPC-H at `sf` into `dir` with a progress bar; returns the tables and the seconds taken.
pub fn tpch_files(
    sf: f64,
    dir: &std::path::Path,
    threads: usize,
) -> Result<(Vec<GeneratedTable>, f64)> {
    let ctl = LoadControl {
        bytes_total: Arc::new(AtomicU64::new(tables::estimated_total_bytes(sf))),
        ..Default::default()
    };
    let watch = ProgressWatch::start(&ctl);
    let started = Instant::now();
    let generated = tables::generate(sf, dir, threads, &ctl.bytes_done)
        .with_context(|| format!("cannot generate TPC-H data into {}", dir.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    drop(watch);
    Ok((generated, seconds))
}

/// Runs `wireload gen tpch`; prints a line per file on standard error.
pub fn run(args: &GenTpchArgs, threads: usize) -> Result<()> {
    let (tables, seconds) = tpch_files(args.sf, &args.out, threads)?;
    let mut bytes = 0;
    for t in &tables {
        eprintln!(
            "{:>10} rows  {:>9.1} MB  {}",
            t.rows,
            t.bytes as f64 / 1e6,
            t.path.display()
        );
        bytes += t.bytes;
    }
    eprintln!(
        "generated TPC-H SF {} in {:.2} s ({:.1} MB, {:.0} MB/s)",
        args.sf,
        seconds,
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / seconds.max(1e-9)
    );
    Ok(())
}

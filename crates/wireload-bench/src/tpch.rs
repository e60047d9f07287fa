//! `wireload-bench tpch`: the TPC-H load–work–unload cycle, run several times on fresh
//! databases, reported as medians (a table, or JSON for scripts).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::json;
use wireload_tpch::cycle::{self, CycleReport, text_table};
use wireload_tpch::tables::{self, GeneratedTable};

use crate::cli::TpchArgs;
use crate::runner::Runner;

/// The median of `values` (mean of the middle two for an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The 8 `.tbl` files in `dir`, as `wireload gen tpch` names them.
fn existing_tables(dir: &Path) -> Result<Vec<GeneratedTable>> {
    tables::TABLES
        .iter()
        .map(|&table| {
            let path = dir.join(table.file_name());
            let bytes = std::fs::metadata(&path)
                .with_context(|| {
                    format!(
                        "cannot use {} (write the files with `wireload gen tpch --out {}`)",
                        path.display(),
                        dir.display()
                    )
                })?
                .len();
            Ok(GeneratedTable {
                table,
                path,
                rows: 0,
                bytes,
            })
        })
        .collect()
}

/// Runs `wireload-bench tpch`.
pub fn run(args: &TpchArgs, threads: Option<usize>, workers: usize) -> Result<()> {
    if args.data.is_none() && !(args.sf > 0.0 && args.sf.is_finite()) {
        bail!("--sf must be a positive number, got {}", args.sf);
    }
    let work = match &args.work {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            tempfile::Builder::new()
                .prefix("wireload-bench-")
                .tempdir_in(dir)
        }
        None => tempfile::Builder::new().prefix("wireload-bench-").tempdir(),
    }
    .context("cannot create a work directory")?;
    let tables = match &args.data {
        Some(dir) => existing_tables(dir)?,
        None => {
            let dir = work.path().join("data");
            eprintln!("generating TPC-H SF {} into {}", args.sf, dir.display());
            let started = Instant::now();
            let generated = tables::generate(args.sf, &dir, workers, &AtomicU64::new(0))
                .with_context(|| format!("cannot generate TPC-H data into {}", dir.display()))?;
            eprintln!("generated in {:.2} s", started.elapsed().as_secs_f64());
            generated
        }
    };
    let csv_bytes: u64 = tables.iter().map(|t| t.bytes).sum();
    let mut reports: Vec<CycleReport> = Vec::new();
    for run in 1..=args.runs {
        let runner = Runner::new(threads)?;
        let export: PathBuf = work.path().join(format!("export-{run}"));
        let report = cycle::run(
            &runner,
            &tables,
            &export,
            !args.no_keys,
            args.compression,
            &mut |line| {
                if !args.json {
                    eprintln!("  {line}");
                }
            },
        )
        .with_context(|| format!("run {run}"))?;
        std::fs::remove_dir_all(&export)
            .with_context(|| format!("cannot remove {}", export.display()))?;
        eprintln!(
            "run {run}/{}: load {:.3} s, queries {:.3} s, unload {:.3} s, reload {:.3} s",
            args.runs,
            report.load.seconds,
            report.query_phase.seconds,
            report.unload.seconds,
            report.reload.seconds
        );
        if run == 1
            && let Some(dir) = &args.answers
        {
            cycle::write_answers(&report, dir)?;
        }
        drop(runner);
        reports.push(report);
    }
    let med = |f: &dyn Fn(&CycleReport) -> f64| median(reports.iter().map(f).collect());
    let medians = json!({
        "load": med(&|r| r.load.seconds),
        "queries": med(&|r| r.query_phase.seconds),
        "unload": med(&|r| r.unload.seconds),
        "reload": med(&|r| r.reload.seconds),
        "cycle": med(&|r| r.cycle_seconds()),
        "query_seconds": (0..reports[0].queries.len())
            .map(|i| med(&|r| r.queries[i].seconds))
            .collect::<Vec<_>>(),
    });
    if args.json {
        let doc = json!({
            "benchmark": "tpch-cycle",
            "sf": if args.data.is_some() { serde_json::Value::Null } else { json!(args.sf) },
            "threads": workers,
            "primary_keys": !args.no_keys,
            "compression": args.compression.to_string(),
            "csv_bytes": csv_bytes,
            "unload_bytes": reports[0].unload.bytes,
            "runs": reports.iter().map(CycleReport::json).collect::<Vec<_>>(),
            "median_seconds": medians,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    // the run whose cycle time is the median, shown whole
    let mut order: Vec<usize> = (0..reports.len()).collect();
    order.sort_by(|&a, &b| {
        reports[a]
            .cycle_seconds()
            .total_cmp(&reports[b].cycle_seconds())
    });
    let typical = &reports[order[order.len() / 2]];
    let rows: Vec<Vec<String>> = typical
        .queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            vec![
                format!("Q{}", q.query.number),
                q.query.name.to_string(),
                q.rows.to_string(),
                format!("{:.3}", medians["query_seconds"][i].as_f64().unwrap_or(0.0)),
            ]
        })
        .collect();
    println!(
        "TPC-H cycle, {} threads, {} run(s), {:.1} MB of CSV; median seconds per query:\n",
        workers,
        args.runs,
        csv_bytes as f64 / 1e6
    );
    println!(
        "{}\n",
        text_table(&["query", "name", "rows", "seconds"], rows, &[2, 3])
    );
    println!("the run with the median cycle time:\n");
    println!("{}", typical.phase_table(csv_bytes));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }
}

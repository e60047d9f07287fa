//! `wireload-bench answers`: TPC-H answer files checked against the expected ones with
//! the answer check of `wireload-tpch`, one JSON object per directory.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Map, Value, json};
use wireload_tpch::answers::{self, Answer, Comparison, Tolerance};

use crate::cli::{AnswersArgs, ToleranceArg};

/// Compares the answer files `q1.csv` to `q22.csv` in `dir` with those in `expected`.
fn check_dir(dir: &Path, expected: &Path, tolerance: Tolerance) -> Result<Map<String, Value>> {
    let mut queries = Map::new();
    for n in 1..=22u32 {
        let name = format!("q{n}.csv");
        let wanted = Answer::read_csv(&expected.join(&name))
            .with_context(|| format!("cannot read {}", expected.join(&name).display()))?;
        let comparison = match Answer::read_csv(&dir.join(&name)) {
            Ok(ours) => answers::compare(n, tolerance, &ours, &wanted),
            Err(e) => Comparison {
                expected_rows: wanted.rows.len(),
                differences: vec![format!("cannot read {name}: {e}")],
                ..Comparison::default()
            },
        };
        queries.insert(n.to_string(), comparison.json());
    }
    Ok(queries)
}

/// Runs `wireload-bench answers`: prints `{"DIR": {"1": {"ok": ..., ...}, ...}, ...}`.
pub fn run(args: &AnswersArgs) -> Result<()> {
    let tolerance = match args.tolerance {
        ToleranceArg::Strict => Tolerance::Strict,
        ToleranceArg::Validation => Tolerance::Validation,
    };
    let mut doc = Map::new();
    for dir in &args.answers {
        let queries = check_dir(dir, &args.expected, tolerance)?;
        doc.insert(dir.display().to_string(), Value::Object(queries));
    }
    println!("{}", serde_json::to_string_pretty(&json!(doc))?);
    Ok(())
}

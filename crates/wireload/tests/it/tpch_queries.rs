//! TPC-H Q1..Q22 (`wireload_tpch::TPCH_QUERIES`) on the `wireload` binary at SF 0.01,
//! checked against DuckDB's answers in `tests/tpch-answers-sf0.01/qN.csv` (made by
//! `bench/tpch_answers.py` from the same `wireload gen tpch --sf 0.01` data and the same
//! query files) with the answer check of `wireload_tpch::answers` at its strict tolerance.
//!
//! Every query runs as its own `wireload sql --format csv` process that loads the 8
//! tables (the DDL of `wireload_tpch::SCHEMA_SQL`) and prints the query's result as CSV:
//! `wireload sql` prints only the last statement's result, and scripts (`-f`) print
//! aligned tables only, so no single process can print all 22 results machine-readably.
//! At SF 0.01 a process takes well under a second.

use std::path::PathBuf;
use std::time::Instant;

use tempfile::TempDir;
use wireload_tpch::answers::{self, Answer, Tolerance};
use wireload_tpch::{SCHEMA_SQL, TPCH_QUERIES};

use crate::common::wireload;

/// The (name, column list) of every CREATE TABLE in the DDL.
fn tables(schema: &str) -> Vec<(String, String)> {
    let code: String = schema
        .lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    code.split(';')
        .filter_map(|statement| {
            let rest = statement.split("CREATE TABLE").nth(1)?;
            let name = rest.split_whitespace().next()?.to_string();
            let columns = &rest[rest.find('(')? + 1..rest.rfind(')')?];
            Some((
                name,
                columns.split_whitespace().collect::<Vec<_>>().join(" "),
            ))
        })
        .collect()
}

#[test]
fn tpch_queries_match_duckdb_at_sf_0_01() {
    tpch_queries_match_duckdb("plain");
}

/// The same answers from dictionary-encoded tables (every column) and from `auto` storage.
#[test]
fn tpch_queries_match_duckdb_on_dictionary_and_auto_storage() {
    tpch_queries_match_duckdb("dictionary");
    tpch_queries_match_duckdb("auto");
}

/// Runs the 22 queries on tables stored as `compression` says and compares the answers.
fn tpch_queries_match_duckdb(compression: &str) {
    let started = Instant::now();
    let dir = TempDir::new().unwrap();
    let data = dir.path();
    let generated = wireload()
        .args(["gen", "tpch", "--sf", "0.01", "--out"])
        .arg(data)
        .output()
        .unwrap();
    assert!(
        generated.status.success(),
        "gen tpch failed: {}",
        String::from_utf8_lossy(&generated.stderr)
    );

    let tables = tables(SCHEMA_SQL);
    assert_eq!(tables.len(), 8, "{tables:?}");
    let answers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/tpch-answers-sf0.01");
    let mut failures = Vec::new();
    for query in &TPCH_QUERIES {
        let n = query.number;
        let expected = Answer::read_csv(&answers.join(format!("q{n}.csv")))
            .unwrap_or_else(|e| panic!("Q{n}: no answer file: {e}"));
        let mut cmd = wireload();
        cmd.args(["sql", "--delimiter", "|", "--format", "csv"]);
        cmd.args(["--compression", compression]);
        for (name, columns) in &tables {
            cmd.arg("--table")
                .arg(format!(
                    "{name}={}",
                    data.join(format!("{name}.tbl")).display()
                ))
                .arg("--schema")
                .arg(columns);
        }
        // `--` before the SQL: its first line is a `-- TPC-H ...` comment
        let t = Instant::now();
        let out = cmd.arg("--").arg(query.sql).output().unwrap();
        let elapsed = t.elapsed();
        if !out.status.success() {
            failures.push(format!(
                "Q{n} ({compression}) failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            continue;
        }
        let actual = Answer::parse_csv(&String::from_utf8(out.stdout).unwrap());
        let comparison = answers::compare(n, Tolerance::Strict, &actual, &expected);
        eprintln!(
            "Q{n} ({compression}): {} rows in {:.3} s{}",
            actual.rows.len(),
            elapsed.as_secs_f64(),
            if comparison.ok() { "" } else { ", DIFFERS" }
        );
        failures.extend(
            comparison
                .differences
                .into_iter()
                .map(|e| format!("Q{n} ({compression}): {e}")),
        );
    }
    eprintln!(
        "22 TPC-H queries at SF 0.01 on {compression} storage in {:.1} s (data generation \
         included)",
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "answers differ from DuckDB's:\n{}",
        failures.join("\n")
    );
}

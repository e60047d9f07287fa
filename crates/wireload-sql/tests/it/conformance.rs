//! The public CSV conformance suite (`shared/conformance`, beside the repository), run in
//! place through SQL: CREATE TABLE, COPY ... FROM, then the case's query.

use std::path::{Path, PathBuf};

use crate::common::{Row, db, lit, rows_of, run};
use serde_json::Value;
use wireload_load::{Dialect, Source};
use wireload_sql::{Database, StatementOutput};

/// Where CI puts the suite: `shared/` is cloned beside the repository.
const SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/conformance");

/// Cases whose expectation contradicts one of wireload's documented choices. They still
/// run; their outcome is not counted.
const ALLOWED_TO_DIFFER: &[(&str, &str)] = &[
    // tagged "ambiguous" by the suite: PostgreSQL's COPY ... (HEADER) and DuckDB load an
    // empty file as no rows, and so does wireload
    (
        "csv-test-data/bad-header-no-header",
        "an empty file with HEADER loads no rows, as in PostgreSQL and DuckDB",
    ),
    // wireload skips empty lines (as DuckDB does); these expect an empty line to be a record
    (
        "csv-test-data/all-empty",
        "empty lines are skipped, not records",
    ),
    (
        "csv-test-data/empty-one-column",
        "empty lines are skipped, not records",
    ),
    (
        "duckdb/many_empty_lines",
        "empty lines are skipped, not records of one NULL field",
    ),
    // every record must have the table's field count; this case is ragged by design
    (
        "cpython/excel_quoted_nl",
        "records must have as many fields as the table has columns",
    ),
];

/// How a case is loaded: the default chunk size, and tiny chunks (many widows and orphans).
const CHUNKINGS: &[(&str, &str)] = &[
    ("default chunks", ""),
    ("13-byte chunks", ", CHUNK_SIZE 13"),
];

fn suite_dir() -> PathBuf {
    PathBuf::from(SUITE)
}

fn str_field<'a>(case: &'a Value, key: &str) -> Option<&'a str> {
    case.get(key).and_then(Value::as_str)
}

/// The case's dialect; `line_terminator` is detected by the loader.
fn dialect_of(case: &Value) -> Dialect {
    let d = &case["dialect"];
    let byte = |key: &str| -> Option<u8> {
        d.get(key)
            .and_then(Value::as_str)
            .and_then(|s| s.as_bytes().first().copied())
    };
    let quote = byte("quote");
    Dialect {
        delimiter: byte("delimiter").unwrap_or(b','),
        quote,
        escape: match d.get("escape").and_then(Value::as_str) {
            Some(s) => s.as_bytes().first().copied(),
            None => quote,
        },
        header: d.get("header").and_then(Value::as_bool).unwrap_or(false),
        null: Vec::new(),
    }
}

fn byte_lit(b: Option<u8>) -> String {
    match b {
        Some(b) => lit(&(b as char).to_string()),
        None => "''".into(),
    }
}

/// The COPY options spelling `dialect`.
fn copy_options(dialect: &Dialect) -> String {
    format!(
        "FORMAT csv, DELIMITER {}, QUOTE {}, ESCAPE {}, HEADER {}",
        byte_lit(Some(dialect.delimiter)),
        byte_lit(dialect.quote),
        byte_lit(dialect.escape),
        dialect.header
    )
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// All-VARCHAR columns named from the header (or column1..n). Names are lowercased, as
/// unquoted SQL identifiers are, so that a query can name a header column `Person` unquoted.
fn varchar_columns(input: &Path, dialect: &Dialect) -> Result<String, String> {
    let names = match wireload_load::header_names(&Source::File(input.to_path_buf()), dialect) {
        Ok(names) => names,
        // no record at all, so no names: the table gets one column (below) and loads no rows
        Err(_)
            if std::fs::read(input).is_ok_and(|b| b.iter().all(|&c| c == b'\n' || c == b'\r')) =>
        {
            Vec::new()
        }
        Err(e) => return Err(e.to_string()),
    };
    let mut cols: Vec<String> = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let mut name = if n.is_empty() {
            format!("column{}", i + 1)
        } else {
            n.to_lowercase()
        };
        while cols.contains(&name) {
            name.push('_');
        }
        cols.push(name);
    }
    if cols.is_empty() {
        // an empty file: one column, no rows
        cols.push("column1".into());
    }
    Ok(cols
        .iter()
        .map(|c| format!("{} VARCHAR", quote_ident(c)))
        .collect::<Vec<_>>()
        .join(", "))
}

fn expected_rows(case: &Value, dir: &Path) -> Option<Vec<Row>> {
    let value = match (
        case.get("expected_rows"),
        str_field(case, "expected_rows_file"),
    ) {
        (Some(v), _) => v.clone(),
        (None, Some(f)) => {
            serde_json::from_str(&std::fs::read_to_string(dir.join(f)).ok()?).ok()?
        }
        (None, None) => return None,
    };
    Some(
        value
            .as_array()?
            .iter()
            .map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .collect(),
    )
}

fn normalize(rows: Vec<Row>, null_distinguished: bool) -> Vec<Row> {
    if null_distinguished {
        return rows;
    }
    rows.into_iter()
        .map(|r| r.into_iter().map(|v| Some(v.unwrap_or_default())).collect())
        .collect()
}

fn show(rows: &[Row]) -> String {
    let shown: Vec<String> = rows.iter().take(5).map(|r| format!("{r:?}")).collect();
    let more = if rows.len() > 5 {
        format!(" ... ({} rows)", rows.len())
    } else {
        String::new()
    };
    format!("[{}]{more}", shown.join(", "))
}

/// What a passing case checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checked {
    Rows,
    Error,
}

/// Runs one case; Err describes how it failed.
async fn run_case(
    db: &Database,
    case: &Value,
    dir: &Path,
    chunking: &str,
) -> Result<Checked, String> {
    let input = dir.join(str_field(case, "input").ok_or("case without input")?);
    let dialect = dialect_of(case);
    let expect_error = case
        .get("expect_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let columns = match str_field(case, "schema") {
        Some(schema) => schema.to_string(),
        None => match varchar_columns(&input, &dialect) {
            Ok(c) => c,
            Err(e) if expect_error => return check_error(case, &e),
            Err(e) => return Err(format!("header_names failed: {e}")),
        },
    };
    run(
        db,
        &format!("DROP TABLE IF EXISTS t; CREATE TABLE t ({columns})"),
    )
    .await
    .map_err(|e| format!("CREATE TABLE t ({columns}) failed: {e}"))?;
    let copy = format!(
        "COPY t FROM {} WITH ({}{chunking})",
        lit(input.to_str().unwrap()),
        copy_options(&dialect)
    );
    match run(db, &copy).await {
        Err(e) if expect_error => return check_error(case, &e.to_string()),
        Err(e) => return Err(format!("{copy} failed: {e}")),
        Ok(_) if expect_error => {
            let got = rows_of_query(db, "SELECT * FROM t")
                .await
                .map(|r| show(&r))
                .unwrap_or_default();
            return Err(format!(
                "expected an error ({}), but the load succeeded: {got}",
                str_field(case, "error_reason").unwrap_or("?")
            ));
        }
        Ok(_) => {}
    }
    let sql = str_field(case, "query").unwrap_or("SELECT * FROM t");
    let got = rows_of_query(db, sql).await?;
    let null_distinguished = case
        .get("null_distinguished")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Some(n) = case.get("expected_row_count").and_then(Value::as_u64)
        && got.len() as u64 != n
    {
        return Err(format!("expected {n} rows, got {}", got.len()));
    }
    let want = expected_rows(case, dir).ok_or("case without an expectation")?;
    let (got, want) = (
        normalize(got, null_distinguished),
        normalize(want, null_distinguished),
    );
    if got != want {
        let first = got
            .iter()
            .zip(&want)
            .position(|(g, w)| g != w)
            .unwrap_or(got.len().min(want.len()));
        return Err(format!(
            "rows differ (first at row {first}): got {} rows {}, expected {} rows {}",
            got.len(),
            show(&got[first.min(got.len())..]),
            want.len(),
            show(&want[first.min(want.len())..])
        ));
    }
    Ok(Checked::Rows)
}

fn check_error(case: &Value, message: &str) -> Result<Checked, String> {
    if let Some(line) = case.get("error_line").and_then(Value::as_u64)
        && !message.contains(&format!("line {line}"))
    {
        return Err(format!("the error should name line {line}: {message}"));
    }
    if let Some(col) = str_field(case, "error_column")
        && !message.contains(col)
    {
        return Err(format!("the error should name column {col}: {message}"));
    }
    Ok(Checked::Error)
}

async fn rows_of_query(db: &Database, sql: &str) -> Result<Vec<Row>, String> {
    match run(db, sql)
        .await
        .map_err(|e| format!("{sql} failed: {e}"))?
        .pop()
    {
        Some(StatementOutput::Rows { batches, .. }) => Ok(rows_of(&batches)),
        other => Err(format!("{sql}: no rows: {other:?}")),
    }
}

#[tokio::test]
async fn csv_conformance_suite() {
    let dir = suite_dir();
    let manifest_path = dir.join("csv/manifest.json");
    let text = std::fs::read_to_string(&manifest_path).unwrap_or_else(|e| {
        panic!(
            "the CSV conformance suite is missing: cannot read {} ({e}); clone shared/ beside the repository",
            manifest_path.display()
        )
    });
    let manifest: Value = serde_json::from_str(&text).expect("manifest.json is JSON");
    let cases = manifest["cases"].as_array().expect("manifest has cases");
    assert!(
        cases.len() > 100,
        "expected the full suite, found {} cases",
        cases.len()
    );

    let db = db(2);
    // one query partition, so that `SELECT * FROM t` returns rows in file order
    run(&db, "SET datafusion.execution.target_partitions = 1")
        .await
        .unwrap();
    let mut failures = Vec::new();
    let mut allowed = Vec::new();
    let mut checked = Vec::new();
    for case in cases {
        let id = str_field(case, "id").unwrap_or("?");
        for (label, chunking) in CHUNKINGS {
            match run_case(&db, case, &dir, chunking).await {
                Ok(c) => checked.push(c),
                Err(why) => match ALLOWED_TO_DIFFER.iter().find(|(a, _)| *a == id) {
                    Some((_, reason)) => allowed.push(format!("{id} ({label}): {reason}")),
                    None => failures.push(format!("{id} ({label}): {why}")),
                },
            }
        }
    }
    if !allowed.is_empty() {
        eprintln!(
            "cases that differ by wireload's documented choices:\n  {}",
            allowed.join("\n  ")
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} case runs failed:\n  {}",
        failures.len(),
        cases.len() * CHUNKINGS.len(),
        failures.join("\n  ")
    );
    // the suite really compared rows and saw errors
    let rows = checked.iter().filter(|c| **c == Checked::Rows).count();
    let errors = checked.iter().filter(|c| **c == Checked::Error).count();
    assert!(
        rows >= 90 * CHUNKINGS.len() && errors >= 15 * CHUNKINGS.len(),
        "{rows} row cases, {errors} error cases"
    );
}

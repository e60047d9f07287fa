//! Runs the sqllogictest files of `tests/slt/` over a fresh [`Database`] each.
//!
//! Values print as PostgreSQL's text output does: `NULL`, `true`/`false`, floats in their
//! shortest form, dates as `YYYY-MM-DD`, decimals with their scale, the empty string as
//! `(empty)`. An error prints as `[SQLSTATE] message`, so `statement error` regexes can check
//! both (and `statement error (23505)` checks the SQLSTATE alone). `connection <name>` opens
//! another session over the same tables; `control substitution on` makes `$__TEST_DIR__` a
//! temporary directory for COPY files. A statement without rows (`CREATE TABLE`, `COMMIT`)
//! answers its command tag as one row, so `query T` can check that `COMMIT` said `ROLLBACK`;
//! INSERT, UPDATE and DELETE answer their row count (`statement count 3`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Float32Type, Float64Type};
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType, Runner};
use wireload_load::LoadControl;
use wireload_sql::{Database, DbConfig, SqlError, StatementOutput};

/// One session of a test file's database.
struct Session(Database);

/// A failed statement: its SQLSTATE and message.
#[derive(Debug)]
struct SltError(SqlError);

impl std::fmt::Display for SltError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.0.sqlstate(), self.0)
    }
}

impl std::error::Error for SltError {}

#[async_trait::async_trait]
impl AsyncDB for Session {
    type Error = SltError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        let outputs = self
            .0
            .execute(sql, &LoadControl::default())
            .await
            .map_err(SltError)?;
        Ok(match outputs.into_iter().last() {
            Some(StatementOutput::Rows { batches, .. }) => rows(&batches),
            Some(StatementOutput::Changed(change)) => match change.returning {
                Some((_, batches)) => rows(&batches),
                None => DBOutput::StatementComplete(change.rows),
            },
            Some(StatementOutput::Loaded(report)) => DBOutput::StatementComplete(report.rows),
            Some(StatementOutput::Unloaded(summary)) => DBOutput::StatementComplete(summary.rows),
            Some(StatementOutput::Done(tag)) => DBOutput::Rows {
                types: vec![DefaultColumnType::Text],
                rows: vec![vec![tag]],
            },
            None => DBOutput::StatementComplete(0),
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "wireload"
    }

    async fn sleep(dur: std::time::Duration) {
        tokio::time::sleep(dur).await;
    }

    fn error_sql_state(err: &SltError) -> Option<String> {
        Some(err.0.sqlstate().to_string())
    }
}

/// The rows of `batches` as text, with each column's sqllogictest type.
fn rows(batches: &[RecordBatch]) -> DBOutput<DefaultColumnType> {
    let types = batches.first().map_or_else(Vec::new, |b| {
        b.schema()
            .fields()
            .iter()
            .map(|f| column_type(f.data_type()))
            .collect()
    });
    let mut rows = Vec::new();
    for batch in batches {
        let columns: Vec<Vec<String>> = batch.columns().iter().map(|c| texts(c.as_ref())).collect();
        for r in 0..batch.num_rows() {
            rows.push(columns.iter().map(|c| c[r].clone()).collect());
        }
    }
    DBOutput::Rows { types, rows }
}

/// The sqllogictest type letter of a column: I integers, R floats and decimals, T the rest.
fn column_type(t: &DataType) -> DefaultColumnType {
    match t {
        t if t.is_integer() => DefaultColumnType::Integer,
        t if t.is_floating()
            || matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..)) =>
        {
            DefaultColumnType::FloatingPoint
        }
        DataType::Dictionary(_, v) => column_type(v),
        _ => DefaultColumnType::Text,
    }
}

/// Every value of `column` as PostgreSQL's text output writes it.
fn texts(column: &dyn Array) -> Vec<String> {
    let value = |i: usize, text: String| match () {
        _ if column.is_null(i) => "NULL".to_string(),
        _ if text.is_empty() => "(empty)".to_string(),
        _ => text,
    };
    match column.data_type() {
        DataType::Float64 => {
            let a = column.as_primitive::<Float64Type>();
            (0..a.len()).map(|i| value(i, float(a.value(i)))).collect()
        }
        DataType::Float32 => {
            let a = column.as_primitive::<Float32Type>();
            (0..a.len())
                .map(|i| value(i, float(f64::from(a.value(i)))))
                .collect()
        }
        DataType::Dictionary(_, v) => {
            let plain = arrow::compute::cast(column, v).expect("a dictionary casts to its values");
            texts(plain.as_ref())
        }
        _ => {
            let options = FormatOptions::default()
                .with_timestamp_format(Some("%Y-%m-%d %H:%M:%S%.f"))
                .with_timestamp_tz_format(Some("%Y-%m-%d %H:%M:%S%.f%:z"));
            let f = ArrayFormatter::try_new(column, &options).expect("every column formats");
            (0..column.len())
                .map(|i| value(i, f.value(i).to_string()))
                .collect()
        }
    }
}

/// A float in its shortest form, as PostgreSQL prints it (`1`, `0.5`, `NaN`, `Infinity`).
fn float(v: f64) -> String {
    match v {
        v if v.is_nan() => "NaN".to_string(),
        f64::INFINITY => "Infinity".to_string(),
        f64::NEG_INFINITY => "-Infinity".to_string(),
        v => format!("{v}"),
    }
}

/// A runner whose connections are sessions of one fresh database.
fn runner() -> Runner<Session, impl sqllogictest::MakeConnection<Conn = Session>> {
    let db = Arc::new(Database::new(DbConfig {
        threads: Some(2),
        ..Default::default()
    }));
    Runner::new(move || {
        let session = Session(db.new_session());
        async move { Ok::<_, SltError>(session) }
    })
}

/// The `.slt` files of `tests/slt/`, sorted.
fn slt_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    files
}

/// Runs every file (each in a fresh database) and fails listing every file that failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slt_files_pass() {
    let files = slt_files();
    assert!(!files.is_empty(), "no .slt files");
    let mut failures = Vec::new();
    for file in &files {
        if let Err(e) = runner().run_file_async(file).await {
            failures.push(format!("{}", e.display(false)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} files failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

/// The harness reports a wrong expected result instead of passing everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_result_fails() {
    let script = "statement ok\nCREATE TABLE t (a INT)\n\nstatement ok\nINSERT INTO t VALUES (1)\n\n\
                  query I\nSELECT a FROM t\n----\n2\n";
    let err = runner()
        .run_script_async(script)
        .await
        .expect_err("a wrong answer fails");
    assert!(
        err.to_string().contains("query result mismatch"),
        "unexpected failure: {err}"
    );
    let right = script.replace("----\n2", "----\n1");
    runner()
        .run_script_async(&right)
        .await
        .expect("the right answer passes");
}

/// A statement expected to fail that succeeds, and an error that does not match, fail too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_error_fails() {
    let ok_expected_error = "statement error\nCREATE TABLE t (a INT)\n";
    assert!(runner().run_script_async(ok_expected_error).await.is_err());
    let wrong_message = "statement error no such words\nSELECT * FROM missing\n";
    assert!(runner().run_script_async(wrong_message).await.is_err());
    let wrong_state = "statement error (23505)\nSELECT * FROM missing\n";
    assert!(runner().run_script_async(wrong_state).await.is_err());
    let right = "statement error (42P01)\nSELECT * FROM missing\n\n\
                 statement error \\[42P01\\] .*missing\nSELECT * FROM missing\n";
    runner()
        .run_script_async(right)
        .await
        .expect("matching errors pass");
}

//! Helpers shared by the integration tests.

use arrow::array::{Array, StringArray};
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use wireload_load::LoadControl;
use wireload_sql::{Database, DbConfig, SqlError, StatementOutput};

/// A row as strings, NULL as None.
pub type Row = Vec<Option<String>>;

/// A database with `threads` worker threads.
pub fn db(threads: usize) -> Database {
    Database::new(DbConfig {
        threads: Some(threads),
        ..Default::default()
    })
}

/// Every value of `batches` cast to text, row by row.
pub fn rows_of(batches: &[RecordBatch]) -> Vec<Row> {
    let mut rows = Vec::new();
    for b in batches {
        let cols: Vec<StringArray> = b
            .columns()
            .iter()
            .map(|c| {
                let s =
                    arrow::compute::cast(c, &DataType::Utf8).expect("every column casts to text");
                s.as_any()
                    .downcast_ref::<StringArray>()
                    .expect("utf8")
                    .clone()
            })
            .collect();
        for r in 0..b.num_rows() {
            rows.push(
                cols.iter()
                    .map(|c| (!c.is_null(r)).then(|| c.value(r).to_string()))
                    .collect(),
            );
        }
    }
    rows
}

/// Runs `sql` and returns every output.
pub async fn run(db: &Database, sql: &str) -> Result<Vec<StatementOutput>, SqlError> {
    db.execute(sql, &LoadControl::default()).await
}

/// Runs `sql` and returns the rows of its last statement; panics on errors.
pub async fn query(db: &Database, sql: &str) -> Vec<Row> {
    let out = run(db, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    match out.last() {
        Some(StatementOutput::Rows { batches, .. }) => rows_of(batches),
        other => panic!("{sql}: expected rows, got {other:?}"),
    }
}

/// Runs `sql`, which must fail, and returns the error's message.
pub async fn fail(db: &Database, sql: &str) -> String {
    match run(db, sql).await {
        Ok(out) => panic!("{sql}: expected an error, got {out:?}"),
        Err(e) => e.to_string(),
    }
}

/// Shorthand for an expected row.
pub fn row(values: &[Option<&str>]) -> Row {
    values.iter().map(|v| v.map(str::to_string)).collect()
}

/// A row without NULLs.
pub fn srow(values: &[&str]) -> Row {
    values.iter().map(|v| Some(v.to_string())).collect()
}

/// A SQL string literal for `s`.
pub fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

//! Shared helpers of the load tests.
#![allow(dead_code)]

use std::sync::Arc;

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use wireload_load::{LoadControl, LoadError, LoadOptions, LoadReport, Source, load_into};
use wireload_storage::{Catalog, Partitioning, Table, TableDef};

/// A new table `t` with `schema`.
pub fn table(schema: &str, partitioning: Partitioning) -> Arc<Table> {
    let catalog = Catalog::default();
    let def = TableDef::new(
        "t",
        wireload_types::sql::parse_columns(schema).unwrap(),
        partitioning,
    )
    .unwrap();
    catalog.create_table(def, false).unwrap()
}

/// An all-VARCHAR schema of `n` columns.
pub fn varchar_schema(n: usize) -> String {
    (1..=n)
        .map(|i| format!("c{i} VARCHAR"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Loads `data` (named "input.csv") into `t`.
pub fn load(t: &Table, data: &[u8], opts: &LoadOptions) -> Result<LoadReport, LoadError> {
    let src = Source::Bytes {
        name: "input.csv".into(),
        data: Arc::from(data.to_vec()),
    };
    load_into(t, &src, opts, &LoadControl::default())
}

/// Rows as strings, NULL as None.
pub type Rows = Vec<Vec<Option<String>>>;

/// Every row of the table as strings (NULL = None), partition by partition, chunk by chunk.
pub fn rows(t: &Table) -> Rows {
    let snap = t.snapshot();
    let mut out = Vec::new();
    for batch in &snap.live_chunks().unwrap() {
        let cols: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| cast(c, &DataType::Utf8).unwrap())
            .collect();
        for r in 0..batch.num_rows() {
            out.push(
                cols.iter()
                    .map(|c| (!c.is_null(r)).then(|| c.as_string::<i32>().value(r).to_string()))
                    .collect(),
            );
        }
    }
    out
}

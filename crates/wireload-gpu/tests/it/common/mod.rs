//! Helpers of the GPU engine's tests: the generator (in the library, `check`), and loads
//! with the CPU loader to compare with.
#![allow(dead_code)]

use std::sync::Arc;

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
#[allow(unused_imports)]
pub use wireload_gpu::testing::check::{Case, Gen, case, column, columns_text, not_null};
use wireload_load::{LoadControl, LoadOptions, Source, load_into};
use wireload_storage::{Catalog, Partitioning, Table, TableDef};
use wireload_types::{ColumnDef, TableSchema};

/// A new table `t` with `columns`.
pub fn table(columns: &[ColumnDef]) -> Arc<Table> {
    let catalog = Catalog::default();
    let schema = TableSchema {
        columns: columns.to_vec(),
    };
    let def = TableDef::new("t", schema, Partitioning::Single).unwrap();
    catalog.create_table(def, false).unwrap()
}

/// The source of a case.
pub fn source(c: &Case) -> Source {
    Source::Bytes {
        name: "input.csv".into(),
        data: Arc::from(c.data.clone()),
    }
}

/// Loads a case with the CPU loader: the rows as strings, or the error's text.
pub fn cpu_load(c: &Case) -> Result<Vec<Vec<Option<String>>>, String> {
    let t = table(&c.columns);
    let opts = LoadOptions {
        dialect: c.dialect.clone(),
        ..LoadOptions::default()
    };
    load_into(&t, &source(c), &opts, &LoadControl::default()).map_err(|e| e.to_string())?;
    Ok(rows(&t))
}

/// Every row of the table as strings (NULL = None).
pub fn rows(t: &Table) -> Vec<Vec<Option<String>>> {
    let snap = t.snapshot();
    let batches: Vec<RecordBatch> = snap.live_chunks().unwrap();
    batch_rows(&batches)
}

/// The rows of batches as strings (NULL = None); floats keep their bits.
pub fn batch_rows(batches: &[RecordBatch]) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    for batch in batches {
        let cols: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| match c.data_type() {
                DataType::Float32 => cast(
                    &arrow::compute::kernels::cast::cast(c, &DataType::Float32).unwrap(),
                    &DataType::Utf8,
                )
                .unwrap(),
                _ => cast(c, &DataType::Utf8).unwrap(),
            })
            .collect();
        let bits: Vec<Option<Vec<String>>> = batch
            .columns()
            .iter()
            .map(|c| match c.data_type() {
                DataType::Float64 => Some(
                    c.as_primitive::<arrow::datatypes::Float64Type>()
                        .values()
                        .iter()
                        .map(|v| format!("{:x}", v.to_bits()))
                        .collect(),
                ),
                DataType::Float32 => Some(
                    c.as_primitive::<arrow::datatypes::Float32Type>()
                        .values()
                        .iter()
                        .map(|v| format!("{:x}", v.to_bits()))
                        .collect(),
                ),
                _ => None,
            })
            .collect();
        for r in 0..batch.num_rows() {
            out.push(
                cols.iter()
                    .zip(&bits)
                    .map(|(c, b)| {
                        (!c.is_null(r)).then(|| match b {
                            Some(b) => b[r].clone(),
                            None => c.as_string::<i32>().value(r).to_string(),
                        })
                    })
                    .collect(),
            );
        }
    }
    out
}

//! System views, computed from the catalog when a query scans them: `wireload_tables`
//! (`table_name`, `rows`, `bytes`, `index_bytes`) and `wireload_columns` (`table_name`,
//! `column_name`, `type`, `storage`, `dictionary_entries`, `bytes`) and `wireload_loads`
//! (the last Shared Loading pushes the server accounted: `table_name`, `kind`, `source`,
//! `rows`, `bytes`, `seconds`, `cpu_seconds`, `steps`, `finished`). Bytes are bytes in
//! memory: a column's arrays (codes for dictionary columns) and its dictionaries once;
//! a table's columns and indexes.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::ExecutionPlan;
use wireload_storage::Catalog;

/// Which system view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemView {
    /// `wireload_tables`: one row per table.
    Tables,
    /// `wireload_columns`: one row per column of every table.
    Columns,
    /// `wireload_loads`: one row per push the server remembers.
    Loads,
}

impl SystemView {
    /// The view called `name`, if one is.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "wireload_tables" => Some(SystemView::Tables),
            "wireload_columns" => Some(SystemView::Columns),
            "wireload_loads" => Some(SystemView::Loads),
            _ => None,
        }
    }

    /// The view's columns.
    fn schema(self) -> SchemaRef {
        let text = |n: &str| Field::new(n, DataType::Utf8, false);
        let int = |n: &str, null: bool| Field::new(n, DataType::Int64, null);
        Arc::new(Schema::new(match self {
            SystemView::Tables => vec![
                text("table_name"),
                int("rows", false),
                int("bytes", false),
                int("index_bytes", false),
            ],
            SystemView::Columns => vec![
                text("table_name"),
                text("column_name"),
                text("type"),
                text("storage"),
                int("dictionary_entries", true),
                int("bytes", false),
            ],
            SystemView::Loads => vec![
                text("table_name"),
                text("kind"),
                text("source"),
                int("rows", false),
                int("bytes", false),
                Field::new("seconds", DataType::Float64, false),
                Field::new("cpu_seconds", DataType::Float64, false),
                text("steps"),
                text("finished"),
            ],
        }))
    }

    /// The view's rows now.
    fn rows(self, catalog: &Catalog) -> Result<RecordBatch> {
        let tables: Vec<_> = catalog
            .table_names()
            .into_iter()
            .filter_map(|n| catalog.table(&n))
            .collect();
        let columns: Vec<ArrayRef> = match self {
            SystemView::Loads => {
                let loads = catalog.loads();
                let steps = |l: &wireload_storage::LoadRecord| {
                    l.steps
                        .iter()
                        .map(|(k, v)| format!("{k} {v:.3}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let finished = |l: &wireload_storage::LoadRecord| {
                    let t = l
                        .finished
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap_or_default();
                    let secs = t.as_secs() as i64;
                    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
                    let date = arrow::temporal_conversions::date32_to_datetime(days as i32)
                        .map(|d| d.format("%Y-%m-%d").to_string())
                        .unwrap_or_default();
                    format!(
                        "{date} {:02}:{:02}:{:02}",
                        rest / 3600,
                        rest % 3600 / 60,
                        rest % 60
                    )
                };
                vec![
                    Arc::new(StringArray::from_iter_values(
                        loads.iter().map(|l| &l.table),
                    )),
                    Arc::new(StringArray::from_iter_values(loads.iter().map(|l| &l.kind))),
                    Arc::new(StringArray::from_iter_values(
                        loads.iter().map(|l| &l.source),
                    )),
                    Arc::new(Int64Array::from_iter_values(
                        loads.iter().map(|l| l.rows as i64),
                    )),
                    Arc::new(Int64Array::from_iter_values(
                        loads.iter().map(|l| l.bytes as i64),
                    )),
                    Arc::new(Float64Array::from_iter_values(
                        loads.iter().map(|l| l.seconds),
                    )),
                    Arc::new(Float64Array::from_iter_values(
                        loads
                            .iter()
                            .map(|l| l.steps.iter().map(|(_, v)| v).sum::<f64>()),
                    )),
                    Arc::new(StringArray::from_iter_values(loads.iter().map(steps))),
                    Arc::new(StringArray::from_iter_values(loads.iter().map(finished))),
                ]
            }
            SystemView::Tables => {
                let (mut names, mut rows, mut bytes, mut index) = (vec![], vec![], vec![], vec![]);
                for t in &tables {
                    let v = t.snapshot();
                    let (data, ix) = (v.data_bytes(), v.index_bytes());
                    names.push(t.name().to_string());
                    rows.push(v.num_rows() as i64);
                    bytes.push((data + ix) as i64);
                    index.push(ix as i64);
                }
                vec![
                    Arc::new(StringArray::from(names)),
                    Arc::new(Int64Array::from(rows)),
                    Arc::new(Int64Array::from(bytes)),
                    Arc::new(Int64Array::from(index)),
                ]
            }
            SystemView::Columns => {
                let (mut table, mut name, mut ty) = (vec![], vec![], vec![]);
                let (mut storage, mut entries, mut bytes) = (vec![], vec![], vec![]);
                for t in &tables {
                    let v = t.snapshot();
                    for (c, col) in t.def().schema.columns.iter().enumerate() {
                        table.push(t.name().to_string());
                        name.push(col.name.clone());
                        ty.push(col.ty.to_string());
                        storage.push(v.stored_as[c].name());
                        entries.push(v.dictionary_entries(c).map(|n| n as i64));
                        bytes.push(v.column_bytes(c) as i64);
                    }
                }
                vec![
                    Arc::new(StringArray::from(table)),
                    Arc::new(StringArray::from(name)),
                    Arc::new(StringArray::from(ty)),
                    Arc::new(StringArray::from(storage)),
                    Arc::new(Int64Array::from(entries)),
                    Arc::new(Int64Array::from(bytes)),
                ]
            }
        };
        Ok(RecordBatch::try_new(self.schema(), columns)?)
    }
}

/// A system view as a DataFusion table.
#[derive(Debug)]
pub struct SystemTable {
    view: SystemView,
    catalog: Arc<Catalog>,
}

impl SystemTable {
    /// `view` over `catalog`.
    pub fn new(view: SystemView, catalog: Arc<Catalog>) -> Self {
        SystemTable { view, catalog }
    }
}

#[async_trait]
impl TableProvider for SystemTable {
    fn schema(&self) -> SchemaRef {
        self.view.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let batch = self.view.rows(&self.catalog)?;
        Ok(MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            self.view.schema(),
            projection.cloned(),
        )?)
    }
}

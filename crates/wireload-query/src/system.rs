//! System views, computed from the catalog when a query scans them: `wireload_tables`
//! (`table_name`, `rows`, `bytes`, `index_bytes`) and `wireload_columns` (`table_name`,
//! `column_name`, `type`, `storage`, `dictionary_entries`, `bytes`). Bytes are bytes in
//! memory: a column's arrays (codes for dictionary columns) and its dictionaries once;
//! a table's columns and indexes.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, StringArray};
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
}

impl SystemView {
    /// The view called `name`, if one is.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "wireload_tables" => Some(SystemView::Tables),
            "wireload_columns" => Some(SystemView::Columns),
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
                        storage.push(v.encodings[c].name());
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

//! DataFusion's view of the wireload catalog: a schema whose tables are the catalog's
//! tables (plus DataFusion views), and a table provider that scans one snapshot per query.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, Session, TableProvider};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use wireload_storage::{Catalog, Table};

use crate::code_filters;
use crate::index::{self, IndexAccess};
use crate::scan::SnapshotScanExec;
use crate::system::{SystemTable, SystemView};

/// A wireload table as a DataFusion table: every scan reads the snapshot current when it is
/// planned. Filters an index of that snapshot can answer are pushed down (`Inexact`:
/// DataFusion still filters the rows) and the scan becomes an index scan (`IndexScanExec`
/// in EXPLAIN), whose lookups run when it executes: when they select at most the index
/// fraction of the rows it reads only those, otherwise the whole snapshot.
#[derive(Debug)]
pub struct SnapshotTable {
    table: Arc<Table>,
    /// the types plans over this provider see (fixed when it is made: dictionary columns as
    /// `Dictionary(UInt32, value)`); every scan hands its snapshot's columns over as these
    schema: SchemaRef,
    index_pushdown: bool,
    index_fraction: f64,
}

impl SnapshotTable {
    /// An index scan is used when it selects at most this fraction of the table's rows.
    pub const DEFAULT_INDEX_FRACTION: f64 = 0.25;

    /// The provider for `table`.
    pub fn new(table: Arc<Table>) -> Self {
        SnapshotTable {
            schema: table.snapshot().scan_schema(),
            table,
            index_pushdown: true,
            index_fraction: Self::DEFAULT_INDEX_FRACTION,
        }
    }

    /// This provider without index pushdown: every scan reads the whole snapshot.
    pub fn without_index_pushdown(mut self) -> Self {
        self.index_pushdown = false;
        self
    }

    /// This provider using an index scan whenever it selects at most `fraction` (0 to 1) of
    /// the table's rows; the default is [`Self::DEFAULT_INDEX_FRACTION`].
    pub fn with_index_fraction(mut self, fraction: f64) -> Self {
        self.index_fraction = fraction;
        self
    }
}

#[async_trait]
impl TableProvider for SnapshotTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // one snapshot for the whole scan: concurrent loads publish new versions we do not see
        let version = self.table.snapshot();
        let config = state.config();
        let def = Arc::clone(self.table.def());
        let access = if self.index_pushdown {
            IndexAccess::choose(&def, &version, filters)
        } else {
            None
        };
        let exec = SnapshotScanExec::new(
            def,
            version,
            Arc::clone(&self.schema),
            projection,
            limit,
            config.target_partitions(),
            config.batch_size(),
        )?;
        Ok(match access {
            Some(access) => Arc::new(exec.with_index(access, self.index_fraction)),
            None => Arc::new(exec.with_code_filters(filters)),
        })
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        // DataFusion keeps filtering the rows: an index or a code test only narrows what is
        // read
        let version = self.table.snapshot();
        let schema = &self.table.def().arrow_schema;
        let by_index = if self.index_pushdown {
            index::pushdown(schema, &version, filters)
        } else {
            vec![TableProviderFilterPushDown::Unsupported; filters.len()]
        };
        let by_codes = code_filters::pushdown(schema, &version, filters);
        Ok(by_index
            .into_iter()
            .zip(by_codes)
            .map(|(index, codes)| match index {
                TableProviderFilterPushDown::Unsupported if codes => {
                    TableProviderFilterPushDown::Inexact
                }
                other => other,
            })
            .collect())
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        _input: Arc<dyn ExecutionPlan>,
        _insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Err(DataFusionError::NotImplemented(format!(
            "INSERT into table \"{}\" is not supported yet; load rows with COPY {} FROM 'file'",
            self.table.name(),
            self.table.name()
        )))
    }
}

/// The default schema: the catalog's tables, plus views and other providers DataFusion registers.
#[derive(Debug)]
pub struct CatalogSchema {
    catalog: Arc<Catalog>,
    others: Arc<RwLock<BTreeMap<String, Arc<dyn TableProvider>>>>,
    overlay: RwLock<Option<BTreeMap<String, Arc<Table>>>>,
}

impl CatalogSchema {
    /// The schema over `catalog`.
    pub fn new(catalog: Arc<Catalog>) -> Self {
        CatalogSchema {
            catalog,
            others: Arc::new(RwLock::new(BTreeMap::new())),
            overlay: RwLock::new(None),
        }
    }

    /// A schema over the same tables and views, with an overlay of its own (for another
    /// session).
    pub fn sibling(&self) -> Self {
        CatalogSchema {
            catalog: Arc::clone(&self.catalog),
            others: Arc::clone(&self.others),
            overlay: RwLock::new(None),
        }
    }

    /// Queries read `tables` instead of the catalog's tables of the same names (a
    /// transaction's private copies) until the overlay is set to `None`.
    pub fn set_overlay(&self, tables: Option<BTreeMap<String, Arc<Table>>>) {
        *self.overlay.write().unwrap_or_else(|e| e.into_inner()) = tables;
    }

    /// The table queries read for `name`: the overlay's, else the catalog's.
    fn resolve(&self, name: &str) -> Option<Arc<Table>> {
        let overlay = self.overlay.read().unwrap_or_else(|e| e.into_inner());
        match overlay.as_ref().and_then(|o| o.get(name)) {
            Some(t) => Some(Arc::clone(t)),
            None => self.catalog.table(name),
        }
    }

    /// True when `name` is a view or another registered provider (not a wireload table).
    pub fn has_other(&self, name: &str) -> bool {
        self.others
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(name)
    }

    /// Names of the views and other providers (not wireload tables).
    pub fn other_names(&self) -> Vec<String> {
        self.others
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect()
    }
}

#[async_trait]
impl SchemaProvider for CatalogSchema {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.catalog.table_names();
        names.extend(
            self.others
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .keys()
                .cloned(),
        );
        names.sort();
        names
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if let Some(t) = self.resolve(name) {
            return Ok(Some(Arc::new(SnapshotTable::new(t))));
        }
        if let Some(view) = SystemView::named(name) {
            let catalog = Arc::clone(&self.catalog);
            return Ok(Some(Arc::new(SystemTable::new(view, catalog))));
        }
        Ok(self
            .others
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned())
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        let mut others = self.others.write().unwrap_or_else(|e| e.into_inner());
        if self.catalog.table(&name).is_some() || others.contains_key(&name) {
            return Err(DataFusionError::Execution(format!(
                "table \"{name}\" already exists"
            )));
        }
        others.insert(name, table);
        Ok(None)
    }

    fn deregister_table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if self.catalog.table(name).is_some() {
            return Err(DataFusionError::Execution(format!(
                "\"{name}\" is a table, not a view; use DROP TABLE {name}"
            )));
        }
        Ok(self
            .others
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.catalog.table(name).is_some()
            || self.has_other(name)
            || SystemView::named(name).is_some()
    }
}

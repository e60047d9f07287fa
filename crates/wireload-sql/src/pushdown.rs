//! Selection and projection pushed into the loads of the files a statement reads
//! (`SELECT a FROM 'f.csv' WHERE b > 5`): the statement is planned once over placeholders
//! that have the files' columns, and what DataFusion's optimizer pushes into each
//! placeholder's scan (the columns it reads, the filters it answers as `Inexact`) becomes
//! that file's load: only those columns are deserialized and only the rows the filters keep
//! are stored. DataFusion filters the loaded rows again, so a filter that cannot be
//! evaluated on a chunk keeps all of it.
//!
//! A filter is pushed only where it means the same in the load as in the query:
//! - the statement calls no function whose result may change between the load and the query
//!   (`now()`, `random()`: anything not immutable);
//! - the load's columns have the types the statement was planned with (a re-plan that
//!   widened a column the filter reads loads every row).

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::AsArray;
use arrow::datatypes::{DataType, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, Session, TableProvider};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, TableReference};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::{
    Expr, LogicalPlan, TableProviderFilterPushDown, TableType, Volatility, utils::conjunction,
};
use datafusion::physical_plan::ExecutionPlan;
use wireload_load::RowFilter;
use wireload_query::CatalogSchema;
use wireload_storage::TableDef;

use crate::files::FilterFor;

/// Placeholders registered for planning, deregistered when dropped.
pub(crate) struct Placeholders {
    schema: Arc<CatalogSchema>,
    names: Vec<String>,
}

impl Placeholders {
    /// None yet, to be registered in `schema`.
    pub(crate) fn new(schema: Arc<CatalogSchema>) -> Self {
        Placeholders {
            schema,
            names: Vec::new(),
        }
    }

    /// Registers a placeholder with the columns of `def` under its name; returns the
    /// schema plans see (None when the name is taken).
    pub(crate) fn add(&mut self, def: TableDef) -> Option<SchemaRef> {
        let name = def.name.clone();
        let placeholder = Placeholder {
            schema: wireload_storage::Table::new(def).snapshot().scan_schema(),
        };
        let schema = Arc::clone(&placeholder.schema);
        self.schema
            .register_table(name.clone(), Arc::new(placeholder))
            .ok()?;
        self.names.push(name);
        Some(schema)
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = self.schema.deregister_table(name);
        }
    }
}

/// A table with a file's columns that is planned but never scanned: every filter is
/// accepted as `Inexact`, so the optimizer pushes all it can into the scan and still
/// filters above it.
#[derive(Debug)]
struct Placeholder {
    schema: SchemaRef,
}

#[async_trait]
impl TableProvider for Placeholder {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Err(DataFusionError::Internal(
            "a file's placeholder is planned, never scanned".into(),
        ))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }
}

/// What the optimized plan of a statement reads of one file's table.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pushed {
    /// The columns read (lower-case names); None: the plan was not made, keep what the
    /// statement's text names.
    pub columns: Option<HashSet<String>>,
    /// The rows read: the conjunction of the filters pushed into its only scan, with the
    /// name its columns are qualified with and the types they were planned with.
    pub filter: Option<(Expr, TableReference, SchemaRef)>,
}

impl Pushed {
    /// The row filter of the load, compiled against the loaded table's columns when they
    /// have the planned types.
    pub(crate) fn filter_for(&self, state: SessionState) -> Option<FilterFor> {
        let (expr, qualifier, planned) = self.filter.clone()?;
        Some(Arc::new(move |def: &TableDef| {
            compile(&state, &expr, &qualifier, &planned, def)
        }))
    }
}

/// True when `plan` (as the SQL planner made it, before optimization: `now()` is still a
/// call) calls only immutable functions.
pub(crate) fn only_immutable(plan: &LogicalPlan) -> bool {
    let mut immutable = true;
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            e.apply(|e| {
                let volatility = match e {
                    Expr::ScalarFunction(f) => Some(f.func.signature().volatility),
                    Expr::AggregateFunction(f) => Some(f.func.signature().volatility),
                    Expr::WindowFunction(f) => Some(f.fun.signature().volatility),
                    _ => None,
                };
                if volatility.is_some_and(|v| v != Volatility::Immutable) {
                    immutable = false;
                    return Ok(TreeNodeRecursion::Stop);
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })?;
        Ok(if immutable {
            TreeNodeRecursion::Continue
        } else {
            TreeNodeRecursion::Stop
        })
    });
    immutable
}

/// What the optimized `plan` reads of table `name` (whose full schema is `schema`): the
/// columns of all its scans, and, when it is scanned once, the filters pushed into that
/// scan (unless `filters` is false).
pub(crate) fn pushed_into(
    plan: &LogicalPlan,
    name: &str,
    schema: &SchemaRef,
    filters: bool,
) -> Pushed {
    let mut scans = Vec::new();
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node
            && scan.table_name.table() == name
        {
            scans.push(scan.clone());
        }
        Ok(TreeNodeRecursion::Continue)
    });
    if scans.is_empty() {
        // not read at all (a plan the optimizer emptied): keep what the text names
        return Pushed::default();
    }
    let mut columns = HashSet::new();
    for scan in &scans {
        match &scan.projection {
            Some(indices) => columns.extend(
                indices
                    .iter()
                    .map(|&i| schema.field(i).name().to_lowercase()),
            ),
            None => columns.extend(schema.fields().iter().map(|f| f.name().to_lowercase())),
        }
    }
    let filter = match scans.as_slice() {
        [scan] if filters => conjunction(scan.filters.iter().cloned())
            .map(|e| (e, scan.table_name.clone(), Arc::clone(schema))),
        _ => None,
    };
    Pushed {
        columns: Some(columns),
        filter,
    }
}

/// The row filter of `expr` (columns qualified with `qualifier`, planned against
/// `planned`) for a load into `def`; None when a column it reads has another type in `def`
/// than planned, or it does not compile.
fn compile(
    state: &SessionState,
    expr: &Expr,
    qualifier: &TableReference,
    planned: &SchemaRef,
    def: &TableDef,
) -> Option<RowFilter> {
    let loaded = Arc::clone(&def.arrow_schema);
    let same_types = expr.column_refs().iter().all(|c| {
        let was = planned.field_with_name(&c.name).map(|f| f.data_type());
        let is = loaded.field_with_name(&c.name).map(|f| f.data_type());
        matches!((was, is), (Ok(a), Ok(b)) if a == b)
    });
    if !same_types {
        return None;
    }
    let df_schema = DFSchema::try_from_qualified_schema(qualifier.clone(), &loaded).ok()?;
    let physical = state.create_physical_expr(expr.clone(), &df_schema).ok()?;
    Some(RowFilter::new(move |batch| {
        let value = physical.evaluate(batch).ok()?;
        let array = value.into_array(batch.num_rows()).ok()?;
        (array.data_type() == &DataType::Boolean).then(|| array.as_boolean().clone())
    }))
}

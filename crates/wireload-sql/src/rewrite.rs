//! `UPDATE` and `DELETE`: DataFusion plans the statement; its WHERE clause and new values
//! are evaluated over every chunk of the table's snapshot; the chunks holding matched rows
//! are replaced by new chunks without them (published chunks never change: older snapshots
//! keep theirs), updated rows are appended as new chunks (checked like inserted rows), the
//! table's indexes are built anew over the result, and the version is published in one step
//! when no other write was published since the snapshot was taken.

use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray};
use arrow::compute::kernels::boolean::not;
use arrow::compute::{concat_batches, filter_record_batch, prep_null_mask_filter};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::common::DFSchema;
use datafusion::common::tree_node::TreeNode;
use datafusion::logical_expr::{DmlStatement, Expr, LogicalPlan, WriteOp};
use datafusion::optimizer::simplify_expressions::{ExprSimplifier, SimplifyContext};
use datafusion::physical_plan::PhysicalExpr;
use datafusion::prelude::SessionContext;
use wireload_storage::{Partition, TableDef, TableVersion};

use crate::error::SqlError;

/// What an UPDATE or DELETE does, as expressions over the table's chunks.
pub(crate) struct RowWrite {
    /// The rows it changes; `None`: every row.
    predicate: Option<Arc<dyn PhysicalExpr>>,
    /// UPDATE: the new value of every column, in table order; DELETE: `None`.
    values: Option<Vec<Arc<dyn PhysicalExpr>>>,
}

impl RowWrite {
    /// The write DataFusion planned in `dml` (an UPDATE or a DELETE without FROM, LIMIT or
    /// subqueries).
    pub(crate) fn plan(
        ctx: &SessionContext,
        dml: &DmlStatement,
        table: &SchemaRef,
    ) -> Result<Self, SqlError> {
        let what = match dml.op {
            WriteOp::Update => "UPDATE",
            WriteOp::Delete => "DELETE",
            _ => return Err(SqlError::Internal(format!("{} is not a row write", dml.op))),
        };
        let unsupported = |clause: &str| {
            SqlError::NotSupported(format!("{what} with {clause} is not supported yet"))
        };
        let (values, rest) = match (&dml.op, dml.input.as_ref()) {
            (WriteOp::Update, LogicalPlan::Projection(p)) => (Some(&p.expr), p.input.as_ref()),
            (WriteOp::Update, _) => return Err(unsupported("this form")),
            (_, input) => (None, input),
        };
        let (filter, leaf) = match rest {
            LogicalPlan::Filter(f) => (Some(f.predicate.clone()), f.input.as_ref()),
            other => (None, other),
        };
        // the scan's own filters (a prepared, optimized plan may have moved them there)
        let (qualifier, scan_filters) = match leaf {
            LogicalPlan::TableScan(scan) => (scan.table_name.clone(), scan.filters.clone()),
            LogicalPlan::SubqueryAlias(a) => match a.input.as_ref() {
                LogicalPlan::TableScan(scan) => (a.alias.clone(), scan.filters.clone()),
                _ => return Err(unsupported("FROM (a join)")),
            },
            LogicalPlan::Limit(_) => return Err(unsupported("LIMIT")),
            _ => return Err(unsupported("FROM (a join)")),
        };
        let predicate = filter
            .into_iter()
            .chain(scan_filters)
            .reduce(|a, b| a.and(b));
        // expressions over whole chunks: every column of the table, whatever the scan kept
        let schema = DFSchema::try_from_qualified_schema(qualifier, table)?;
        let simplifier = ExprSimplifier::new(
            SimplifyContext::builder()
                .with_schema(Arc::new(schema.clone()))
                .with_config_options(Arc::clone(ctx.state().config_options()))
                .build(),
        );
        let physical = |e: &Expr| {
            let subquery = e.exists(|e| {
                Ok(matches!(
                    e,
                    Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_)
                ))
            })?;
            if subquery {
                return Err(unsupported("a subquery"));
            }
            // simplified first, as the optimizer would: some functions (coalesce, nvl)
            // exist only as rewrites
            let e = simplifier.simplify(simplifier.coerce(e.clone(), &schema)?)?;
            Ok(ctx.create_physical_expr(e, &schema)?)
        };
        Ok(RowWrite {
            predicate: predicate.as_ref().map(physical).transpose()?,
            values: values
                .map(|exprs| exprs.iter().map(physical).collect::<Result<Vec<_>, _>>())
                .transpose()?,
        })
    }
}

/// The outcome of a row write over one snapshot.
pub(crate) struct Written {
    /// The next version (indexes built), to publish over the snapshot it was made from.
    pub(crate) version: TableVersion,
    /// Rows updated or deleted.
    pub(crate) rows: u64,
    /// The rows as the statement left them: the new rows of an UPDATE, the deleted rows
    /// of a DELETE (for RETURNING).
    pub(crate) returned: Vec<RecordBatch>,
}

/// Applies `write` to `base`, a snapshot of the table `def`; `what` names the rows in errors.
pub(crate) fn apply(
    def: &TableDef,
    base: &TableVersion,
    write: &RowWrite,
    what: &str,
) -> Result<Written, SqlError> {
    let load_error = |error| SqlError::Load {
        table: def.name.clone(),
        error,
    };
    let mut partitions = Vec::with_capacity(base.partitions.len());
    let mut matched = Vec::new();
    for part in &base.partitions {
        let mut chunks = Vec::with_capacity(part.chunks.len());
        for chunk in &part.chunks {
            let Some(mask) = matches(write.predicate.as_ref(), chunk)? else {
                chunks.push(chunk.clone());
                continue;
            };
            matched.push(filter_record_batch(chunk, &mask)?);
            let kept = filter_record_batch(chunk, &not(&mask)?)?;
            if kept.num_rows() > 0 {
                chunks.push(kept);
            }
        }
        partitions.push(Partition { chunks });
    }
    let rows: u64 = matched.iter().map(|b| b.num_rows() as u64).sum();
    if rows == 0 {
        return Ok(Written {
            version: base.clone(),
            rows,
            returned: Vec::new(),
        });
    }
    let returned = match &write.values {
        None => matched,
        Some(values) => {
            let old = concat_batches(&base.schema, &matched)?;
            let columns = values
                .iter()
                .map(|e| e.evaluate(&old).and_then(|v| v.into_array(old.num_rows())))
                .collect::<Result<Vec<_>, _>>()?;
            let fields: Vec<_> = base
                .schema
                .fields()
                .iter()
                .zip(&columns)
                .map(|(f, c)| {
                    f.as_ref()
                        .clone()
                        .with_data_type(c.data_type().clone())
                        .with_nullable(true)
                })
                .collect();
            let new =
                RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), columns)?;
            let parts = wireload_load::table_chunks(def, what, &new).map_err(load_error)?;
            for (partition, part) in partitions.iter_mut().zip(&parts) {
                if part.num_rows() > 0 {
                    partition.chunks.push(part.clone());
                }
            }
            vec![concat_batches(&base.schema, &parts)?]
        }
    };
    let next = TableVersion {
        number: base.number + 1,
        schema: base.schema.clone(),
        partitions,
        indexes: base.indexes.clone(),
    };
    let version = if next.indexes.is_empty() {
        next
    } else {
        wireload_load::rebuild_indexes(def, next).map_err(load_error)?
    };
    Ok(Written {
        version,
        rows,
        returned,
    })
}

/// Which rows of `chunk` `predicate` selects (NULL selects none); `None` when none.
fn matches(
    predicate: Option<&Arc<dyn PhysicalExpr>>,
    chunk: &RecordBatch,
) -> Result<Option<BooleanArray>, SqlError> {
    let mask = match predicate {
        None => BooleanArray::from(vec![true; chunk.num_rows()]),
        Some(p) => {
            let value = p.evaluate(chunk)?.into_array(chunk.num_rows())?;
            let mask = value.as_boolean_opt().ok_or_else(|| {
                SqlError::InvalidOption(format!(
                    "the WHERE clause must be a boolean, not {}",
                    value.data_type()
                ))
            })?;
            if mask.null_count() > 0 {
                prep_null_mask_filter(mask)
            } else {
                mask.clone()
            }
        }
    };
    Ok((mask.true_count() > 0).then_some(mask))
}

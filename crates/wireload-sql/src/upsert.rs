//! `INSERT ... ON CONFLICT (target) DO UPDATE SET ... [WHERE ...]`: each proposed row whose
//! key the target's unique index holds updates the row holding it (SET sees that row as
//! `column` or `table.column`, the proposed row as `excluded.column`), the others are
//! inserted. The updates are a DELETE of the old rows and an append of their new versions
//! (deletion vectors, as any UPDATE of an indexed column), the insertions an append on top:
//! one version, published over one snapshot.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, UInt32Array, UInt64Array};
use arrow::compute::{concat_batches, filter_record_batch, take_record_batch};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::common::TableReference;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{self, visit_expressions_mut};
use wireload_load::LoadControl;
use wireload_storage::{RowId, Table, TableDef, TableVersion, plain_batch};

use crate::dml::{ConflictTarget, DoUpdate};
use crate::error::SqlError;
use crate::replace::{self, NewRows, RowMarks, Written};

/// Column that numbers the clashing rows in the query that computes their new values.
const ROW: &str = "__wireload_row";
/// Column of that query that tells whether the DO UPDATE's WHERE holds.
const KEEP: &str = "__wireload_keep";

/// The proposed rows, split by the target's unique index over one snapshot.
pub(crate) struct Split {
    /// Rows whose key is free: inserted.
    fresh: RecordBatch,
    /// Rows whose key is taken (the `excluded` rows).
    clashing: RecordBatch,
    /// The row holding each clashing row's key.
    at: Vec<RowId>,
}

/// Splits `proposed` (the table's columns) by whether `version` holds its key in the
/// unique index `target` names. Two proposed rows with one key are an error (21000).
pub(crate) fn split(
    def: &TableDef,
    version: &TableVersion,
    target: &ConflictTarget,
    proposed: &RecordBatch,
) -> Result<Split, SqlError> {
    let [index] = crate::dml::watched(def, version, target)?[..] else {
        return Err(SqlError::Internal(
            "ON CONFLICT DO UPDATE watches one unique index".into(),
        ));
    };
    let encoder = index.def.encoder(&def.schema)?;
    let columns: Vec<_> = index
        .def
        .columns
        .iter()
        .map(|&c| Arc::clone(proposed.column(c)))
        .collect();
    let Ok(keys) = encoder.encode(&columns) else {
        // a NULL key: inserting the rows reports it as the constraint's violation
        return Ok(Split {
            fresh: proposed.clone(),
            clashing: proposed.slice(0, 0),
            at: Vec::new(),
        });
    };
    let mut seen = HashSet::with_capacity(proposed.num_rows());
    let mut fresh = Vec::with_capacity(proposed.num_rows());
    let mut at = Vec::new();
    let mut entries = Vec::with_capacity(1);
    for row in 0..proposed.num_rows() {
        let key = keys.get(row);
        if !seen.insert(key) {
            return Err(SqlError::UpsertTwice(wireload_publish::key_text(
                proposed,
                &index.def.columns,
                row,
            )));
        }
        entries.clear();
        index.index.lookup(key, &mut entries);
        match entries.first() {
            None => fresh.push(true),
            Some(&e) => {
                fresh.push(false);
                at.push(index.index.row_id(e));
            }
        }
    }
    let fresh = BooleanArray::from(fresh);
    let clashing = filter_record_batch(proposed, &arrow::compute::not(&fresh)?)?;
    Ok(Split {
        fresh: filter_record_batch(proposed, &fresh)?,
        clashing,
        at,
    })
}

/// The new versions of the clashing rows of `split` (the table's columns, not yet
/// converted to their types) and whether the DO UPDATE's WHERE holds for each.
pub(crate) async fn updated(
    def: &TableDef,
    up: &DoUpdate,
    version: &TableVersion,
    split: &Split,
) -> Result<(RecordBatch, BooleanArray), SqlError> {
    let n = split.at.len();
    if n == 0 {
        return Ok((
            RecordBatch::new_empty(Arc::clone(&def.arrow_schema)),
            BooleanArray::from(Vec::<bool>::new()),
        ));
    }
    let name = up.alias.clone().unwrap_or_else(|| def.name.clone());
    // a session of its own holds the two relations: the table's rows under its name, the
    // proposed ones as `excluded`, numbered alike
    let ctx = SessionContext::new();
    for (relation, rows) in [
        (name.clone(), numbered(def, &rows_at(version, &split.at)?)?),
        ("excluded".to_string(), numbered(def, &split.clashing)?),
    ] {
        let table = MemTable::try_new(rows.schema(), vec![vec![rows]])?;
        ctx.register_table(TableReference::bare(relation), Arc::new(table))?;
    }
    let target = ast::Ident::with_quote('"', &name);
    let column = |table: &ast::Ident, c: &str| {
        ast::Expr::CompoundIdentifier(vec![table.clone(), ast::Ident::with_quote('"', c)])
    };
    let qualify = |mut e: ast::Expr| {
        // a bare column name is the table's column, as in PostgreSQL
        let _ = visit_expressions_mut(&mut e, |x| {
            if let ast::Expr::Identifier(id) = x {
                let named = wireload_types::sql::ident_name(id);
                if def.schema.columns.iter().any(|c| c.name == named) {
                    *x = ast::Expr::CompoundIdentifier(vec![target.clone(), id.clone()]);
                }
            }
            ControlFlow::<()>::Continue(())
        });
        e
    };
    let values = replace::assigned(def, &up.assignments, "ON CONFLICT DO UPDATE")?;
    let mut projection: Vec<ast::SelectItem> = def
        .schema
        .columns
        .iter()
        .zip(values)
        .map(|(d, v)| ast::SelectItem::ExprWithAlias {
            expr: v.map_or_else(|| column(&target, &d.name), &qualify),
            alias: ast::Ident::with_quote('"', &d.name),
        })
        .collect();
    let keep = match &up.selection {
        None => ast::Expr::Value(ast::Value::Boolean(true).into()),
        Some(w) => ast::Expr::IsTrue(Box::new(qualify(w.clone()))),
    };
    projection.push(ast::SelectItem::ExprWithAlias {
        expr: keep,
        alias: ast::Ident::new(KEEP),
    });
    projection.push(ast::SelectItem::ExprWithAlias {
        expr: column(&target, ROW),
        alias: ast::Ident::new(ROW),
    });
    let excluded = ast::Ident::new("excluded");
    let relation = |r: &ast::Ident| ast::TableWithJoins {
        relation: ast::TableFactor::Table {
            name: ast::ObjectName(vec![ast::ObjectNamePart::Identifier(r.clone())]),
            alias: None,
            args: None,
            with_hints: Vec::new(),
            version: None,
            with_ordinality: false,
            partitions: Vec::new(),
            json_path: None,
            sample: None,
            index_hints: Vec::new(),
        },
        joins: Vec::new(),
    };
    let same_row = ast::Expr::BinaryOp {
        left: Box::new(column(&target, ROW)),
        op: ast::BinaryOperator::Eq,
        right: Box::new(column(&excluded, ROW)),
    };
    let query = replace::select_query(
        projection,
        vec![relation(&target), relation(&excluded)],
        Some(same_row),
    )?;
    let plan = ctx
        .state()
        .statement_to_plan(DfStatement::Statement(Box::new(ast::Statement::Query(
            Box::new(query),
        ))))
        .await?;
    let df = ctx.execute_logical_plan(plan).await?;
    let schema = Arc::new(df.schema().as_arrow().clone());
    let found = concat_batches(&schema, &df.collect().await?)?;
    // back in the clashing rows' order
    let rows = found
        .column(found.num_columns() - 1)
        .as_primitive_opt::<arrow::datatypes::UInt64Type>()
        .ok_or_else(|| SqlError::Internal("the row numbers are not UInt64".into()))?;
    let mut order = vec![u32::MAX; n];
    for (i, r) in rows.values().iter().enumerate() {
        order[*r as usize] = i as u32;
    }
    if found.num_rows() != n || order.contains(&u32::MAX) {
        return Err(SqlError::Internal(
            "ON CONFLICT DO UPDATE: not one new version per row".into(),
        ));
    }
    let found = take_record_batch(&found, &UInt32Array::from(order))?;
    let keep = found.column(def.schema.columns.len()).as_boolean().clone();
    let keep = match keep.null_count() {
        0 => keep,
        _ => arrow::compute::prep_null_mask_filter(&keep),
    };
    let columns = found.columns()[..def.schema.columns.len()].to_vec();
    Ok((replace::unconverted_rows(&def.arrow_schema, columns)?, keep))
}

/// `batch` (the table's columns) with the row numbers 0.. as a last column.
fn numbered(def: &TableDef, batch: &RecordBatch) -> Result<RecordBatch, SqlError> {
    let rows = replace::unconverted_rows(&def.arrow_schema, batch.columns().to_vec())?;
    let mut fields = rows.schema().fields().to_vec();
    fields.push(Arc::new(Field::new(ROW, DataType::UInt64, false)));
    let mut columns = rows.columns().to_vec();
    columns.push(Arc::new(UInt64Array::from_iter_values(
        0..batch.num_rows() as u64,
    )));
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// The rows of `version` at `at`, in that order, decoded (dictionary columns as values).
fn rows_at(version: &TableVersion, at: &[RowId]) -> Result<RecordBatch, SqlError> {
    let rows = at
        .iter()
        .map(|r| {
            let chunk = &version.partitions[r.partition as usize].chunks[r.chunk as usize];
            plain_batch(&chunk.slice(r.row as usize, 1))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(concat_batches(&version.schema, &rows)?)
}

/// The next version of `base`: the clashing rows of `split` for which `keep` holds
/// replaced by `new` (deleted, their new versions appended), then the fresh rows appended.
/// `returned` holds the inserted rows, then the updated rows' new versions.
pub(crate) fn apply(
    def: &Arc<TableDef>,
    base: &TableVersion,
    split: Split,
    new: RecordBatch,
    keep: &BooleanArray,
    what: &str,
) -> Result<Written, SqlError> {
    let mut marks = RowMarks::new(base);
    for (i, &at) in split.at.iter().enumerate() {
        if keep.value(i) {
            marks.mark(base, at);
        }
    }
    let touched = marks.into_touched();
    let new = filter_record_batch(&new, keep)?;
    let written = replace::replace(def, base, touched, NewRows::Given(new), what)?;
    let inserted = split.fresh.num_rows() as u64;
    if inserted == 0 {
        return Ok(written);
    }
    let load_error = |error| SqlError::Load {
        table: def.name.clone(),
        error,
    };
    // checked and converted as any row entering the table (and returned so)
    let fresh = replace::unconverted_rows(&def.arrow_schema, split.fresh.columns().to_vec())?;
    let parts = wireload_publish::table_chunks(def, what, &fresh).map_err(load_error)?;
    let fresh = concat_batches(&base.schema, &parts)?;
    let parts: Vec<RecordBatch> = parts.into_iter().filter(|b| b.num_rows() > 0).collect();
    let table = Table::with_version(Arc::clone(def), Arc::new(written.version));
    wireload_publish::append_batches(&table, what, 0, parts, &LoadControl::default())
        .map_err(load_error)?;
    let mut returned = vec![fresh];
    returned.extend(written.returned);
    Ok(Written {
        version: table.snapshot().as_ref().clone(),
        rows: written.rows + inserted,
        returned,
    })
}

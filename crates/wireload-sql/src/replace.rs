//! `UPDATE` and `DELETE`: DataFusion plans the statement; its WHERE clause and new values
//! are evaluated over every chunk of the table's snapshot. An UPDATE that changes no indexed
//! or partitioning column replaces each touched chunk by a copy with the new values at the
//! rows' own positions (indexes kept as they are). Otherwise the chunks holding matched rows
//! are replaced by new chunks without them (published chunks never change: older snapshots
//! keep theirs), updated rows are appended as new chunks (checked like inserted rows), and
//! the table's indexes are built anew over the result. Either way the version is published
//! in one step when no other write was published since the snapshot was taken. A statement with FROM,
//! subqueries or LIMIT runs as a query first (DataFusion's join, subqueries and all), which
//! names the rows by primary key and gives their new values; the same replacement follows.

use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, BooleanBufferBuilder};
use arrow::compute::{concat_batches, filter_record_batch, prep_null_mask_filter};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNode;
use datafusion::common::{Column, DFSchema, TableReference};
use datafusion::logical_expr::{DmlStatement, Expr, LogicalPlan, LogicalPlanBuilder, WriteOp};
use datafusion::optimizer::simplify_expressions::{ExprSimplifier, SimplifyContext};
use datafusion::physical_plan::PhysicalExpr;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast;
use wireload_load::LoadControl;
use wireload_storage::{IndexDef, Partition, RowId, Table, TableDef, TableVersion, plain_batch};

use crate::error::SqlError;

/// What an UPDATE or DELETE does, as expressions over the table's chunks.
pub(crate) struct RowWrite {
    /// The rows it changes; `None`: every row.
    predicate: Option<Arc<dyn PhysicalExpr>>,
    /// UPDATE: the new value of every column, in table order; DELETE: `None`.
    values: Option<Vec<Arc<dyn PhysicalExpr>>>,
    /// UPDATE: the columns it assigns anything but their own value.
    changed: Vec<usize>,
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
        let changed = values
            .map(|exprs| {
                exprs
                    .iter()
                    .enumerate()
                    .filter(|(i, e)| {
                        let inner = match e {
                            Expr::Alias(a) => a.expr.as_ref(),
                            e => e,
                        };
                        !matches!(inner, Expr::Column(c) if c.name == table.field(*i).name().as_str())
                    })
                    .map(|(i, _)| i)
                    .collect()
            })
            .unwrap_or_default();
        Ok(RowWrite {
            predicate: predicate.as_ref().map(physical).transpose()?,
            values: values
                .map(|exprs| exprs.iter().map(physical).collect::<Result<Vec<_>, _>>())
                .transpose()?,
            changed,
        })
    }
}

/// The query that finds what an UPDATE or DELETE DataFusion planned with FROM, subqueries
/// or LIMIT changes, for a table with primary key `def.primary_key()`: for an UPDATE the
/// new value of every column, then the row's old key (one column per key column); for a
/// DELETE the old keys only.
pub(crate) fn query_of(dml: &DmlStatement, def: &TableDef) -> Result<LogicalPlan, SqlError> {
    let what = if dml.op == WriteOp::Update {
        "UPDATE"
    } else {
        "DELETE"
    };
    let unsupported =
        |why: &str| SqlError::NotSupported(format!("{what} {why} is not supported yet"));
    let Some(pk) = def.primary_key() else {
        return Err(unsupported(
            "with FROM, a subquery or LIMIT on a table without a primary key",
        ));
    };
    let mut targets = Vec::new();
    scans_of(&dml.input, &dml.table_name, &mut targets);
    let [target] = targets.as_slice() else {
        return Err(unsupported("naming its target table again in FROM"));
    };
    let keys: Vec<Expr> = pk
        .columns
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            Expr::Column(Column::new(
                Some(target.clone()),
                def.schema.columns[c].name.clone(),
            ))
            .alias(format!("__wireload_key_{i}"))
        })
        .collect();
    let (input, mut exprs) = match (&dml.op, dml.input.as_ref()) {
        (WriteOp::Update, LogicalPlan::Projection(p)) => (p.input.as_ref(), p.expr.clone()),
        (WriteOp::Update, _) => return Err(unsupported("of this form")),
        (_, input) => (input, Vec::new()),
    };
    exprs.extend(keys);
    Ok(LogicalPlanBuilder::from(input.clone())
        .project(exprs)?
        .build()?)
}

/// The query an `UPDATE target SET ... FROM ... WHERE ...` of the table `def` stands for
/// (DataFusion does not plan UPDATE ... FROM): `SELECT <every column's new value>, <the
/// old primary key> FROM target, ... WHERE ...`, as [`query_of`] makes for other forms.
pub(crate) fn update_from_query(
    update: &ast::Update,
    def: &TableDef,
) -> Result<ast::Query, SqlError> {
    let unsupported =
        |why: &str| SqlError::NotSupported(format!("UPDATE {why} is not supported yet"));
    if update.limit.is_some() || !update.order_by.is_empty() || update.or.is_some() {
        return Err(unsupported("with this clause"));
    }
    let (pk, target) = keyed_target(def, &update.table.relation, "UPDATE")?;
    let column = |name: &str| {
        ast::Expr::CompoundIdentifier(vec![target.clone(), ast::Ident::with_quote('"', name)])
    };
    let values = assigned(def, &update.assignments, "UPDATE")?;
    let mut projection: Vec<ast::SelectItem> = def
        .schema
        .columns
        .iter()
        .zip(values)
        .map(|(d, v)| ast::SelectItem::ExprWithAlias {
            expr: v.unwrap_or_else(|| column(&d.name)),
            alias: ast::Ident::with_quote('"', &d.name),
        })
        .collect();
    projection.extend(key_items(def, pk, &target));
    let mut from = vec![update.table.clone()];
    match &update.from {
        Some(ast::UpdateTableFromKind::BeforeSet(f) | ast::UpdateTableFromKind::AfterSet(f)) => {
            from.extend(f.iter().cloned())
        }
        None => {}
    }
    select_query(projection, from, update.selection.clone())
}

/// The value `assignments` give each column of `def` (`None`: the column keeps its value);
/// `what` names the statement in errors.
pub(crate) fn assigned(
    def: &TableDef,
    assignments: &[ast::Assignment],
    what: &str,
) -> Result<Vec<Option<ast::Expr>>, SqlError> {
    let mut values: Vec<Option<ast::Expr>> = vec![None; def.schema.columns.len()];
    for a in assignments {
        let ast::AssignmentTarget::ColumnName(col) = &a.target else {
            return Err(SqlError::NotSupported(format!(
                "{what} of a column tuple is not supported yet"
            )));
        };
        let named = col
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(wireload_types::sql::ident_name)
            .unwrap_or_default();
        let Some(c) = def.schema.columns.iter().position(|d| d.name == named) else {
            return Err(SqlError::UndefinedColumn {
                table: def.name.clone(),
                column: named,
            });
        };
        if values[c].replace(a.value.clone()).is_some() {
            return Err(SqlError::InvalidOption(format!(
                "multiple assignments to same column \"{named}\""
            )));
        }
    }
    Ok(values)
}

/// The query a `DELETE FROM target USING ... WHERE ...` of the table `def` stands for
/// (DataFusion does not plan USING): `SELECT <the primary key> FROM target, ... WHERE ...`,
/// the keys of the rows to delete, as [`query_of`] makes for other forms.
pub(crate) fn delete_using_query(
    delete: &ast::Delete,
    def: &TableDef,
) -> Result<ast::Query, SqlError> {
    let unsupported =
        |why: &str| SqlError::NotSupported(format!("DELETE {why} is not supported yet"));
    let (ast::FromTable::WithFromKeyword(tables) | ast::FromTable::WithoutKeyword(tables)) =
        &delete.from;
    let ([target_table], true, None, true) = (
        tables.as_slice(),
        delete.tables.is_empty(),
        &delete.limit,
        delete.order_by.is_empty(),
    ) else {
        return Err(unsupported("of this form"));
    };
    if !target_table.joins.is_empty() {
        return Err(unsupported("with a join in FROM"));
    }
    let (pk, target) = keyed_target(def, &target_table.relation, "DELETE ... USING")?;
    let mut from = vec![target_table.clone()];
    from.extend(delete.using.iter().flatten().cloned());
    select_query(
        key_items(def, pk, &target).collect(),
        from,
        delete.selection.clone(),
    )
}

/// The primary key of `def` and the name the statement gives its target `relation` (its
/// alias or its name); `what` names the statement in the error for a table without a key.
fn keyed_target<'d>(
    def: &'d TableDef,
    relation: &ast::TableFactor,
    what: &str,
) -> Result<(&'d IndexDef, ast::Ident), SqlError> {
    let unsupported =
        |why: &str| SqlError::NotSupported(format!("{what} {why} is not supported yet"));
    let Some(pk) = def.primary_key() else {
        return Err(unsupported(
            "with FROM, USING, a subquery or LIMIT on a table without a primary key",
        ));
    };
    let ast::TableFactor::Table { name, alias, .. } = relation else {
        return Err(unsupported("of this form"));
    };
    let target = match alias {
        Some(a) => a.name.clone(),
        None => name
            .0
            .last()
            .and_then(|p| p.as_ident().cloned())
            .ok_or_else(|| unsupported("of this form"))?,
    };
    Ok((pk, target))
}

/// `target.<key column> AS __wireload_key_<i>` for each column of the primary key `pk`:
/// what the query-driven writes find the rows by.
fn key_items<'a>(
    def: &'a TableDef,
    pk: &'a IndexDef,
    target: &'a ast::Ident,
) -> impl Iterator<Item = ast::SelectItem> + 'a {
    pk.columns
        .iter()
        .enumerate()
        .map(move |(i, &c)| ast::SelectItem::ExprWithAlias {
            expr: ast::Expr::CompoundIdentifier(vec![
                target.clone(),
                ast::Ident::with_quote('"', &def.schema.columns[c].name),
            ]),
            alias: ast::Ident::new(format!("__wireload_key_{i}")),
        })
}

/// `SELECT projection FROM from WHERE selection` as a query AST.
pub(crate) fn select_query(
    projection: Vec<ast::SelectItem>,
    from: Vec<ast::TableWithJoins>,
    selection: Option<ast::Expr>,
) -> Result<ast::Query, SqlError> {
    // a fixed template gives the SELECT its shape; every part that matters is set here
    let mut template = datafusion::sql::sqlparser::parser::Parser::parse_sql(
        &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
        "SELECT 1",
    )
    .map_err(|e| SqlError::Internal(e.to_string()))?;
    let Some(ast::Statement::Query(mut query)) = template.pop() else {
        return Err(SqlError::Internal(
            "the SELECT template is not a query".into(),
        ));
    };
    let ast::SetExpr::Select(select) = query.body.as_mut() else {
        return Err(SqlError::Internal(
            "the SELECT template is not a SELECT".into(),
        ));
    };
    select.projection = projection;
    select.from = from;
    select.selection = selection;
    Ok(*query)
}

/// The names the scans of `table` in `plan` go by (its alias where it has one); the scans
/// of subqueries inside expressions are not looked at.
fn scans_of(plan: &LogicalPlan, table: &TableReference, out: &mut Vec<TableReference>) {
    match plan {
        LogicalPlan::SubqueryAlias(a) if matches!(a.input.as_ref(), LogicalPlan::TableScan(s) if &s.table_name == table) => {
            out.push(a.alias.clone())
        }
        LogicalPlan::TableScan(s) if &s.table_name == table => out.push(s.table_name.clone()),
        _ => {
            for input in plan.inputs() {
                scans_of(input, table, out);
            }
        }
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
    def: &Arc<TableDef>,
    base: &TableVersion,
    write: &RowWrite,
    what: &str,
) -> Result<Written, SqlError> {
    let touched = base
        .partitions
        .iter()
        .map(|part| {
            (0..part.chunks.len())
                .map(|c| live_matches(write.predicate.as_ref(), part, c))
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let new_rows = match &write.values {
        None => NewRows::None,
        Some(values) => {
            // no index or partition depends on the changed columns: rows change in place
            let partition_column = match def.partitioning {
                wireload_storage::Partitioning::Hash { column, .. } => Some(column),
                wireload_storage::Partitioning::Single => None,
            };
            let in_place = write.changed.iter().all(|c| {
                Some(*c) != partition_column
                    && base.indexes.iter().all(|i| !i.def.columns.contains(c))
            });
            if in_place {
                return update_in_place(def, base, touched, values, &write.changed, what);
            }
            NewRows::Evaluate(values)
        }
    };
    replace(def, base, touched, new_rows, what)
}

/// An UPDATE that changes no indexed or partitioning column: each touched chunk is
/// replaced by a copy whose changed columns hold the new values at the matched rows' own
/// positions, so every row keeps its place and the indexes stay valid as they are.
fn update_in_place(
    def: &TableDef,
    base: &TableVersion,
    touched: Vec<Vec<Option<BooleanArray>>>,
    values: &[Arc<dyn PhysicalExpr>],
    changed: &[usize],
    what: &str,
) -> Result<Written, SqlError> {
    let mut partitions = base.partitions.clone();
    let mut returned = Vec::new();
    let mut rows = 0u64;
    for (p, masks) in touched.into_iter().enumerate() {
        for (c, mask) in masks.into_iter().enumerate() {
            let Some(mask) = mask else {
                continue;
            };
            let chunk = &base.partitions[p].chunks[c];
            // the expressions are planned over plain values
            let old = plain_batch(&filter_record_batch(chunk, &mask)?)?;
            let new = new_values(values, &old)?;
            // checked and converted like any row entering the table; the partitioning
            // column did not change, so every row stays in partition `p`
            let parts = wireload_publish::table_chunks(def, what, &new).map_err(|error| {
                SqlError::Load {
                    table: def.name.clone(),
                    error,
                }
            })?;
            let converted = &parts[p];
            if converted.num_rows() != old.num_rows() {
                return Err(SqlError::Internal(format!(
                    "{what}: updated rows changed partition"
                )));
            }
            let mut next = 0;
            let at: Vec<(usize, usize)> = mask
                .values()
                .iter()
                .enumerate()
                .map(|(i, hit)| {
                    if hit {
                        next += 1;
                        (1, next - 1)
                    } else {
                        (0, i)
                    }
                })
                .collect();
            // a dictionary column comes out plain: merged into its dictionary below
            let mut columns = Vec::with_capacity(changed.len());
            for &col in changed {
                let before = wireload_storage::conform_array(
                    chunk.column(col),
                    def.arrow_schema.field(col).data_type(),
                )?;
                columns.push((
                    col,
                    arrow::compute::interleave(
                        &[before.as_ref(), converted.column(col).as_ref()],
                        &at,
                    )?,
                ));
            }
            partitions[p].chunks[c] = wireload_storage::replace_columns(chunk, columns)?;
            rows += old.num_rows() as u64;
            returned.push(converted.clone());
        }
    }
    if rows == 0 {
        return Ok(Written {
            version: base.clone(),
            rows,
            returned,
        });
    }
    let version = TableVersion {
        number: base.number + 1,
        content: base.content,
        schema: base.schema.clone(),
        partitions,
        indexes: base.indexes.clone(),
        stored_as: base.stored_as.clone(),
    };
    let version =
        wireload_publish::encode_dictionaries(def, version).map_err(|error| SqlError::Load {
            table: def.name.clone(),
            error,
        })?;
    Ok(Written {
        version,
        rows,
        returned,
    })
}

/// Applies a write whose rows a query found: the rows of `base` with the primary keys in
/// `keys` (one array per key column, in key order) are deleted, or, with `new`, replaced by
/// `new`'s rows (row `i` is the new version of the row with key `i`). A row named twice is
/// changed once (by its first new version), as PostgreSQL does for an UPDATE ... FROM
/// whose join matches a row more than once.
pub(crate) fn apply_keys(
    def: &Arc<TableDef>,
    base: &TableVersion,
    keys: &[arrow::array::ArrayRef],
    new: Option<RecordBatch>,
    what: &str,
) -> Result<Written, SqlError> {
    let pk = def
        .primary_key()
        .ok_or_else(|| SqlError::Internal(format!("table \"{}\" has no primary key", def.name)))?;
    let index = base
        .index(&pk.name)
        .ok_or_else(|| SqlError::Internal(format!("no index \"{}\"", pk.name)))?;
    let encoder = pk
        .encoder(&def.schema)
        .map_err(|e| SqlError::Internal(e.to_string()))?;
    let encoded = encoder
        .encode(keys)
        .map_err(|e| SqlError::Internal(e.to_string()))?;
    let mut marks = RowMarks::new(base);
    let mut first = Vec::with_capacity(encoded.len());
    let mut entries = Vec::with_capacity(1);
    for i in 0..encoded.len() {
        entries.clear();
        index.index.lookup(encoded.get(i), &mut entries);
        let Some(&e) = entries.first() else {
            return Err(SqlError::Internal(format!(
                "{what}: a row the query found is not in the table"
            )));
        };
        first.push(marks.mark(base, index.index.row_id(e)));
    }
    let touched = marks.into_touched();
    let new_rows = match new {
        None => NewRows::None,
        Some(new) if first.iter().all(|&f| f) => NewRows::Given(new),
        Some(new) => NewRows::Given(filter_record_batch(&new, &BooleanArray::from(first))?),
    };
    replace(def, base, touched, new_rows, what)
}

/// Rows of a version marked one at a time, per chunk: the `touched` of [`replace`].
pub(crate) struct RowMarks(Vec<Vec<Option<Vec<bool>>>>);

impl RowMarks {
    /// No row of `base` marked.
    pub(crate) fn new(base: &TableVersion) -> Self {
        RowMarks(
            base.partitions
                .iter()
                .map(|p| vec![None; p.chunks.len()])
                .collect(),
        )
    }

    /// Marks row `at` of `base`; false when it was marked already.
    pub(crate) fn mark(&mut self, base: &TableVersion, at: RowId) -> bool {
        let (p, c) = (at.partition as usize, at.chunk as usize);
        let rows = base.partitions[p].chunks[c].num_rows();
        let mask = self.0[p][c].get_or_insert_with(|| vec![false; rows]);
        !std::mem::replace(&mut mask[at.row as usize], true)
    }

    /// The marks, per partition and chunk (`None`: no row of the chunk).
    pub(crate) fn into_touched(self) -> Vec<Vec<Option<BooleanArray>>> {
        self.0
            .into_iter()
            .map(|part| {
                part.into_iter()
                    .map(|m| m.map(BooleanArray::from))
                    .collect()
            })
            .collect()
    }
}

/// The new versions of the rows a write changes.
pub(crate) enum NewRows<'a> {
    /// None: a DELETE.
    None,
    /// The new value of every column, over the old rows.
    Evaluate(&'a [Arc<dyn PhysicalExpr>]),
    /// Computed already.
    Given(RecordBatch),
}

/// The next version of `base`: the rows `touched` marks deleted (added to their chunks'
/// deletion vectors, their entries taken out of every index) and `new_rows` appended in
/// new chunks (checked against the constraints, merged into the indexes as a load's).
pub(crate) fn replace(
    def: &Arc<TableDef>,
    base: &TableVersion,
    touched: Vec<Vec<Option<BooleanArray>>>,
    new_rows: NewRows<'_>,
    what: &str,
) -> Result<Written, SqlError> {
    let load_error = |error| SqlError::Load {
        table: def.name.clone(),
        error,
    };
    let mut next = base.clone();
    next.number += 1;
    let mut matched = Vec::new();
    let mut deleted = Vec::new();
    for (p, masks) in touched.into_iter().enumerate() {
        for (c, mask) in masks.into_iter().enumerate() {
            let Some(mask) = mask else {
                continue;
            };
            matched.push(plain_batch(&filter_record_batch(
                &base.partitions[p].chunks[c],
                &mask,
            )?)?);
            next.partitions[p].delete(c, mask.values());
            deleted.push((p, c, mask));
        }
    }
    let rows: u64 = matched.iter().map(|b| b.num_rows() as u64).sum();
    if rows == 0 {
        return Ok(Written {
            version: base.clone(),
            rows,
            returned: Vec::new(),
        });
    }
    remove_entries(def, base, &mut next, &deleted)?;
    let new = match new_rows {
        NewRows::None => None,
        NewRows::Given(new) => Some(new),
        NewRows::Evaluate(values) => Some(new_values(
            values,
            &concat_batches(&base.schema, &matched)?,
        )?),
    };
    let Some(new) = new else {
        return Ok(Written {
            version: next,
            rows,
            returned: matched,
        });
    };
    let parts = wireload_publish::table_chunks(def, what, &new).map_err(load_error)?;
    let returned = vec![concat_batches(&base.schema, &parts)?];
    // appended as an INSERT's rows are, to a table of its own holding `next`
    let private = Table::with_version(Arc::clone(def), Arc::new(next));
    let parts: Vec<RecordBatch> = parts.into_iter().filter(|b| b.num_rows() > 0).collect();
    wireload_publish::append_batches(&private, what, 0, parts, &LoadControl::default())
        .map_err(load_error)?;
    Ok(Written {
        version: private.snapshot().as_ref().clone(),
        rows,
        returned,
    })
}

/// Takes the entries of the rows `deleted` lists ((partition, chunk, rows) of `base`) out
/// of every index of `next`.
pub(crate) fn remove_entries(
    def: &TableDef,
    base: &TableVersion,
    next: &mut TableVersion,
    deleted: &[(usize, usize, BooleanArray)],
) -> Result<(), SqlError> {
    let mut found = Vec::with_capacity(1);
    for ix in &mut next.indexes {
        let encoder = ix
            .def
            .encoder(&def.schema)
            .map_err(|e| SqlError::Internal(e.to_string()))?;
        let index = Arc::make_mut(&mut ix.index);
        for (p, c, mask) in deleted {
            let chunk = &base.partitions[*p].chunks[*c];
            let columns = ix
                .def
                .columns
                .iter()
                .map(|&k| arrow::compute::filter(chunk.column(k), mask))
                .collect::<Result<Vec<_>, _>>()?;
            let keys = encoder
                .encode(&columns)
                .map_err(|e| SqlError::Internal(e.to_string()))?;
            for (i, row) in mask.values().set_indices().enumerate() {
                let at = RowId {
                    partition: *p as u32,
                    chunk: *c as u32,
                    row: row as u32,
                };
                found.clear();
                index.lookup(keys.get(i), &mut found);
                let entry = found
                    .iter()
                    .copied()
                    .find(|&e| index.row_id(e) == at)
                    .ok_or_else(|| {
                        SqlError::Internal(format!(
                            "index \"{}\" has no entry for row {at:?}",
                            ix.def.name
                        ))
                    })?;
                index.remove(entry);
            }
        }
    }
    Ok(())
}

/// The rows `old` become: `values` (one per column) evaluated over them.
fn new_values(
    values: &[Arc<dyn PhysicalExpr>],
    old: &RecordBatch,
) -> Result<RecordBatch, SqlError> {
    let columns = values
        .iter()
        .map(|e| e.evaluate(old).and_then(|v| v.into_array(old.num_rows())))
        .collect::<Result<Vec<_>, _>>()?;
    // a value cast to a dictionary column's scan type enters the table as a plain value
    let columns = columns
        .iter()
        .map(|c| match c.data_type() {
            arrow::datatypes::DataType::Dictionary(_, value) => {
                wireload_storage::conform_array(c, value)
            }
            _ => Ok(Arc::clone(c)),
        })
        .collect::<Result<Vec<_>, _>>()?;
    unconverted_rows(old.schema_ref(), columns)
}

/// A batch of `columns` under the names of `table`'s columns, each field typed as its
/// values and nullable: new rows before they are checked and converted to the table's
/// types (`wireload_publish::table_chunks`).
pub(crate) fn unconverted_rows(
    table: &SchemaRef,
    columns: Vec<arrow::array::ArrayRef>,
) -> Result<RecordBatch, SqlError> {
    let fields: Vec<_> = table
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
    Ok(RecordBatch::try_new(
        Arc::new(arrow::datatypes::Schema::new(fields)),
        columns,
    )?)
}

/// Which live rows of chunk `c` of `part` `predicate` selects (one bit per row of the
/// chunk; deleted rows are not evaluated and never selected); `None` when none.
fn live_matches(
    predicate: Option<&Arc<dyn PhysicalExpr>>,
    part: &Partition,
    c: usize,
) -> Result<Option<BooleanArray>, SqlError> {
    // the expressions are planned over the table's plain types
    let Some(deleted) = part.deletions(c) else {
        return matches(predicate, &plain_batch(&part.chunks[c])?);
    };
    let Some(hits) = matches(predicate, &plain_batch(&part.live_chunk(c)?)?)? else {
        return Ok(None);
    };
    // back to the chunk's rows: live row i is the chunk's i-th set bit
    let live = deleted.live();
    let mut mask = BooleanBufferBuilder::new(live.len());
    mask.append_n(live.len(), false);
    for (i, row) in live.set_indices().enumerate() {
        if hits.value(i) {
            mask.set_bit(row, true);
        }
    }
    Ok(Some(BooleanArray::new(mask.finish(), None)))
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

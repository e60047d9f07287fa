//! Statements that add or remove rows: `INSERT` (VALUES or a query, with RETURNING),
//! `CREATE TABLE ... AS` and `TRUNCATE`. Rows enter a table through the load's one
//! append/publish stage (`wireload_publish::append_batches`), so constraints are checked and
//! the new version is published in one step exactly as for a load.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::BooleanArray;
use arrow::datatypes::{DataType, Field, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, Values, cast};
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{self, ExprWithAlias, SelectItem};
use wireload_storage::{TableDef, TableIndex, TableVersion};
use wireload_types::{ColumnDef, SqlType};

use crate::ddl::table_name;
use crate::error::SqlError;

/// A parsed `INSERT`, `UPDATE` or `DELETE`: the statement DataFusion plans (for INSERT,
/// columns matched and cast to the table's types), and the RETURNING list wireload
/// evaluates over the rows written.
#[derive(Debug, Clone)]
pub struct Write {
    /// The statement without its RETURNING and ON CONFLICT clauses.
    pub statement: Box<DfStatement>,
    /// `RETURNING` items, when given.
    pub returning: Option<Vec<SelectItem>>,
    /// `INSERT ... ON CONFLICT ...`: what a row whose key is taken does.
    pub on_conflict: Option<OnConflict>,
}

/// What `INSERT ... ON CONFLICT` does with a row whose key is taken.
#[derive(Debug, Clone)]
pub enum OnConflict {
    /// `DO NOTHING`: the row is skipped.
    Nothing(ConflictTarget),
    /// `DO UPDATE SET ... [WHERE ...]`: the row holding the key is updated instead.
    Update(Box<DoUpdate>),
}

/// `ON CONFLICT target DO UPDATE SET assignments [WHERE selection]`.
#[derive(Debug, Clone)]
pub struct DoUpdate {
    /// The unique index whose keys are watched.
    pub target: ConflictTarget,
    /// The name the statement gives the table (`INSERT INTO t AS alias`), normalized.
    pub alias: Option<String>,
    /// `SET column = value, ...`: the table's row as `alias.column` (or `column`), the
    /// proposed row as `excluded.column`.
    pub assignments: Vec<ast::Assignment>,
    /// Only rows for which it holds are updated (the others are neither updated nor
    /// inserted).
    pub selection: Option<ast::Expr>,
}

/// Which unique keys an `ON CONFLICT ... DO NOTHING` watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConflictTarget {
    /// No target: every unique index of the table.
    Any,
    /// `ON CONFLICT (a, b)`: the unique index on exactly these columns (normalized names).
    Columns(Vec<String>),
    /// `ON CONFLICT ON CONSTRAINT name`: the unique index (constraint) of that name.
    Constraint(String),
}

/// A parsed `CREATE TABLE name [(column, ...)] AS query`.
#[derive(Debug, Clone)]
pub struct CreateTableAs {
    /// The new table (normalized name).
    pub name: String,
    /// Names for the query's first columns, when given.
    pub columns: Vec<String>,
    /// `IF NOT EXISTS` was given.
    pub if_not_exists: bool,
    /// The query whose rows fill the table.
    pub query: Box<ast::Query>,
}

/// A parsed `TRUNCATE [TABLE] name [, ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncate {
    /// Tables to empty (normalized names).
    pub names: Vec<String>,
}

/// Rows a statement inserted, updated or deleted.
#[derive(Debug)]
pub struct RowChange {
    /// The command: `INSERT`, `UPDATE`, `DELETE`, `SELECT` (CREATE TABLE AS, as PostgreSQL
    /// tags it) or `TRUNCATE`.
    pub command: &'static str,
    /// Rows affected.
    pub rows: u64,
    /// The RETURNING list's rows, when the statement had one.
    pub returning: Option<(SchemaRef, Vec<RecordBatch>)>,
}

impl RowChange {
    /// The PostgreSQL command tag, such as `INSERT 0 3` or `SELECT 3`.
    pub fn tag(&self) -> String {
        match self.command {
            "INSERT" => format!("INSERT 0 {}", self.rows),
            "TRUNCATE" => "TRUNCATE TABLE".to_string(),
            c => format!("{c} {}", self.rows),
        }
    }
}

/// An `INSERT`, `UPDATE` or `DELETE` statement: RETURNING taken apart, clauses wireload
/// does not support refused.
pub(crate) fn write(mut statement: ast::Statement) -> Result<Write, SqlError> {
    let mut on_conflict = None;
    let returning = match &mut statement {
        ast::Statement::Insert(insert) => {
            // DataFusion plans no INSERT under an alias: only ON CONFLICT DO UPDATE uses it
            let alias = insert
                .table_alias
                .take()
                .map(|a| wireload_types::sql::ident_name(&a.alias));
            on_conflict = match insert.on.take() {
                None => None,
                Some(ast::OnInsert::OnConflict(ast::OnConflict {
                    conflict_target,
                    action,
                })) => {
                    let target = match conflict_target {
                        None => ConflictTarget::Any,
                        Some(ast::ConflictTarget::Columns(cols)) => ConflictTarget::Columns(
                            cols.iter().map(wireload_types::sql::ident_name).collect(),
                        ),
                        Some(ast::ConflictTarget::OnConstraint(name)) => {
                            ConflictTarget::Constraint(table_name(&name)?)
                        }
                    };
                    Some(match action {
                        ast::OnConflictAction::DoNothing => OnConflict::Nothing(target),
                        ast::OnConflictAction::DoUpdate(_) if target == ConflictTarget::Any => {
                            return Err(SqlError::InvalidOption(
                                "ON CONFLICT DO UPDATE requires a conflict target: \
                                 ON CONFLICT (columns) or ON CONFLICT ON CONSTRAINT name"
                                    .into(),
                            ));
                        }
                        ast::OnConflictAction::DoUpdate(up) => {
                            OnConflict::Update(Box::new(DoUpdate {
                                target,
                                alias,
                                assignments: up.assignments,
                                selection: up.selection,
                            }))
                        }
                    })
                }
                Some(_) => {
                    return Err(SqlError::NotSupported(
                        "INSERT ... ON DUPLICATE KEY UPDATE is not supported; use ON CONFLICT \
                         (columns) DO UPDATE"
                            .into(),
                    ));
                }
            };
            insert.returning.take()
        }
        ast::Statement::Update(update) => update.returning.take(),
        ast::Statement::Delete(delete) => delete.returning.take(),
        other => {
            return Err(SqlError::Internal(format!(
                "not an INSERT, UPDATE or DELETE: {other}"
            )));
        }
    };
    Ok(Write {
        statement: Box::new(DfStatement::Statement(Box::new(statement))),
        returning,
        on_conflict,
    })
}

/// `CREATE TABLE [IF NOT EXISTS] name [(column, ...)] AS query`.
pub(crate) fn create_table_as(ct: ast::CreateTable) -> Result<CreateTableAs, SqlError> {
    let unsupported = ct.or_replace
        || ct.temporary
        || ct.external
        || !ct.constraints.is_empty()
        || ct.partition_by.is_some()
        || ct.like.is_some()
        || ct.clone.is_some();
    if unsupported {
        return Err(SqlError::NotSupported(
            "CREATE TABLE ... AS accepts CREATE TABLE [IF NOT EXISTS] name [(column, ...)] AS \
             query; constraints, partitioning and other clauses are not supported with AS"
                .into(),
        ));
    }
    let Some(query) = ct.query else {
        return Err(SqlError::Internal("CREATE TABLE AS without a query".into()));
    };
    if let Some(c) = ct
        .columns
        .iter()
        .find(|c| c.data_type != ast::DataType::Unspecified || !c.options.is_empty())
    {
        return Err(SqlError::NotSupported(format!(
            "CREATE TABLE ... AS takes column names only (the query gives the types), found {c}"
        )));
    }
    Ok(CreateTableAs {
        name: table_name(&ct.name)?,
        columns: ct
            .columns
            .iter()
            .map(|c| wireload_types::sql::ident_name(&c.name))
            .collect(),
        if_not_exists: ct.if_not_exists,
        query,
    })
}

/// `TRUNCATE [TABLE] [ONLY] name [, ...] [RESTART | CONTINUE IDENTITY] [CASCADE | RESTRICT]`
/// (wireload has neither identity columns nor foreign keys, so those options change nothing).
pub(crate) fn truncate(t: ast::Truncate) -> Result<Truncate, SqlError> {
    if t.partitions.is_some() || t.on_cluster.is_some() || t.if_exists {
        return Err(SqlError::NotSupported(
            "TRUNCATE accepts TRUNCATE [TABLE] name [, ...]".into(),
        ));
    }
    Ok(Truncate {
        names: t
            .table_names
            .iter()
            .map(|target| table_name(&target.name))
            .collect::<Result<_, _>>()?,
    })
}

/// The SQL type a column of type `ty` gets in a table made by CREATE TABLE AS.
pub(crate) fn sql_type_of(name: &str, ty: &DataType) -> Result<SqlType, SqlError> {
    use DataType as D;
    Ok(match ty {
        D::Boolean => SqlType::Boolean,
        D::Int8 | D::Int16 | D::UInt8 => SqlType::SmallInt,
        D::Int32 | D::UInt16 => SqlType::Integer,
        D::Int64 | D::UInt32 => SqlType::BigInt,
        D::UInt64 => SqlType::Decimal {
            precision: 20,
            scale: 0,
        },
        D::Float16 | D::Float32 => SqlType::Real,
        D::Float64 => SqlType::Double,
        D::Decimal128(p, s) | D::Decimal256(p, s) if (0..=38).contains(s) && *p <= 38 => {
            SqlType::Decimal {
                precision: *p,
                scale: *s as u8,
            }
        }
        D::Date32 | D::Date64 => SqlType::Date,
        D::Timestamp(..) => SqlType::Timestamp,
        // an untyped NULL column is text, as PostgreSQL makes it
        D::Utf8 | D::LargeUtf8 | D::Utf8View | D::Null => SqlType::Text,
        other => {
            return Err(SqlError::NotSupported(format!(
                "column \"{name}\" of the query has type {other}, which a wireload table cannot \
                 hold; cast it to a SQL type (BOOLEAN, integers, REAL, DOUBLE, DECIMAL, DATE, \
                 TIMESTAMP, TEXT)"
            )));
        }
    })
}

/// The columns of a table made from a query's result `fields`, renamed by `names` (the
/// first ones); every column may hold NULL.
pub(crate) fn columns_of(fields: &[&Field], names: &[String]) -> Result<Vec<ColumnDef>, SqlError> {
    if names.len() > fields.len() {
        return Err(SqlError::InvalidOption(format!(
            "CREATE TABLE AS names {} columns, the query has {}",
            names.len(),
            fields.len()
        )));
    }
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let name = names.get(i).cloned().unwrap_or_else(|| f.name().clone());
            Ok(ColumnDef {
                ty: sql_type_of(&name, f.data_type())?,
                name,
                nullable: true,
            })
        })
        .collect()
}

/// `plan`'s output with every column cast to `columns`' types and named as they are.
pub(crate) fn cast_to_columns(
    plan: LogicalPlan,
    columns: &[ColumnDef],
) -> Result<LogicalPlan, SqlError> {
    let schema = plan.schema().clone();
    let exprs = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let column = Expr::Column(Column::from(schema.qualified_field(i)));
            let want = c.ty.arrow_type();
            let expr = if column.get_type(&schema)? == want {
                column
            } else {
                cast(column, want)
            };
            Ok(expr.alias(&c.name))
        })
        .collect::<Result<Vec<_>, datafusion::error::DataFusionError>>()?;
    Ok(datafusion::logical_expr::LogicalPlanBuilder::from(plan)
        .project(exprs)?
        .build()?)
}

/// `plan` with the columns of its VALUES lists nullable. DataFusion types an INSERT's VALUES
/// after the table's columns, nullability included, and would fail on a NULL for a NOT NULL
/// column with an internal error; the append stage reports it as the constraint violation.
pub(crate) fn nullable_values(plan: LogicalPlan) -> Result<LogicalPlan, SqlError> {
    let plan = plan.transform_up(|node| match node {
        LogicalPlan::Values(Values { schema, values }) => {
            let fields = schema
                .iter()
                .map(|(q, f)| (q.cloned(), Arc::new(f.as_ref().clone().with_nullable(true))))
                .collect();
            let schema = DFSchema::new_with_metadata(fields, schema.metadata().clone())?;
            Ok(Transformed::yes(LogicalPlan::Values(Values {
                schema: Arc::new(schema),
                values,
            })))
        }
        other => other.recompute_schema().map(Transformed::yes),
    })?;
    Ok(plan.data)
}

/// Evaluates RETURNING `items` over `rows` (the rows a statement wrote to table `table`).
pub(crate) async fn returning_of(
    ctx: &SessionContext,
    table: &str,
    items: Option<&[SelectItem]>,
    schema: SchemaRef,
    rows: Vec<RecordBatch>,
) -> Result<Option<(SchemaRef, Vec<RecordBatch>)>, SqlError> {
    match items {
        Some(items) => Ok(Some(
            returning(ctx, table, items.to_vec(), schema, rows).await?,
        )),
        None => Ok(None),
    }
}

/// The rows of `RETURNING items` over `rows` (in `schema`) of table `table`.
async fn returning(
    ctx: &SessionContext,
    table: &str,
    items: Vec<SelectItem>,
    schema: SchemaRef,
    rows: Vec<RecordBatch>,
) -> Result<(SchemaRef, Vec<RecordBatch>), SqlError> {
    let df = returning_frame(ctx, table, items, schema, rows)?;
    let out = Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await?;
    Ok((out, batches))
}

/// The columns `RETURNING items` gives for table `table` (whose rows are in `schema`).
pub(crate) fn returning_schema(
    ctx: &SessionContext,
    table: &str,
    items: &[SelectItem],
    schema: SchemaRef,
) -> Result<SchemaRef, SqlError> {
    let df = returning_frame(ctx, table, items.to_vec(), schema, Vec::new())?;
    Ok(Arc::new(df.schema().as_arrow().clone()))
}

/// `RETURNING items` over `rows` (in `schema`) of table `table`, planned.
fn returning_frame(
    ctx: &SessionContext,
    table: &str,
    items: Vec<SelectItem>,
    schema: SchemaRef,
    rows: Vec<RecordBatch>,
) -> Result<DataFrame, SqlError> {
    let rows = MemTable::try_new(schema, vec![rows])?;
    let df = ctx.read_table(Arc::new(rows))?.alias(table)?;
    let state = ctx.state();
    let mut exprs = Vec::with_capacity(items.len());
    for item in items {
        match item {
            SelectItem::UnnamedExpr(expr) => exprs.push(state.create_logical_expr_from_sql_expr(
                ExprWithAlias { expr, alias: None },
                df.schema(),
            )?),
            SelectItem::ExprWithAlias { expr, alias } => {
                exprs.push(state.create_logical_expr_from_sql_expr(
                    ExprWithAlias {
                        expr,
                        alias: Some(alias),
                    },
                    df.schema(),
                )?)
            }
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => exprs.extend(
                df.schema()
                    .columns()
                    .into_iter()
                    .map(Expr::Column)
                    .collect::<Vec<_>>(),
            ),
            other => {
                return Err(SqlError::NotSupported(format!(
                    "RETURNING item {other} is not supported"
                )));
            }
        }
    }
    Ok(df.select(exprs)?)
}

/// The rows of `batches` (in the table's column order and types) that `ON CONFLICT target
/// DO NOTHING` inserts into `version` of table `def`: those whose keys in the watched unique
/// indexes are neither in the table nor taken by an earlier row of the statement. A batch
/// whose keys cannot be encoded (a NULL key) is kept whole: appending it reports the error.
pub(crate) fn free_rows(
    def: &TableDef,
    version: &TableVersion,
    target: &ConflictTarget,
    batches: Vec<RecordBatch>,
) -> Result<Vec<RecordBatch>, SqlError> {
    let watched = watched(def, version, target)?;
    let encoders = watched
        .iter()
        .map(|i| i.def.encoder(&def.schema))
        .collect::<Result<Vec<_>, _>>()?;
    let mut seen: Vec<HashSet<Vec<u8>>> = vec![HashSet::new(); watched.len()];
    let mut entries = Vec::new();
    let mut out = Vec::with_capacity(batches.len());
    for batch in batches {
        let keys: Result<Vec<_>, _> = watched
            .iter()
            .zip(&encoders)
            .map(|(i, e)| {
                let columns: Vec<_> = i
                    .def
                    .columns
                    .iter()
                    .map(|&c| Arc::clone(batch.column(c)))
                    .collect();
                e.encode(&columns)
            })
            .collect();
        let Ok(keys) = keys else {
            out.push(batch);
            continue;
        };
        let mut keep = Vec::with_capacity(batch.num_rows());
        for row in 0..batch.num_rows() {
            let taken = watched.iter().zip(&keys).zip(&seen).any(|((i, k), seen)| {
                let key = k.get(row);
                entries.clear();
                i.index.lookup(key, &mut entries);
                !entries.is_empty() || seen.contains(key)
            });
            if !taken {
                for (k, seen) in keys.iter().zip(seen.iter_mut()) {
                    seen.insert(k.get(row).to_vec());
                }
            }
            keep.push(!taken);
        }
        let kept = arrow::compute::filter_record_batch(&batch, &BooleanArray::from(keep))?;
        if kept.num_rows() > 0 {
            out.push(kept);
        }
    }
    Ok(out)
}

/// The unique indexes of `version` (of table `def`) that `ON CONFLICT target` watches.
pub(crate) fn watched<'v>(
    def: &TableDef,
    version: &'v TableVersion,
    target: &ConflictTarget,
) -> Result<Vec<&'v TableIndex>, SqlError> {
    let unique = version.indexes.iter().filter(|i| i.def.unique);
    Ok(match target {
        ConflictTarget::Any => unique.collect(),
        ConflictTarget::Columns(names) => {
            let mut columns = crate::ddl::column_positions(def, names)?;
            columns.sort_unstable();
            let found = unique.into_iter().find(|i| {
                let mut own = i.def.columns.clone();
                own.sort_unstable();
                own == columns
            });
            vec![found.ok_or_else(|| {
                SqlError::NoConflictTarget(format!(
                    "no unique index of \"{}\" on ({})",
                    def.name,
                    names.join(", ")
                ))
            })?]
        }
        ConflictTarget::Constraint(name) => {
            let found = unique.into_iter().find(|i| &i.def.name == name);
            vec![found.ok_or_else(|| {
                SqlError::NoConflictTarget(format!(
                    "constraint \"{name}\" of \"{}\" does not exist",
                    def.name
                ))
            })?]
        }
    })
}

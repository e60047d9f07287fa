//! Key access: a prepared `SELECT columns FROM table WHERE key = $1 [AND ...]` whose
//! equalities name every column of a unique index is answered straight from that index,
//! and a prepared `UPDATE table SET ... WHERE key = $1` that changes no indexed column
//! replaces the row in place, both without a DataFusion planning round per execution.
//! Anything else (or a table changed since PREPARE in a way the access cannot follow)
//! takes DataFusion's path.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema, ScalarValue, TableReference};
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{BinaryExpr, Expr, LogicalPlan, Operator, WriteOp};
use datafusion::optimizer::simplify_expressions::{ExprSimplifier, SimplifyContext};
use datafusion::physical_plan::PhysicalExpr;
use datafusion::prelude::SessionContext;
use wireload_storage::{IndexDef, KeyEncoder, Partitioning, RowId, Table, TableDef, TableVersion};

use crate::error::SqlError;

/// Where one key column's value comes from.
#[derive(Debug, Clone)]
enum KeyValue {
    /// The statement's parameter at this position (`$1` is 0).
    Param(usize),
    /// A constant of the statement.
    Literal(ScalarValue),
}

/// A WHERE clause that names one row by a unique key: `k1 = v1 AND k2 = v2 ...`.
#[derive(Debug)]
struct Key {
    /// The table's definition when the statement was prepared.
    def: Arc<TableDef>,
    /// The unique index that finds the row.
    index: IndexDef,
    /// Encodes the index's keys (made once, at PREPARE).
    encoder: KeyEncoder,
    /// One value per key column, in index order.
    values: Vec<KeyValue>,
    /// Parameter types.
    params: Vec<DataType>,
}

/// A table scan under a filter: the scan, and the name its columns are qualified with.
struct Scanned<'a> {
    target: Arc<Table>,
    qualifier: &'a TableReference,
    predicate: &'a Expr,
}

impl Scanned<'_> {
    /// The table column `c` names.
    fn column(&self, c: &Column) -> Option<usize> {
        if c.relation.as_ref().is_some_and(|r| r != self.qualifier) {
            return None;
        }
        self.target
            .def()
            .schema
            .columns
            .iter()
            .position(|d| d.name == c.name)
    }
}

/// `Filter(predicate)` over a scan of a whole table (possibly aliased).
fn scanned<'a>(
    plan: &'a LogicalPlan,
    table: impl Fn(&str) -> Option<Arc<Table>>,
) -> Option<Scanned<'a>> {
    let LogicalPlan::Filter(filter) = plan else {
        return None;
    };
    let (scan, alias) = match filter.input.as_ref() {
        LogicalPlan::TableScan(scan) => (scan, None),
        LogicalPlan::SubqueryAlias(a) => match a.input.as_ref() {
            LogicalPlan::TableScan(scan) => (scan, Some(&a.alias)),
            _ => return None,
        },
        _ => return None,
    };
    if scan.fetch.is_some() || !scan.filters.is_empty() || scan.projection.is_some() {
        return None;
    }
    let name = match &scan.table_name {
        TableReference::Bare { table } => table.as_ref(),
        TableReference::Partial { schema, table } if schema.as_ref() == crate::DEFAULT_SCHEMA => {
            table.as_ref()
        }
        _ => return None,
    };
    // tables with dictionary columns take DataFusion's path (key reads copy stored arrays)
    let target = table(name).filter(|t| !t.def().has_dictionaries())?;
    Some(Scanned {
        target,
        qualifier: alias.unwrap_or(&scan.table_name),
        predicate: &filter.predicate,
    })
}

impl Key {
    /// The key `scan`'s predicate names, with parameter types `fields`.
    fn of(scan: &Scanned<'_>, fields: &[FieldRef]) -> Option<Self> {
        let def = Arc::clone(scan.target.def());
        let params: Vec<DataType> = fields.iter().map(|f| f.data_type().clone()).collect();
        let mut equal = BTreeMap::new();
        for term in split_conjunction(scan.predicate) {
            let Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Eq,
                right,
            }) = term
            else {
                return None;
            };
            let (column, value) = match (left.as_ref(), right.as_ref()) {
                (Expr::Column(c), v) | (v, Expr::Column(c)) => (scan.column(c)?, v),
                _ => return None,
            };
            let column_type = def.arrow_schema.field(column).data_type();
            let value = match value {
                Expr::Placeholder(p) => {
                    let n =
                        p.id.strip_prefix('$')?
                            .parse::<usize>()
                            .ok()?
                            .checked_sub(1)?;
                    comparable(params.get(n)?, column_type).then_some(KeyValue::Param(n))?
                }
                Expr::Literal(v, None) if comparable(&v.data_type(), column_type) => {
                    KeyValue::Literal(v.clone())
                }
                _ => return None,
            };
            if equal.insert(column, value).is_some() {
                return None;
            }
        }
        let version = scan.target.snapshot();
        let index = version.indexes.iter().filter(|i| i.def.unique).find(|i| {
            i.def.columns.len() == equal.len()
                && i.def.columns.iter().all(|c| equal.contains_key(c))
        })?;
        Some(Key {
            values: index.def.columns.iter().map(|c| equal[c].clone()).collect(),
            encoder: index.def.encoder(&def.schema).ok()?,
            index: (*index.def).clone(),
            def,
            params,
        })
    }

    /// The row of `version` (of `table`) with the key for `params`, if any. `None` when the
    /// key no longer fits the table (recreated, or the index dropped).
    fn locate(
        &self,
        table: &Table,
        version: &TableVersion,
        params: &[ScalarValue],
    ) -> Option<Result<Option<RowId>, SqlError>> {
        if !Arc::ptr_eq(table.def(), &self.def) || params.len() != self.params.len() {
            return None;
        }
        let ix = version
            .indexes
            .iter()
            .find(|i| i.def.name == self.index.name)?;
        if *ix.def != self.index {
            return None;
        }
        // the key's values in the key columns' types; a value no column value can equal
        // (NULL, or out of the column's range) matches nothing
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.values.len());
        for (value, &c) in self.values.iter().zip(&self.index.columns) {
            let value = match value {
                KeyValue::Param(n) => &params[*n],
                KeyValue::Literal(v) => v,
            };
            let Some(v) = exactly_as(value, self.def.arrow_schema.field(c).data_type()) else {
                return Some(Ok(None));
            };
            match v.to_array_of_size(1) {
                Ok(a) => columns.push(a),
                Err(e) => return Some(Err(e.into())),
            }
        }
        let key = match self.encoder.encode(&columns) {
            Ok(key) => key,
            Err(e) => return Some(Err(SqlError::Internal(e.to_string()))),
        };
        let mut entries = Vec::with_capacity(1);
        ix.index.lookup(key.get(0), &mut entries);
        Some(Ok(entries.first().map(|&e| ix.index.row_id(e))))
    }
}

/// A prepared statement that runs straight on a unique index.
#[derive(Debug)]
pub(crate) enum KeyAccess {
    /// `SELECT columns FROM t WHERE key = ...`
    Read(KeyedRead),
    /// `UPDATE t SET ... WHERE key = ...`, no indexed column changed
    Update(KeyedUpdate),
}

impl KeyAccess {
    /// The key access of a prepared statement's `plan` with parameter types `fields`, when
    /// its shape allows one; `table` resolves a table name.
    pub(crate) fn of(
        ctx: &SessionContext,
        plan: &LogicalPlan,
        fields: &[FieldRef],
        table: impl Fn(&str) -> Option<Arc<Table>>,
    ) -> Option<Self> {
        match plan {
            LogicalPlan::Dml(_) => KeyedUpdate::of(ctx, plan, fields, table).map(KeyAccess::Update),
            _ => KeyedRead::of(plan, fields, table).map(KeyAccess::Read),
        }
    }

    /// The key's table.
    pub(crate) fn table(&self) -> &str {
        &self.key().def.name
    }

    /// Parameter types, in order.
    pub(crate) fn params(&self) -> &[DataType] {
        &self.key().params
    }

    fn key(&self) -> &Key {
        match self {
            KeyAccess::Read(r) => &r.key,
            KeyAccess::Update(u) => &u.key,
        }
    }
}

/// A read of at most one row by a unique key, planned once.
#[derive(Debug)]
pub(crate) struct KeyedRead {
    key: Key,
    /// Table columns of the result, in result order.
    projection: Vec<usize>,
    /// The result's schema (as DataFusion planned it).
    schema: SchemaRef,
}

impl KeyedRead {
    /// The key access of a prepared statement's `plan` with parameter types `fields`, when
    /// its shape allows one; `table` resolves a table name.
    pub(crate) fn of(
        plan: &LogicalPlan,
        fields: &[FieldRef],
        table: impl Fn(&str) -> Option<Arc<Table>>,
    ) -> Option<Self> {
        let LogicalPlan::Projection(projection) = plan else {
            return None;
        };
        let scan = scanned(projection.input.as_ref(), table)?;
        let key = Key::of(&scan, fields)?;
        // the result: columns of the table, each as the table holds it
        let schema: SchemaRef = Arc::new(projection.schema.as_arrow().clone());
        let mut columns = Vec::with_capacity(projection.expr.len());
        for (e, field) in projection.expr.iter().zip(schema.fields()) {
            let c = match e {
                Expr::Column(c) => c,
                Expr::Alias(a) => match a.expr.as_ref() {
                    Expr::Column(c) => c,
                    _ => return None,
                },
                _ => return None,
            };
            let i = scan.column(c)?;
            let held = key.def.arrow_schema.field(i);
            if held.data_type() != field.data_type() || held.is_nullable() && !field.is_nullable() {
                return None;
            }
            columns.push(i);
        }
        Some(KeyedRead {
            key,
            projection: columns,
            schema,
        })
    }

    /// The result's schema.
    pub(crate) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The rows of `table` whose key equals the statement's with `params` (already of the
    /// parameter types): at most one. `None` when the access no longer fits the table
    /// (recreated, or the index dropped); DataFusion's path answers then.
    pub(crate) fn run(
        &self,
        table: &Table,
        params: &[ScalarValue],
    ) -> Option<Result<Vec<RecordBatch>, SqlError>> {
        let version = table.snapshot();
        let found = match self.key.locate(table, &version, params)? {
            Ok(found) => found,
            Err(e) => return Some(Err(e)),
        };
        let batches = found
            .map(|at| {
                let chunk = &version.partitions[at.partition as usize].chunks[at.chunk as usize];
                let columns = self
                    .projection
                    .iter()
                    .map(|&c| chunk.column(c).slice(at.row as usize, 1))
                    .collect();
                RecordBatch::try_new(Arc::clone(&self.schema), columns).map_err(SqlError::from)
            })
            .into_iter()
            .collect();
        Some(batches)
    }
}

/// An update of at most one row by a unique key that changes no indexed column, planned
/// once: the row is found by the index and replaced in place (its chunk copied with the
/// new values in the changed columns; the indexes stay as they are).
#[derive(Debug)]
pub(crate) struct KeyedUpdate {
    key: Key,
    /// The changed columns and their new values: expressions over the table's columns
    /// followed by the parameters.
    set: Vec<(usize, Arc<dyn PhysicalExpr>)>,
    /// The schema of a row with the parameters after it.
    row_schema: SchemaRef,
}

impl KeyedUpdate {
    /// The key access of a prepared `UPDATE` (`plan`), parameter types `fields`.
    pub(crate) fn of(
        ctx: &SessionContext,
        plan: &LogicalPlan,
        fields: &[FieldRef],
        table: impl Fn(&str) -> Option<Arc<Table>>,
    ) -> Option<Self> {
        let LogicalPlan::Dml(dml) = plan else {
            return None;
        };
        if dml.op != WriteOp::Update {
            return None;
        }
        let LogicalPlan::Projection(projection) = dml.input.as_ref() else {
            return None;
        };
        let scan = scanned(projection.input.as_ref(), table)?;
        let key = Key::of(&scan, fields)?;
        let def = &key.def;
        if projection.expr.len() != def.schema.columns.len() {
            return None;
        }
        // expressions over a row of the table followed by the parameters ($n as column "$n")
        let params: Vec<Field> = fields
            .iter()
            .enumerate()
            .map(|(i, f)| Field::new(format!("${}", i + 1), f.data_type().clone(), true))
            .collect();
        let mut row_fields: Vec<Field> = def
            .arrow_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        row_fields.extend(params.iter().cloned());
        let row_schema = Arc::new(Schema::new(row_fields));
        let df_schema =
            DFSchema::try_from_qualified_schema(scan.qualifier.clone(), &def.arrow_schema)
                .ok()?
                .join(&DFSchema::try_from(Schema::new(params)).ok()?)
                .ok()?;
        let simplifier = ExprSimplifier::new(
            SimplifyContext::builder()
                .with_schema(Arc::new(df_schema.clone()))
                .with_config_options(Arc::clone(ctx.state().config_options()))
                .build(),
        );
        let version = scan.target.snapshot();
        let indexed = |c: usize| {
            version.indexes.iter().any(|i| i.def.columns.contains(&c))
                || matches!(def.partitioning, Partitioning::Hash { column, .. } if column == c)
        };
        let mut set = Vec::new();
        for (c, e) in projection.expr.iter().enumerate() {
            let inner = match e {
                Expr::Alias(a) => a.expr.as_ref(),
                e => e,
            };
            if let Expr::Column(col) = inner
                && scan.column(col) == Some(c)
            {
                continue;
            }
            if indexed(c) {
                return None;
            }
            let subquery = inner
                .exists(|e| {
                    Ok(matches!(
                        e,
                        Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_)
                    ))
                })
                .ok()?;
            if subquery {
                return None;
            }
            let with_params = inner
                .clone()
                .transform(|e| {
                    Ok(match e {
                        Expr::Placeholder(p) => {
                            Transformed::yes(Expr::Column(Column::new_unqualified(p.id)))
                        }
                        e => Transformed::no(e),
                    })
                })
                .ok()?
                .data;
            let coerced = simplifier.coerce(with_params, &df_schema).ok()?;
            let simplified = simplifier.simplify(coerced).ok()?;
            set.push((c, ctx.create_physical_expr(simplified, &df_schema).ok()?));
        }
        Some(KeyedUpdate {
            key,
            set,
            row_schema,
        })
    }

    /// Updates the row of `table` with the key for `params`; the number of rows updated
    /// (0 or 1). `None` when the access no longer fits the table: DataFusion's path runs
    /// the statement then.
    pub(crate) fn run(
        &self,
        table: &Table,
        params: &[ScalarValue],
    ) -> Option<Result<u64, SqlError>> {
        let def = &self.key.def;
        let guard = table.begin_write();
        let base = guard.base();
        if self
            .set
            .iter()
            .any(|(c, _)| base.indexes.iter().any(|i| i.def.columns.contains(c)))
        {
            return None;
        }
        let at = match self.key.locate(table, base, params)? {
            Ok(Some(at)) => at,
            Ok(None) => return Some(Ok(0)),
            Err(e) => return Some(Err(e)),
        };
        let chunk = &base.partitions[at.partition as usize].chunks[at.chunk as usize];
        let row = at.row as usize;
        let next = (|| -> Result<TableVersion, SqlError> {
            // the row, then the parameters
            let mut columns: Vec<ArrayRef> =
                chunk.columns().iter().map(|c| c.slice(row, 1)).collect();
            for p in params {
                columns.push(p.to_array_of_size(1)?);
            }
            let input = RecordBatch::try_new(Arc::clone(&self.row_schema), columns)?;
            let mut values: Vec<ArrayRef> =
                chunk.columns().iter().map(|c| c.slice(row, 1)).collect();
            for (c, e) in &self.set {
                values[*c] = e.evaluate(&input)?.into_array(1)?;
            }
            let new_row = crate::replace::unconverted_rows(&def.arrow_schema, values)?;
            // checked and converted like any row entering the table
            let what = format!("UPDATE {}", def.name);
            let parts = wireload_publish::table_chunks(def, &what, &new_row).map_err(|error| {
                SqlError::Load {
                    table: def.name.clone(),
                    error,
                }
            })?;
            let new_row = &parts[at.partition as usize];
            let mut columns = chunk.columns().to_vec();
            for (c, _) in &self.set {
                let old = &chunk.columns()[*c];
                let pieces = [
                    old.slice(0, row),
                    Arc::clone(new_row.column(*c)),
                    old.slice(row + 1, old.len() - row - 1),
                ];
                let refs: Vec<&dyn arrow::array::Array> =
                    pieces.iter().map(|a| a.as_ref()).collect();
                columns[*c] = arrow::compute::concat(&refs)?;
            }
            let replaced = RecordBatch::try_new(chunk.schema(), columns)?;
            let mut next = (**base).clone();
            next.number += 1;
            next.partitions[at.partition as usize].chunks[at.chunk as usize] = replaced;
            Ok(next)
        })();
        Some(next.map(|next| {
            guard.publish(next);
            1
        }))
    }
}

/// A parameter or constant of type `value` may stand for a key column of type `column`:
/// the same type, both integers (compared exactly), or both strings.
fn comparable(value: &DataType, column: &DataType) -> bool {
    let string =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    value == column || value.is_integer() && column.is_integer() || string(value) && string(column)
}

/// `v` as a value of type `ty` when it is exactly such a value (no NULL, no rounding, in
/// range).
fn exactly_as(v: &ScalarValue, ty: &DataType) -> Option<ScalarValue> {
    if v.is_null() {
        return None;
    }
    if v.data_type() == *ty {
        return Some(v.clone());
    }
    let cast = v.cast_to(ty).ok()?;
    let back = cast.cast_to(&v.data_type()).ok()?;
    (!cast.is_null() && back == *v).then_some(cast)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_convert_only_exactly() {
        let i32v = |v| ScalarValue::Int32(Some(v));
        let i64v = |v| ScalarValue::Int64(Some(v));
        assert_eq!(exactly_as(&i64v(7), &DataType::Int32), Some(i32v(7)));
        assert_eq!(exactly_as(&i64v(1 << 40), &DataType::Int32), None);
        assert_eq!(exactly_as(&i64v(-1), &DataType::UInt32), None);
        assert_eq!(
            exactly_as(&ScalarValue::Int64(None), &DataType::Int64),
            None
        );
        assert!(comparable(&DataType::Int64, &DataType::Int16));
        assert!(!comparable(&DataType::Float64, &DataType::Int64));
        assert!(!comparable(&DataType::Utf8, &DataType::Int64));
        assert!(comparable(&DataType::Utf8View, &DataType::Utf8));
        let text = ScalarValue::Utf8View(Some("ä".into()));
        assert_eq!(
            exactly_as(&text, &DataType::Utf8),
            Some(ScalarValue::Utf8(Some("ä".into())))
        );
    }
}

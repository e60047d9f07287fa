//! Key access: a prepared `SELECT columns FROM table WHERE key = $1 [AND ...]` whose
//! equalities name every column of a unique index is answered straight from that index,
//! without a DataFusion planning round per execution. Anything else (or a table changed
//! since PREPARE in a way the access cannot follow) takes DataFusion's path.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, FieldRef, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::common::{Column, ScalarValue, TableReference};
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{BinaryExpr, Expr, LogicalPlan, Operator};
use wireload_storage::{IndexDef, Table, TableDef};

use crate::error::SqlError;

/// Where one key column's value comes from.
#[derive(Debug, Clone)]
enum KeyValue {
    /// The statement's parameter at this position (`$1` is 0).
    Param(usize),
    /// A constant of the statement.
    Literal(ScalarValue),
}

/// A read of at most one row by a unique key, planned once.
#[derive(Debug)]
pub(crate) struct KeyedRead {
    /// The table's definition when the statement was prepared.
    def: Arc<TableDef>,
    /// The unique index that answers it.
    index: IndexDef,
    /// One value per key column, in index order.
    key: Vec<KeyValue>,
    /// Table columns of the result, in result order.
    projection: Vec<usize>,
    /// The result's schema (as DataFusion planned it).
    schema: SchemaRef,
    /// Parameter types.
    params: Vec<DataType>,
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
        let LogicalPlan::Filter(filter) = projection.input.as_ref() else {
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
            TableReference::Partial { schema, table }
                if schema.as_ref() == crate::DEFAULT_SCHEMA =>
            {
                table.as_ref()
            }
            _ => return None,
        };
        let target = table(name)?;
        let def = Arc::clone(target.def());
        let qualifier = alias.unwrap_or(&scan.table_name);
        let column_of = |c: &Column| -> Option<usize> {
            if c.relation.as_ref().is_some_and(|r| r != qualifier) {
                return None;
            }
            def.schema.columns.iter().position(|d| d.name == c.name)
        };
        let params: Vec<DataType> = fields.iter().map(|f| f.data_type().clone()).collect();
        // the WHERE clause: `column = value` terms only
        let mut equal = BTreeMap::new();
        for term in split_conjunction(&filter.predicate) {
            let Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Eq,
                right,
            }) = term
            else {
                return None;
            };
            let (column, value) = match (left.as_ref(), right.as_ref()) {
                (Expr::Column(c), v) | (v, Expr::Column(c)) => (column_of(c)?, v),
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
        let version = target.snapshot();
        let index = version.indexes.iter().filter(|i| i.def.unique).find(|i| {
            i.def.columns.len() == equal.len()
                && i.def.columns.iter().all(|c| equal.contains_key(c))
        })?;
        let key = index.def.columns.iter().map(|c| equal[c].clone()).collect();
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
            let i = column_of(c)?;
            let held = def.arrow_schema.field(i);
            if held.data_type() != field.data_type() || held.is_nullable() && !field.is_nullable() {
                return None;
            }
            columns.push(i);
        }
        Some(KeyedRead {
            index: (*index.def).clone(),
            def,
            key,
            projection: columns,
            schema,
            params,
        })
    }

    /// The table read.
    pub(crate) fn table(&self) -> &str {
        &self.def.name
    }

    /// Parameter types, in order.
    pub(crate) fn params(&self) -> &[DataType] {
        &self.params
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
        if !Arc::ptr_eq(table.def(), &self.def) || params.len() != self.params.len() {
            return None;
        }
        let version = table.snapshot();
        let ix = version
            .indexes
            .iter()
            .find(|i| i.def.name == self.index.name)?;
        if *ix.def != self.index {
            return None;
        }
        // the key's values in the key columns' types; a value no column value can equal
        // (NULL, or out of the column's range) matches nothing
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.key.len());
        for (value, &c) in self.key.iter().zip(&self.index.columns) {
            let value = match value {
                KeyValue::Param(n) => &params[*n],
                KeyValue::Literal(v) => v,
            };
            let Some(v) = exactly_as(value, self.def.arrow_schema.field(c).data_type()) else {
                return Some(Ok(Vec::new()));
            };
            match v.to_array_of_size(1) {
                Ok(a) => columns.push(a),
                Err(e) => return Some(Err(e.into())),
            }
        }
        let encoder = match self.index.encoder(&self.def.schema) {
            Ok(e) => e,
            Err(e) => return Some(Err(SqlError::Internal(e.to_string()))),
        };
        let key = match encoder.encode(&columns) {
            Ok(k) => k,
            Err(e) => return Some(Err(SqlError::Internal(e.to_string()))),
        };
        let mut entries = Vec::with_capacity(1);
        ix.index.lookup(key.get(0), &mut entries);
        let batches = entries
            .iter()
            .map(|&e| {
                let at = ix.index.row_id(e);
                let chunk = &version.partitions[at.partition as usize].chunks[at.chunk as usize];
                let columns = self
                    .projection
                    .iter()
                    .map(|&c| chunk.column(c).slice(at.row as usize, 1))
                    .collect();
                RecordBatch::try_new(Arc::clone(&self.schema), columns).map_err(SqlError::from)
            })
            .collect();
        Some(batches)
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

//! Between the database and Flight SQL: errors as gRPC statuses, statement outputs as
//! Arrow results, bound parameter batches as values, `?` placeholders as `$n`, and an
//! ingested Arrow schema as a `CREATE TABLE`.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use tonic::Status;
use wireload_sql::{ScalarValue, SqlError, SqlState, StatementOutput};
use wireload_storage::{Partitioning, TableDef};
use wireload_types::{ColumnDef, SqlType, TableSchema};

/// The gRPC status of a failed statement: the message with its SQLSTATE; `internal` only
/// for wireload's own bugs.
pub fn sql_status(e: &SqlError) -> Status {
    let state = e.sqlstate();
    let message = format!("{e} (SQLSTATE {state})");
    if e.is_internal() {
        tracing::error!("Flight SQL: internal error: {message}");
        return Status::internal(message);
    }
    match state {
        SqlState::QUERY_CANCELED => Status::cancelled(message),
        SqlState::INSUFFICIENT_RESOURCES => Status::resource_exhausted(message),
        SqlState::UNDEFINED_TABLE | SqlState::UNDEFINED_COLUMN | SqlState::UNDEFINED_OBJECT => {
            Status::not_found(message)
        }
        SqlState::DUPLICATE_TABLE | SqlState::DUPLICATE_OBJECT => Status::already_exists(message),
        SqlState::FEATURE_NOT_SUPPORTED => Status::unimplemented(message),
        SqlState::SERIALIZATION_FAILURE => Status::aborted(message),
        _ => Status::invalid_argument(message),
    }
}

/// The status of Arrow data a client sent that cannot be read (or the stream's own error).
pub fn flight_status(e: arrow_flight::error::FlightError) -> Status {
    match e {
        arrow_flight::error::FlightError::Tonic(status) => *status,
        other => Status::invalid_argument(format!("malformed Arrow Flight data: {other}")),
    }
}

/// The schema of a one-column result counting rows.
fn rows_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "rows",
        DataType::Int64,
        false,
    )]))
}

/// A result of one row holding `rows`.
fn rows_result(rows: u64) -> (SchemaRef, Vec<RecordBatch>) {
    let schema = rows_schema();
    let column: ArrayRef = Arc::new(Int64Array::from(vec![
        i64::try_from(rows).unwrap_or(i64::MAX),
    ]));
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![column])
        .expect("one Int64 column matches its schema");
    (schema, vec![batch])
}

/// The rows a statement changed, for `DoPutUpdateResult` (-1: not a count of rows, as
/// for DDL).
pub fn affected_rows(output: &StatementOutput) -> i64 {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    match output {
        StatementOutput::Changed(change) => count(change.rows),
        StatementOutput::Loaded(report) => count(report.rows),
        StatementOutput::Unloaded(summary) => count(summary.rows),
        StatementOutput::Rows { batches, .. } => {
            count(batches.iter().map(|b| b.num_rows() as u64).sum())
        }
        StatementOutput::Done(_) => -1,
    }
}

/// What a client reading a statement's result gets: a query's rows, a write's RETURNING
/// rows or the count of rows it changed (`rows`), and no columns for DDL.
pub fn output_result(output: StatementOutput) -> Result<(SchemaRef, Vec<RecordBatch>), Status> {
    let (schema, batches) = match output {
        StatementOutput::Rows { schema, batches } => (schema, batches),
        StatementOutput::Changed(change) => match change.returning {
            Some((schema, batches)) => (schema, batches),
            None => rows_result(change.rows),
        },
        StatementOutput::Loaded(report) => rows_result(report.rows),
        StatementOutput::Unloaded(summary) => rows_result(summary.rows),
        StatementOutput::Done(_) => (Arc::new(Schema::empty()), Vec::new()),
    };
    hydrate(schema, batches)
}

/// The result of running one statement for several rows of parameters: their rows one
/// after another (a write's counts added up).
pub fn combine_results(
    outputs: Vec<StatementOutput>,
) -> Result<(SchemaRef, Vec<RecordBatch>), Status> {
    let counts_only = outputs.iter().all(|o| {
        matches!(o, StatementOutput::Changed(c) if c.returning.is_none())
            || matches!(o, StatementOutput::Loaded(_) | StatementOutput::Unloaded(_))
    });
    if counts_only && outputs.len() > 1 {
        let total = outputs.iter().map(|o| affected_rows(o).max(0) as u64).sum();
        return Ok(rows_result(total));
    }
    let mut schema = None;
    let mut all = Vec::new();
    for output in outputs {
        let (s, batches) = output_result(output)?;
        match &schema {
            None => schema = Some(s),
            Some(first) if first.fields() == s.fields() => {}
            Some(_) => {
                return Err(Status::internal(
                    "the executions of a prepared statement returned different columns",
                ));
            }
        }
        all.extend(batches);
    }
    Ok((schema.unwrap_or_else(|| Arc::new(Schema::empty())), all))
}

/// Dictionary-encoded columns as plain columns of their values (what Flight SQL clients
/// expect from a query), everything else untouched.
fn hydrate(
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> Result<(SchemaRef, Vec<RecordBatch>), Status> {
    if !schema
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::Dictionary(..)))
    {
        return Ok((schema, batches));
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Dictionary(_, value) => f.as_ref().clone().with_data_type((**value).clone()),
            _ => f.as_ref().clone(),
        })
        .collect();
    let plain = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let batches = batches
        .into_iter()
        .map(|b| {
            let columns = b
                .columns()
                .iter()
                .zip(plain.fields())
                .map(|(c, f)| {
                    if c.data_type() == f.data_type() {
                        Ok(Arc::clone(c))
                    } else {
                        arrow::compute::cast(c, f.data_type())
                    }
                })
                .collect::<Result<Vec<_>, _>>()?;
            RecordBatch::try_new(Arc::clone(&plain), columns)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Status::internal(format!("result columns: {e}")))?;
    Ok((plain, batches))
}

/// Every row of bound parameter `batches` as values, one per column.
pub fn parameter_rows(batches: &[RecordBatch]) -> Result<Vec<Vec<ScalarValue>>, Status> {
    let mut rows = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let values = batch
                .columns()
                .iter()
                .map(|c| ScalarValue::try_from_array(c, row))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| {
                    Status::invalid_argument(format!("a parameter value cannot be read: {e}"))
                })?;
            rows.push(values);
        }
    }
    Ok(rows)
}

/// `sql` with the positional placeholders of ODBC/JDBC/ADBC (`?`) numbered as wireload
/// reads them (`$1`, `$2`, ...); question marks inside string literals, quoted identifiers
/// and comments stay. Text already using `$n` is returned as it is. The flag tells whether
/// the text has parameters (of either kind).
pub fn number_placeholders(sql: &str) -> (String, bool) {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0usize;
    let mut copied = 0; // bytes of `sql` already in `out`
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'\'' | b'"') => {
                // to the closing quote; a doubled quote is an escaped one
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == quote {
                        if bytes.get(i + 1) == Some(&quote) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            b'$' if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                // numbered already: leave the text alone
                return (sql.to_string(), true);
            }
            b'?' => {
                n += 1;
                out.push_str(&sql[copied..i]);
                out.push('$');
                out.push_str(&n.to_string());
                i += 1;
                copied = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&sql[copied.min(sql.len())..]);
    (out, n > 0)
}

/// The wireload column type holding Arrow `ty`, for a table made by an ingest.
fn sql_type_of(ty: &DataType) -> Option<SqlType> {
    Some(match ty {
        DataType::Boolean => SqlType::Boolean,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => SqlType::SmallInt,
        DataType::Int32 | DataType::UInt16 => SqlType::Integer,
        DataType::Int64 | DataType::UInt32 => SqlType::BigInt,
        DataType::Float16 | DataType::Float32 => SqlType::Real,
        DataType::Float64 => SqlType::Double,
        DataType::Decimal128(p, s) if *s >= 0 && *s as u8 <= *p && *p <= 38 => SqlType::Decimal {
            precision: *p,
            scale: *s as u8,
        },
        DataType::Date32 | DataType::Date64 => SqlType::Date,
        DataType::Timestamp(_, None) => SqlType::Timestamp,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => SqlType::Text,
        DataType::Dictionary(_, value) => return sql_type_of(value),
        _ => return None,
    })
}

/// The definition of a new table `name` for an ingest of `schema`'s columns (NOT NULL
/// where the field is not nullable); an error naming the first column of a type wireload
/// has no column type for.
pub fn ingest_table_def(name: &str, schema: &Schema) -> Result<TableDef, Status> {
    let mut columns = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let ty = sql_type_of(f.data_type()).ok_or_else(|| {
            let hint = match f.data_type() {
                DataType::Timestamp(_, Some(_)) => {
                    " (TIMESTAMP has no time zone: send timestamps without one)"
                }
                _ => "",
            };
            Status::invalid_argument(format!(
                "cannot create table \"{name}\": column \"{}\" has Arrow type {}, which no \
                 wireload column type holds{hint}; create the table first",
                f.name(),
                f.data_type()
            ))
        })?;
        columns.push(ColumnDef {
            name: f.name().clone(),
            ty,
            nullable: f.is_nullable(),
        });
    }
    TableDef::new(name, TableSchema { columns }, Partitioning::Single)
        .map_err(|e| Status::invalid_argument(format!("cannot create table \"{name}\": {e}")))
}

/// `batch`'s columns in the order of `columns` when its fields are those columns under
/// the same names (exactly, else ignoring case) in another order; otherwise `batch` as
/// it is (the database takes columns by position).
pub fn match_columns(batch: RecordBatch, columns: &[String]) -> Result<RecordBatch, Status> {
    let schema = batch.schema();
    if schema.fields().len() != columns.len() {
        return Ok(batch);
    }
    let find = |name: &str| -> Option<usize> {
        schema
            .fields()
            .iter()
            .position(|f| f.name() == name)
            .or_else(|| {
                let mut found = schema
                    .fields()
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.name().eq_ignore_ascii_case(name));
                match (found.next(), found.next()) {
                    (Some((i, _)), None) => Some(i),
                    _ => None,
                }
            })
    };
    let Some(order) = columns.iter().map(|c| find(c)).collect::<Option<Vec<_>>>() else {
        return Ok(batch);
    };
    let mut seen = vec![false; order.len()];
    for &i in &order {
        if std::mem::replace(&mut seen[i], true) {
            return Ok(batch);
        }
    }
    if order.iter().enumerate().all(|(k, &i)| k == i) {
        return Ok(batch);
    }
    batch
        .project(&order)
        .map_err(|e| Status::invalid_argument(format!("ingest columns: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StringArray};

    #[test]
    fn numbers_question_marks_outside_quotes() {
        let number_placeholders = |sql: &str| number_placeholders(sql).0;
        assert!(number_placeholders_flag("SELECT ?"));
        assert!(number_placeholders_flag("SELECT $1"));
        assert!(!number_placeholders_flag("SELECT '?', '$1' -- ?"));
        assert_eq!(
            number_placeholders("SELECT * FROM t WHERE a = ? AND b = ?"),
            "SELECT * FROM t WHERE a = $1 AND b = $2"
        );
        assert_eq!(
            number_placeholders("SELECT '?', \"a?\" -- ?\n, ? /* ? */ FROM t WHERE x = ?"),
            "SELECT '?', \"a?\" -- ?\n, $1 /* ? */ FROM t WHERE x = $2"
        );
        assert_eq!(
            number_placeholders("SELECT 'it''s ?', ?"),
            "SELECT 'it''s ?', $1"
        );
        assert_eq!(number_placeholders("SELECT $1, '?'"), "SELECT $1, '?'");
        assert_eq!(number_placeholders("SELECT 'ü?', ?"), "SELECT 'ü?', $1");
        assert_eq!(number_placeholders("SELECT 'open ?"), "SELECT 'open ?");
    }

    fn number_placeholders_flag(sql: &str) -> bool {
        number_placeholders(sql).1
    }

    #[test]
    fn ingest_tables_from_arrow() {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("Name", DataType::Utf8, true),
            Field::new("p", DataType::Decimal128(12, 2), true),
        ]);
        let def = ingest_table_def("t\"x", &schema).unwrap();
        assert_eq!(def.name, "t\"x");
        let cols: Vec<_> = def
            .schema
            .columns
            .iter()
            .map(|c| (c.name.as_str(), c.ty, c.nullable))
            .collect();
        assert_eq!(
            cols,
            [
                ("id", SqlType::BigInt, false),
                ("Name", SqlType::Text, true),
                (
                    "p",
                    SqlType::Decimal {
                        precision: 12,
                        scale: 2
                    },
                    true
                ),
            ]
        );
        let bad = Schema::new(vec![Field::new(
            "l",
            DataType::List(Arc::new(Field::new("item", DataType::Int32, true))),
            true,
        )]);
        let err = ingest_table_def("t", &bad).unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(err.message().contains("column \"l\""), "{}", err.message());
    }

    #[test]
    fn reorders_columns_by_name() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("name", DataType::Utf8, true),
            Field::new("ID", DataType::Int32, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(vec!["a"])),
                Arc::new(Int32Array::from(vec![1])),
            ],
        )
        .unwrap();
        let cols = vec!["id".to_string(), "name".to_string()];
        let out = match_columns(batch.clone(), &cols).unwrap();
        assert_eq!(out.schema().field(0).name(), "ID");
        assert_eq!(out.schema().field(1).name(), "name");
        // other names: by position
        let other = vec!["x".to_string(), "y".to_string()];
        assert_eq!(
            match_columns(batch, &other)
                .unwrap()
                .schema()
                .field(0)
                .name(),
            "name"
        );
    }

    #[test]
    fn parameter_rows_read_every_row() {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
        let batch = RecordBatch::try_new(
            schema,
            vec![Arc::new(Int32Array::from(vec![Some(1), None]))],
        )
        .unwrap();
        let rows = parameter_rows(&[batch]).unwrap();
        assert_eq!(
            rows,
            vec![
                vec![ScalarValue::Int32(Some(1))],
                vec![ScalarValue::Int32(None)]
            ]
        );
    }
}

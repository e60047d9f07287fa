//! Loading Arrow batches (from an Arrow IPC or Parquet file) into a table: columns matched
//! by position, converted to the table's types where that loses nothing, constraints
//! checked, rows hash-partitioned, and the new version published in one atomic step.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, AsArray, StringArray};
use arrow::compute::concat_batches;
use arrow::compute::kernels::cast::{CastOptions, cast_with_options};
use arrow::datatypes::{DataType, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;
use wireload_storage::{Table, TableDef};

use crate::partition::split_partitions;
use wireload_types::{ColumnDef, SqlType};

use crate::error::{BadValue, LoadError};
use crate::publish::{Appender, Sites};
use crate::report::{LoadControl, LoadReport, MergeStrategy};

/// Consecutive small batches are concatenated into chunks of at least this many rows.
const MIN_CHUNK_ROWS: usize = 64 * 1024;
/// Batches of at least this many rows become chunks as they are.
const SMALL_BATCH_ROWS: usize = 8 * 1024;

/// Appends `batches` (read from `file`, `bytes` long) to `table` and publishes the new
/// version, on the current rayon pool.
///
/// The batches' columns map to the table's columns by position; each must have the table
/// column's Arrow type or one that converts to it without loss (narrower integers, checked
/// narrowing, other string encodings, decimals of the same scale, coarser timestamps).
/// NOT NULL and CHAR/VARCHAR lengths are checked. On any error the table is unchanged.
pub fn append_batches(
    table: &Table,
    file: &str,
    bytes: u64,
    batches: Vec<RecordBatch>,
    ctl: &LoadControl,
) -> Result<LoadReport, LoadError> {
    let start = Instant::now();
    let def = table.def();
    let columns = &def.schema.columns;
    if let Some(first) = batches.first() {
        check_shape(file, columns, first.schema_ref())?;
    }
    ctl.bytes_total.store(bytes, Relaxed);
    let groups = group_small_batches(&batches);
    // Row number (0-based) of each group's first row, for error messages.
    let mut first_rows = Vec::with_capacity(groups.len());
    let mut rows = 0u64;
    for g in &groups {
        first_rows.push(rows);
        rows += batches[g.clone()]
            .iter()
            .map(|b| b.num_rows() as u64)
            .sum::<u64>();
    }
    let target = Arc::clone(&def.arrow_schema);
    let appender = Appender::begin(table, file, MergeStrategy::Chunk);
    groups
        .par_iter()
        .zip(first_rows.par_iter())
        .enumerate()
        .try_for_each(|(n, (g, &first_row))| {
            if ctl.cancel.load(Relaxed) {
                return Err(LoadError::Cancelled);
            }
            let group = &batches[g.clone()];
            let batch = if group.len() == 1 {
                group[0].clone()
            } else {
                concat_batches(group[0].schema_ref(), group)
                    .map_err(|e| mismatch(file, format!("cannot combine record batches: {e}")))?
            };
            check_shape(file, columns, batch.schema_ref())?;
            let batch = convert(file, columns, &target, &batch, first_row)?;
            let sites = if appender.wants_sites() {
                let n = batch.num_rows() as u64;
                Sites::Rows {
                    rows: Some(vec![(first_row..first_row + n).collect()]),
                }
            } else {
                Sites::None
            };
            let unit = appender.unit_of_batch(n, &batch, sites, None)?;
            appender.accept(n, unit);
            // progress: this group's share of the file's bytes
            let group_rows: u64 = group.iter().map(|b| b.num_rows() as u64).sum();
            ctl.bytes_done
                .fetch_add(bytes * group_rows / rows.max(1), Relaxed);
            Ok(())
        })?;
    let published = appender.publish(ctl, None)?;
    ctl.bytes_done.store(bytes, Relaxed);
    Ok(LoadReport {
        table: table.name().to_string(),
        rows: published.rows,
        bytes,
        seconds: start.elapsed().as_secs_f64(),
        chunks: groups.len(),
        merge_seconds: published.merge_seconds,
        merge_steps: published.merge_steps,
        rejected: 0,
        rejects: Vec::new(),
    })
}

/// The rows of `batch` as chunks of `def`'s table: columns matched by position and
/// converted as [`append_batches`] converts them (NOT NULL and lengths checked), split into
/// the table's partitions (one batch per partition, possibly empty). `what` names the rows
/// in errors.
pub fn table_chunks(
    def: &TableDef,
    what: &str,
    batch: &RecordBatch,
) -> Result<Vec<RecordBatch>, LoadError> {
    let columns = &def.schema.columns;
    check_shape(what, columns, batch.schema_ref())?;
    let batch = convert(what, columns, &def.arrow_schema, batch, 0)?;
    let (parts, _) = split_partitions(&batch, def.partitioning, false)
        .map_err(|e| mismatch(what, format!("cannot partition: {e}")))?;
    Ok(parts)
}

fn mismatch(file: &str, message: String) -> LoadError {
    LoadError::Mismatch {
        file: file.to_string(),
        message,
    }
}

/// Ranges of batches that become one chunk each: a batch of at least [`SMALL_BATCH_ROWS`]
/// rows stays as it is (no copy); runs of smaller ones are concatenated until they hold
/// [`MIN_CHUNK_ROWS`] rows, so files written in tiny batches do not become tiny chunks.
/// Empty batches are dropped.
fn group_small_batches(batches: &[RecordBatch]) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    let mut rows = 0;
    for (i, b) in batches.iter().enumerate() {
        let n = b.num_rows();
        if n >= SMALL_BATCH_ROWS {
            if rows > 0 {
                groups.push(start..i);
            }
            groups.push(i..i + 1);
            start = i + 1;
            rows = 0;
            continue;
        }
        if n == 0 && rows == 0 {
            start = i + 1;
            continue;
        }
        rows += n;
        if rows >= MIN_CHUNK_ROWS {
            groups.push(start..i + 1);
            start = i + 1;
            rows = 0;
        }
    }
    if rows > 0 {
        groups.push(start..batches.len());
    }
    groups
}

/// The file must have as many columns as the table, each convertible to its column's type.
fn check_shape(file: &str, columns: &[ColumnDef], schema: &Schema) -> Result<(), LoadError> {
    if schema.fields().len() != columns.len() {
        return Err(mismatch(
            file,
            format!(
                "the file has {} columns ({}), the table has {} ({})",
                schema.fields().len(),
                schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                columns.len(),
                columns
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    for (i, (field, col)) in schema.fields().iter().zip(columns).enumerate() {
        let want = col.ty.arrow_type();
        if !convertible(field.data_type(), &want) {
            return Err(mismatch(
                file,
                format!(
                    "column {} (\"{}\" in the file, \"{}\" in the table) has type {} in the file, \
                     which does not convert to {} ({want}) without loss",
                    i + 1,
                    field.name(),
                    col.name,
                    field.data_type(),
                    col.ty
                ),
            ));
        }
    }
    Ok(())
}

/// True when values of `from` convert to `to` exactly (or fail loudly when one does not fit).
fn convertible(from: &DataType, to: &DataType) -> bool {
    use DataType as D;
    if from == to || from == &D::Null {
        return true;
    }
    let int = |t: &D| {
        matches!(
            t,
            D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::UInt8 | D::UInt16 | D::UInt32 | D::UInt64
        )
    };
    match (from, to) {
        (f, D::Int16 | D::Int32 | D::Int64) => int(f),
        (D::Float16 | D::Float32, D::Float64) | (D::Float16, D::Float32) => true,
        (D::Decimal128(_, s1) | D::Decimal256(_, s1), D::Decimal128(_, s2)) => s1 == s2,
        (f, D::Decimal128(..)) => int(f),
        (D::LargeUtf8 | D::Utf8View, D::Utf8) => true,
        (D::Timestamp(unit, None), D::Timestamp(TimeUnit::Microsecond, None)) => {
            matches!(unit, TimeUnit::Second | TimeUnit::Millisecond)
        }
        _ => false,
    }
}

/// `batch` with every column converted to the table's type and its constraints checked.
fn convert(
    file: &str,
    columns: &[ColumnDef],
    target: &SchemaRef,
    batch: &RecordBatch,
    first_row: u64,
) -> Result<RecordBatch, LoadError> {
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    let mut arrays = Vec::with_capacity(columns.len());
    for (i, (array, col)) in batch.columns().iter().zip(columns).enumerate() {
        let value_error = |row: usize, problem: BadValue| LoadError::ArrowValue {
            file: file.to_string(),
            row: first_row + row as u64 + 1,
            column: i + 1,
            column_name: col.name.clone(),
            problem: Box::new(problem),
        };
        let want = col.ty.arrow_type();
        let mut array = if array.data_type() == &want {
            Arc::clone(array)
        } else {
            cast_with_options(array, &want, &options).map_err(|e| {
                // find the first value that does not convert, for the message
                let row = (0..array.len())
                    .find(|&r| cast_with_options(&array.slice(r, 1), &want, &options).is_err())
                    .unwrap_or(0);
                value_error(
                    row,
                    BadValue::DoesNotFit(format!("does not fit {}: {e}", col.ty)),
                )
            })?
        };
        if !col.nullable && array.null_count() > 0 {
            let row = (0..array.len()).find(|&r| array.is_null(r)).unwrap_or(0);
            return Err(value_error(row, BadValue::Null));
        }
        if let SqlType::Char(n) | SqlType::Varchar(Some(n)) = col.ty {
            array = check_length(&array, &col.ty, n)
                .map_err(|(row, e)| value_error(row, BadValue::TooLong(e)))?;
        }
        arrays.push(array);
    }
    RecordBatch::try_new(Arc::clone(target), arrays)
        .map_err(|e| mismatch(file, format!("cannot build a table chunk: {e}")))
}

/// Checks values that arrived already deserialized (a Shared Loading fragment's column, or a
/// client's dictionary of it) against column `col`: its exact Arrow type, NOT NULL, CHAR/
/// VARCHAR lengths (values a load would have trimmed are refused too: a client's
/// deserializers trim them), DECIMAL precision and the DATE/TIMESTAMP range a CSV load
/// produces. `first_row` names the rows in errors.
pub fn check_pushed_column(
    file: &str,
    index: usize,
    col: &ColumnDef,
    array: &ArrayRef,
    first_row: u64,
) -> Result<(), LoadError> {
    let value_error = |row: usize, problem: BadValue| LoadError::ArrowValue {
        file: file.to_string(),
        row: first_row + row as u64 + 1,
        column: index + 1,
        column_name: col.name.clone(),
        problem: Box::new(problem),
    };
    let want = col.ty.arrow_type();
    if array.data_type() != &want {
        return Err(mismatch(
            file,
            format!(
                "column {} (\"{}\") arrived as {}, expected {want}",
                index + 1,
                col.name,
                array.data_type()
            ),
        ));
    }
    if !col.nullable && array.null_count() > 0 {
        let row = (0..array.len()).find(|&r| array.is_null(r)).unwrap_or(0);
        return Err(value_error(row, BadValue::Null));
    }
    match col.ty {
        SqlType::Char(n) | SqlType::Varchar(Some(n)) => {
            let checked = check_length(array, &col.ty, n)
                .map_err(|(row, e)| value_error(row, BadValue::TooLong(e)))?;
            if !Arc::ptr_eq(&checked, array) {
                let strings = array.as_string::<i32>();
                let row = (0..array.len())
                    .find(|&r| strings.is_valid(r) && strings.value(r).chars().count() > n as usize)
                    .unwrap_or(0);
                return Err(value_error(
                    row,
                    BadValue::TooLong(format!("longer than {n} characters")),
                ));
            }
        }
        SqlType::Decimal { precision: p, .. } => {
            let decimals = array.as_primitive::<arrow::datatypes::Decimal128Type>();
            if let Err(e) = decimals.validate_decimal_precision(p) {
                let row = (0..decimals.len())
                    .find(|&r| {
                        decimals.is_valid(r)
                            && decimals.slice(r, 1).validate_decimal_precision(p).is_err()
                    })
                    .unwrap_or(0);
                return Err(value_error(row, BadValue::DoesNotFit(e.to_string())));
            }
        }
        SqlType::Date | SqlType::Timestamp => check_time_range(array, &col.ty)
            .map_err(|(row, e)| value_error(row, BadValue::DoesNotFit(e)))?,
        _ => {}
    }
    Ok(())
}

/// Days from 1970-01-01 to 0001-01-01 and to 5874897-12-31 (PostgreSQL's last DATE): the
/// DATE range the CSV deserializers produce.
const DATE_DAYS: (i32, i32) = (-719_162, 2_145_042_905);
/// Microseconds from 1970-01-01 00:00:00 to 0001-01-01 00:00:00: the first TIMESTAMP the CSV
/// deserializers produce.
const FIRST_MICROS: i64 = -719_162 * 86_400_000_000;

/// Checks that every DATE (Date32) or TIMESTAMP (microseconds) value of `array` lies in the
/// range the CSV deserializers produce: years 1 to 5874897 for a DATE, from 0001-01-01
/// 00:00:00 on for a TIMESTAMP (its upper end is the end of `i64`). Returns the first
/// offending row and why; one pass over the values, no allocation unless one is found.
fn check_time_range(array: &ArrayRef, ty: &SqlType) -> Result<(), (usize, String)> {
    use arrow::datatypes::{ArrowPrimitiveType, Date32Type, TimestampMicrosecondType};
    /// The first valid row of `array` outside `min..=max`.
    fn first_outside<T: ArrowPrimitiveType>(
        array: &ArrayRef,
        min: T::Native,
        max: T::Native,
    ) -> Option<(usize, T::Native)>
    where
        T::Native: PartialOrd,
    {
        let values = array.as_primitive::<T>().values();
        // NULL slots may hold anything: only a valid row counts
        if !values.iter().any(|v| *v < min || *v > max) {
            return None;
        }
        (0..values.len())
            .find(|&r| (values[r] < min || values[r] > max) && array.is_valid(r))
            .map(|r| (r, values[r]))
    }
    match ty {
        SqlType::Date => match first_outside::<Date32Type>(array, DATE_DAYS.0, DATE_DAYS.1) {
            None => Ok(()),
            Some((row, days)) => Err((
                row,
                format!(
                    "DATE of day {days} from 1970-01-01 is outside the range a load \
                     accepts (0001-01-01 to 5874897-12-31, days {} to {})",
                    DATE_DAYS.0, DATE_DAYS.1
                ),
            )),
        },
        SqlType::Timestamp => {
            match first_outside::<TimestampMicrosecondType>(array, FIRST_MICROS, i64::MAX) {
                None => Ok(()),
                Some((row, micros)) => Err((
                    row,
                    format!(
                        "TIMESTAMP of {micros} microseconds from 1970-01-01 is before \
                         0001-01-01 00:00:00 ({FIRST_MICROS}), the first a load accepts"
                    ),
                )),
            }
        }
        _ => Ok(()),
    }
}

/// Checks that every string of `array` fits `ty` (at most `n` characters once trailing
/// spaces beyond `n` are dropped, as the CSV loader does); returns the array with those
/// spaces dropped, or the first offending row and why.
fn check_length(array: &ArrayRef, ty: &SqlType, n: u32) -> Result<ArrayRef, (usize, String)> {
    let strings = array.as_string::<i32>();
    let mut trimmed = false;
    for (row, v) in strings.iter().enumerate() {
        // a value of at most n bytes has at most n characters
        let Some(v) = v.filter(|v| v.len() > n as usize) else {
            continue;
        };
        let ok = match ty {
            SqlType::Char(_) => wireload_types::deser::parse_char(v.as_bytes(), n),
            _ => wireload_types::deser::parse_varchar(v.as_bytes(), n),
        };
        match ok {
            Ok(s) if s.len() == v.len() => {}
            Ok(_) => trimmed = true,
            Err(e) => return Err((row, format!("{e}: {:?}", truncate(v)))),
        }
    }
    if !trimmed {
        return Ok(Arc::clone(array));
    }
    let fixed: StringArray = strings
        .iter()
        .map(|v| {
            v.map(|v| match ty {
                SqlType::Char(_) => wireload_types::deser::parse_char(v.as_bytes(), n),
                _ => wireload_types::deser::parse_varchar(v.as_bytes(), n),
            })
            .transpose()
        })
        .collect::<Result<_, _>>()
        .map_err(|e| (0, e.to_string()))?;
    Ok(Arc::new(fixed))
}

fn truncate(s: &str) -> &str {
    match s.char_indices().nth(60) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, Int64Array};
    use arrow::datatypes::Field;

    #[test]
    fn the_pushed_time_ranges_are_those_the_deserializers_produce() {
        use wireload_types::deser::{parse_date, parse_timestamp};
        assert_eq!(parse_date(b"0001-01-01"), Ok(DATE_DAYS.0));
        assert_eq!(parse_date(b"5874897-12-31"), Ok(DATE_DAYS.1));
        assert_eq!(parse_timestamp(b"0001-01-01 00:00:00"), Ok(FIRST_MICROS));
    }

    #[test]
    fn small_batches_are_grouped() {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, false)]));
        let batch = |n: i32| {
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![Arc::new(Int32Array::from_iter_values(0..n))],
            )
            .unwrap()
        };
        let small = |n: usize| (0..n).map(|_| batch(5000)).collect::<Vec<_>>();
        let mut batches = vec![batch(0)];
        batches.extend(small(14)); // 70,000 rows: one chunk
        batches.push(batch(0));
        batches.extend(small(2));
        batches.push(batch(9000)); // big: stays alone and ends the run before it
        batches.push(batch(5));
        assert_eq!(
            group_small_batches(&batches),
            vec![1..15, 16..18, 18..19, 19..20],
            "empty batches are left out"
        );
        assert_eq!(
            group_small_batches(&[batch(9000), batch(9000)]),
            vec![0..1, 1..2]
        );
        assert!(group_small_batches(&[batch(0)]).is_empty());
    }

    #[test]
    fn conversions_are_lossless_only() {
        use DataType as D;
        assert!(convertible(&D::Int32, &D::Int64));
        assert!(convertible(&D::Int64, &D::Int32), "checked narrowing");
        assert!(convertible(&D::Utf8View, &D::Utf8));
        assert!(convertible(&D::Decimal128(38, 2), &D::Decimal128(15, 2)));
        assert!(!convertible(&D::Decimal128(15, 3), &D::Decimal128(15, 2)));
        assert!(!convertible(&D::Float64, &D::Int64));
        assert!(!convertible(&D::Utf8, &D::Int32));
        assert!(!convertible(&D::Float64, &D::Float32));
        assert!(!convertible(
            &D::Timestamp(TimeUnit::Nanosecond, None),
            &D::Timestamp(TimeUnit::Microsecond, None)
        ));
    }

    #[test]
    fn hash_split_keeps_rows_and_order() {
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            schema,
            vec![Arc::new(Int64Array::from_iter_values(0..1000))],
        )
        .unwrap();
        let (parts, taken) = crate::partition::split_partitions(
            &batch,
            wireload_storage::Partitioning::Hash {
                column: 0,
                count: 4,
            },
            true,
        )
        .unwrap();
        // the batch row of every partition row
        for (p, rows) in parts.iter().zip(taken.unwrap()) {
            let v = p.column(0).as_primitive::<arrow::datatypes::Int64Type>();
            let from_rows: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
            assert_eq!(v.values().to_vec(), from_rows);
        }
        assert_eq!(parts.len(), 4);
        let mut all: Vec<i64> = Vec::new();
        for p in &parts {
            let v = p.column(0).as_primitive::<arrow::datatypes::Int64Type>();
            assert!(
                v.values().windows(2).all(|w| w[0] < w[1]),
                "input order kept"
            );
            all.extend(v.values().iter());
        }
        all.sort_unstable();
        assert_eq!(all, (0..1000).collect::<Vec<_>>());
    }
}

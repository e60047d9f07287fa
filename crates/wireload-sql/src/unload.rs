//! Running `COPY ... TO` (a table or a query's result, as CSV, Arrow or Parquet) and
//! `COPY ... FROM` an Arrow or Parquet file.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use wireload_load::{LoadControl, LoadReport};
use wireload_storage::Table;
use wireload_unload::{UnloadError, UnloadReport};

use crate::copy::OutputFormat;
use crate::{SqlError, UnloadSummary};

/// Rows to write: a schema and batches in order.
pub(crate) struct Rows {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

/// The rows of a table's current version, optionally only `columns` (in that order).
pub(crate) fn table_rows(table: &Table, columns: Option<&[String]>) -> Result<Rows, SqlError> {
    let snapshot = table.snapshot();
    let schema = Arc::clone(&snapshot.schema);
    // unloaded plain: dictionary columns decoded
    let live = snapshot
        .live_chunks()?
        .iter()
        .map(wireload_storage::plain_batch)
        .collect::<Result<Vec<_>, _>>()?;
    let Some(columns) = columns else {
        return Ok(Rows {
            schema,
            batches: live,
        });
    };
    let indices = columns
        .iter()
        .map(|c| {
            schema.index_of(c).map_err(|_| SqlError::UndefinedColumn {
                table: table.name().to_string(),
                column: c.clone(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let batches = live
        .iter()
        .map(|b| b.project(&indices))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| SqlError::Internal(format!("cannot select the COPY columns: {e}")))?;
    let schema = Arc::new(
        schema
            .project(&indices)
            .map_err(|e| SqlError::Internal(format!("cannot select the COPY columns: {e}")))?,
    );
    Ok(Rows { schema, batches })
}

/// Writes `rows` to `path` in `format` on the current rayon pool.
pub(crate) fn write(
    rows: &Rows,
    path: &Path,
    format: &OutputFormat,
    cancel: &AtomicBool,
) -> Result<UnloadReport, UnloadError> {
    match format {
        OutputFormat::Csv(dialect) => {
            wireload_unload::csv::write_csv_file(path, &rows.schema, &rows.batches, dialect, cancel)
        }
        OutputFormat::Arrow(c) => {
            wireload_unload::ipc::write_arrow_file(path, &rows.schema, &rows.batches, *c, cancel)
        }
        OutputFormat::Parquet(c) => wireload_unload::parquet::write_parquet_file(
            path,
            &rows.schema,
            &rows.batches,
            *c,
            cancel,
        ),
    }
}

/// The summary of a finished unload.
pub(crate) fn summary(
    source: String,
    path: &str,
    format: &OutputFormat,
    report: &UnloadReport,
    started: Instant,
) -> UnloadSummary {
    UnloadSummary {
        source,
        path: path.to_string(),
        format: format.name(),
        rows: report.rows,
        bytes: report.bytes,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Which binary format a `COPY ... FROM` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinaryFormat {
    /// Arrow IPC file
    Arrow,
    /// Parquet file
    Parquet,
}

/// Reads an Arrow or Parquet file on the current rayon pool and appends it to `table`
/// (`shown` names it in the report).
pub(crate) fn load_binary(
    table: &Table,
    path: &Path,
    shown: &str,
    format: BinaryFormat,
    ctl: &LoadControl,
) -> Result<LoadReport, SqlError> {
    let started = Instant::now();
    let read = match format {
        BinaryFormat::Arrow => wireload_unload::ipc::read_arrow_file(path),
        BinaryFormat::Parquet => wireload_unload::parquet::read_parquet_file(path),
    };
    let (_, batches, report) = read?;
    let mut loaded = wireload_publish::append_batches(table, shown, report.bytes, batches, ctl)
        .map_err(|error| SqlError::Load {
            table: table.name().to_string(),
            error,
        })?;
    loaded.seconds = started.elapsed().as_secs_f64();
    Ok(loaded)
}

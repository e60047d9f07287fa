//! Parquet files: parallel writer and reader.
//!
//! # Writing in parallel
//!
//! parquet-rs' `ArrowWriter` encodes one column after another on the calling thread. Here
//! the batches are grouped into row groups of at most [`ROW_GROUP_ROWS`] rows and
//! [`ROW_GROUP_BYTES`] bytes of Arrow data; the columns of a row group are encoded and
//! compressed in parallel on the current rayon pool (one `ArrowColumnWriter` per column,
//! from parquet's `ArrowRowGroupWriterFactory`), while the previous row group's encoded
//! column chunks are appended to the file in order. The file carries the Arrow schema
//! (`ARROW:schema` metadata), so Timestamp, Date32 and Decimal128 come back as written.
//!
//! # Reading in parallel
//!
//! The file is mapped and its footer parsed once; then every (row group, column) pair is
//! decoded on its own rayon task with `ParquetRecordBatchReaderBuilder` (`with_row_groups`,
//! a one-column projection), and the columns of each row group are put back together into
//! record batches. Parallelism therefore does not depend on the file having many row groups.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, SchemaRef};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory, ArrowWriter,
    ArrowWriterOptions, compute_leaves,
};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use rayon::prelude::*;

use crate::files::{AtomicFile, detach_batch, map_file, no_panic};
use crate::ipc::split_batches;
use crate::{UnloadError, UnloadReport};

/// Most rows in one row group. Readers (this one, DuckDB, Polars, DataFusion) parallelize
/// and skip by row group, so row groups should not be huge; but every row group repeats the
/// column chunk metadata and statistics and restarts the dictionaries, which costs size and
/// speed when they are small. 1 Mi rows is parquet-rs' and pyarrow's default, and a
/// wireload table chunk (about 1M rows) becomes one row group.
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// Most bytes of Arrow data (uncompressed) in one row group, so that rows of long strings
/// do not make row groups (and the writer's buffers: a row group is encoded in memory
/// before it is written) of gigabytes.
pub const ROW_GROUP_BYTES: usize = 128 << 20;

/// The largest batch the reader asks parquet for; a row group larger than this comes back
/// as several batches.
const READ_BATCH_ROWS: usize = 1 << 20;

/// How the column chunks of a Parquet file are compressed.
///
/// The default is [`ParquetCompression::Zstd`] (level 1). On TPC-H lineitem (1M rows, 172 MB
/// of Arrow data) it makes a file a fifth smaller than Snappy or LZ4 (25.7 MB against 32.4
/// and 33.2 MB), writes about 10% slower (most of the writer's time is Parquet encoding,
/// not compression) and reads as fast as Snappy. Every Parquet reader of the last years
/// reads it (pyarrow, Polars, DuckDB, Spark), and Parquet files are usually made to be kept
/// or shipped, where size matters. Choose [`ParquetCompression::Snappy`] for the widest
/// compatibility (old readers) or [`ParquetCompression::Lz4Raw`] for the fastest reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParquetCompression {
    /// No compression.
    None,
    /// Snappy: fast, the long-time default of Spark, DuckDB and pyarrow.
    Snappy,
    /// LZ4 (the `LZ4_RAW` codec; not the deprecated Hadoop-framed `LZ4`).
    Lz4Raw,
    /// Zstandard at level 1; the default.
    #[default]
    Zstd,
}

impl ParquetCompression {
    fn codec(self) -> Result<Compression, UnloadError> {
        Ok(match self {
            Self::None => Compression::UNCOMPRESSED,
            Self::Snappy => Compression::SNAPPY,
            Self::Lz4Raw => Compression::LZ4_RAW,
            Self::Zstd => Compression::ZSTD(ZstdLevel::try_new(1)?),
        })
    }
}

/// Writes `batches` as a Parquet file, encoding the columns of each row group in parallel on
/// the current rayon pool and writing row groups in order.
///
/// Every batch must have the columns of `schema` (same types; no nulls in a non-nullable
/// field). Row groups hold at most [`ROW_GROUP_ROWS`] rows and about [`ROW_GROUP_BYTES`] of
/// Arrow data; batches without rows are left out (an empty table is a file with the schema
/// and no row group).
///
/// The file appears only when complete (written under a temporary name beside it, synced,
/// renamed); a failed or cancelled write leaves nothing. `cancel` is polled between columns;
/// once it is set the write stops with [`UnloadError::Cancelled`].
pub fn write_parquet_file(
    path: &Path,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    compression: ParquetCompression,
    cancel: &AtomicBool,
) -> Result<UnloadReport, UnloadError> {
    let start = Instant::now();
    let groups = plan_row_groups(schema, batches)?;
    let rows = groups.iter().flatten().map(|b| b.num_rows() as u64).sum();
    let properties = WriterProperties::builder()
        .set_compression(compression.codec()?)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .build();

    let out = AtomicFile::create(path)?;
    // The high-level writer converts the schema and adds the Arrow schema to the file's
    // metadata; its parts then do the work.
    let options = ArrowWriterOptions::new().with_properties(properties);
    let (mut writer, factory) =
        ArrowWriter::try_new_with_options(out.file(), schema.clone(), options)?
            .into_serialized_writer()?;
    let mut encoded: Vec<ArrowColumnChunk> = Vec::new();
    for (index, group) in groups.iter().enumerate() {
        check_cancel(cancel)?;
        // Append the previous row group while this one is encoded.
        let previous = std::mem::take(&mut encoded);
        let (written, next) = rayon::join(
            || append_row_group(&mut writer, previous),
            || encode_row_group(&factory, index, schema, group, cancel),
        );
        written?;
        encoded = next?;
    }
    append_row_group(&mut writer, encoded)?;
    check_cancel(cancel)?;
    // Writes the footer and flushes.
    writer.into_inner()?;
    let committed = out.commit()?;
    Ok(UnloadReport {
        rows,
        bytes: committed.len,
        elapsed: start.elapsed(),
        crc32: Some(committed.crc32),
    })
}

/// Reads a whole Parquet file (mapped into memory), decoding each column of each row group
/// on its own rayon task.
///
/// Returns the file's Arrow schema (from its `ARROW:schema` metadata when present, else
/// derived from the Parquet schema), its rows as record batches (one per row group, or
/// several for row groups over 1 Mi rows) and what was read. The batches own their memory.
/// A file that is not Parquet, or is truncated or damaged in a way the format can detect,
/// gives [`UnloadError::Corrupt`] naming the path and what is wrong.
pub fn read_parquet_file(
    path: &Path,
) -> Result<(SchemaRef, Vec<RecordBatch>, UnloadReport), UnloadError> {
    let start = Instant::now();
    let map = map_file(path)?;
    let corrupt = |message: String| UnloadError::Corrupt {
        path: path.to_path_buf(),
        message,
    };
    let metadata = no_panic(|| ArrowReaderMetadata::load(&map, ArrowReaderOptions::new()))
        .and_then(|r| r.map_err(|e| e.to_string()))
        .map_err(|e| corrupt(format!("the footer is damaged or not Parquet: {e}")))?;
    let schema = metadata.schema().clone();
    let row_groups = metadata.metadata().row_groups();
    let columns = schema.fields().len();
    let mut sizes = Vec::with_capacity(row_groups.len());
    for (i, group) in row_groups.iter().enumerate() {
        let rows = usize::try_from(group.num_rows())
            .map_err(|_| corrupt(format!("row group {i} claims {} rows", group.num_rows())))?;
        sizes.push(rows);
    }
    // parquet asserts (panics) on negative column chunk ranges; say which chunk is wrong.
    // And name a codec this build does not decompress (gzip, brotli, lzo) up front.
    for (i, group) in row_groups.iter().enumerate() {
        for chunk in group.columns() {
            if !matches!(
                chunk.compression(),
                Compression::UNCOMPRESSED
                    | Compression::SNAPPY
                    | Compression::LZ4
                    | Compression::LZ4_RAW
                    | Compression::ZSTD(_)
            ) {
                return Err(corrupt(format!(
                    "row group {i}, column {}: compressed with {}, which wireload does not read \
                     (it reads uncompressed, SNAPPY, LZ4_RAW, LZ4 and ZSTD Parquet)",
                    chunk.column_path(),
                    chunk.compression()
                )));
            }
            let start = chunk
                .dictionary_page_offset()
                .unwrap_or(chunk.data_page_offset());
            let fits = u64::try_from(start)
                .ok()
                .zip(u64::try_from(chunk.compressed_size()).ok())
                .and_then(|(s, n)| s.checked_add(n))
                .is_some_and(|end| end <= map.len() as u64);
            if !fits {
                return Err(corrupt(format!(
                    "row group {i}, column {}: the chunk (at byte {start}, {} bytes) lies outside the {}-byte file",
                    chunk.column_path(),
                    chunk.compressed_size(),
                    map.len()
                )));
            }
        }
    }
    // One task per column of each row group, the largest first (see `encode_row_group`);
    // the results are put back in order.
    let mut tasks: Vec<(usize, usize)> = (0..row_groups.len())
        .flat_map(|g| (0..columns).map(move |c| (g, c)))
        .collect();
    let leaves = leaf_ranges(&schema);
    let task_bytes = |&(g, c): &(usize, usize)| -> i64 {
        let chunks = row_groups[g].columns();
        leaves[c]
            .clone()
            .filter_map(|l| chunks.get(l))
            .map(|l| l.uncompressed_size())
            .sum()
    };
    tasks.sort_by_key(|t| std::cmp::Reverse(task_bytes(t)));
    let mut decoded = tasks
        .par_iter()
        .map(|&(group, column)| {
            let read = || -> Result<Vec<ArrayRef>, parquet::errors::ParquetError> {
                let projection = ProjectionMask::roots(metadata.parquet_schema(), [column]);
                let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(
                    map.clone(),
                    metadata.clone(),
                )
                .with_row_groups(vec![group])
                .with_projection(projection)
                .with_batch_size(sizes[group].clamp(1, READ_BATCH_ROWS))
                .build()?;
                reader.map(|b| Ok(b?.column(0).clone())).collect()
            };
            let arrays = no_panic(read)
                .and_then(|r| r.map_err(|e| e.to_string()))
                .map_err(|e| {
                    corrupt(format!(
                        "row group {group}, column \"{}\": {e}",
                        schema.field(column).name()
                    ))
                })?;
            Ok(((group, column), arrays))
        })
        .collect::<Result<Vec<_>, UnloadError>>()?;
    decoded.sort_by_key(|&(task, _)| task);
    let mut decoded = decoded.into_iter().map(|(_, arrays)| arrays);

    let mut batches = Vec::new();
    for (group, &rows) in sizes.iter().enumerate() {
        if columns == 0 {
            let options = RecordBatchOptions::new().with_row_count(Some(rows));
            batches.push(RecordBatch::try_new_with_options(
                schema.clone(),
                vec![],
                &options,
            )?);
            continue;
        }
        let parts: Vec<Vec<ArrayRef>> = decoded.by_ref().take(columns).collect();
        let pieces = parts[0].len();
        let mut total = 0;
        for k in 0..pieces {
            let arrays = parts
                .iter()
                .map(|p| p.get(k).cloned())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    corrupt(format!("row group {group}: columns of different lengths"))
                })?;
            let batch = RecordBatch::try_new(schema.clone(), arrays)
                .map_err(|e| corrupt(format!("row group {group}: {e}")))?;
            total += batch.num_rows();
            batches.push(
                detach_batch(batch, &map)
                    .map_err(|e| corrupt(format!("row group {group}: {e}")))?,
            );
        }
        if total != rows || parts.iter().any(|p| p.len() != pieces) {
            return Err(corrupt(format!(
                "row group {group} claims {rows} rows but its columns hold {total}"
            )));
        }
    }
    let rows = batches.iter().map(|b| b.num_rows() as u64).sum();
    let report = UnloadReport {
        rows,
        bytes: map.len() as u64,
        elapsed: start.elapsed(),
        crc32: None,
    };
    Ok((schema, batches, report))
}

fn check_cancel(cancel: &AtomicBool) -> Result<(), UnloadError> {
    if cancel.load(std::sync::atomic::Ordering::Relaxed) {
        Err(UnloadError::Cancelled)
    } else {
        Ok(())
    }
}

/// Bytes of Arrow data in `column` (its slice, not the whole buffers it shares).
fn column_bytes(column: &ArrayRef) -> usize {
    column
        .to_data()
        .get_slice_memory_size()
        .unwrap_or_else(|_| column.get_array_memory_size())
}

/// Bytes of Arrow data in `batch`.
fn arrow_bytes(batch: &RecordBatch) -> usize {
    batch.columns().iter().map(column_bytes).sum()
}

/// Checks the batches against `schema` and groups their rows (slices, no copies) into row
/// groups of at most [`ROW_GROUP_ROWS`] rows and about [`ROW_GROUP_BYTES`] bytes.
fn plan_row_groups(
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<Vec<Vec<RecordBatch>>, UnloadError> {
    let mut groups = Vec::new();
    let mut current: Vec<RecordBatch> = Vec::new();
    let (mut rows, mut bytes) = (0usize, 0usize);
    for batch in split_batches(schema, batches, usize::MAX)? {
        let n = batch.num_rows();
        let row_bytes = (arrow_bytes(&batch) / n).max(1);
        let mut offset = 0;
        while offset < n {
            let fit_bytes = ROW_GROUP_BYTES.saturating_sub(bytes) / row_bytes;
            if !current.is_empty() && fit_bytes == 0 {
                groups.push(std::mem::take(&mut current));
                (rows, bytes) = (0, 0);
                continue;
            }
            let take = (n - offset)
                .min(ROW_GROUP_ROWS - rows)
                .min(fit_bytes.max(1));
            current.push(batch.slice(offset, take));
            (rows, bytes, offset) = (rows + take, bytes + take * row_bytes, offset + take);
            if rows == ROW_GROUP_ROWS {
                groups.push(std::mem::take(&mut current));
                (rows, bytes) = (0, 0);
            }
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    Ok(groups)
}

/// For each field of `schema`, the range of its Parquet leaf columns.
fn leaf_ranges(schema: &SchemaRef) -> Vec<std::ops::Range<usize>> {
    let mut start = 0;
    schema
        .fields()
        .iter()
        .map(|f| {
            let end = start + leaf_count(f.data_type());
            let range = start..end;
            start = end;
            range
        })
        .collect()
}

/// Number of Parquet leaf columns an Arrow field of `data_type` becomes.
fn leaf_count(data_type: &DataType) -> usize {
    match data_type {
        DataType::Struct(fields) => fields.iter().map(|f| leaf_count(f.data_type())).sum(),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => leaf_count(f.data_type()),
        DataType::Dictionary(_, values) => leaf_count(values),
        DataType::RunEndEncoded(_, values) => leaf_count(values.data_type()),
        _ => 1,
    }
}

/// Encodes the columns of one row group in parallel; returns the column chunks in order.
fn encode_row_group(
    factory: &ArrowRowGroupWriterFactory,
    index: usize,
    schema: &SchemaRef,
    group: &[RecordBatch],
    cancel: &AtomicBool,
) -> Result<Vec<ArrowColumnChunk>, UnloadError> {
    let writers = factory.create_column_writers(index)?;
    let leaves: usize = schema
        .fields()
        .iter()
        .map(|f| leaf_count(f.data_type()))
        .sum();
    if leaves != writers.len() {
        return Err(UnloadError::Options(format!(
            "the schema has {leaves} leaf columns but parquet made {} column writers",
            writers.len()
        )));
    }
    let mut writers = writers.into_iter();
    let mut per_field: Vec<(usize, usize, Vec<ArrowColumnWriter>)> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let bytes = group.iter().map(|b| column_bytes(b.column(i))).sum();
            let writers = writers.by_ref().take(leaf_count(f.data_type())).collect();
            (i, bytes, writers)
        })
        .collect();
    // Largest columns first, one column per task: a long string column started last would
    // leave the other threads idle while it finishes.
    per_field.sort_by_key(|&(_, bytes, _)| std::cmp::Reverse(bytes));
    let mut chunks = per_field
        .into_par_iter()
        .with_max_len(1)
        .map(|(i, _, mut writers)| {
            check_cancel(cancel)?;
            let field = schema.field(i);
            for batch in group {
                let leaves = compute_leaves(field, batch.column(i))?;
                for (writer, leaf) in writers.iter_mut().zip(&leaves) {
                    writer.write(leaf)?;
                }
            }
            let chunks = writers
                .into_iter()
                .map(|w| w.close().map_err(UnloadError::from))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((i, chunks))
        })
        .collect::<Result<Vec<_>, UnloadError>>()?;
    chunks.sort_by_key(|&(i, _)| i);
    Ok(chunks.into_iter().flat_map(|(_, c)| c).collect())
}

/// Appends encoded column chunks to the file as one row group; nothing for no chunks.
fn append_row_group<W: std::io::Write + Send>(
    writer: &mut SerializedFileWriter<W>,
    chunks: Vec<ArrowColumnChunk>,
) -> Result<(), UnloadError> {
    if chunks.is_empty() {
        return Ok(());
    }
    let mut row_group = writer.next_row_group()?;
    for chunk in chunks {
        chunk.append_to_row_group(&mut row_group)?;
    }
    row_group.close()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};
    use std::sync::Arc;

    fn batch(rows: usize, text: usize) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let s = "x".repeat(text);
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from_iter_values(0..rows as i64)),
                Arc::new(StringArray::from_iter_values((0..rows).map(|_| s.as_str()))),
            ],
        )
        .unwrap()
    }

    #[test]
    fn row_groups_are_cut_by_rows() {
        let b = batch(ROW_GROUP_ROWS + 10, 0);
        let groups = plan_row_groups(&b.schema(), &[b.slice(0, 5), b.clone()]).unwrap();
        let sizes: Vec<usize> = groups
            .iter()
            .map(|g| g.iter().map(|b| b.num_rows()).sum())
            .collect();
        assert_eq!(sizes, [ROW_GROUP_ROWS, 15]);
    }

    #[test]
    fn row_groups_are_cut_by_bytes() {
        // About 1 KiB a row: 128 MiB is about 128K rows.
        let b = batch(300_000, 1024);
        let groups = plan_row_groups(&b.schema(), &[b]).unwrap();
        assert!(groups.len() >= 3, "{} groups", groups.len());
        for g in &groups {
            let bytes: usize = g.iter().map(arrow_bytes).sum();
            assert!(bytes <= ROW_GROUP_BYTES + 2048, "{bytes}");
        }
        let rows: usize = groups.iter().flatten().map(|b| b.num_rows()).sum();
        assert_eq!(rows, 300_000);
    }

    #[test]
    fn no_rows_no_row_groups() {
        let b = batch(0, 0);
        assert!(
            plan_row_groups(&b.schema(), &[b.clone(), b])
                .unwrap()
                .is_empty()
        );
    }
}

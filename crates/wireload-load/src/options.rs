//! The options of a CSV load.

use std::sync::Arc;

use arrow::array::BooleanArray;
use arrow::record_batch::RecordBatch;
use wireload_csv::{Dialect, ScanMode};
use wireload_publish::{LoadError, MergeStrategy, Schedule};

/// What a load does with a record it cannot load (PostgreSQL's and DuckDB's ON_ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// The first bad record fails the load; nothing is published.
    #[default]
    Stop,
    /// Bad records are skipped and reported ([`LoadReport::rejects`]); the good ones load.
    Ignore,
}

impl std::str::FromStr for OnError {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "stop" => Ok(OnError::Stop),
            "ignore" => Ok(OnError::Ignore),
            other => Err(format!(
                "unknown ON_ERROR policy '{other}' (expected stop or ignore)"
            )),
        }
    }
}

/// Everything that shapes one load.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The CSV dialect of the source.
    pub dialect: Dialect,
    /// How chunk boundaries are found.
    pub mode: ScanMode,
    /// Chunk size in bytes; `None` picks the default from the cache size and thread count.
    pub chunk_size: Option<usize>,
    /// Worker threads; `None`: the caller's rayon pool (see [`crate::pool`]).
    pub threads: Option<usize>,
    /// How partition buffers are merged.
    pub merge: MergeStrategy,
    /// When the merge steps run.
    pub schedule: Schedule,
    /// What a bad record (a bad value, a broken CSV structure) does to the load.
    pub on_error: OnError,
    /// With [`OnError::Ignore`]: the load fails (publishing nothing) when more than this
    /// many records are rejected.
    pub reject_limit: Option<u64>,
    /// The character encoding of the input: anything but UTF-8 is transcoded to UTF-8 as
    /// it is read (and streamed, not mapped).
    pub encoding: crate::Encoding,
    /// The longest record the load takes, in bytes (`MAX_LINE_SIZE`): a longer one fails
    /// the load ([`crate::LoadError::LineTooLong`], whatever `on_error` says). Checked
    /// on every physical line, and on a streamed record as it grows (so a stream never
    /// buffers more than this of one record). `None`: no limit.
    pub max_line_bytes: Option<usize>,
    /// Bytes the load's buffers may hold (`MEMORY_LIMIT`; the Arrow memory of the
    /// partition buffers the parse made): past it the load stops and fails
    /// ([`crate::LoadError::MemoryBudget`]), publishing nothing. `None`: no limit; see
    /// [`crate::default_memory_budget`].
    pub memory_budget: Option<u64>,
    /// Which input fields the table's columns come from; `None`: the input has the
    /// table's columns, in order.
    pub fields: Option<Fields>,
    /// How DATE and TIMESTAMP values are written when not ISO (`DATEFORMAT`,
    /// `TIMESTAMPFORMAT`); ISO values are read either way.
    pub formats: wireload_types::Formats,
    /// Keeps only the rows this predicate holds for (selection pushed into the load);
    /// `None`: every row. Not for tables with unique keys (the load refuses it).
    pub filter: Option<RowFilter>,
}

/// A predicate a load keeps rows by: each chunk's rows are tested once they are
/// deserialized, and those it finds false or NULL are dropped before the chunk is merged
/// (so they never count against the memory budget). The predicate answers None when it
/// cannot decide for a chunk (an error evaluating it): then the chunk keeps all its rows,
/// and whoever reads the table filters again.
#[derive(Clone)]
pub struct RowFilter(Arc<Box<Keep>>);

/// The predicate of a [`RowFilter`]: the rows of a chunk to keep, None for all of them.
type Keep = dyn Fn(&RecordBatch) -> Option<BooleanArray> + Send + Sync;

impl RowFilter {
    /// The filter that keeps the rows `keep` marks true.
    pub fn new(
        keep: impl Fn(&RecordBatch) -> Option<BooleanArray> + Send + Sync + 'static,
    ) -> Self {
        // boxed behind a thin pointer: the options stay small
        RowFilter(Arc::new(Box::new(keep)))
    }

    /// The rows of `batch` the predicate keeps (None when it keeps none).
    pub(crate) fn apply(&self, batch: RecordBatch) -> Result<Option<RecordBatch>, LoadError> {
        let Some(mask) = (self.0)(&batch) else {
            return Ok(Some(batch));
        };
        if mask.len() != batch.num_rows() {
            return Err(LoadError::Internal(format!(
                "a row filter answered {} values for {} rows",
                mask.len(),
                batch.num_rows()
            )));
        }
        // NULL counts as false, as in WHERE
        let kept = arrow::compute::filter_record_batch(&batch, &mask)
            .map_err(|e| LoadError::Internal(format!("filtering a chunk: {e}")))?;
        Ok((kept.num_rows() > 0).then_some(kept))
    }
}

impl std::fmt::Debug for RowFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RowFilter(..)")
    }
}

/// Which fields of the input the table's columns come from (projection pushdown), and
/// which columns the load fills itself.
///
/// The records are split into all their fields, but only the fields a table column reads
/// are deserialized; the others are never looked at (a bad value there is no error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields {
    /// How many fields each input record has.
    pub count: usize,
    /// For each table column, where its values come from (input fields in any order, no
    /// field read twice).
    pub columns: Vec<FieldSource>,
}

/// Where one table column's values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldSource {
    /// The 0-based input field.
    Input(usize),
    /// NULL in every row: a column a COPY column list leaves out (it must be nullable).
    Null,
    /// The name of the input the row comes from (`read_csv(..., filename => true)`); the
    /// column must be text without a length limit.
    FileName,
}

impl Fields {
    /// The input fields `columns` read, one per table column, in the table's order.
    pub fn inputs(count: usize, columns: impl IntoIterator<Item = usize>) -> Self {
        Fields {
            count,
            columns: columns.into_iter().map(FieldSource::Input).collect(),
        }
    }
}

//! The leaf of every plan over a wireload table: one snapshot, read whole or through an
//! index, in parallel output partitions that each hold a contiguous run of the table's rows
//! (partition 0 the first rows, and so on), so that concatenating the partitions in order
//! gives the table in insertion order.
//!
//! An index scan is chosen when the plan is made (which index, which keys), but its lookups
//! run when the scan first executes, so `EXPLAIN` costs nothing. When the lookups select more
//! than the allowed fraction of the table's rows, the scan reads the whole snapshot instead.
//!
//! ```text
//!   table rows:   [chunk 0 ........][chunk 1 ....][chunk 2 ..........]
//!   pieces:       [p0  ][p1  ][p2  ][p3  ][p4   ][p5  ][p6  ][p7    ]   (at most batch_size rows)
//!   partitions:   0: p0 p1 p2      1: p3 p4 p5          2: p6 p7         (contiguous runs)
//!   index scan:   0: rows found, in row-id order        1: -   2: -
//! ```

use std::fmt;
use std::sync::{Arc, OnceLock};

use arrow::array::{BooleanArray, UInt32Array};
use arrow::buffer::BooleanBuffer;
use arrow::compute::{concat_batches, filter_record_batch, take_record_batch};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{ColumnStatistics, Statistics};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning,
    PhysicalExpr, PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
    StatisticsArgs,
};
use wireload_storage::{Deletions, RowId, TableDef, TableVersion, conform};

use crate::code_filters::{self, ChunkTests};
use crate::index::IndexAccess;

/// A row range of one chunk: the unit of work spread over output partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    chunk: usize,
    offset: usize,
    len: usize,
    /// rows of the range not deleted
    live: usize,
}

/// A chunk of the snapshot, its deletions and its code tests (rows skipped when read).
#[derive(Debug, Clone)]
struct ScanChunk {
    batch: RecordBatch,
    deleted: Option<Arc<Deletions>>,
    tests: Arc<ChunkTests>,
}

impl ScanChunk {
    /// Live rows among rows `offset..offset + len`.
    fn live_in(&self, offset: usize, len: usize) -> usize {
        match &self.deleted {
            None => len,
            Some(d) => d.live().slice(offset, len).count_set_bits(),
        }
    }

    /// Rows `offset..offset + len`, projected, without the deleted ones and the ones that
    /// fail a code test; also the number of rows the code tests dropped.
    fn read(
        &self,
        offset: usize,
        len: usize,
        projection: Option<&[usize]>,
    ) -> Result<(RecordBatch, usize)> {
        let batch = self.batch.slice(offset, len);
        let mut keep = self.deleted.as_ref().map(|d| d.live().slice(offset, len));
        let mut kept = keep.as_ref().map_or(len, BooleanBuffer::count_set_bits);
        let mut dropped = 0;
        for (column, codes) in self.tests.iter() {
            let Some(pass) = codes.test(batch.column(*column).as_ref()) else {
                continue;
            };
            let both = match keep {
                Some(k) => &k & &pass,
                None => pass,
            };
            let now = both.count_set_bits();
            dropped += kept - now;
            kept = now;
            keep = Some(both);
        }
        let batch = match projection {
            Some(cols) => batch.project(cols)?,
            None => batch,
        };
        Ok(match keep {
            Some(k) if kept < len => (
                filter_record_batch(&batch, &BooleanArray::new(k, None))?,
                dropped,
            ),
            _ => (batch, dropped),
        })
    }
}

/// An index lookup planned for a scan, run once when the scan first executes.
#[derive(Debug)]
struct IndexProbe {
    access: IndexAccess,
    /// at most this many rows are gathered; more: the whole snapshot is read
    max_rows: usize,
    /// the rows found (None: too many, read everything), once looked up
    rows: OnceLock<Option<Arc<Vec<RowId>>>>,
}

/// Reads one snapshot of a table: every chunk of every partition, projected, in
/// `min(target_partitions, pieces)` parallel output partitions of contiguous rows; or the
/// rows an index lookup selects (all in output partition 0).
#[derive(Debug, Clone)]
pub struct SnapshotScanExec {
    def: Arc<TableDef>,
    version: Arc<TableVersion>,
    chunks: Arc<Vec<ScanChunk>>,
    projection: Option<Vec<usize>>,
    schema: SchemaRef,
    partitions: Arc<Vec<Vec<Piece>>>,
    limit: Option<usize>,
    batch_size: usize,
    target_partitions: usize,
    /// columns tested on codes, and partitions skipped because no code passes
    code_tests: Option<(Vec<usize>, usize)>,
    index: Option<Arc<IndexProbe>>,
    metrics: ExecutionPlanMetricsSet,
    properties: Arc<PlanProperties>,
}

impl SnapshotScanExec {
    /// A scan of `version` of table `def`. Chunks are cut into pieces of at most
    /// `batch_size` rows, spread over at most `target_partitions` output partitions
    /// as contiguous runs of about equal row counts.
    pub fn new(
        def: Arc<TableDef>,
        version: Arc<TableVersion>,
        table_schema: SchemaRef,
        projection: Option<&Vec<usize>>,
        limit: Option<usize>,
        target_partitions: usize,
        batch_size: usize,
    ) -> Result<Self> {
        let schema = match projection {
            Some(p) => Arc::new(table_schema.project(p)?),
            None => table_schema,
        };
        // no tests: every chunk shares one empty list
        let none = Arc::new(ChunkTests::new());
        let tests: Vec<Vec<_>> = version
            .partitions
            .iter()
            .map(|p| p.chunks.iter().map(|_| Arc::clone(&none)).collect())
            .collect();
        let chunks = scan_chunks(&version, &tests);
        let batch_size = batch_size.max(1);
        let partitions = spread(&chunks, target_partitions, batch_size);
        Ok(SnapshotScanExec {
            properties: properties_of(&schema, partitions.len()),
            def,
            version,
            chunks: Arc::new(chunks),
            projection: projection.cloned(),
            schema,
            partitions: Arc::new(partitions),
            limit,
            batch_size,
            target_partitions,
            code_tests: None,
            index: None,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// This scan dropping the rows of dictionary columns whose codes fail `filters` (see
    /// [`code_filters`]; filters it cannot test on codes are ignored, DataFusion filters again) and
    /// skipping chunks where none can pass.
    pub(crate) fn with_code_filters(mut self, filters: &[Expr]) -> Self {
        let tests = code_filters::plan(&self.def.arrow_schema, &self.version, filters);
        let mut columns: Vec<usize> = tests
            .iter()
            .flatten()
            .flat_map(|t| t.iter())
            .map(|(c, _)| *c)
            .collect();
        if columns.is_empty() {
            return self;
        }
        columns.sort_unstable();
        columns.dedup();
        // partitions with rows none of which can pass
        let skipped = tests
            .iter()
            .zip(&self.version.partitions)
            .filter(|(t, p)| p.num_rows() > 0 && t.iter().all(|t| none_pass(t)))
            .count();
        let chunks = scan_chunks(&self.version, &tests);
        let partitions = spread(&chunks, self.target_partitions, self.batch_size);
        self.properties = properties_of(&self.schema, partitions.len());
        self.chunks = Arc::new(chunks);
        self.partitions = Arc::new(partitions);
        self.code_tests = Some((columns, skipped));
        self
    }

    /// This scan reading the rows `access` selects, when they are at most `fraction` (0 to
    /// 1) of the snapshot's rows (the whole snapshot otherwise). Nothing is looked up yet.
    pub(crate) fn with_index(mut self, access: IndexAccess, fraction: f64) -> Self {
        let total = self.version.num_rows();
        self.index = Some(Arc::new(IndexProbe {
            access,
            max_rows: (total as f64 * fraction.clamp(0.0, 1.0)) as usize,
            rows: OnceLock::new(),
        }));
        self
    }

    /// The snapshot this scan reads.
    pub fn version(&self) -> &Arc<TableVersion> {
        &self.version
    }

    /// The index this scan uses, when it was planned as an index scan.
    pub fn index_name(&self) -> Option<&str> {
        self.index.as_ref().map(|p| p.access.index.as_str())
    }

    /// True once the index lookups of an index scan have run (never for a plain scan):
    /// planning and `EXPLAIN` do not run them.
    pub fn index_probed(&self) -> bool {
        self.index.as_ref().is_some_and(|p| p.rows.get().is_some())
    }

    /// Rows of the full scan in output partition `partition` (before the limit).
    fn pieces_rows(&self, partition: usize) -> usize {
        self.partitions[partition].iter().map(|p| p.live).sum()
    }

    /// The rows the index selects (looked up on the first call), or None: read everything.
    fn probe(&self) -> Option<Arc<Vec<RowId>>> {
        let probe = self.index.as_ref()?;
        let rows = probe.rows.get_or_init(|| {
            let found = probe
                .access
                .lookup(&self.def, &self.version, probe.max_rows);
            let metrics = MetricBuilder::new(&self.metrics);
            match &found {
                Some(rows) => metrics.global_counter("index_rows").add(rows.len()),
                None => metrics.global_counter("index_fallbacks").add(1),
            }
            found.map(Arc::new)
        });
        rows.clone()
    }

    /// The batches of output partition `partition`, made as they are pulled.
    fn batches(&self, partition: usize) -> Batches {
        let projection = self.projection.clone();
        if let Some(rows) = self.probe() {
            let end = if partition == 0 {
                self.limit.map_or(rows.len(), |l| l.min(rows.len()))
            } else {
                0
            };
            return Batches::Gather(Gather {
                version: Arc::clone(&self.version),
                rows,
                projection,
                schema: Arc::clone(&self.schema),
                batch_size: self.batch_size,
                next: 0,
                end,
            });
        }
        Batches::Pieces(Pieces {
            chunks: Arc::clone(&self.chunks),
            pieces: self.partitions[partition].clone(),
            projection,
            schema: Arc::clone(&self.schema),
            next: 0,
            left: self.limit.unwrap_or(usize::MAX),
            code_dropped: self.code_tests.as_ref().map(|_| {
                MetricBuilder::new(&self.metrics).counter("code_filtered_rows", partition)
            }),
        })
    }

    fn statistics_of(&self, partition: Option<usize>) -> Result<Statistics> {
        let parts: Vec<usize> = match partition {
            Some(p) if p >= self.partitions.len() => {
                return Err(DataFusionError::Internal(format!(
                    "{}: partition {p} of {}",
                    self.name(),
                    self.partitions.len()
                )));
            }
            Some(p) => vec![p],
            None => (0..self.partitions.len()).collect(),
        };
        let all_rows: usize = parts.iter().map(|&p| self.pieces_rows(p)).sum();
        let limited = |rows: usize| self.limit.map_or(rows, |l| rows.min(l));
        if let Some(probe) = &self.index {
            // unknown until the lookups run: at most one row per key of a unique index
            let bound = probe.access.points.unwrap_or(all_rows).min(all_rows);
            return Ok(Statistics::new_unknown(&self.schema)
                .with_num_rows(Precision::Inexact(limited(bound))));
        }
        if self.code_tests.is_some() {
            // the code tests drop an unknown share of the rows
            return Ok(Statistics::new_unknown(&self.schema)
                .with_num_rows(Precision::Inexact(limited(all_rows))));
        }
        let rows: usize = parts.iter().map(|&p| limited(self.pieces_rows(p))).sum();
        let mut stats = Statistics::new_unknown(&self.schema).with_num_rows(Precision::Exact(rows));
        let deletions = parts
            .iter()
            .flat_map(|&p| self.partitions[p].iter())
            .any(|x| x.live < x.len);
        if rows == all_rows && !deletions {
            // null counts are exact when no limit cuts the pieces and no row is deleted
            let cols: Vec<usize> = match &self.projection {
                Some(p) => p.clone(),
                None => (0..self.version.schema.fields().len()).collect(),
            };
            stats.column_statistics = cols
                .iter()
                .map(|&c| {
                    let nulls: usize = parts
                        .iter()
                        .flat_map(|&p| self.partitions[p].iter())
                        .map(|x| {
                            self.chunks[x.chunk]
                                .batch
                                .column(c)
                                .slice(x.offset, x.len)
                                .logical_null_count()
                        })
                        .sum();
                    ColumnStatistics::new_unknown().with_null_count(Precision::Exact(nulls))
                })
                .collect();
        }
        Ok(stats)
    }
}

/// The chunks of `version` a scan reads, with their code tests (`tests[p][c]`: chunk `c`
/// of partition `p`): chunks without live rows or where a test passes no code are left out.
fn scan_chunks(version: &TableVersion, tests: &[Vec<Arc<ChunkTests>>]) -> Vec<ScanChunk> {
    version
        .partitions
        .iter()
        .zip(tests)
        .flat_map(|(p, t)| {
            p.chunks
                .iter()
                .zip(t)
                .enumerate()
                .filter(|(_, (_, t))| !none_pass(t))
                .map(|(c, (batch, t))| ScanChunk {
                    batch: batch.clone(),
                    deleted: p.deletions(c).cloned(),
                    tests: Arc::clone(t),
                })
        })
        .filter(|c| c.batch.num_rows() > c.deleted.as_ref().map_or(0, |d| d.deleted()))
        .collect()
}

/// True when a test of `tests` passes no code.
fn none_pass(tests: &ChunkTests) -> bool {
    tests.iter().any(|(_, codes)| codes.is_empty())
}

/// The properties of a scan with `schema` and `partitions` output partitions.
fn properties_of(schema: &SchemaRef, partitions: usize) -> Arc<PlanProperties> {
    Arc::new(PlanProperties::new(
        EquivalenceProperties::new(Arc::clone(schema)),
        Partitioning::UnknownPartitioning(partitions),
        EmissionType::Incremental,
        Boundedness::Bounded,
    ))
}

/// Cuts `chunks` into pieces of at most `batch_size` rows and spreads them over at most
/// `target` partitions as contiguous runs of about equal row counts (one empty partition for
/// an empty table).
fn spread(chunks: &[ScanChunk], target: usize, batch_size: usize) -> Vec<Vec<Piece>> {
    let mut pieces = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        let rows = c.batch.num_rows();
        let mut offset = 0;
        while offset < rows {
            let len = batch_size.min(rows - offset);
            pieces.push(Piece {
                chunk: i,
                offset,
                len,
                live: c.live_in(offset, len),
            });
            offset += len;
        }
    }
    let n = target.max(1).min(pieces.len()).max(1);
    let total: usize = pieces.iter().map(|p| p.len).sum();
    let count = pieces.len();
    let mut partitions = vec![Vec::new(); n];
    let (mut before, mut prev) = (0usize, 0usize);
    for (i, p) in pieces.into_iter().enumerate() {
        // a piece goes where its middle row falls, without skipping a partition and leaving
        // enough pieces for the partitions after it
        let middle = before + p.len / 2;
        let share = (middle as u128 * n as u128 / total.max(1) as u128) as usize;
        let fill = (n + i).saturating_sub(count);
        let target = if i == 0 {
            0
        } else {
            share.clamp(prev, prev + 1).max(fill).min(n - 1)
        };
        partitions[target].push(p);
        before += p.len;
        prev = target;
    }
    partitions
}

/// The batches of one output partition.
enum Batches {
    Pieces(Pieces),
    Gather(Gather),
}

impl Iterator for Batches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Batches::Pieces(p) => p.next(),
            Batches::Gather(g) => g.next(),
        }
    }
}

/// Slices of chunks, projected, deleted rows left out, cut to the limit.
struct Pieces {
    chunks: Arc<Vec<ScanChunk>>,
    pieces: Vec<Piece>,
    projection: Option<Vec<usize>>,
    /// the types the plan expects (dictionary codes widened to them)
    schema: SchemaRef,
    next: usize,
    left: usize,
    /// rows the code tests dropped (when the scan has code tests)
    code_dropped: Option<Count>,
}

impl Iterator for Pieces {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let p = *self.pieces.get(self.next)?;
            if self.left == 0 {
                return None;
            }
            self.next += 1;
            if p.live == 0 {
                continue;
            }
            let chunk = &self.chunks[p.chunk];
            let (batch, dropped) = match chunk.read(p.offset, p.len, self.projection.as_deref()) {
                Ok(read) => read,
                Err(e) => return Some(Err(e)),
            };
            if let Some(count) = &self.code_dropped {
                count.add(dropped);
            }
            if batch.num_rows() == 0 {
                continue;
            }
            let batch = match conform(&batch, &self.schema) {
                Ok(b) => b,
                Err(e) => return Some(Err(e.into())),
            };
            let len = batch.num_rows().min(self.left);
            self.left -= len;
            return Some(Ok(batch.slice(0, len)));
        }
    }
}

/// Rows of a snapshot an index lookup selected, gathered in row-id order, projected, in
/// batches of at most `batch_size` rows.
struct Gather {
    version: Arc<TableVersion>,
    rows: Arc<Vec<RowId>>,
    projection: Option<Vec<usize>>,
    schema: SchemaRef,
    batch_size: usize,
    next: usize,
    end: usize,
}

impl Gather {
    fn batch(&mut self) -> Result<RecordBatch> {
        let stop = self.end.min(self.next + self.batch_size);
        let mut parts = Vec::new();
        while self.next < stop {
            let first = self.rows[self.next];
            let run = self.rows[self.next..stop]
                .iter()
                .take_while(|r| r.partition == first.partition && r.chunk == first.chunk)
                .count();
            let chunk = self
                .version
                .partitions
                .get(first.partition as usize)
                .and_then(|p| p.chunks.get(first.chunk as usize))
                .ok_or_else(|| {
                    DataFusionError::Internal(format!("index row {first:?} outside the snapshot"))
                })?;
            let chunk = match &self.projection {
                Some(cols) => chunk.project(cols)?,
                None => chunk.clone(),
            };
            let indices = UInt32Array::from_iter_values(
                self.rows[self.next..self.next + run].iter().map(|r| r.row),
            );
            parts.push(conform(
                &take_record_batch(&chunk, &indices)?,
                &self.schema,
            )?);
            self.next += run;
        }
        Ok(match parts.len() {
            1 => parts.pop().expect("one part"),
            _ => concat_batches(&self.schema, &parts)?,
        })
    }
}

impl Iterator for Gather {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        (self.next < self.end).then(|| {
            let b = self.batch();
            if b.is_err() {
                self.next = self.end;
            }
            b
        })
    }
}

impl DisplayAs for SnapshotScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(f, "{}: table={}", self.name(), self.def.name)?;
                if let Some(probe) = &self.index {
                    write!(
                        f,
                        ", index={} ({}), keys: {}",
                        probe.access.index, probe.access.kind, probe.access.keys
                    )?;
                    if let Some(found) = probe.rows.get() {
                        match found {
                            Some(rows) => write!(f, ", rows={}", rows.len())?,
                            None => write!(f, ", more rows than an index scan reads")?,
                        }
                    }
                }
                write!(
                    f,
                    ", version={}, partitions={}, chunks={}",
                    self.version.number,
                    self.partitions.len(),
                    self.chunks.len()
                )?;
                if let Some((columns, skipped)) = &self.code_tests {
                    let names: Vec<&str> = columns
                        .iter()
                        .map(|&c| self.def.arrow_schema.field(c).name().as_str())
                        .collect();
                    write!(f, ", codes tested: [{}]", names.join(", "))?;
                    if *skipped > 0 {
                        write!(f, " ({skipped} table partitions skipped)")?;
                    }
                }
                if let Some(p) = &self.projection {
                    write!(f, ", projection={p:?}")?;
                }
                if let Some(l) = self.limit {
                    write!(f, ", limit={l}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => {
                write!(f, "table={}", self.def.name)?;
                if let Some(probe) = &self.index {
                    writeln!(f)?;
                    writeln!(f, "index={} ({})", probe.access.index, probe.access.kind)?;
                    write!(f, "keys={}", probe.access.keys)?;
                }
                Ok(())
            }
        }
    }
}

impl ExecutionPlan for SnapshotScanExec {
    fn name(&self) -> &str {
        if self.index.is_some() {
            "IndexScanExec"
        } else {
            "SnapshotScanExec"
        }
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(format!(
                "{} has no children",
                self.name()
            )))
        }
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition >= self.partitions.len() {
            return Err(DataFusionError::Internal(format!(
                "{}: partition {partition} of {}",
                self.name(),
                self.partitions.len()
            )));
        }
        // the lookups (if any) run when the stream is first polled, not here
        let scan = self.clone();
        let mut batches: Option<Batches> = None;
        let stream = futures::stream::iter(std::iter::from_fn(move || {
            batches
                .get_or_insert_with(|| scan.batches(partition))
                .next()
        }));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        Ok(Arc::new(self.statistics_of(args.partition())?))
    }

    fn with_fetch(&self, limit: Option<usize>) -> Option<Arc<dyn ExecutionPlan>> {
        let mut scan = self.clone();
        scan.limit = match (self.limit, limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Some(Arc::new(scan))
    }

    fn fetch(&self) -> Option<usize> {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int32Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::prelude::SessionContext;
    use futures::TryStreamExt;
    use wireload_storage::{Partition, Partitioning};
    use wireload_types::{ColumnDef, SqlType, TableSchema};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, true),
        ]))
    }

    fn def() -> Arc<TableDef> {
        let columns = vec![
            ColumnDef {
                name: "id".into(),
                ty: SqlType::Integer,
                nullable: false,
            },
            ColumnDef {
                name: "name".into(),
                ty: SqlType::Text,
                nullable: true,
            },
        ];
        Arc::new(TableDef::new("t", TableSchema { columns }, Partitioning::Single).unwrap())
    }

    fn chunk(ids: std::ops::Range<i32>) -> RecordBatch {
        let names: Vec<Option<String>> = ids
            .clone()
            .map(|i| {
                if i % 3 == 0 {
                    None
                } else {
                    Some(format!("n{i}"))
                }
            })
            .collect();
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int32Array::from_iter_values(ids)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .unwrap()
    }

    /// Two partitions: [0..10, 10..25] and [25..26, 26..100].
    fn version() -> Arc<TableVersion> {
        let mut v = TableVersion::empty(2, schema());
        v.partitions = vec![
            Partition::new(vec![chunk(0..10), chunk(10..25)]),
            Partition::new(vec![chunk(25..26), chunk(26..26), chunk(26..100)]),
        ];
        Arc::new(v)
    }

    fn scan(
        projection: Option<&Vec<usize>>,
        limit: Option<usize>,
        target: usize,
        batch: usize,
    ) -> SnapshotScanExec {
        SnapshotScanExec::new(def(), version(), schema(), projection, limit, target, batch).unwrap()
    }

    async fn ids(exec: &SnapshotScanExec) -> Vec<Vec<i32>> {
        let ctx = SessionContext::new().task_ctx();
        let mut out = Vec::new();
        for p in 0..exec.properties().partitioning.partition_count() {
            let batches: Vec<RecordBatch> = exec
                .execute(p, Arc::clone(&ctx))
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            let mut ids = Vec::new();
            for b in &batches {
                assert_eq!(b.schema(), exec.schema());
                let col = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
                ids.extend(col.values().iter().copied());
            }
            out.push(ids);
        }
        out
    }

    #[tokio::test]
    async fn every_row_once_over_partitions() {
        for target in [1, 2, 3, 4, 7, 64] {
            for batch in [1, 7, 8192] {
                let exec = scan(None, None, target, batch);
                let parts = ids(&exec).await;
                let pieces: usize = exec.partitions.iter().map(Vec::len).sum();
                assert_eq!(
                    parts.len(),
                    target.min(pieces),
                    "target {target} batch {batch}"
                );
                let mut all: Vec<i32> = parts.concat();
                assert_eq!(
                    all,
                    (0..100).collect::<Vec<_>>(),
                    "contiguous runs keep the table order"
                );
                all.dedup();
                assert_eq!(all.len(), 100);
                assert!(
                    parts.iter().all(|p| !p.is_empty()),
                    "no empty partition: {target} {batch}"
                );
                if batch == 1 && target <= 4 {
                    for p in &parts {
                        assert!(
                            p.len() >= 100 / target - 1,
                            "balanced: {target} -> {}",
                            p.len()
                        );
                    }
                }
            }
        }
    }

    #[tokio::test]
    async fn projection_and_limit() {
        let exec = scan(Some(&vec![1, 0]), Some(5), 2, 8192);
        assert_eq!(exec.schema().field(0).name(), "name");
        let ctx = SessionContext::new().task_ctx();
        for p in 0..2 {
            let batches: Vec<RecordBatch> = exec
                .execute(p, Arc::clone(&ctx))
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
            assert_eq!(rows, 5);
            assert_eq!(batches[0].num_columns(), 2);
        }
        let stats = exec.statistics_of(None).unwrap();
        assert_eq!(stats.num_rows, Precision::Exact(10));
    }

    #[tokio::test]
    async fn exact_statistics() {
        let exec = scan(Some(&vec![1]), None, 3, 8192);
        let stats = exec.statistics_of(None).unwrap();
        assert_eq!(stats.num_rows, Precision::Exact(100));
        // ids 0, 3, ..., 99 have a NULL name: 34 of them
        assert_eq!(stats.column_statistics[0].null_count, Precision::Exact(34));
        let per: usize = (0..exec.partitions.len())
            .map(|p| match exec.statistics_of(Some(p)).unwrap().num_rows {
                Precision::Exact(n) => n,
                other => panic!("{other:?}"),
            })
            .sum();
        assert_eq!(per, 100);
        assert!(exec.statistics_of(Some(99)).is_err());
    }

    #[tokio::test]
    async fn deleted_rows_are_skipped() {
        let mut v = (*version()).clone();
        // the odd ids of chunk 10..25, and all of chunk 25..26
        let odd: arrow::buffer::BooleanBuffer = (10..25).map(|i| i % 2 == 1).collect();
        v.partitions[0].delete(1, &odd);
        v.partitions[1].delete(0, &vec![true].into());
        let v = Arc::new(v);
        let want: Vec<i32> = (0..100)
            .filter(|i| !((10..25).contains(i) && i % 2 == 1) && *i != 25)
            .collect();
        assert_eq!(v.num_rows(), want.len());
        for target in [1, 2, 3, 7] {
            for batch in [1, 4, 8192] {
                let exec = SnapshotScanExec::new(
                    def(),
                    Arc::clone(&v),
                    schema(),
                    None,
                    None,
                    target,
                    batch,
                )
                .unwrap();
                assert_eq!(ids(&exec).await.concat(), want, "{target} {batch}");
                let stats = exec.statistics_of(None).unwrap();
                assert_eq!(stats.num_rows, Precision::Exact(want.len()));
                // null counts would have to filter: not given
                assert_eq!(
                    stats.column_statistics[0].null_count,
                    Precision::Absent,
                    "{target} {batch}"
                );
            }
        }
        // a limit counts live rows
        let exec = SnapshotScanExec::new(def(), Arc::clone(&v), schema(), None, Some(15), 1, 8192)
            .unwrap();
        assert_eq!(ids(&exec).await.concat(), want[..15]);
    }

    #[tokio::test]
    async fn empty_table_has_one_empty_partition() {
        let v = Arc::new(TableVersion::empty(3, schema()));
        let exec = SnapshotScanExec::new(def(), v, schema(), None, None, 8, 8192).unwrap();
        assert_eq!(ids(&exec).await, vec![Vec::<i32>::new()]);
        assert_eq!(
            exec.statistics_of(None).unwrap().num_rows,
            Precision::Exact(0)
        );
    }

    #[test]
    fn with_fetch_keeps_the_smaller_limit() {
        let exec = scan(None, Some(10), 2, 8192);
        assert_eq!(exec.with_fetch(Some(3)).unwrap().fetch(), Some(3));
        assert_eq!(exec.with_fetch(Some(30)).unwrap().fetch(), Some(10));
    }
}

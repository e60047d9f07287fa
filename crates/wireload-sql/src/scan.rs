//! The scan of one table snapshot: its chunks spread over parallel output partitions.

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{ColumnStatistics, Statistics};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning,
    PhysicalExpr, PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
    StatisticsArgs,
};
use wireload_storage::TableVersion;

/// A row range of one chunk: the unit of work spread over output partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    chunk: usize,
    offset: usize,
    len: usize,
}

/// Reads one snapshot of a table: every chunk of every partition, projected, in
/// `min(target_partitions, pieces)` parallel output partitions.
#[derive(Debug, Clone)]
pub struct SnapshotScanExec {
    table: String,
    version: Arc<TableVersion>,
    chunks: Vec<RecordBatch>,
    projection: Option<Vec<usize>>,
    schema: SchemaRef,
    partitions: Arc<Vec<Vec<Piece>>>,
    limit: Option<usize>,
    properties: Arc<PlanProperties>,
}

impl SnapshotScanExec {
    /// A scan of `version` of table `table`. Chunks are cut into pieces of at most
    /// `max_batch_rows` rows, spread over at most `target_partitions` output partitions
    /// as contiguous runs of about equal row counts.
    pub fn new(
        table: impl Into<String>,
        version: Arc<TableVersion>,
        projection: Option<&Vec<usize>>,
        limit: Option<usize>,
        target_partitions: usize,
        max_batch_rows: usize,
    ) -> Result<Self> {
        let schema = match projection {
            Some(p) => Arc::new(version.schema.project(p)?),
            None => Arc::clone(&version.schema),
        };
        let chunks: Vec<RecordBatch> = version
            .chunks()
            .filter(|c| c.num_rows() > 0)
            .cloned()
            .collect();
        let max_batch_rows = max_batch_rows.max(1);
        let mut pieces = Vec::new();
        for (i, c) in chunks.iter().enumerate() {
            let mut offset = 0;
            while offset < c.num_rows() {
                let len = max_batch_rows.min(c.num_rows() - offset);
                pieces.push(Piece {
                    chunk: i,
                    offset,
                    len,
                });
                offset += len;
            }
        }
        let n = target_partitions.max(1).min(pieces.len()).max(1);
        let total: usize = pieces.iter().map(|p| p.len).sum();
        let count = pieces.len();
        let mut partitions = vec![Vec::new(); n];
        let (mut before, mut prev) = (0usize, 0usize);
        for (i, p) in pieces.into_iter().enumerate() {
            // contiguous runs of about total / n rows: a piece goes where its middle row falls,
            // without skipping a partition and leaving enough pieces for the partitions after it
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
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(n),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(SnapshotScanExec {
            table: table.into(),
            version,
            chunks,
            projection: projection.cloned(),
            schema,
            partitions: Arc::new(partitions),
            limit,
            properties: Arc::new(properties),
        })
    }

    /// The snapshot this scan reads.
    pub fn version(&self) -> &Arc<TableVersion> {
        &self.version
    }

    /// Rows partition `partition` emits (after the limit).
    fn partition_rows(&self, partition: usize) -> usize {
        let rows: usize = self.partitions[partition].iter().map(|p| p.len).sum();
        self.limit.map_or(rows, |l| rows.min(l))
    }

    /// The batches of one output partition, projected and cut to the limit.
    fn batches(&self, partition: usize) -> Result<Vec<RecordBatch>> {
        let mut left = self.limit.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        for p in &self.partitions[partition] {
            if left == 0 {
                break;
            }
            let len = p.len.min(left);
            left -= len;
            let batch = self.chunks[p.chunk].slice(p.offset, len);
            let batch = match &self.projection {
                Some(cols) => batch.project(cols)?,
                None => batch,
            };
            out.push(batch);
        }
        Ok(out)
    }

    fn statistics_of(&self, partition: Option<usize>) -> Result<Statistics> {
        let parts: Vec<usize> = match partition {
            Some(p) if p >= self.partitions.len() => {
                return Err(DataFusionError::Internal(format!(
                    "SnapshotScanExec: partition {p} of {}",
                    self.partitions.len()
                )));
            }
            Some(p) => vec![p],
            None => (0..self.partitions.len()).collect(),
        };
        let rows: usize = parts.iter().map(|&p| self.partition_rows(p)).sum();
        let all_rows: usize = parts
            .iter()
            .map(|&p| self.partitions[p].iter().map(|x| x.len).sum::<usize>())
            .sum();
        let mut stats = Statistics::new_unknown(&self.schema).with_num_rows(Precision::Exact(rows));
        if rows == all_rows {
            // null counts are exact when no limit cuts the pieces
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

impl DisplayAs for SnapshotScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(
                    f,
                    "SnapshotScanExec: table={}, version={}, partitions={}, chunks={}",
                    self.table,
                    self.version.number,
                    self.partitions.len(),
                    self.chunks.len()
                )?;
                if let Some(p) = &self.projection {
                    write!(f, ", projection={p:?}")?;
                }
                if let Some(l) = self.limit {
                    write!(f, ", limit={l}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => write!(f, "table={}", self.table),
        }
    }
}

impl ExecutionPlan for SnapshotScanExec {
    fn name(&self) -> &str {
        "SnapshotScanExec"
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
            Err(DataFusionError::Internal(
                "SnapshotScanExec has no children".into(),
            ))
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
                "SnapshotScanExec: partition {partition} of {}",
                self.partitions.len()
            )));
        }
        let batches = self.batches(partition)?;
        let stream = futures::stream::iter(batches.into_iter().map(Ok));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        )))
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        Ok(Arc::new(self.statistics_of(args.partition())?))
    }

    fn supports_limit_pushdown(&self) -> bool {
        true
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
    use wireload_storage::Partition;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, true),
        ]))
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
            Partition {
                chunks: vec![chunk(0..10), chunk(10..25)],
            },
            Partition {
                chunks: vec![chunk(25..26), chunk(26..26), chunk(26..100)],
            },
        ];
        Arc::new(v)
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
                let exec =
                    SnapshotScanExec::new("t", version(), None, None, target, batch).unwrap();
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
        let exec =
            SnapshotScanExec::new("t", version(), Some(&vec![1, 0]), Some(5), 2, 8192).unwrap();
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
        let exec = SnapshotScanExec::new("t", version(), Some(&vec![1]), None, 3, 8192).unwrap();
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
    async fn empty_table_has_one_empty_partition() {
        let v = Arc::new(TableVersion::empty(3, schema()));
        let exec = SnapshotScanExec::new("t", v, None, None, 8, 8192).unwrap();
        assert_eq!(ids(&exec).await, vec![Vec::<i32>::new()]);
        assert_eq!(
            exec.statistics_of(None).unwrap().num_rows,
            Precision::Exact(0)
        );
    }

    #[test]
    fn with_fetch_keeps_the_smaller_limit() {
        let exec = SnapshotScanExec::new("t", version(), None, Some(10), 2, 8192).unwrap();
        assert_eq!(exec.with_fetch(Some(3)).unwrap().fetch(), Some(3));
        assert_eq!(exec.with_fetch(Some(30)).unwrap().fetch(), Some(10));
    }
}

//! Insertion order through parallel plans: a query without ORDER BY over a table returns its
//! rows in the order they were loaded, as DuckDB, Polars and pyarrow do.
//!
//! The scans put contiguous runs of the table's rows into their output partitions, in table
//! order ([`crate::SnapshotScanExec`]). Operators that work partition by partition and keep
//! the order of their input (projections, filters, batch coalescing, local limits, unions)
//! keep that property. Where DataFusion would then merge the partitions in whatever order
//! they produce batches (`CoalescePartitionsExec`, or `collect` on a plan with several
//! output partitions), [`KeepInsertionOrder`] puts an [`OrderedCoalesceExec`] instead: every
//! partition still runs in parallel, and the output is partition 0's batches, then
//! partition 1's, and so on. Partitions ahead of the one being emitted buffer their batches
//! up to a memory budget. A round-robin repartition on such a path (DataFusion adds one to
//! spread a small scan over more partitions) would mix the runs, so it is removed there.
//! Only merges whose order reaches the result are replaced (the path from the root through
//! order-keeping operators): aggregations, sorts and a hash join's build side are left
//! alone, with all their parallelism.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Statistics, internal_err};
use datafusion::error::Result;
use datafusion::execution::{RecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::union::UnionExec;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties,
    Partitioning, PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
    StatisticsArgs,
};
use futures::{Stream, StreamExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::scan::SnapshotScanExec;

/// Bytes of batches that the partitions after the one being emitted may hold, all together.
pub const ORDER_BUFFER_BYTES: usize = 512 << 20;

/// The physical optimizer rule that keeps insertion order (see the module documentation).
/// It runs after DataFusion's own rules.
#[derive(Debug, Default)]
pub struct KeepInsertionOrder;

impl PhysicalOptimizerRule for KeepInsertionOrder {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = order_reaching_output(plan)?;
        // `collect` and the other consumers merge a plan's output partitions in arrival order
        if plan.output_partitioning().partition_count() > 1 && keeps_order(&plan) {
            let input = without_round_robin(plan)?;
            return Ok(Arc::new(OrderedCoalesceExec::new(input)));
        }
        Ok(plan)
    }

    fn name(&self) -> &str {
        "keep_insertion_order"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `plan` with an [`OrderedCoalesceExec`] for every `CoalescePartitionsExec` whose input's
/// order reaches the result: the walk goes down from the root only through operators that
/// keep their input's order (a hash join's probe side, not its build side; not through
/// aggregations or sorts), so merges whose order nobody sees stay DataFusion's.
fn order_reaching_output(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    if let Some(coalesce) = plan.downcast_ref::<CoalescePartitionsExec>() {
        let input = order_reaching_output(Arc::clone(coalesce.input()))?;
        if keeps_order(&input) {
            let input = without_round_robin(input)?;
            return Ok(Arc::new(
                OrderedCoalesceExec::new(input).with_fetch(coalesce.fetch()),
            ));
        }
        if Arc::ptr_eq(&input, coalesce.input()) {
            return Ok(plan);
        }
        return plan.replace_children(
            vec![input],
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        );
    }
    let keeps = plan.maintains_input_order();
    let children = plan.children();
    if children.is_empty() {
        return Ok(plan);
    }
    let mut changed = false;
    let mut new = Vec::with_capacity(children.len());
    for (i, child) in children.into_iter().enumerate() {
        // a union's output partitions are its inputs' partitions, one input after another
        if plan.is::<UnionExec>() || keeps.get(i).copied().unwrap_or(false) {
            let c = order_reaching_output(Arc::clone(child))?;
            changed |= !Arc::ptr_eq(&c, child);
            new.push(c);
        } else {
            new.push(Arc::clone(child));
        }
    }
    if !changed {
        return Ok(plan);
    }
    plan.replace_children(
        new,
        ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
    )
}

/// True when concatenating `plan`'s output partitions in order gives its rows in the order
/// of the tables it scans.
fn keeps_order(plan: &Arc<dyn ExecutionPlan>) -> bool {
    if plan.is::<SnapshotScanExec>() || plan.is::<OrderedCoalesceExec>() {
        return true;
    }
    if let Some(r) = plan.downcast_ref::<RepartitionExec>() {
        // removed by `without_round_robin` where it matters
        return matches!(r.partitioning(), Partitioning::RoundRobinBatch(_))
            && !r.preserve_order()
            && keeps_order(r.input());
    }
    if plan.is::<UnionExec>() {
        // partition i of a union is partition i of its first input, then the next input's
        return plan.children().into_iter().all(keeps_order);
    }
    if plan.is::<CoalescePartitionsExec>() {
        return false;
    }
    let children = plan.children();
    let [child] = children.as_slice() else {
        return false;
    };
    plan.maintains_input_order() == [true]
        && plan.output_partitioning().partition_count()
            == child.output_partitioning().partition_count()
        && keeps_order(child)
}

/// `plan` without the round-robin repartitions on its order-keeping path.
fn without_round_robin(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    if let Some(r) = plan.downcast_ref::<RepartitionExec>()
        && matches!(r.partitioning(), Partitioning::RoundRobinBatch(_))
    {
        return without_round_robin(Arc::clone(r.input()));
    }
    if plan.is::<SnapshotScanExec>() || plan.is::<OrderedCoalesceExec>() {
        return Ok(plan);
    }
    let children = plan.children();
    if children.is_empty() {
        return Ok(plan);
    }
    let new: Vec<Arc<dyn ExecutionPlan>> = children
        .into_iter()
        .map(|c| without_round_robin(Arc::clone(c)))
        .collect::<Result<_>>()?;
    let same = new
        .iter()
        .zip(plan.children())
        .all(|(a, b)| Arc::ptr_eq(a, b));
    if same {
        Ok(plan)
    } else {
        plan.replace_children(
            new,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }
}

/// Merges the partitions of its input into one, in partition order: partition 0's batches,
/// then partition 1's, and so on, while every partition runs in parallel.
#[derive(Debug, Clone)]
pub struct OrderedCoalesceExec {
    input: Arc<dyn ExecutionPlan>,
    fetch: Option<usize>,
    budget: usize,
    metrics: ExecutionPlanMetricsSet,
    properties: Arc<PlanProperties>,
}

impl OrderedCoalesceExec {
    /// One partition of `input`'s partitions in order.
    pub fn new(input: Arc<dyn ExecutionPlan>) -> Self {
        let mut eq = input.equivalence_properties().clone();
        if input.output_partitioning().partition_count() > 1 {
            // each partition may be sorted; their concatenation is not
            eq.clear_orderings();
            eq.clear_per_partition_constants();
        }
        let properties = PlanProperties::new(
            eq,
            Partitioning::UnknownPartitioning(1),
            input.pipeline_behavior(),
            input.boundedness(),
        );
        OrderedCoalesceExec {
            input,
            fetch: None,
            budget: ORDER_BUFFER_BYTES,
            metrics: ExecutionPlanMetricsSet::new(),
            properties: Arc::new(properties),
        }
    }

    /// This merge stopping after `fetch` rows.
    pub fn with_fetch(mut self, fetch: Option<usize>) -> Self {
        self.fetch = fetch;
        self
    }

    /// This merge letting the partitions ahead hold at most `bytes` of batches in all.
    pub fn with_buffer_bytes(mut self, bytes: usize) -> Self {
        self.budget = bytes;
        self
    }

    /// The merged plan.
    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }
}

impl DisplayAs for OrderedCoalesceExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (t, self.fetch) {
            (DisplayFormatType::TreeRender, Some(fetch)) => write!(f, "limit: {fetch}"),
            (DisplayFormatType::TreeRender, None) => Ok(()),
            (_, Some(fetch)) => write!(f, "OrderedCoalesceExec: fetch={fetch}"),
            (_, None) => write!(f, "OrderedCoalesceExec"),
        }
    }
}

impl ExecutionPlan for OrderedCoalesceExec {
    fn name(&self) -> &str {
        "OrderedCoalesceExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![self.input.output_partitioning().partition_count() <= 1]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return internal_err!("OrderedCoalesceExec has one child");
        }
        Ok(Arc::new(
            OrderedCoalesceExec::new(children.swap_remove(0))
                .with_fetch(self.fetch)
                .with_buffer_bytes(self.budget),
        ))
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
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("OrderedCoalesceExec: partition {partition} of 1");
        }
        let n = self.input.output_partitioning().partition_count();
        let metrics = BaselineMetrics::new(&self.metrics, partition);
        let share = (self.budget / n.max(1)).clamp(1, u32::MAX as usize);
        let mut receivers = Vec::with_capacity(n);
        let mut tasks = Vec::with_capacity(n);
        for i in 0..n {
            let (tx, rx) = mpsc::unbounded_channel();
            let permits = Arc::new(Semaphore::new(share));
            let input = Arc::clone(&self.input);
            let ctx = Arc::clone(&context);
            tasks.push(SpawnedTask::spawn(async move {
                let mut stream = match input.execute(i, ctx) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                while let Some(item) = stream.next().await {
                    let item = match item {
                        Ok(batch) => {
                            let bytes = batch.get_array_memory_size().clamp(1, share) as u32;
                            // closed only when the merge is dropped
                            let Ok(permit) = Arc::clone(&permits).acquire_many_owned(bytes).await
                            else {
                                return;
                            };
                            Ok((batch, permit))
                        }
                        Err(e) => Err(e),
                    };
                    let failed = item.is_err();
                    if tx.send(item).is_err() || failed {
                        return;
                    }
                }
            }));
            receivers.push(rx);
        }
        Ok(Box::pin(OrderedStream {
            schema: self.schema(),
            receivers,
            current: 0,
            left: self.fetch,
            _tasks: tasks,
            metrics,
        }))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        let stats = input_stats[0].as_ref().clone();
        Ok(Arc::new(stats.with_fetch(self.fetch, 0, 1)?))
    }

    fn fetch(&self) -> Option<usize> {
        self.fetch
    }

    fn with_fetch(&self, limit: Option<usize>) -> Option<Arc<dyn ExecutionPlan>> {
        Some(Arc::new(self.clone().with_fetch(limit)))
    }
}

/// A batch held for the merge, with the buffer budget it takes (given back when taken).
type Held = Result<(RecordBatch, OwnedSemaphorePermit)>;

/// The merged stream: receivers in partition order; the tasks stop when it is dropped.
struct OrderedStream {
    schema: SchemaRef,
    receivers: Vec<mpsc::UnboundedReceiver<Held>>,
    current: usize,
    left: Option<usize>,
    _tasks: Vec<SpawnedTask<()>>,
    metrics: BaselineMetrics,
}

impl Stream for OrderedStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if self.left == Some(0) || self.current >= self.receivers.len() {
                // done: dropping the receivers and tasks stops the partitions still running
                self.receivers.clear();
                self._tasks.clear();
                return Poll::Ready(None);
            }
            let current = self.current;
            match self.receivers[current].poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => self.current += 1,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok((batch, permit)))) => {
                    drop(permit);
                    let batch = match self.left {
                        Some(left) if batch.num_rows() > left => batch.slice(0, left),
                        _ => batch,
                    };
                    if let Some(left) = &mut self.left {
                        *left -= batch.num_rows();
                    }
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    let poll = Poll::Ready(Some(Ok(batch)));
                    return self.metrics.record_poll(poll);
                }
            }
        }
    }
}

impl RecordBatchStream for OrderedStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

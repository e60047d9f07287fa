//! A query's result as a stream of batches, computed as its reader takes them: a reader
//! that stops taking them holds the query's pipeline, a few batches, not the whole result.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::{Stream, StreamExt};
use tokio::time::{Instant, Sleep};

use crate::{CANCEL_POLL, SqlError, StatementOutput};

/// A query's rows as they are computed: dictionary columns decoded, stopped by the
/// statement's cancel flag and by `statement_timeout` while rows are waited for.
pub struct RowStream {
    schema: SchemaRef,
    batches: SendableRecordBatchStream,
    cancel: Arc<AtomicBool>,
    /// when `statement_timeout` runs out, and the setting
    deadline: Option<(Instant, Duration)>,
    /// wakes the stream to look at `cancel` and `deadline` while a batch is computed
    tick: Pin<Box<Sleep>>,
    /// set when the stream fails (a failed statement fails its transaction)
    failure: Option<Arc<AtomicBool>>,
    /// what must live as long as the rows are read (the temporary tables of files)
    held: Vec<Box<dyn Send>>,
    ended: bool,
}

impl std::fmt::Debug for RowStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowStream")
            .field("schema", &self.schema)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl RowStream {
    /// The rows of `batches`, watching `cancel`.
    pub(crate) fn new(
        schema: SchemaRef,
        batches: SendableRecordBatchStream,
        cancel: Arc<AtomicBool>,
    ) -> Self {
        RowStream {
            schema,
            batches,
            cancel,
            deadline: None,
            tick: Box::pin(tokio::time::sleep(CANCEL_POLL)),
            failure: None,
            held: Vec::new(),
            ended: false,
        }
    }

    /// The rows' schema (dictionary columns as their values' type).
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Every remaining row, in order.
    pub async fn collect(mut self) -> Result<Vec<RecordBatch>, SqlError> {
        let mut out = Vec::new();
        while let Some(batch) = self.next().await {
            out.push(batch?);
        }
        Ok(out)
    }

    /// Stops the stream with a timeout error at `start + limit`.
    pub(crate) fn set_deadline(&mut self, start: Instant, limit: Duration) {
        self.deadline = Some((start + limit, limit));
    }

    /// Sets `flag` if the stream fails.
    pub(crate) fn report_failure_to(&mut self, flag: Arc<AtomicBool>) {
        self.failure = Some(flag);
    }

    /// Keeps `value` alive until the stream is dropped.
    pub fn hold(&mut self, value: Box<dyn Send>) {
        self.held.push(value);
    }

    /// The timeout error, once the statement's time is up.
    fn timed_out(&self) -> Option<SqlError> {
        match self.deadline {
            Some((at, limit)) if Instant::now() >= at => Some(SqlError::Timeout { limit }),
            _ => None,
        }
    }

    fn fail(&mut self, e: SqlError) -> Poll<Option<Result<RecordBatch, SqlError>>> {
        self.ended = true;
        if let Some(flag) = &self.failure {
            flag.store(true, Ordering::SeqCst);
        }
        Poll::Ready(Some(Err(e)))
    }
}

impl Stream for RowStream {
    type Item = Result<RecordBatch, SqlError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        loop {
            if this.cancel.load(Ordering::SeqCst) {
                return this.fail(this.timed_out().unwrap_or(SqlError::Cancelled));
            }
            match this.batches.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(batch))) => {
                    return match wireload_storage::plain_batch(&batch) {
                        Ok(plain) => Poll::Ready(Some(Ok(plain))),
                        Err(e) => this.fail(e.into()),
                    };
                }
                Poll::Ready(Some(Err(e))) => return this.fail(e.into()),
                Poll::Ready(None) => {
                    this.ended = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => {}
            }
            // as a timeout of the whole statement would: the time is looked at while
            // the rows are waited for, a batch that is ready is taken
            match this.tick.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    if let Some(e) = this.timed_out() {
                        return this.fail(e);
                    }
                    let next = Instant::now() + CANCEL_POLL;
                    this.tick.as_mut().reset(next);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// What one statement produced, a query's rows still to be computed.
#[derive(Debug)]
pub enum Streamed {
    /// A query's rows.
    Rows(RowStream),
    /// Anything else, finished.
    Output(StatementOutput),
}

impl Streamed {
    /// The statement's output, a query's rows computed to the end.
    pub async fn finish(self) -> Result<StatementOutput, SqlError> {
        match self {
            Streamed::Output(out) => Ok(out),
            Streamed::Rows(rows) => {
                let schema = Arc::clone(rows.schema());
                let batches = rows.collect().await?;
                Ok(StatementOutput::Rows { schema, batches })
            }
        }
    }
}

/// A statement's result whose rows, if it has a stream of them, can be adjusted.
pub(crate) trait Finished {
    /// The stream of rows still to come, if any.
    fn stream(&mut self) -> Option<&mut RowStream>;
}

impl Finished for Streamed {
    fn stream(&mut self) -> Option<&mut RowStream> {
        match self {
            Streamed::Rows(rows) => Some(rows),
            Streamed::Output(_) => None,
        }
    }
}

impl Finished for StatementOutput {
    fn stream(&mut self) -> Option<&mut RowStream> {
        None
    }
}

/// Results kept for a reader, counted in the memory budget queries share until dropped.
#[derive(Debug)]
pub struct CountedMemory(MemoryReservation);

impl CountedMemory {
    /// Counts `bytes` more; false (nothing counted) when the budget has no room for them.
    pub fn grow(&mut self, bytes: usize) -> bool {
        self.0.try_grow(bytes).is_ok()
    }
}

impl crate::Database {
    /// An empty count of results kept for `what` (named in the memory pool's reports).
    pub fn count_memory(&self, what: &str) -> CountedMemory {
        let pool = &self.session().runtime_env().memory_pool;
        CountedMemory(MemoryConsumer::new(what).register(pool))
    }
}

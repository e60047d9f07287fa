//! Running statements in and out of transactions: BEGIN, COMMIT, ROLLBACK and savepoints,
//! a failed statement failing its transaction, and `statement_timeout`.

use crate::error::{SqlError, SqlState};
use crate::transaction::TxStatement;
use crate::{Database, StatementOutput, rows, transaction};
use std::sync::Arc;
use wireload_load::LoadControl;

impl Database {
    /// Runs a statement's `work` under `statement_timeout`; inside a transaction, refuses
    /// it once the transaction failed (and a statement changing the catalog, `what`), and
    /// a failing statement fails the transaction.
    pub(crate) async fn in_transaction_run<T: rows::Finished>(
        &self,
        catalog_change: Option<&'static str>,
        work: impl Future<Output = Result<T, SqlError>>,
        ctl: &LoadControl,
    ) -> Result<T, SqlError> {
        let in_tx = {
            let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
            self.absorb_stream_failure(&mut tx);
            match tx.as_mut() {
                Some(tx) if tx.failed => return Err(SqlError::InFailedTransaction),
                Some(tx) => {
                    if let Some(what) = catalog_change {
                        tx.failed = true;
                        return Err(SqlError::NotSupported(format!(
                            "{what} is not supported inside a transaction yet"
                        )));
                    }
                    true
                }
                None => false,
            }
        };
        let mut result = self.timed(work, ctl).await;
        if in_tx {
            match &mut result {
                Err(_) => {
                    if let Some(tx) = self.tx.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                        tx.failed = true;
                    }
                }
                Ok(out) => {
                    if let Some(rows) = out.stream() {
                        rows.report_failure_to(Arc::clone(&self.stream_failed));
                    }
                }
            }
        }
        result
    }

    /// Fails the open transaction if a statement's row stream failed since the last
    /// statement (the flag is cleared either way).
    pub(crate) fn absorb_stream_failure(&self, tx: &mut Option<transaction::Transaction>) {
        if self
            .stream_failed
            .swap(false, std::sync::atomic::Ordering::SeqCst)
            && let Some(tx) = tx.as_mut()
        {
            tx.failed = true;
        }
    }

    pub(crate) fn transaction(&self, statement: TxStatement) -> Result<StatementOutput, SqlError> {
        let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        self.absorb_stream_failure(&mut tx);
        match statement {
            TxStatement::Begin => {
                // already in one: PostgreSQL warns and goes on
                if tx.is_none() {
                    let begun = transaction::Transaction::begin(&self.catalog);
                    self.schema.set_overlay(Some(begun.overlay()));
                    *tx = Some(begun);
                }
                Ok(StatementOutput::Done("BEGIN".into()))
            }
            TxStatement::Commit => {
                self.schema.set_overlay(None);
                match tx.take() {
                    Some(t) if t.failed => Ok(StatementOutput::Done("ROLLBACK".into())),
                    Some(t) => {
                        // a replay on a newer version runs under the writer locks: on
                        // the pool of their own
                        let pool = wireload_publish::locked_pool(self.threads)
                            .map_err(|e| SqlError::Resources(e.to_string()))?;
                        for table in t.commit(&self.catalog, &pool)? {
                            self.compact_later(&table);
                        }
                        Ok(StatementOutput::Done("COMMIT".into()))
                    }
                    None => Ok(StatementOutput::Done("COMMIT".into())),
                }
            }
            TxStatement::Rollback => {
                self.schema.set_overlay(None);
                tx.take();
                Ok(StatementOutput::Done("ROLLBACK".into()))
            }
            TxStatement::Savepoint(name) => {
                let t = tx.as_mut().ok_or(SqlError::NoTransaction("SAVEPOINT"))?;
                if t.failed {
                    return Err(SqlError::InFailedTransaction);
                }
                t.savepoint(name);
                Ok(StatementOutput::Done("SAVEPOINT".into()))
            }
            TxStatement::RollbackTo(name) => {
                let t = tx
                    .as_mut()
                    .ok_or(SqlError::NoTransaction("ROLLBACK TO SAVEPOINT"))?;
                // an unknown savepoint fails the transaction, as any failing statement does
                t.rollback_to(&name).inspect_err(|_| t.failed = true)?;
                Ok(StatementOutput::Done("ROLLBACK".into()))
            }
            TxStatement::Release(name) => {
                let t = tx
                    .as_mut()
                    .ok_or(SqlError::NoTransaction("RELEASE SAVEPOINT"))?;
                if t.failed {
                    return Err(SqlError::InFailedTransaction);
                }
                t.release(&name).inspect_err(|_| t.failed = true)?;
                Ok(StatementOutput::Done("RELEASE".into()))
            }
        }
    }

    /// Runs `work` to its end, or until `statement_timeout` cancels it.
    pub(crate) async fn timed<T: rows::Finished>(
        &self,
        work: impl Future<Output = Result<T, SqlError>>,
        ctl: &LoadControl,
    ) -> Result<T, SqlError> {
        let Some(limit) = self.settings().statement_timeout else {
            return work.await;
        };
        let start = tokio::time::Instant::now();
        tokio::pin!(work);
        match tokio::time::timeout(limit, &mut work).await {
            Ok(mut result) => {
                // rows still to come stop when the statement's time is up
                if let Ok(out) = &mut result
                    && let Some(rows) = out.stream()
                {
                    rows.set_deadline(start, limit);
                }
                result
            }
            Err(_) => {
                // ask the statement to stop and wait until it has: it either stops without
                // a trace or had already finished its work (then that result stands)
                ctl.cancel.store(true, std::sync::atomic::Ordering::SeqCst);
                match work.await {
                    Err(e) if e.sqlstate() == SqlState::QUERY_CANCELED => {
                        Err(SqlError::Timeout { limit })
                    }
                    other => other,
                }
            }
        }
    }
}

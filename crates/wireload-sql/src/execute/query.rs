//! Statements DataFusion plans (queries, EXPLAIN, PREPARE/EXECUTE by name), and SET/SHOW/RESET.

use crate::error::SqlError;
use crate::rows::{RowStream, Streamed};
use crate::settings::{Setting, SettingStatement};
use crate::{CANCEL_POLL, Database, StatementOutput};
use arrow::record_batch::RecordBatch;
use datafusion::logical_expr::{DdlStatement, LogicalPlan, Statement as PlanStatement};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast;
use std::sync::Arc;
use wireload_load::LoadControl;

impl Database {
    /// Plans and runs a statement DataFusion handles.
    pub(crate) async fn run_query(
        &self,
        statement: DfStatement,
        ctl: &LoadControl,
    ) -> Result<Streamed, SqlError> {
        let tag = command_tag(&statement);
        let plan = self.ctx.state().statement_to_plan(statement).await?;
        // prepared statements by name: a key access is kept beside DataFusion's plan
        let prepared_key = match &plan {
            LogicalPlan::Statement(PlanStatement::Execute(execute)) => {
                if let Some(out) = self.execute_keyed(execute) {
                    return out.map(Streamed::Output);
                }
                None
            }
            LogicalPlan::Statement(PlanStatement::Prepare(prepare)) => {
                Some((prepare.name.clone(), self.key_access_of(prepare)))
            }
            LogicalPlan::Statement(PlanStatement::Deallocate(d)) => {
                self.keyed_statements().remove(&d.name);
                None
            }
            _ => None,
        };
        let done = match &plan {
            LogicalPlan::Ddl(
                DdlStatement::CreateMemoryTable(_)
                | DdlStatement::CreateExternalTable(_)
                | DdlStatement::DropTable(_),
            ) => {
                return Err(SqlError::NotSupported(format!(
                    "{tag} is not supported for wireload tables; use CREATE TABLE, COPY and DROP TABLE"
                )));
            }
            LogicalPlan::Dml(dml) => {
                return Err(SqlError::NotSupported(format!(
                    "{tag} into table \"{}\" is not supported",
                    dml.table_name
                )));
            }
            // files are written by wireload's COPY only (through the file gate)
            LogicalPlan::Copy(_) => {
                return Err(SqlError::NotSupported(
                    "this form of COPY is not supported; use COPY ... TO 'file' WITH (...)".into(),
                ));
            }
            LogicalPlan::Ddl(_) => true,
            LogicalPlan::Statement(PlanStatement::Execute(_)) => false,
            LogicalPlan::Statement(_) => true,
            _ => false,
        };
        let df = self.ctx.execute_logical_plan(plan).await?;
        if let Some((name, Some(access))) = prepared_key {
            self.keyed_statements().insert(name, Arc::new(access));
        }
        // EXECUTE of a prepared INSERT, UPDATE or DELETE: its plan with the parameters set
        if let LogicalPlan::Dml(dml) = df.logical_plan() {
            return self
                .write_plan(dml.clone(), None, None, ctl)
                .await
                .map(Streamed::Output);
        }
        if done {
            self.collect(df, ctl).await?;
            return Ok(Streamed::Output(StatementOutput::Done(tag)));
        }
        self.stream(df, ctl).await.map(Streamed::Rows)
    }

    /// The rows of a planned query, computed as they are read.
    pub(crate) async fn stream(
        &self,
        df: datafusion::dataframe::DataFrame,
        ctl: &LoadControl,
    ) -> Result<RowStream, SqlError> {
        let schema = wireload_storage::plain_schema(df.schema().as_arrow());
        let batches = df.execute_stream().await?;
        Ok(RowStream::new(schema, batches, Arc::clone(&ctl.cancel)))
    }

    /// Runs `df` to its batches; stops (dropping the query) when `ctl.cancel` is set.
    pub(crate) async fn collect(
        &self,
        df: datafusion::dataframe::DataFrame,
        ctl: &LoadControl,
    ) -> Result<Vec<RecordBatch>, SqlError> {
        let cancel = Arc::clone(&ctl.cancel);
        let run = df.collect();
        tokio::pin!(run);
        loop {
            tokio::select! {
                // results leave the database plain: dictionary columns decoded
                result = &mut run => return result?
                    .iter()
                    .map(|b| Ok(wireload_storage::plain_batch(b)?))
                    .collect(),
                () = tokio::time::sleep(CANCEL_POLL) => {
                    if cancel.load(std::sync::atomic::Ordering::SeqCst) {
                        return Err(SqlError::Cancelled);
                    }
                }
            }
        }
    }

    pub(crate) fn setting(&self, statement: SettingStatement) -> StatementOutput {
        let mut settings = self.settings.lock().unwrap_or_else(|e| e.into_inner());
        match statement {
            SettingStatement::Set(Setting::StatementTimeout, limit) => {
                settings.statement_timeout = limit;
                StatementOutput::Done("SET".into())
            }
            SettingStatement::Reset(Setting::StatementTimeout) => {
                settings.statement_timeout = self.defaults.statement_timeout;
                StatementOutput::Done("RESET".into())
            }
            SettingStatement::Show(setting) => {
                let schema = Arc::new(arrow::datatypes::Schema::new(vec![
                    arrow::datatypes::Field::new(
                        setting.name(),
                        arrow::datatypes::DataType::Utf8,
                        false,
                    ),
                ]));
                let value = arrow::array::StringArray::from(vec![settings.show(setting)]);
                let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(value)])
                    .expect("one string column");
                StatementOutput::Rows {
                    schema,
                    batches: vec![batch],
                }
            }
        }
    }
}

/// A short name of what a statement did, such as `CREATE VIEW` or `SET`.
pub(crate) fn command_tag(statement: &DfStatement) -> String {
    use ast::Statement as S;
    let DfStatement::Statement(s) = statement else {
        return match statement {
            DfStatement::Explain(_) => "EXPLAIN".into(),
            DfStatement::Reset(_) => "RESET".into(),
            DfStatement::CopyTo(_) => "COPY".into(),
            _ => "OK".into(),
        };
    };
    match s.as_ref() {
        S::CreateView(_) => "CREATE VIEW".into(),
        S::CreateSchema { .. } => "CREATE SCHEMA".into(),
        S::CreateDatabase { .. } => "CREATE DATABASE".into(),
        S::CreateFunction(_) => "CREATE FUNCTION".into(),
        S::Drop { object_type, .. } => format!("DROP {object_type}"),
        S::Set(_) => "SET".into(),
        S::Insert(_) => "INSERT".into(),
        S::Update { .. } => "UPDATE".into(),
        S::Delete(_) => "DELETE".into(),
        S::Truncate { .. } => "TRUNCATE".into(),
        S::StartTransaction { .. } => "BEGIN".into(),
        S::Commit { .. } => "COMMIT".into(),
        S::Rollback { .. } => "ROLLBACK".into(),
        S::Prepare { .. } => "PREPARE".into(),
        S::Execute { .. } => "EXECUTE".into(),
        S::Deallocate { .. } => "DEALLOCATE".into(),
        S::Explain { .. } => "EXPLAIN".into(),
        S::Query(_) => "SELECT".into(),
        _ => "OK".into(),
    }
}

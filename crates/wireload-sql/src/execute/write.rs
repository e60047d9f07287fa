//! INSERT, UPDATE, DELETE, upserts, CREATE TABLE AS, TRUNCATE and ingests: rows computed, then
//! published as a new version of the table.

use crate::dml::{CreateTableAs, DoUpdate, OnConflict, RowChange, Truncate, Write};
use crate::error::{SqlError, SqlState};
use crate::roles::Privilege;
use crate::{
    Database, StatementOutput, authorize, ddl, dml, off_runtime, quote_ident, replace, upsert,
};
use arrow::record_batch::RecordBatch;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{DmlStatement, LogicalPlan, WriteOp};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast;
use std::sync::Arc;
use wireload_load::LoadControl;
use wireload_storage::{StorageError, Table, TableDef, TableVersion};

impl Database {
    /// `INSERT`, `UPDATE` or `DELETE`, planned by DataFusion; nothing changes when the
    /// statement fails.
    pub(crate) async fn write(
        &self,
        write: Write,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        // forms DataFusion does not plan: a query names the rows by primary key
        if let DfStatement::Statement(s) = write.statement.as_ref() {
            let by_query: Option<(&str, Option<&ast::TableFactor>, ByQuery<'_>)> = match s.as_ref()
            {
                ast::Statement::Update(u) if u.from.is_some() => Some((
                    "UPDATE",
                    Some(&u.table.relation),
                    Box::new(|def| replace::update_from_query(u, def)),
                )),
                ast::Statement::Delete(d) if d.using.is_some() => {
                    let (ast::FromTable::WithFromKeyword(from)
                    | ast::FromTable::WithoutKeyword(from)) = &d.from;
                    Some((
                        "DELETE",
                        from.first().map(|t| &t.relation),
                        Box::new(|def| replace::delete_using_query(d, def)),
                    ))
                }
                _ => None,
            };
            if let Some((command, target, query_of)) = by_query {
                let Some(ast::TableFactor::Table { name, .. }) = target else {
                    return Err(SqlError::NotSupported(format!(
                        "{command} of this form is not supported yet"
                    )));
                };
                let table = self.table(&ddl::table_name(name)?)?;
                let query = query_of(table.def())?;
                let statement =
                    DfStatement::Statement(Box::new(ast::Statement::Query(Box::new(query))));
                let plan = self.ctx.state().statement_to_plan(statement).await?;
                return self
                    .replace_by_query(&table, command, plan, write.returning, ctl)
                    .await;
            }
        }
        let plan = self.ctx.state().statement_to_plan(*write.statement).await?;
        let LogicalPlan::Dml(dml) = plan else {
            return Err(SqlError::Internal(format!(
                "a write planned as {}",
                plan.display()
            )));
        };
        self.write_plan(dml, write.returning, write.on_conflict.as_ref(), ctl)
            .await
    }

    /// Runs the INSERT (skipping rows whose keys are taken, with `skip_conflicts`), UPDATE
    /// or DELETE DataFusion planned.
    pub(crate) async fn write_plan(
        &self,
        dml: DmlStatement,
        returning: Option<Vec<ast::SelectItem>>,
        on_conflict: Option<&OnConflict>,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        let table = self.table(dml.table_name.table())?;
        match &dml.op {
            WriteOp::Insert(InsertOp::Append) => {
                let out = self
                    .insert(&table, dml, returning, on_conflict, ctl)
                    .await?;
                if matches!(on_conflict, Some(OnConflict::Update(_))) {
                    // its updates deleted rows
                    self.compact_later(&table);
                }
                Ok(out)
            }
            WriteOp::Update | WriteOp::Delete => {
                let out = self.replace_rows(&table, dml, returning, ctl).await?;
                self.compact_later(&table);
                Ok(out)
            }
            op => Err(SqlError::NotSupported(format!("{op} is not supported"))),
        }
    }

    /// `INSERT`: DataFusion plans the rows (columns matched, cast to the table's types), and
    /// they are appended and published like a load's.
    pub(crate) async fn insert(
        &self,
        table: &Arc<Table>,
        dml: DmlStatement,
        returning: Option<Vec<ast::SelectItem>>,
        on_conflict: Option<&OnConflict>,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        let input = dml::nullable_values(Arc::unwrap_or_clone(dml.input))?;
        let df = self.ctx.execute_logical_plan(input).await?;
        let schema = wireload_storage::plain_schema(df.schema().as_arrow());
        let all = self.collect(df, ctl).await?;
        let skip_conflicts = match on_conflict {
            None => None,
            Some(OnConflict::Nothing(target)) => Some(target),
            Some(OnConflict::Update(up)) => {
                return self.upsert(table, schema, all, returning, up, ctl).await;
            }
        };
        // ON CONFLICT DO NOTHING: the rows whose keys are free now; when another write
        // takes one of them before this one publishes, it starts again
        const ATTEMPTS: usize = 5;
        for attempt in 1..=ATTEMPTS {
            let batches = match skip_conflicts {
                None => all.clone(),
                Some(target) => {
                    dml::free_rows(table.def(), &table.snapshot(), target, all.clone())?
                }
            };
            // RETURNING is evaluated first: when it fails, nothing is inserted
            let returned = dml::returning_of(
                &self.ctx,
                table.name(),
                returning.as_deref(),
                Arc::clone(&schema),
                batches.clone(),
            )
            .await?;
            let rows = match self.append(table, "INSERT", batches, ctl).await {
                Err(e)
                    if skip_conflicts.is_some()
                        && attempt < ATTEMPTS
                        && e.sqlstate() == SqlState::UNIQUE_VIOLATION =>
                {
                    continue;
                }
                other => other?,
            };
            return Ok(StatementOutput::Changed(RowChange {
                command: "INSERT",
                rows,
                returning: returned,
            }));
        }
        unreachable!("the last attempt returns")
    }

    /// `INSERT ... ON CONFLICT (target) DO UPDATE` of the rows `all` (in the table's column
    /// order and types): the rows whose key is taken update the row holding it, the others
    /// are inserted, published together over one snapshot (run again when another write
    /// published first; 40001 after the last attempt).
    pub(crate) async fn upsert(
        &self,
        table: &Arc<Table>,
        schema: arrow::datatypes::SchemaRef,
        all: Vec<RecordBatch>,
        returning: Option<Vec<ast::SelectItem>>,
        up: &DoUpdate,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        const ATTEMPTS: usize = 5;
        let proposed = arrow::compute::concat_batches(&schema, &all)?;
        let what = format!("INSERT {}", quote_ident(table.name()));
        for _ in 0..ATTEMPTS {
            let base = table.snapshot();
            let split = upsert::split(table.def(), &base, &up.target, &proposed)?;
            let (new, keep) = upsert::updated(table.def(), up, &base, &split).await?;
            let (def, snapshot, what) = (Arc::clone(table.def()), Arc::clone(&base), what.clone());
            let written = self
                .run_blocking(None, move || {
                    upsert::apply(&def, &snapshot, split, new, &keep, &what)
                })
                .await?;
            if let Some(out) = self
                .publish_written(table, "INSERT", &base, written, returning.as_deref(), ctl)
                .await?
            {
                return Ok(out);
            }
        }
        Err(SqlError::SerializationFailure {
            table: table.name().to_string(),
        })
    }

    /// `UPDATE` or `DELETE` over the table's current snapshot, published only when no
    /// other write to the table was published meanwhile; else tried again, the last time
    /// holding the table's writer lock throughout (so a stream of loads or inserts into the
    /// table cannot starve it).
    pub(crate) async fn replace_rows(
        &self,
        table: &Arc<Table>,
        dml: DmlStatement,
        returning: Option<Vec<ast::SelectItem>>,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        const ATTEMPTS: usize = 3;
        let command = if dml.op == WriteOp::Update {
            "UPDATE"
        } else {
            "DELETE"
        };
        let row_write = match replace::RowWrite::plan(&self.ctx, &dml, &table.def().arrow_schema) {
            Ok(w) => Arc::new(w),
            // FROM, subqueries, LIMIT: a query finds the rows
            Err(SqlError::NotSupported(_)) => {
                let query = replace::query_of(&dml, table.def())?;
                return self
                    .replace_by_query(table, command, query, returning, ctl)
                    .await;
            }
            Err(e) => return Err(e),
        };
        for _ in 1..ATTEMPTS {
            let base = table.snapshot();
            let (target, snapshot, write) =
                (Arc::clone(table), Arc::clone(&base), Arc::clone(&row_write));
            let what = format!("{command} {}", quote_ident(table.name()));
            let written = self
                .run_blocking(None, move || {
                    replace::apply(target.def(), &snapshot, &write, &what)
                })
                .await?;
            if let Some(out) = self
                .publish_written(table, command, &base, written, returning.as_deref(), ctl)
                .await?
            {
                return Ok(out);
            }
        }
        // the last attempt: under the writer lock, on the version it guards
        let (target, write) = (Arc::clone(table), Arc::clone(&row_write));
        let what = format!("{command} {}", quote_ident(table.name()));
        if ctl.cancel.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(SqlError::Cancelled);
        }
        // the lock is taken off the load pools and the work runs on a pool of its own: a
        // load pool's thread may be waiting for the lock
        let pool = wireload_publish::locked_pool(self.threads)
            .map_err(|e| SqlError::Resources(e.to_string()))?;
        let (ctx, runtime) = (self.ctx.clone(), tokio::runtime::Handle::try_current().ok());
        let (rows, returning) = off_runtime(move || {
            let guard = target.begin_write();
            let written =
                pool.install(|| replace::apply(target.def(), guard.base(), &write, &what))?;
            // RETURNING before publishing: when it fails, nothing changes
            let returned = dml::returning_of(
                &ctx,
                target.name(),
                returning.as_deref(),
                Arc::clone(&guard.base().schema),
                written.returned,
            );
            let returned = match runtime {
                Some(handle) => handle.block_on(returned),
                None => tokio::runtime::Builder::new_current_thread()
                    .build()
                    .map_err(|e| SqlError::Resources(e.to_string()))?
                    .block_on(returned),
            }?;
            if written.rows > 0 {
                guard.publish(written.version);
            }
            Ok((written.rows, returned))
        })
        .await?;
        Ok(StatementOutput::Changed(RowChange {
            command,
            rows,
            returning,
        }))
    }

    /// Publishes what an UPDATE, DELETE or ON CONFLICT DO UPDATE wrote over the snapshot `base` of `table`
    /// (RETURNING evaluated first: when it fails nothing changes); `None` when another
    /// write was published since `base` (the statement starts again).
    pub(crate) async fn publish_written(
        &self,
        table: &Arc<Table>,
        command: &'static str,
        base: &TableVersion,
        written: replace::Written,
        returning: Option<&[ast::SelectItem]>,
        ctl: &LoadControl,
    ) -> Result<Option<StatementOutput>, SqlError> {
        let returned = dml::returning_of(
            &self.ctx,
            table.name(),
            returning,
            Arc::clone(&base.schema),
            written.returned,
        )
        .await?;
        if ctl.cancel.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(SqlError::Cancelled);
        }
        let guard = table.begin_write();
        if guard.base().number != base.number {
            return Ok(None);
        }
        if written.rows > 0 {
            guard.publish(written.version);
        }
        Ok(Some(StatementOutput::Changed(RowChange {
            command,
            rows: written.rows,
            returning: returned,
        })))
    }

    /// `UPDATE` or `DELETE` whose rows (by primary key) and new values `query` finds
    /// ([`replace::query_of`]); published when no other write to the table was published
    /// since the query's snapshot, else run again (40001 after the last attempt).
    pub(crate) async fn replace_by_query(
        &self,
        table: &Arc<Table>,
        command: &'static str,
        query: LogicalPlan,
        returning: Option<Vec<ast::SelectItem>>,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        const ATTEMPTS: usize = 5;
        let columns = table.def().schema.columns.len();
        for _ in 0..ATTEMPTS {
            let base = table.snapshot();
            let df = self.ctx.execute_logical_plan(query.clone()).await?;
            let schema = wireload_storage::plain_schema(df.schema().as_arrow());
            let batches = self.collect(df, ctl).await?;
            let found = arrow::compute::concat_batches(&schema, &batches)?;
            let (new, keys) = if command == "UPDATE" {
                (
                    Some(found.project(&(0..columns).collect::<Vec<_>>())?),
                    found.columns()[columns..].to_vec(),
                )
            } else {
                (None, found.columns().to_vec())
            };
            let (target, snapshot) = (Arc::clone(table), Arc::clone(&base));
            let what = format!("{command} {}", quote_ident(table.name()));
            let written = self
                .run_blocking(None, move || {
                    replace::apply_keys(target.def(), &snapshot, &keys, new, &what)
                })
                .await?;
            if let Some(out) = self
                .publish_written(table, command, &base, written, returning.as_deref(), ctl)
                .await?
            {
                return Ok(out);
            }
        }
        Err(SqlError::SerializationFailure {
            table: table.name().to_string(),
        })
    }

    /// `CREATE TABLE ... AS query`: the table gets the query's columns (every column
    /// nullable) and its rows; when the query fails, no table is created.
    pub(crate) async fn create_table_as(
        &self,
        create: CreateTableAs,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        if self.catalog.table(&create.name).is_some() || self.schema.has_other(&create.name) {
            if create.if_not_exists {
                return Ok(StatementOutput::Done("CREATE TABLE AS".into()));
            }
            return Err(SqlError::Storage(StorageError::TableExists(create.name)));
        }
        let statement = DfStatement::Statement(Box::new(ast::Statement::Query(create.query)));
        let plan = self.ctx.state().statement_to_plan(statement).await?;
        let fields: Vec<_> = plan.schema().fields().iter().map(|f| f.as_ref()).collect();
        let columns = dml::columns_of(&fields, &create.columns)?;
        let def = TableDef::new(
            create.name.clone(),
            wireload_types::TableSchema {
                columns: columns.clone(),
            },
            wireload_storage::Partitioning::Single,
        )?;
        let plan = dml::cast_to_columns(plan, &columns)?;
        let df = self.ctx.execute_logical_plan(plan).await?;
        let batches = self.collect(df, ctl).await?;
        // filled before it is attached: no one sees the table half-made
        let table = Arc::new(Table::new(def));
        let rows = self.append(&table, "CREATE TABLE AS", batches, ctl).await?;
        self.catalog.attach(vec![table])?;
        Ok(StatementOutput::Changed(RowChange {
            command: "SELECT",
            rows,
            returning: None,
        }))
    }

    /// `TRUNCATE`: every named table loses its rows (its indexes stay, empty); when a name
    /// is not a table nothing is truncated.
    pub(crate) fn truncate(&self, truncate: &Truncate) -> Result<StatementOutput, SqlError> {
        let tables = truncate
            .names
            .iter()
            .map(|n| self.table(n))
            .collect::<Result<Vec<_>, _>>()?;
        for t in tables {
            let guard = t.begin_write();
            let next = guard.base().truncated();
            guard.publish(next);
        }
        Ok(StatementOutput::Changed(RowChange {
            command: "TRUNCATE",
            rows: 0,
            returning: None,
        }))
    }

    /// Appends Arrow `batches` to table `table` and publishes them in one step (all rows or
    /// none): columns by position, converted to the table's types where nothing is lost,
    /// NOT NULL, lengths and keys checked. `what` names the source in errors (`Flight
    /// ingest`). Inside a transaction the rows go to the transaction's copy of the table.
    /// Returns the rows appended.
    pub async fn ingest(
        &self,
        table: &str,
        what: &str,
        batches: Vec<RecordBatch>,
        ctl: &LoadControl,
    ) -> Result<u64, SqlError> {
        self.require(&[authorize::Need::On(table.to_string(), Privilege::Insert)])?;
        let run = async {
            let target = self.table(table)?;
            let rows = self.append(&target, what, batches, ctl).await?;
            Ok(StatementOutput::Changed(RowChange {
                command: "INSERT",
                rows,
                returning: None,
            }))
        };
        match self.in_transaction_run(None, run, ctl).await? {
            StatementOutput::Changed(change) => Ok(change.rows),
            other => Err(SqlError::Internal(format!("ingest produced {other:?}"))),
        }
    }

    /// Appends `batches` (in the table's column order, cast to its types) to `table` and
    /// publishes them, off the async runtime; `what` names the statement in errors.
    pub(crate) async fn append(
        &self,
        table: &Arc<Table>,
        what: &str,
        batches: Vec<RecordBatch>,
        ctl: &LoadControl,
    ) -> Result<u64, SqlError> {
        let target = Arc::clone(table);
        let name = target.name().to_string();
        let file = format!("{what} {}", quote_ident(&name));
        let ctl = ctl.clone();
        self.run_blocking(None, move || {
            wireload_publish::append_batches(&target, &file, 0, batches, &ctl)
                .map(|report| report.rows)
                .map_err(|error| SqlError::Load { table: name, error })
        })
        .await
    }

    /// Starts a background compaction of `table` when it is a table of the catalog (not a
    /// transaction's copy), none is under way, and its deleted rows are worth dropping.
    /// A compaction that fails leaves the table as it was; a later write starts another.
    pub(crate) fn compact_later(&self, table: &Arc<Table>) {
        if !self
            .auto_compaction
            .load(std::sync::atomic::Ordering::SeqCst)
            || !wireload_publish::worth_compacting(&table.snapshot())
            || !self
                .catalog
                .table(table.name())
                .is_some_and(|t| Arc::ptr_eq(&t, table))
        {
            return;
        }
        let Ok(pool) = wireload_publish::compaction_pool() else {
            return;
        };
        if !table.claim_compaction() {
            return;
        }
        let target = Arc::clone(table);
        pool.spawn(move || {
            if let Err(e) = wireload_publish::compact(&target) {
                eprintln!(
                    "wireload: internal error: the compaction of table \"{}\" failed: {e}",
                    target.name()
                );
            }
            target.release_compaction();
        });
    }
}

/// Builds the query that names, by primary key, the rows a write DataFusion does not plan
/// (UPDATE ... FROM, DELETE ... USING) changes, for its target table's definition.
pub(crate) type ByQuery<'s> = Box<dyn Fn(&TableDef) -> Result<ast::Query, SqlError> + Send + 's>;

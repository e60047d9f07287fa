//! The statement layer of wireload: a script is parsed once ([`parse_script`], sqlparser's
//! PostgreSQL dialect, extended for wireload's COPY options, EXPORT/IMPORT DATABASE and
//! `PARTITION BY HASH ... PARTITIONS n`) and each statement is routed on its AST: wireload's
//! DDL, COPY and EXPORT/IMPORT run here (loads on the CPU loader or, with `ENGINE gpu`, on the
//! GPU loader of `wireload_gpu`), everything else is planned by DataFusion from its AST
//! (`wireload_query`'s session, which keeps insertion order).
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use wireload_load::LoadControl;
//! use wireload_sql::{Database, DbConfig, StatementOutput};
//! let db = Database::new(DbConfig { threads: Some(2), ..Default::default() });
//! let out = db
//!     .execute("CREATE TABLE t (id INT); SELECT count(*) AS n FROM t", &LoadControl::default())
//!     .await
//!     .unwrap();
//! assert!(matches!(&out[1], StatementOutput::Rows { batches, .. } if batches[0].num_rows() == 1));
//! # });
//! ```
#![deny(missing_docs)]
// `SqlError` carries a `LoadError` and a `DataFusionError` by value (the public API), so
// every `Result<_, SqlError>` is large; statements are not a hot path.
#![allow(clippy::result_large_err)]

mod authorize;
mod copy;
mod ddl;
mod dialect;
mod dml;
mod error;
mod export;
mod files;
mod gate;
mod grants;
mod keyed;
mod limits;
mod parse;
mod pushdown;
mod rebase;
mod rewrite;
mod roles;
mod settings;
mod transaction;
mod unload;
mod upsert;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{
    DdlStatement, DmlStatement, LogicalPlan, Statement as PlanStatement, WriteOp,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast;
use wireload_gpu::{GpuError, GpuOptions, GpuReport};
use wireload_load::{Dialect, FieldSource, Fields, LoadControl, LoadOptions, LoadReport, Source};
use wireload_query::CatalogSchema;
use wireload_storage::{Catalog, IndexDef, StorageError, Table, TableDef, TableVersion};
use wireload_unload::export::Export as ExportFiles;

pub use copy::{
    CopyFrom, CopyPath, CopySource, CopyTo, Engine, InputFormat, OutputFormat, ReadSpec,
    byte_count, read_spec,
};
/// Parameter values of prepared statements ([`Database::execute_prepared`]).
pub use datafusion::common::ScalarValue;
pub use ddl::{CreateIndex, CreateTable, DropIndex, DropTable, parse_table};
pub use dml::{ConflictTarget, CreateTableAs, DoUpdate, OnConflict, RowChange, Truncate, Write};
pub use error::{SqlError, SqlState};
pub use export::{Export, Import};
pub use files::{
    FilterFor, InferredLoad, InferredRead, filename_column, infer, load_inferred, sniff_file,
    sniff_source, sources_of, table_name_of,
};
pub use gate::{FileAccess, FileGate};
pub use parse::{Parsed, Statement, is_complete, parse_script};
pub use roles::{
    Actor, LoginRefused, Privilege, Role, RoleOptions, RoleStatement, Roles, SCRAM_ITERATIONS,
    ScramVerifier,
};
pub use settings::{Setting, SettingStatement, Settings, time_span};
pub use transaction::TxStatement;
pub use wireload_query::{DEFAULT_CATALOG, DEFAULT_SCHEMA, SnapshotScanExec, SnapshotTable};
pub use wireload_types::sql::{ColumnsError, parse_columns, sql_type};

use crate::unload::BinaryFormat;

/// How `COPY ... FROM` a file is named in the file gate's messages.
const COPY_FROM: gate::Use = gate::Use::Read("COPY FROM");

/// How often a running query looks whether it was cancelled.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// What one statement produced.
#[derive(Debug)]
pub enum StatementOutput {
    /// A query's result.
    Rows {
        /// result schema
        schema: SchemaRef,
        /// result batches in order
        batches: Vec<RecordBatch>,
    },
    /// A completed COPY ... FROM.
    Loaded(LoadReport),
    /// A completed COPY ... TO.
    Unloaded(UnloadSummary),
    /// A statement without rows (CREATE, DROP...), with a short message such as `CREATE TABLE`.
    Done(String),
    /// Rows inserted, updated or deleted (and what RETURNING made of them).
    Changed(RowChange),
}

/// What a finished `COPY ... TO` wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct UnloadSummary {
    /// The table unloaded, or `query`.
    pub source: String,
    /// The file written.
    pub path: String,
    /// `csv`, `arrow` or `parquet`.
    pub format: &'static str,
    /// Rows written.
    pub rows: u64,
    /// Bytes of the file.
    pub bytes: u64,
    /// Wall-clock seconds, the query's included.
    pub seconds: f64,
}

impl UnloadSummary {
    /// Throughput in MB/s of file bytes.
    pub fn mb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / 1e6 / self.seconds
        } else {
            0.0
        }
    }
}

impl std::fmt::Display for UnloadSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let digits = if self.seconds < 1.0 { 6 } else { 3 };
        write!(
            f,
            "unloaded {} rows from {} to {} ({}), {:.1} MB in {:.*} s ({:.0} MB/s)",
            self.rows,
            self.source,
            self.path,
            self.format,
            self.bytes as f64 / 1e6,
            digits,
            self.seconds,
            self.mb_per_s()
        )
    }
}

/// A statement planned once, run many times with parameters ([`Database::prepare`]).
#[derive(Debug, Clone)]
pub struct PreparedStatement {
    /// DataFusion's plan, with placeholders for the parameters.
    plan: Arc<LogicalPlan>,
    /// The RETURNING list of a write.
    returning: Option<Vec<ast::SelectItem>>,
    /// The columns of a write's RETURNING list.
    returns: Option<SchemaRef>,
    /// An INSERT's `ON CONFLICT` clause.
    on_conflict: Option<OnConflict>,
    /// Each parameter's type, when the statement tells it.
    params: Vec<Option<arrow::datatypes::DataType>>,
    /// The key access, for a read or update of one row by a unique key.
    keyed: Option<Arc<keyed::KeyAccess>>,
    /// The privileges it needs, checked at each execution.
    needs: Arc<[authorize::Need]>,
}

impl PreparedStatement {
    /// Each parameter's type (`$1` first), where the statement tells it.
    pub fn parameter_types(&self) -> &[Option<arrow::datatypes::DataType>] {
        &self.params
    }

    /// True when it runs straight on a unique index (a read or an update of one row by its
    /// key).
    pub fn is_key_access(&self) -> bool {
        self.keyed.is_some()
    }

    /// The columns of its result: a query's columns, a write's RETURNING columns (none
    /// without RETURNING).
    pub fn result_schema(&self) -> SchemaRef {
        match self.plan.as_ref() {
            LogicalPlan::Dml(_) => self
                .returns
                .clone()
                .unwrap_or_else(|| Arc::new(arrow::datatypes::Schema::empty())),
            plan => wireload_storage::plain_schema(plan.schema().as_arrow()),
        }
    }
}

/// Database settings.
#[derive(Debug, Clone, Default)]
pub struct DbConfig {
    /// Worker threads for loads and queries; `None`: all cores.
    pub threads: Option<usize>,
    /// Bytes the queries of all sessions may hold at once in sorts, aggregations and joins
    /// (past their share they spill to the temporary directory, or fail alone with
    /// 53200); `None`: no limit.
    pub memory_limit: Option<usize>,
    /// The `statement_timeout` of network clients' sessions until they set their own (and
    /// after `RESET`); local sessions start without one.
    pub client_statement_timeout: Option<Duration>,
}

/// An in-memory database: a catalog and a SQL session over it ([`Database::new_session`] opens
/// more sessions over the same tables).
pub struct Database {
    catalog: Arc<Catalog>,
    schema: Arc<CatalogSchema>,
    ctx: SessionContext,
    threads: usize,
    settings: Mutex<Settings>,
    /// The settings a session starts with (and `RESET` returns to).
    defaults: Settings,
    /// The settings a network client's session starts with.
    client_defaults: Settings,
    /// The memory pool and temporary files of every session's queries.
    runtime: Arc<datafusion::execution::runtime_env::RuntimeEnv>,
    tx: Mutex<Option<transaction::Transaction>>,
    /// Statements prepared by name (SQL `PREPARE`) that run straight on a unique index.
    keyed: Mutex<HashMap<String, Arc<keyed::KeyAccess>>>,
    /// Executions answered by a key access.
    key_accesses: std::sync::atomic::AtomicU64,
    /// Whether writes that leave many deleted rows start a background compaction (shared
    /// by the sessions).
    auto_compaction: Arc<std::sync::atomic::AtomicBool>,
    /// Notices of the statements run since [`Database::take_notices`] (columns re-planned).
    notices: Mutex<Vec<String>>,
    /// The records this session's loads rejected (`ON_ERROR ignore`), by load.
    rejects: Mutex<RejectLog>,
    /// Tables whose column names came from a file's header (shared by the sessions): their
    /// mixed-case names resolve case-insensitively, as DuckDB does; names a user wrote in
    /// `CREATE TABLE` keep PostgreSQL's rule (unquoted folds to lower case).
    header_named: Arc<Mutex<std::collections::HashSet<String>>>,
    /// The roles, owners and grants (shared by the sessions).
    roles: Arc<Roles>,
    /// Whose rights this session has.
    actor: Mutex<Actor>,
    /// The directories a network client's session may reach files in.
    gate: Arc<FileGate>,
}

/// The rejected records of a session's loads, as `wireload_rejects` shows them.
#[derive(Debug, Default)]
struct RejectLog {
    /// The last load's number.
    loads: u64,
    /// (load number, record), in load order then input order.
    records: Vec<(u64, wireload_load::Reject)>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("tables", &self.catalog.table_names())
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

/// Builds the query that names, by primary key, the rows a write DataFusion does not plan
/// (UPDATE ... FROM, DELETE ... USING) changes, for its target table's definition.
type ByQuery<'s> = Box<dyn Fn(&TableDef) -> Result<ast::Query, SqlError> + Send + 's>;

impl Database {
    /// An empty database.
    pub fn new(config: DbConfig) -> Self {
        let threads = config
            .threads
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let catalog = Arc::new(Catalog::default());
        let runtime = wireload_query::runtime(config.memory_limit);
        let (ctx, schema) =
            wireload_query::new_session(Arc::clone(&catalog), threads, Arc::clone(&runtime));
        let client_defaults = Settings {
            statement_timeout: config.client_statement_timeout,
        };
        let defaults = Settings::default();
        Database {
            catalog,
            schema,
            ctx,
            threads,
            settings: Mutex::new(defaults.clone()),
            defaults,
            client_defaults,
            runtime,
            tx: Mutex::new(None),
            keyed: Mutex::new(HashMap::new()),
            key_accesses: Default::default(),
            auto_compaction: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            notices: Mutex::new(Vec::new()),
            rejects: Mutex::new(RejectLog::default()),
            header_named: Arc::default(),
            roles: Arc::default(),
            actor: Mutex::new(Actor::Local),
            gate: Arc::default(),
        }
    }

    /// Another session of this database: the same tables and views, its own settings and
    /// transaction.
    pub fn new_session(&self) -> Database {
        let (ctx, schema) = wireload_query::new_sibling_session(
            &self.schema,
            self.threads,
            Arc::clone(&self.runtime),
        );
        Database {
            catalog: Arc::clone(&self.catalog),
            schema,
            ctx,
            threads: self.threads,
            settings: Mutex::new(self.defaults.clone()),
            defaults: self.defaults.clone(),
            client_defaults: self.client_defaults.clone(),
            runtime: Arc::clone(&self.runtime),
            tx: Mutex::new(None),
            keyed: Mutex::new(HashMap::new()),
            key_accesses: Default::default(),
            auto_compaction: Arc::clone(&self.auto_compaction),
            notices: Mutex::new(Vec::new()),
            rejects: Mutex::new(RejectLog::default()),
            header_named: Arc::clone(&self.header_named),
            roles: Arc::clone(&self.roles),
            actor: Mutex::new(self.actor()),
            gate: Arc::clone(&self.gate),
        }
    }

    /// A session of a network client that has not logged in yet: it has no rights until
    /// [`Database::set_actor`] names its role, and reaches server files only beneath
    /// `gate`'s directories.
    pub fn client_session(&self, gate: Arc<FileGate>) -> Database {
        let mut session = self.new_session();
        session.gate = gate;
        session.actor = Mutex::new(Actor::Role(String::new()));
        session.defaults = self.client_defaults.clone();
        session.settings = Mutex::new(self.client_defaults.clone());
        session
    }

    /// Makes this session act as `actor` (a client's role once it logged in).
    pub fn set_actor(&self, actor: Actor) {
        *self.actor.lock().unwrap_or_else(|e| e.into_inner()) = actor;
    }

    /// Whose rights this session has.
    pub fn actor(&self) -> Actor {
        self.actor.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The roles of this database (shared by its sessions).
    pub fn roles(&self) -> &Arc<Roles> {
        &self.roles
    }

    /// What this session may do with the server's files now (its role's memberships may
    /// change between statements).
    pub fn file_access(&self) -> FileAccess {
        let actor = self.actor();
        if actor == Actor::Local {
            return FileAccess::Local;
        }
        FileAccess::Client {
            gate: Arc::clone(&self.gate),
            read: self
                .roles
                .has_privileges_of(&actor, roles::READ_SERVER_FILES),
            write: self
                .roles
                .has_privileges_of(&actor, roles::WRITE_SERVER_FILES),
        }
    }

    /// Turns background compaction on or off (on by default) for every session: with it,
    /// a DELETE or UPDATE that leaves a quarter of a table's rows deleted (and at least
    /// 1024) starts one ([`wireload_load::compact`]).
    pub fn set_auto_compaction(&self, on: bool) {
        self.auto_compaction
            .store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// Starts a background compaction of `table` when it is a table of the catalog (not a
    /// transaction's copy), none is under way, and its deleted rows are worth dropping.
    /// A compaction that fails leaves the table as it was; a later write starts another.
    fn compact_later(&self, table: &Arc<Table>) {
        if !self
            .auto_compaction
            .load(std::sync::atomic::Ordering::SeqCst)
            || !wireload_load::worth_compacting(&table.snapshot())
            || !self
                .catalog
                .table(table.name())
                .is_some_and(|t| Arc::ptr_eq(&t, table))
        {
            return;
        }
        let Ok(pool) = wireload_load::compaction_pool() else {
            return;
        };
        if !table.claim_compaction() {
            return;
        }
        let target = Arc::clone(table);
        pool.spawn(move || {
            if let Err(e) = wireload_load::compact(&target) {
                eprintln!(
                    "wireload: internal error: the compaction of table \"{}\" failed: {e}",
                    target.name()
                );
            }
            target.release_compaction();
        });
    }

    /// The catalog (for programs that create and load tables directly).
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// The DataFusion session that runs queries.
    pub fn session(&self) -> &SessionContext {
        &self.ctx
    }

    /// Worker threads for loads and query partitions.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs the statements of `sql` in order, stopping at the first error; returns one
    /// output per statement. The whole script is parsed first: a syntax error anywhere runs
    /// nothing. Loads watch `ctl` for cancellation and report progress in it.
    pub async fn execute(
        &self,
        sql: &str,
        ctl: &LoadControl,
    ) -> Result<Vec<StatementOutput>, SqlError> {
        let statements = parse_script(sql)?;
        let mut outputs = Vec::with_capacity(statements.len());
        for parsed in statements {
            outputs.push(self.execute_statement(parsed.statement, ctl).await?);
        }
        Ok(outputs)
    }

    /// wireload's settings as they are now.
    pub fn settings(&self) -> Settings {
        self.settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Runs one parsed statement. Setting `ctl.cancel` cancels it, and so does the
    /// `statement_timeout` setting; a cancelled statement leaves every table as it was.
    ///
    /// Inside a transaction (`BEGIN` ... `COMMIT`) statements read the snapshot the
    /// transaction began with plus its own writes; a failing statement fails the
    /// transaction. A database is one session: one transaction at a time.
    pub async fn execute_statement(
        &self,
        statement: Statement,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        if let Statement::Transaction(t) = statement {
            return self.transaction(t);
        }
        self.authorize(&statement)?;
        let ownership = self.ownership_change(&statement);
        let catalog_change = changes_the_catalog(&statement);
        let out = self
            .in_transaction_run(catalog_change, self.run_statement(statement, ctl), ctl)
            .await?;
        if let Some(change) = ownership {
            self.record_ownership(change);
        }
        Ok(out)
    }

    /// Prepares `sql` (one query, INSERT, UPDATE or DELETE, with parameters `$1`, `$2`,
    /// ...) to be run many times by [`Database::execute_prepared`]. A read or update of one
    /// row by a unique key (`... WHERE key = $1`) runs straight on the index then.
    pub async fn prepare(&self, sql: &str) -> Result<PreparedStatement, SqlError> {
        let mut statements = parse_script(sql)?;
        if statements.len() != 1 {
            return Err(SqlError::InvalidOption(format!(
                "a prepared statement is one statement, found {}",
                statements.len()
            )));
        }
        self.prepare_statement(statements.remove(0).statement).await
    }

    /// Prepares a parsed statement, as [`Database::prepare`] prepares its text.
    pub async fn prepare_statement(
        &self,
        statement: Statement,
    ) -> Result<PreparedStatement, SqlError> {
        let needs: Arc<[authorize::Need]> =
            authorize::needs(&statement, &|name| self.relation_of(name)).into();
        self.require(&needs)?;
        let (statement, returning, on_conflict) = match statement {
            Statement::Query(q) => (q, None, None),
            Statement::Write(w) => (w.statement, w.returning, w.on_conflict),
            _ => {
                return Err(SqlError::NotSupported(
                    "only queries, INSERT, UPDATE and DELETE can be prepared".into(),
                ));
            }
        };
        let plan = self.ctx.state().statement_to_plan(*statement).await?;
        if matches!(plan, LogicalPlan::Statement(_) | LogicalPlan::Ddl(_)) {
            return Err(SqlError::NotSupported(
                "only queries, INSERT, UPDATE and DELETE can be prepared".into(),
            ));
        }
        let fields = plan.get_parameter_fields()?;
        let params = (1..=fields.len())
            .map(|n| {
                fields
                    .get(&format!("${n}"))
                    .cloned()
                    .flatten()
                    .map(|f| f.data_type().clone())
            })
            .collect::<Vec<_>>();
        let keyed = match parameter_fields(&plan) {
            Some(fields) if returning.is_none() => {
                keyed::KeyAccess::of(&self.ctx, &plan, &fields, |name| self.table(name).ok())
                    .map(Arc::new)
            }
            _ => None,
        };
        let returns = match (&plan, &returning) {
            (LogicalPlan::Dml(dml), Some(items)) => Some(dml::returning_schema(
                &self.ctx,
                dml.table_name.table(),
                items,
                dml.target.schema(),
            )?),
            _ => None,
        };
        Ok(PreparedStatement {
            plan: Arc::new(plan),
            returning,
            returns,
            on_conflict,
            params,
            keyed,
            needs,
        })
    }

    /// Runs a statement of [`Database::prepare`] with `params` (one per parameter, cast to
    /// its type), as [`Database::execute_statement`] runs a statement.
    pub async fn execute_prepared(
        &self,
        prepared: &PreparedStatement,
        params: &[datafusion::common::ScalarValue],
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        self.require(&prepared.needs)?;
        if params.len() != prepared.params.len() {
            return Err(SqlError::InvalidOption(format!(
                "the prepared statement takes {} parameters, {} given",
                prepared.params.len(),
                params.len()
            )));
        }
        let params = params
            .iter()
            .zip(&prepared.params)
            .map(|(v, ty)| match ty {
                Some(ty) if v.data_type() != *ty => v.cast_to(ty),
                _ => Ok(v.clone()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let run = async {
            if let Some(access) = &prepared.keyed
                && let Some(out) = self.run_keyed(access, &params)
            {
                return out;
            }
            let values =
                datafusion::common::ParamValues::List(params.into_iter().map(Into::into).collect());
            let plan = prepared.plan.as_ref().clone().with_param_values(values)?;
            if let LogicalPlan::Dml(dml) = plan {
                return self
                    .write_plan(
                        dml,
                        prepared.returning.clone(),
                        prepared.on_conflict.as_ref(),
                        ctl,
                    )
                    .await;
            }
            let df = self.ctx.execute_logical_plan(plan).await?;
            let schema = wireload_storage::plain_schema(df.schema().as_arrow());
            let batches = self.collect(df, ctl).await?;
            Ok(StatementOutput::Rows { schema, batches })
        };
        self.in_transaction_run(None, run, ctl).await
    }

    /// Runs a statement's `work` under `statement_timeout`; inside a transaction, refuses
    /// it once the transaction failed (and a statement changing the catalog, `what`), and
    /// a failing statement fails the transaction.
    async fn in_transaction_run(
        &self,
        catalog_change: Option<&'static str>,
        work: impl Future<Output = Result<StatementOutput, SqlError>>,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        let in_tx = match self.tx.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
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
        };
        let result = self.timed(work, ctl).await;
        if in_tx
            && result.is_err()
            && let Some(tx) = self.tx.lock().unwrap_or_else(|e| e.into_inner()).as_mut()
        {
            tx.failed = true;
        }
        result
    }

    /// How many executions of prepared statements this session ran straight on a unique
    /// index (reads and updates of one row by its key), for monitoring.
    pub fn key_accesses(&self) -> u64 {
        self.key_accesses.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// True while a transaction is open.
    pub fn in_transaction(&self) -> bool {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    fn transaction(&self, statement: TxStatement) -> Result<StatementOutput, SqlError> {
        let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
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
                        let pool = wireload_load::locked_pool(self.threads)
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
    async fn timed(
        &self,
        work: impl Future<Output = Result<StatementOutput, SqlError>>,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        let Some(limit) = self.settings().statement_timeout else {
            return work.await;
        };
        tokio::pin!(work);
        match tokio::time::timeout(limit, &mut work).await {
            Ok(result) => result,
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

    async fn run_statement(
        &self,
        mut statement: Statement,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        // files in FROM become temporary tables for this statement (dropped with `_files`)
        let mut reads = files::extract(&mut statement, &|name| self.table(name).is_ok())?;
        if !reads.is_empty() {
            // a file is loaded with only the columns the statement may use
            let used = files::names_used(&statement);
            for read in &mut reads {
                read.spec.project = used.clone();
            }
        }
        // CREATE TABLE AS from a file: the new table's names are the header's
        let made_from_files = match &statement {
            Statement::CreateTableAs(c) if !reads.is_empty() => Some(c.name.clone()),
            _ => None,
        };
        let _files = self.materialize(reads, &statement, ctl).await?;
        self.mixed_case(&_files).apply(&mut statement);
        let out = self.dispatch(statement, ctl).await;
        if out.is_ok()
            && let Some(name) = made_from_files
        {
            self.mark_header_named(&name);
        }
        out
    }

    /// Runs `statement` by its kind.
    async fn dispatch(
        &self,
        statement: Statement,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        match statement {
            Statement::Setting(s) => Ok(self.setting(s)),
            Statement::Transaction(t) => self.transaction(t),
            Statement::Query(q) => self.run_query(*q, ctl).await,
            Statement::CreateTable(c) => {
                self.create_table(c.def, c.if_not_exists)?;
                Ok(StatementOutput::Done("CREATE TABLE".into()))
            }
            Statement::CreateTableAs(c) => self.create_table_as(c, ctl).await,
            Statement::Write(w) => self.write(w, ctl).await,
            Statement::Truncate(t) => self.truncate(&t),
            Statement::DropTable(d) => self.drop_tables(&d),
            Statement::CreateIndex(c) => self.create_index(c).await,
            Statement::DropIndex(d) => self.drop_index(&d),
            Statement::CopyFrom(c) => self.copy_from(*c, ctl).await.map(StatementOutput::Loaded),
            Statement::CopyTo(c) => self.copy_to(c, ctl).await.map(StatementOutput::Unloaded),
            Statement::Export(e) => self.export(e, ctl).await.map(StatementOutput::Done),
            Statement::Import(i) => self.import(i, ctl).await.map(StatementOutput::Done),
            Statement::Role(r) => self.role_statement(r).map(StatementOutput::Done),
        }
    }

    /// Loads the files (and the rejects log) `statement` reads into temporary tables,
    /// registered until the returned guard drops. Each file loads only the columns and rows
    /// the statement's plan reads of it ([`pushdown`]).
    async fn materialize(
        &self,
        reads: Vec<files::FileRead>,
        statement: &Statement,
        ctl: &LoadControl,
    ) -> Result<TempTables, SqlError> {
        let mut temps = TempTables {
            schema: Arc::clone(&self.schema),
            tables: Vec::new(),
        };
        // the columns of every file first (the rejects tables are made at once)
        let mut inferred = Vec::new();
        for read in reads {
            match read.source {
                files::ReadSource::Rejects => {
                    let table = Arc::new(self.rejects_table(&read.name)?);
                    self.register_temp(&mut temps, table)?;
                }
                files::ReadSource::Files(paths) => {
                    let (name, spec) = (read.name.clone(), read.spec.clone());
                    let access = self.file_access();
                    let found = self
                        .run_blocking(spec.options.threads, move || {
                            let sources =
                                access.sources(&paths, gate::Use::Read("a file in FROM"))?;
                            files::infer(&name, &sources, &spec)
                        })
                        .await?;
                    inferred.push((found, read.spec));
                }
            }
        }
        let pushed = self.pushdown(statement, &inferred, &temps).await;
        for ((found, spec), pushed) in inferred.into_iter().zip(pushed) {
            let filter = pushed.filter_for(self.ctx.state());
            let project = pushed.columns.or(spec.project);
            let ctl2 = ctl.clone();
            let loaded = self
                .run_blocking(spec.options.threads, move || {
                    found.load(project.as_ref(), filter.as_ref(), &ctl2)
                })
                .await?;
            self.after_load(&loaded.report, &loaded.replanned);
            self.register_temp(&mut temps, loaded.table)?;
        }
        Ok(temps)
    }

    /// Registers `table` as a temporary table of `temps`.
    fn register_temp(&self, temps: &mut TempTables, table: Arc<Table>) -> Result<(), SqlError> {
        use datafusion::catalog::SchemaProvider;
        self.schema.register_table(
            table.name().to_string(),
            Arc::new(SnapshotTable::new(Arc::clone(&table))),
        )?;
        temps.tables.push(table);
        Ok(())
    }

    /// What the plan of `statement` reads of each file in `reads` (the columns, and the
    /// filters pushed into its scan): the statement planned over placeholders with the
    /// files' columns (the tables in `temps` are registered already). Nothing is pushed when
    /// the statement cannot be planned that way (it may still be fine once the files are
    /// loaded, or fail then with its own error).
    async fn pushdown(
        &self,
        statement: &Statement,
        reads: &[(files::InferredRead, copy::ReadSpec)],
        temps: &TempTables,
    ) -> Vec<pushdown::Pushed> {
        let none = || vec![pushdown::Pushed::default(); reads.len()];
        if reads.is_empty() {
            return none();
        }
        let mut statement = statement.clone();
        let mut names = self.mixed_case(temps);
        let mut placeholders = pushdown::Placeholders::new(Arc::clone(&self.schema));
        let mut schemas = Vec::new();
        for (read, _) in reads {
            let Ok(def) = read.def() else {
                return none();
            };
            names.add(&def.schema);
            match placeholders.add(def) {
                Some(schema) => schemas.push(schema),
                None => return none(),
            }
        }
        names.apply(&mut statement);
        let Some(query) = pushdown_query(statement) else {
            return none();
        };
        let state = self.ctx.state();
        let Ok(plan) = state.statement_to_plan(query).await else {
            return none();
        };
        let filters = pushdown::only_immutable(&plan);
        let Ok(plan) = state.optimize(&plan) else {
            return none();
        };
        drop(placeholders);
        reads
            .iter()
            .zip(&schemas)
            .map(|((read, _), schema)| pushdown::pushed_into(&plan, read.name(), schema, filters))
            .collect()
    }

    /// The mixed-case column names of the tables a statement can read whose names came
    /// from a header (files read by the statement, `temps`, and tables made from files),
    /// for unquoted identifiers to resolve case-insensitively.
    fn mixed_case(&self, temps: &TempTables) -> files::MixedCase {
        let mut names = files::MixedCase::default();
        let header_named = self.header_named.lock().unwrap_or_else(|e| e.into_inner());
        for name in header_named.iter() {
            if let Some(t) = self.catalog.table(name) {
                names.add(&t.def().schema);
            }
        }
        for t in &temps.tables {
            names.add(&t.def().schema);
        }
        names
    }

    /// Records what a finished load rejected and the columns it re-planned.
    fn after_load(&self, report: &LoadReport, replanned: &[String]) {
        self.notices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(replanned.iter().cloned());
        let mut log = self.rejects.lock().unwrap_or_else(|e| e.into_inner());
        log.loads += 1;
        let id = log.loads;
        log.records
            .extend(report.rejects.iter().map(|r| (id, r.clone())));
        if report.rejected > report.rejects.len() as u64 {
            self.notices
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!(
                    "{} records were rejected; wireload_rejects keeps the first {}",
                    report.rejected,
                    report.rejects.len()
                ));
        }
    }

    /// Makes the mixed-case column names of table `name` (named after a file's header)
    /// resolve case-insensitively, as DuckDB does.
    pub fn mark_header_named(&self, name: &str) {
        self.header_named
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_string());
    }

    /// The notices of the statements run since the last call (columns a load re-planned
    /// wider, rejects not kept), oldest first.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.notices.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// `wireload_rejects`: the records this session's loads rejected, as a table.
    fn rejects_table(&self, name: &str) -> Result<Table, SqlError> {
        use arrow::array::{ArrayRef, Int64Array, StringArray};
        let log = self.rejects.lock().unwrap_or_else(|e| e.into_inner());
        let def = TableDef::new(
            name.to_string(),
            files::rejects_schema(),
            wireload_storage::Partitioning::Single,
        )?;
        let rows = &log.records;
        let text = |f: &dyn Fn(&wireload_load::Reject) -> Option<String>| -> ArrayRef {
            Arc::new(rows.iter().map(|(_, r)| f(r)).collect::<StringArray>())
        };
        let num = |f: &dyn Fn(u64, &wireload_load::Reject) -> u64| -> ArrayRef {
            Arc::new(
                rows.iter()
                    .map(|(id, r)| i64::try_from(f(*id, r)).ok())
                    .collect::<Int64Array>(),
            )
        };
        let columns = vec![
            num(&|id, _| id),
            text(&|r| Some(r.file.clone())),
            num(&|_, r| r.line),
            num(&|_, r| r.byte_offset),
            text(&|r| r.column_name.clone()),
            text(&|r| Some(r.raw_line.clone())),
            text(&|r| Some(r.error.clone())),
        ];
        drop(log);
        let batch = RecordBatch::try_new(def.arrow_schema.clone(), columns)
            .map_err(|e| SqlError::Internal(format!("wireload_rejects: {e}")))?;
        let table = Table::new(def);
        wireload_load::append_batches(
            &table,
            "wireload_rejects",
            0,
            vec![batch],
            &LoadControl::default(),
        )
        .map_err(|error| SqlError::Load {
            table: name.to_string(),
            error,
        })?;
        Ok(table)
    }

    /// Creates the empty table `def`; with `if_not_exists` an existing table (or view) of
    /// that name is no error (and is left as it is). The session's role needs CREATE on
    /// the database, and owns the new table.
    pub fn create_table(&self, def: TableDef, if_not_exists: bool) -> Result<(), SqlError> {
        let actor = self.actor();
        self.roles.check_create(&actor)?;
        let name = def.name.clone();
        let existed = self.catalog.table(&name).is_some();
        if !existed {
            for ix in &def.indexes {
                if let Some(owner) = self.index_owner(&ix.name) {
                    return Err(SqlError::DuplicateIndex {
                        index: ix.name.clone(),
                        table: owner.name().to_string(),
                    });
                }
            }
        }
        if self.schema.has_other(&name) {
            if if_not_exists {
                return Ok(());
            }
            return Err(SqlError::Storage(StorageError::TableExists(name)));
        }
        self.catalog.create_table(def, if_not_exists)?;
        if !existed {
            self.roles.created(&actor, &name, Vec::new());
        }
        Ok(())
    }

    /// Loads `source` into table `table` on the database's load threads (or a pool of
    /// `options.threads`), off the async runtime. A streamed source is read outside the
    /// pool, so a slow one keeps no load thread from other statements.
    pub async fn load(
        &self,
        table: &str,
        source: Source,
        options: LoadOptions,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        // one source: the single-file load
        self.load_sources(table, vec![source], options, ctl).await
    }

    /// Loads the CSV `source` in `dialect` into table `table` on the GPU, off the async
    /// runtime; the host side runs on the database's load threads (or a pool of `threads`).
    /// Without a GPU this fails with [`SqlError::Gpu`] holding [`GpuError::NoGpu`]; errors in
    /// the input are [`SqlError::Load`], as the CPU loader reports them. On any error the
    /// table is unchanged.
    pub async fn load_gpu(
        &self,
        table: &str,
        source: Source,
        dialect: Dialect,
        threads: Option<usize>,
        ctl: &LoadControl,
    ) -> Result<GpuReport, SqlError> {
        let target = self.table(table)?;
        let name = target.name().to_string();
        let ctl = ctl.clone();
        self.run_blocking(threads, move || {
            wireload_gpu::load_into(&target, &source, &dialect, &GpuOptions::default(), &ctl)
                .map_err(|error| match error {
                    GpuError::Load(error) => SqlError::Load { table: name, error },
                    error => SqlError::Gpu { table: name, error },
                })
        })
        .await
    }

    /// Runs `work` on the database's load threads (or `threads` of them), off the async
    /// runtime.
    async fn run_blocking<T: Send + 'static>(
        &self,
        threads: Option<usize>,
        work: impl FnOnce() -> Result<T, SqlError> + Send + 'static,
    ) -> Result<T, SqlError> {
        let n = threads.unwrap_or(self.threads);
        let pool = wireload_load::pool(n).map_err(|e| SqlError::Resources(e.to_string()))?;
        off_runtime(move || pool.install(work)).await
    }

    /// The table called `name` (a view of that name is an error of its own); inside a
    /// transaction, the transaction's copy.
    fn table(&self, name: &str) -> Result<Arc<Table>, SqlError> {
        if let Some(t) = self
            .tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|tx| tx.table(name))
        {
            return Ok(t);
        }
        self.catalog.table(name).ok_or_else(|| {
            if self.schema.has_other(name) {
                SqlError::WrongObjectType {
                    name: name.to_string(),
                    is: "view",
                    wanted: "table",
                    hint: String::new(),
                }
            } else {
                SqlError::UndefinedTable(name.to_string())
            }
        })
    }

    /// `INSERT`, `UPDATE` or `DELETE`, planned by DataFusion; nothing changes when the
    /// statement fails.
    async fn write(&self, write: Write, ctl: &LoadControl) -> Result<StatementOutput, SqlError> {
        // forms DataFusion does not plan: a query names the rows by primary key
        if let DfStatement::Statement(s) = write.statement.as_ref() {
            let by_query: Option<(&str, Option<&ast::TableFactor>, ByQuery<'_>)> = match s.as_ref()
            {
                ast::Statement::Update(u) if u.from.is_some() => Some((
                    "UPDATE",
                    Some(&u.table.relation),
                    Box::new(|def| rewrite::update_from_query(u, def)),
                )),
                ast::Statement::Delete(d) if d.using.is_some() => {
                    let (ast::FromTable::WithFromKeyword(from)
                    | ast::FromTable::WithoutKeyword(from)) = &d.from;
                    Some((
                        "DELETE",
                        from.first().map(|t| &t.relation),
                        Box::new(|def| rewrite::delete_using_query(d, def)),
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
                    .rewrite_by_query(&table, command, plan, write.returning, ctl)
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
    async fn write_plan(
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
                let out = self.rewrite(&table, dml, returning, ctl).await?;
                self.compact_later(&table);
                Ok(out)
            }
            op => Err(SqlError::NotSupported(format!("{op} is not supported"))),
        }
    }

    /// `INSERT`: DataFusion plans the rows (columns matched, cast to the table's types), and
    /// they are appended and published like a load's.
    async fn insert(
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
    async fn upsert(
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
    async fn rewrite(
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
        let row_write = match rewrite::RowWrite::plan(&self.ctx, &dml, &table.def().arrow_schema) {
            Ok(w) => Arc::new(w),
            // FROM, subqueries, LIMIT: a query finds the rows
            Err(SqlError::NotSupported(_)) => {
                let query = rewrite::query_of(&dml, table.def())?;
                return self
                    .rewrite_by_query(table, command, query, returning, ctl)
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
                    rewrite::apply(target.def(), &snapshot, &write, &what)
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
        let pool = wireload_load::locked_pool(self.threads)
            .map_err(|e| SqlError::Resources(e.to_string()))?;
        let (ctx, runtime) = (self.ctx.clone(), tokio::runtime::Handle::try_current().ok());
        let (rows, returning) = off_runtime(move || {
            let guard = target.begin_write();
            let written =
                pool.install(|| rewrite::apply(target.def(), guard.base(), &write, &what))?;
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
    async fn publish_written(
        &self,
        table: &Arc<Table>,
        command: &'static str,
        base: &TableVersion,
        written: rewrite::Written,
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
    /// ([`rewrite::query_of`]); published when no other write to the table was published
    /// since the query's snapshot, else run again (40001 after the last attempt).
    async fn rewrite_by_query(
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
                    rewrite::apply_keys(target.def(), &snapshot, &keys, new, &what)
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
    async fn create_table_as(
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
    fn truncate(&self, truncate: &Truncate) -> Result<StatementOutput, SqlError> {
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
    async fn append(
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
            wireload_load::append_batches(&target, &file, 0, batches, &ctl)
                .map(|report| report.rows)
                .map_err(|error| SqlError::Load { table: name, error })
        })
        .await
    }

    fn setting(&self, statement: SettingStatement) -> StatementOutput {
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

    /// Runs `df` to its batches; stops (dropping the query) when `ctl.cancel` is set.
    async fn collect(
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

    fn drop_tables(&self, drop: &DropTable) -> Result<StatementOutput, SqlError> {
        // check every name first: a failing DROP drops nothing
        for name in &drop.names {
            if self.catalog.table(name).is_none() {
                if self.schema.has_other(name) {
                    return Err(SqlError::WrongObjectType {
                        name: name.clone(),
                        is: "view",
                        wanted: "table",
                        hint: format!("; use DROP VIEW {name}"),
                    });
                }
                if !drop.if_exists {
                    return Err(SqlError::UndefinedTable(name.clone()));
                }
            }
        }
        for name in &drop.names {
            self.catalog.drop_table(name, true)?;
            self.header_named
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(name);
        }
        Ok(StatementOutput::Done("DROP TABLE".into()))
    }

    /// The table that has an index called `name`.
    fn index_owner(&self, name: &str) -> Option<Arc<Table>> {
        self.catalog
            .table_names()
            .into_iter()
            .filter_map(|t| self.catalog.table(&t))
            .find(|t| t.snapshot().index(name).is_some())
    }

    async fn create_index(&self, create: CreateIndex) -> Result<StatementOutput, SqlError> {
        let table = self.table(&create.table)?;
        let ix = create.resolve(table.def())?;
        if let Some(owner) = self.index_owner(&ix.name) {
            if create.if_not_exists {
                return Ok(StatementOutput::Done("CREATE INDEX".into()));
            }
            return Err(SqlError::DuplicateIndex {
                index: ix.name,
                table: owner.name().to_string(),
            });
        }
        let table_name = table.name().to_string();
        self.run_blocking(None, move || {
            wireload_load::create_index(&table, ix).map_err(|error| SqlError::Load {
                table: table_name,
                error,
            })
        })
        .await?;
        Ok(StatementOutput::Done("CREATE INDEX".into()))
    }

    fn drop_index(&self, drop: &DropIndex) -> Result<StatementOutput, SqlError> {
        // check every name first: a failing DROP drops nothing
        let mut owners = Vec::with_capacity(drop.names.len());
        for name in &drop.names {
            match self.index_owner(name) {
                Some(t) => {
                    if t.def().indexes.iter().any(|i| &i.name == name) {
                        return Err(SqlError::IndexInUse {
                            index: name.clone(),
                            table: t.name().to_string(),
                        });
                    }
                    owners.push((name, t));
                }
                None if drop.if_exists => {}
                None => return Err(SqlError::UndefinedIndex(name.clone())),
            }
        }
        for (name, t) in owners {
            let guard = t.begin_write();
            let next = guard.base().without_index(name);
            guard.publish(next);
        }
        Ok(StatementOutput::Done("DROP INDEX".into()))
    }

    async fn copy_from(&self, copy: CopyFrom, ctl: &LoadControl) -> Result<LoadReport, SqlError> {
        let path = match &copy.path {
            CopyPath::File(path) => path.clone(),
            CopyPath::Client => {
                return Err(SqlError::NotSupported(
                    "COPY ... FROM STDIN reads the data a client sends after the statement: \
                     run it from a client of `wireload serve` (psql, psycopg), or name a file"
                        .into(),
                ));
            }
        };
        if let Some(detect) = &copy.detect
            && self.table(&copy.table).is_err()
        {
            return self
                .copy_creating(copy.clone(), path, detect.clone(), ctl)
                .await;
        }
        let table = self.table(&copy.table)?;
        let fields = copy_fields(&table, copy.columns.as_deref())?;
        let (format, threads) = match copy.format {
            InputFormat::Csv {
                mut options,
                engine,
            } => {
                options.fields = fields;
                let mut sources = self
                    .file_access()
                    .sources(std::slice::from_ref(&path), COPY_FROM)?;
                if let Some(detect) = &copy.detect {
                    // AUTO into a table that exists: its columns, the file's dialect
                    let first = sources.first().cloned();
                    let (detect, encoding) = (detect.clone(), options.encoding);
                    let sniffed = off_runtime(move || match first {
                        Some(s) => files::sniff_source(&s, &detect, encoding).map(Some),
                        None => Ok(None),
                    })
                    .await?;
                    if let Some(sniffed) = sniffed {
                        if engine == Engine::Gpu && !sniffed.formats.is_iso() {
                            return Err(SqlError::NotSupported(format!(
                                "{path}: its dates are not ISO (format '{}'), and ENGINE gpu \
                                 reads ISO dates only: load it with ENGINE cpu",
                                sniffed
                                    .formats
                                    .date
                                    .or(sniffed.formats.timestamp)
                                    .expect("a format")
                            )));
                        }
                        options.dialect = sniffed.dialect;
                        options.formats = sniffed.formats;
                    }
                }
                if sources.len() == 1 {
                    let source = sources.remove(0);
                    return self
                        .load_csv(&copy.table, source, *options, engine, ctl)
                        .await;
                }
                if engine == Engine::Gpu {
                    return Err(SqlError::NotSupported(
                        "COPY ... (ENGINE gpu) loads one file; name one file, or load many with ENGINE cpu"
                            .into(),
                    ));
                }
                return self.load_sources(&copy.table, sources, *options, ctl).await;
            }
            InputFormat::Arrow { .. } | InputFormat::Parquet { .. } if fields.is_some() => {
                return Err(SqlError::NotSupported(
                    "a COPY column list applies to FORMAT csv: an Arrow or Parquet file names \
                     its columns"
                        .into(),
                ));
            }
            InputFormat::Arrow { threads } => (BinaryFormat::Arrow, threads),
            InputFormat::Parquet { threads } => (BinaryFormat::Parquet, threads),
        };
        let file = self
            .file_access()
            .read(&path, COPY_FROM, gate::Kind::File)?;
        let ctl = ctl.clone();
        self.run_blocking(threads, move || {
            unload::load_binary(&table, &file.path(), file.shown(), format, &ctl)
                .map_err(|e| file.unmask(e))
        })
        .await
    }

    /// `COPY t FROM 'f' (AUTO)` into a table that does not exist: the table is created
    /// with the columns inferred from the file (the header's names, spelling kept) and
    /// attached once it is filled.
    async fn copy_creating(
        &self,
        copy: CopyFrom,
        path: String,
        detect: wireload_sniff::SniffOptions,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        if self.in_transaction() {
            return Err(SqlError::NotSupported(
                "COPY ... (AUTO) creating a table is not supported inside a transaction yet".into(),
            ));
        }
        let InputFormat::Csv { options, engine } = copy.format else {
            return Err(SqlError::InvalidOption(
                "COPY option AUTO applies to FORMAT csv only".into(),
            ));
        };
        if engine == Engine::Gpu {
            return Err(SqlError::NotSupported(
                "COPY ... (AUTO) creating a table runs on ENGINE cpu".into(),
            ));
        }
        let schema = match &copy.columns {
            Some(_) => {
                return Err(SqlError::NotSupported(
                    "COPY ... (AUTO) creating a table takes no column list: the columns come from the file"
                        .into(),
                ));
            }
            None => None,
        };
        let spec = ReadSpec {
            options: *options,
            detect,
            schema,
            project: None,
            filename: false,
        };
        let sources = self
            .file_access()
            .sources(std::slice::from_ref(&path), COPY_FROM)?;
        self.create_from_sources(&copy.table, sources, spec, ctl)
            .await
    }

    /// Creates table `name` from CSV `sources`: the dialect `spec` leaves open is detected,
    /// the columns are `spec.schema` or inferred (a value the samples did not show widens
    /// its column and the load runs again, with a notice); the table is attached once it
    /// is filled, so no one sees it half made.
    pub async fn create_from_sources(
        &self,
        name: &str,
        sources: Vec<Source>,
        spec: ReadSpec,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        if self.catalog.table(name).is_some() || self.schema.has_other(name) {
            return Err(SqlError::Storage(StorageError::TableExists(
                name.to_string(),
            )));
        }
        let spec_had_no_schema = spec.schema.is_none();
        let (table, ctl2) = (name.to_string(), ctl.clone());
        let loaded = self
            .run_blocking(spec.options.threads, move || {
                files::load_inferred(&table, &sources, &spec, &ctl2)
            })
            .await?;
        self.catalog.attach(vec![Arc::clone(&loaded.table)])?;
        if spec_had_no_schema {
            self.mark_header_named(name);
        }
        self.after_load(&loaded.report, &loaded.replanned);
        Ok(loaded.report)
    }

    /// Loads many CSV `sources` into `table` in one atomic step: a bad record in any of
    /// them leaves the table as it was.
    pub async fn load_sources(
        &self,
        table: &str,
        sources: Vec<Source>,
        mut options: LoadOptions,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        let target = self.table(table)?;
        let name = target.name().to_string();
        let ctl = ctl.clone();
        options.threads = Some(options.threads.unwrap_or(self.threads));
        let options = copy::with_default_budget(options);
        let report = off_runtime(move || {
            wireload_load::load_files(&target, &sources, &options, &ctl)
                .map_err(|error| SqlError::Load { table: name, error })
        })
        .await?;
        self.after_load(&report, &[]);
        Ok(report)
    }

    /// Runs a `COPY ... FROM STDIN` (CSV) whose data the client streams as `source`: the
    /// load parses chunks as they arrive. A source that fails (the client gave up or went
    /// away) fails the load and leaves the table as it was. Inside a transaction it loads
    /// into the transaction's copy of the table, as every statement does.
    pub async fn copy_from_client(
        &self,
        copy: CopyFrom,
        source: Source,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        self.require(&[authorize::Need::On(copy.table.clone(), Privilege::Insert)])?;
        let run = async {
            let table = self.table(&copy.table)?;
            let fields = copy_fields(&table, copy.columns.as_deref())?;
            match copy.format {
                InputFormat::Csv {
                    mut options,
                    engine,
                } => {
                    options.fields = fields;
                    self.load_csv(&copy.table, source, *options, engine, ctl)
                        .await
                        .map(StatementOutput::Loaded)
                }
                InputFormat::Arrow { .. } | InputFormat::Parquet { .. } => {
                    Err(SqlError::NotSupported(
                        "COPY ... FROM STDIN reads CSV (FORMAT csv); Arrow and Parquet come from files"
                            .into(),
                    ))
                }
            }
        };
        match self.in_transaction_run(None, run, ctl).await? {
            StatementOutput::Loaded(report) => Ok(report),
            other => Err(SqlError::Internal(format!(
                "COPY FROM STDIN produced {other:?}"
            ))),
        }
    }

    /// Loads the CSV `source` into `table` on `engine`'s loader.
    async fn load_csv(
        &self,
        table: &str,
        source: Source,
        options: LoadOptions,
        engine: Engine,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        match engine {
            Engine::Cpu => self.load(table, source, options, ctl).await,
            Engine::Gpu if options.fields.is_some() => Err(SqlError::NotSupported(
                "a COPY column list applies to ENGINE cpu: ENGINE gpu reads every column of \
                 the table"
                    .into(),
            )),
            Engine::Gpu => self
                .load_gpu(table, source, options.dialect, options.threads, ctl)
                .await
                .map(|report| report.load),
        }
    }

    async fn copy_to(&self, copy: CopyTo, ctl: &LoadControl) -> Result<UnloadSummary, SqlError> {
        let CopyPath::File(path) = &copy.path else {
            return Err(SqlError::NotSupported(
                "COPY ... TO STDOUT sends the rows to a client: run it from a client of \
                 `wireload serve` (psql, psycopg), or name a file"
                    .into(),
            ));
        };
        let target = self
            .file_access()
            .write(path, gate::Use::Write("COPY TO"))?;
        let started = Instant::now();
        let (name, rows) = self.copy_rows(&copy.source, ctl).await?;
        let cancel = Arc::clone(&ctl.cancel);
        self.run_blocking(copy.threads, move || {
            let report = unload::write(&rows, &target.path(), &copy.format, &cancel)
                .map_err(|e| target.unmask(e.into()))?;
            Ok(unload::summary(
                name,
                target.shown(),
                &copy.format,
                &report,
                started,
            ))
        })
        .await
    }

    /// Runs a `COPY ... TO STDOUT` (CSV): `out` is called with the rows' schema once they
    /// are known and the text goes to the writer it returns, in pieces of about a MiB, each
    /// with one `write_all`, in order; the summary names `STDOUT`. After an error the
    /// writer holds the pieces written before it (and `out` is not called when the rows
    /// could not be made).
    pub async fn copy_to_client<W: std::io::Write + Send + 'static>(
        &self,
        copy: CopyTo,
        out: impl FnOnce(&SchemaRef) -> W + Send + 'static,
        ctl: &LoadControl,
    ) -> Result<UnloadSummary, SqlError> {
        self.authorize(&Statement::CopyTo(copy.clone()))?;
        let run = async {
            let OutputFormat::Csv(dialect) = &copy.format else {
                return Err(SqlError::NotSupported(
                    "COPY ... TO STDOUT writes CSV (FORMAT csv); Arrow and Parquet go to files"
                        .into(),
                ));
            };
            let dialect = dialect.clone();
            let started = Instant::now();
            let (name, rows) = self.copy_rows(&copy.source, ctl).await?;
            let cancel = Arc::clone(&ctl.cancel);
            let format = copy.format.clone();
            self.run_blocking(copy.threads, move || {
                let report = wireload_unload::csv::write_csv(
                    out(&rows.schema),
                    &rows.schema,
                    &rows.batches,
                    &dialect,
                    &cancel,
                )?;
                Ok(StatementOutput::Unloaded(unload::summary(
                    name, "STDOUT", &format, &report, started,
                )))
            })
            .await
        };
        match self.in_transaction_run(None, run, ctl).await? {
            StatementOutput::Unloaded(summary) => Ok(summary),
            other => Err(SqlError::Internal(format!(
                "COPY TO STDOUT produced {other:?}"
            ))),
        }
    }

    /// The rows a `COPY ... TO` writes, and the name of their source (`query` for a
    /// query).
    async fn copy_rows(
        &self,
        source: &CopySource,
        ctl: &LoadControl,
    ) -> Result<(String, unload::Rows), SqlError> {
        Ok(match source {
            CopySource::Table { table, columns } => {
                let t = self.table(table)?;
                (
                    t.name().to_string(),
                    unload::table_rows(&t, columns.as_deref())?,
                )
            }
            CopySource::Query(query) => {
                let statement =
                    DfStatement::Statement(Box::new(ast::Statement::Query(query.clone())));
                let plan = self.ctx.state().statement_to_plan(statement).await?;
                let df = self.ctx.execute_logical_plan(plan).await?;
                let schema = wireload_storage::plain_schema(df.schema().as_arrow());
                let batches = self.collect(df, ctl).await?;
                ("query".to_string(), unload::Rows { schema, batches })
            }
        })
    }

    async fn export(&self, export: Export, ctl: &LoadControl) -> Result<String, SqlError> {
        let target = self
            .file_access()
            .write(&export.dir, gate::Use::Write("EXPORT DATABASE"))?;
        let catalog = Arc::clone(&self.catalog);
        let ctl = ctl.clone();
        self.run_blocking(None, move || {
            wireload_unload::export::export_database(
                &catalog,
                &target.path(),
                export.compression,
                &ctl,
            )
            .map_err(|e| target.unmask(e.into()))
        })
        .await
    }

    async fn import(&self, import: Import, ctl: &LoadControl) -> Result<String, SqlError> {
        let dir = self.file_access().read(
            &import.dir,
            gate::Use::Read("IMPORT DATABASE"),
            gate::Kind::Directory,
        )?;
        let catalog = Arc::clone(&self.catalog);
        let ctl = ctl.clone();
        let taken = self.schema.other_names();
        self.run_blocking(None, move || {
            let run = || {
                let mut files = ExportFiles::read(&dir.path())?;
                // exports written before manifest version 2 hold SQL text only
                files.resolve_sql(&definitions_of)?;
                Ok(files.import(&catalog, &taken, &ctl)?)
            };
            run().map_err(|e| dir.unmask(e))
        })
        .await
    }

    /// Plans and runs a statement DataFusion handles.
    async fn run_query(
        &self,
        statement: DfStatement,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        let tag = command_tag(&statement);
        let plan = self.ctx.state().statement_to_plan(statement).await?;
        // prepared statements by name: a key access is kept beside DataFusion's plan
        let prepared_key = match &plan {
            LogicalPlan::Statement(PlanStatement::Execute(execute)) => {
                if let Some(out) = self.execute_keyed(execute) {
                    return out;
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
            return self.write_plan(dml.clone(), None, None, ctl).await;
        }
        if done {
            self.collect(df, ctl).await?;
            return Ok(StatementOutput::Done(tag));
        }
        let schema = wireload_storage::plain_schema(df.schema().as_arrow());
        let batches = self.collect(df, ctl).await?;
        Ok(StatementOutput::Rows { schema, batches })
    }

    /// The session's key accesses of statements prepared by name.
    fn keyed_statements(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Arc<keyed::KeyAccess>>> {
        self.keyed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key access of a statement being prepared, when it has one.
    fn key_access_of(
        &self,
        prepare: &datafusion::logical_expr::Prepare,
    ) -> Option<keyed::KeyAccess> {
        let fields = if prepare.fields.is_empty() {
            parameter_fields(&prepare.input)?
        } else {
            prepare.fields.clone()
        };
        keyed::KeyAccess::of(&self.ctx, &prepare.input, &fields, |name| {
            self.table(name).ok()
        })
    }

    /// `EXECUTE name(values)` by the statement's key access; `None` when it has none (or
    /// it does not apply now): DataFusion runs it then, and reports any error.
    fn execute_keyed(
        &self,
        execute: &datafusion::logical_expr::Execute,
    ) -> Option<Result<StatementOutput, SqlError>> {
        let access = Arc::clone(self.keyed_statements().get(&execute.name)?);
        if execute.parameters.len() != access.params().len() {
            return None;
        }
        use datafusion::logical_expr::Expr;
        use datafusion::optimizer::simplify_expressions::{ExprSimplifier, SimplifyContext};
        let mut params = Vec::with_capacity(execute.parameters.len());
        for (e, ty) in execute.parameters.iter().zip(access.params()) {
            // constants such as `-5` or `DATE '2024-01-01'` folded to literals, as
            // DataFusion's EXECUTE does
            let folded;
            let e = match e {
                Expr::Literal(..) => e,
                _ => {
                    folded = ExprSimplifier::new(SimplifyContext::default())
                        .simplify(e.clone())
                        .ok()?;
                    &folded
                }
            };
            let Expr::Literal(v, None) = e else {
                return None;
            };
            params.push(v.cast_to(ty).ok()?);
        }
        self.run_keyed(&access, &params)
    }

    /// Runs a key access with `params` (of its parameter types).
    fn run_keyed(
        &self,
        access: &keyed::KeyAccess,
        params: &[datafusion::common::ScalarValue],
    ) -> Option<Result<StatementOutput, SqlError>> {
        let table = self.table(access.table()).ok()?;
        let out = match access {
            keyed::KeyAccess::Read(read) => {
                read.run(&table, params)?
                    .map(|batches| StatementOutput::Rows {
                        schema: Arc::clone(read.schema()),
                        batches,
                    })
            }
            keyed::KeyAccess::Update(update) => update.run(&table, params)?.map(|rows| {
                StatementOutput::Changed(RowChange {
                    command: "UPDATE",
                    rows,
                    returning: None,
                })
            }),
        };
        self.key_accesses
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(out)
    }
}

/// The query of `statement` to plan for pushdown into its file reads: a SELECT (also
/// under EXPLAIN), the query of CREATE TABLE AS or of COPY (query) TO; None for other
/// statements.
fn pushdown_query(statement: Statement) -> Option<DfStatement> {
    let query =
        |q: Box<ast::Query>| Some(DfStatement::Statement(Box::new(ast::Statement::Query(q))));
    match statement {
        Statement::Query(q) => select_of(*q),
        Statement::CreateTableAs(c) => query(c.query),
        Statement::CopyTo(c) => match c.source {
            copy::CopySource::Query(q) => query(q),
            copy::CopySource::Table { .. } => None,
        },
        _ => None,
    }
}

/// The SELECT of `statement`, looking through EXPLAIN.
fn select_of(statement: DfStatement) -> Option<DfStatement> {
    match statement {
        DfStatement::Statement(s) if matches!(*s, ast::Statement::Query(_)) => {
            Some(DfStatement::Statement(s))
        }
        DfStatement::Explain(e) => select_of(*e.statement),
        _ => None,
    }
}

/// Temporary tables of one statement (files it reads), deregistered when dropped.
struct TempTables {
    schema: Arc<CatalogSchema>,
    tables: Vec<Arc<Table>>,
}

impl Drop for TempTables {
    fn drop(&mut self) {
        use datafusion::catalog::SchemaProvider;
        for t in &self.tables {
            let _ = self.schema.deregister_table(t.name());
        }
    }
}

/// The parameters' types of `plan` in order (`$1`, `$2`, ...), when all are known.
fn parameter_fields(plan: &LogicalPlan) -> Option<Vec<arrow::datatypes::FieldRef>> {
    let fields = plan.get_parameter_fields().ok()?;
    (1..=fields.len())
        .map(|n| fields.get(&format!("${n}")).cloned().flatten())
        .collect()
}

/// Runs blocking `work` off the async runtime (on the calling thread when there is none).
async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, SqlError> + Send + 'static,
) -> Result<T, SqlError> {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => match tokio::task::spawn_blocking(work).await {
            Ok(r) => r,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(SqlError::Cancelled),
        },
        // not on a tokio runtime: nothing to keep unblocked
        Err(_) => work(),
    }
}

/// The definition of a table of a version 1 export, from its SQL text.
fn definitions_of(create: &str, indexes: &[String]) -> Result<(TableDef, Vec<IndexDef>), String> {
    let one = |sql: &str| -> Result<Statement, String> {
        let mut parsed = parse_script(sql).map_err(|e| e.to_string())?;
        match parsed.len() {
            1 => Ok(parsed.remove(0).statement),
            n => Err(format!("expected one statement, found {n}")),
        }
    };
    let def = match one(create)? {
        Statement::CreateTable(c) => c.def,
        _ => return Err("not a CREATE TABLE statement".into()),
    };
    let mut extra = Vec::with_capacity(indexes.len());
    for sql in indexes {
        match one(sql)? {
            Statement::CreateIndex(c) => extra.push(c.resolve(&def).map_err(|e| e.to_string())?),
            _ => return Err("not a CREATE INDEX statement".into()),
        }
    }
    Ok((def, extra))
}

/// Where the columns of `table` come from in the input of `COPY table (columns) FROM`, as
/// PostgreSQL reads it: the input's fields are the listed columns, in the list's order, and
/// the columns left out are NULL. None without a list, or with one naming every column in
/// table order.
fn copy_fields(table: &Table, columns: Option<&[String]>) -> Result<Option<Fields>, SqlError> {
    let Some(cols) = columns else {
        return Ok(None);
    };
    let defs = &table.def().schema.columns;
    let mut field_of: Vec<Option<usize>> = vec![None; defs.len()];
    for (i, name) in cols.iter().enumerate() {
        let c =
            defs.iter()
                .position(|d| d.name == *name)
                .ok_or_else(|| SqlError::UndefinedColumn {
                    table: table.name().to_string(),
                    column: name.clone(),
                })?;
        if field_of[c].replace(i).is_some() {
            return Err(SqlError::InvalidOption(format!(
                "column \"{name}\" is named more than once in the COPY column list"
            )));
        }
    }
    if field_of.iter().enumerate().all(|(c, f)| *f == Some(c)) {
        return Ok(None);
    }
    if let Some(c) = (0..defs.len()).find(|&c| field_of[c].is_none() && !defs[c].nullable) {
        return Err(SqlError::InvalidOption(format!(
            "column \"{}\" of \"{}\" is NOT NULL: the COPY column list must name it",
            defs[c].name,
            table.name()
        )));
    }
    Ok(Some(Fields {
        count: cols.len(),
        columns: field_of
            .iter()
            .map(|f| f.map_or(FieldSource::Null, FieldSource::Input))
            .collect(),
    }))
}

/// What a statement that changes the catalog (not only rows) is, for the refusal inside a
/// transaction.
fn changes_the_catalog(statement: &Statement) -> Option<&'static str> {
    match statement {
        Statement::CreateTable(_) | Statement::CreateTableAs(_) => Some("CREATE TABLE"),
        Statement::DropTable(_) => Some("DROP TABLE"),
        Statement::CreateIndex(_) => Some("CREATE INDEX"),
        Statement::DropIndex(_) => Some("DROP INDEX"),
        Statement::Export(_) => Some("EXPORT DATABASE"),
        Statement::Import(_) => Some("IMPORT DATABASE"),
        _ => None,
    }
}

/// `name` as a SQL identifier: bare when it is a lower-case word, double-quoted otherwise.
pub fn quote_ident(name: &str) -> String {
    let bare = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if bare {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// A short name of what a statement did, such as `CREATE VIEW` or `SET`.
fn command_tag(statement: &DfStatement) -> String {
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

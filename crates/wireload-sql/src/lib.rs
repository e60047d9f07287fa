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
mod execute;
mod export;
mod files;
mod gate;
mod grants;
mod keyed;
mod limits;
mod parse;
mod pushdown;
mod rebase;
mod replace;
mod roles;
mod rows;
mod settings;
mod transaction;
mod unload;
mod upsert;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;
use wireload_load::{LoadControl, LoadReport};
use wireload_query::CatalogSchema;
use wireload_storage::{Catalog, Table};

pub use copy::{
    CopyFrom, CopyPath, CopySource, CopyTo, Engine, InputFormat, OutputFormat, ReadSpec,
    byte_count, read_spec,
};
/// Parameter values of prepared statements ([`Database::execute_prepared`]).
pub use datafusion::common::ScalarValue;
pub use ddl::{CreateIndex, CreateTable, DropIndex, DropTable, parse_table};
pub use dml::{ConflictTarget, CreateTableAs, DoUpdate, OnConflict, RowChange, Truncate, Write};
pub use error::{SqlError, SqlState};
pub use execute::{PreparedStatement, UnloadSummary};
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
pub use rows::{CountedMemory, RowStream, Streamed};
pub use settings::{Setting, SettingStatement, Settings, time_span};
pub use transaction::TxStatement;
pub use wireload_query::{DEFAULT_CATALOG, DEFAULT_SCHEMA, SnapshotScanExec, SnapshotTable};
pub use wireload_types::sql::{ColumnsError, parse_columns, sql_type};

use crate::unload::BinaryFormat;

/// How often a running query looks whether it was cancelled.
pub(crate) const CANCEL_POLL: Duration = Duration::from_millis(10);

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
    /// Set when a statement's row stream failed, read by the next statement (a failed
    /// statement fails its transaction).
    stream_failed: Arc<std::sync::atomic::AtomicBool>,
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
    /// This session's number, unique in the process.
    id: u64,
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
            stream_failed: Default::default(),
            auto_compaction: Arc::new(std::sync::atomic::AtomicBool::new(true)),
            notices: Mutex::new(Vec::new()),
            rejects: Mutex::new(RejectLog::default()),
            header_named: Arc::default(),
            roles: Arc::default(),
            actor: Mutex::new(Actor::Local),
            id: next_session_id(),
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
            stream_failed: Default::default(),
            auto_compaction: Arc::clone(&self.auto_compaction),
            notices: Mutex::new(Vec::new()),
            rejects: Mutex::new(RejectLog::default()),
            header_named: Arc::clone(&self.header_named),
            roles: Arc::clone(&self.roles),
            actor: Mutex::new(self.actor()),
            id: next_session_id(),
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
        // checks passed before speak for the former actor
        self.roles.touch();
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
    /// 1024) starts one ([`wireload_publish::compact`]).
    pub fn set_auto_compaction(&self, on: bool) {
        self.auto_compaction
            .store(on, std::sync::atomic::Ordering::SeqCst);
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
        // on the heap: the caller's stack is left to the planner's recursion
        Box::pin(self.execute_streamed(statement, ctl))
            .await?
            .finish()
            .await
    }

    /// Runs one parsed statement as [`Database::execute_statement`] does, but a query's
    /// rows are computed as the caller takes them from the returned stream. The statement's
    /// cancel flag and `statement_timeout` stop the stream too; inside a transaction, a
    /// stream that fails fails the transaction.
    pub async fn execute_streamed(
        &self,
        statement: Statement,
        ctl: &LoadControl,
    ) -> Result<Streamed, SqlError> {
        if let Statement::Transaction(t) = statement {
            return self.transaction(t).map(Streamed::Output);
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

    /// How many executions of prepared statements this session ran straight on a unique
    /// index (reads and updates of one row by its key), for monitoring.
    pub fn key_accesses(&self) -> u64 {
        self.key_accesses.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// True while a transaction is open.
    pub fn in_transaction(&self) -> bool {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    async fn run_statement(
        &self,
        mut statement: Statement,
        ctl: &LoadControl,
    ) -> Result<Streamed, SqlError> {
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
        let files = self.materialize(reads, &statement, ctl).await?;
        self.mixed_case(&files).apply(&mut statement);
        let mut out = self.dispatch(statement, ctl).await;
        if let Ok(out) = &mut out {
            if let Some(name) = &made_from_files {
                self.mark_header_named(name);
            }
            // the files' tables stay registered while their rows are read
            if let Streamed::Rows(rows) = out {
                rows.hold(Box::new(files));
            }
        }
        out
    }

    /// Runs `statement` by its kind.
    async fn dispatch(
        &self,
        statement: Statement,
        ctl: &LoadControl,
    ) -> Result<Streamed, SqlError> {
        let out = match statement {
            Statement::Query(q) => return self.run_query(*q, ctl).await,
            Statement::Setting(s) => Ok(self.setting(s)),
            Statement::Transaction(t) => self.transaction(t),
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
        };
        out.map(Streamed::Output)
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
}

/// A number no other session of this process has.
fn next_session_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
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

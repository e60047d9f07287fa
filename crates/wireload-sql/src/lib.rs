//! SQL over wireload tables: an embedded DataFusion session whose tables are wireload
//! snapshots, plus wireload's own statements (`CREATE TABLE ... PARTITION BY`,
//! `DROP TABLE`, PostgreSQL-style `COPY ... FROM`, on the CPU loader or, with
//! `ENGINE gpu`, on the GPU loader of `wireload_gpu`).
#![deny(missing_docs)]
// `SqlError` carries a `LoadError` and a `DataFusionError` by value (the public API), so
// every `Result<_, SqlError>` is large; statements are not a hot path.
#![allow(clippy::result_large_err)]

mod copy;
mod ddl;
mod export;
mod index_scan;
mod provider;
mod scan;
mod tokens;
mod unload;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::common::config::Dialect as SqlDialect;
use datafusion::logical_expr::{DdlStatement, LogicalPlan, Statement};
use datafusion::prelude::{SessionConfig, SessionContext};
use wireload_gpu::{GpuError, GpuOptions, GpuReport};
use wireload_load::{Dialect, LoadControl, LoadOptions, LoadReport, Source};
use wireload_storage::{Catalog, StorageError, Table};

pub use provider::{CatalogSchema, SnapshotTable};
pub use scan::SnapshotScanExec;

use crate::copy::{CopyFrom, CopySource, CopyStatement, CopyTo, Engine, InputFormat};
use crate::tokens::{StatementText, is_keyword};
use crate::unload::BinaryFormat;

/// The catalog DataFusion sees wireload's tables in.
pub const DEFAULT_CATALOG: &str = "wireload";
/// The schema wireload's tables live in.
pub const DEFAULT_SCHEMA: &str = "public";

/// Errors of SQL statements.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqlError {
    /// The statement text could not be parsed.
    #[error("syntax error: {0}")]
    Parse(String),
    /// A load failed; the table is unchanged.
    #[error("{error}\ntable \"{table}\" is unchanged")]
    Load {
        /// table that was being loaded
        table: String,
        /// why
        error: wireload_load::LoadError,
    },
    /// A GPU load (`ENGINE gpu`) failed for a reason of its own (no GPU, a CUDA error, input
    /// it cannot load); the table is unchanged. Errors in the input are [`SqlError::Load`],
    /// exactly as the CPU loader reports them.
    #[error("{error}\ntable \"{table}\" is unchanged")]
    Gpu {
        /// table that was being loaded
        table: String,
        /// why
        error: GpuError,
    },
    /// Catalog errors (table exists, no such table...).
    #[error(transparent)]
    Storage(#[from] wireload_storage::StorageError),
    /// Errors from DataFusion while planning or running a query.
    #[error(transparent)]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// Writing or reading an unloaded file failed; nothing was left half-written.
    #[error(transparent)]
    Unload(#[from] wireload_unload::UnloadError),
    /// An export directory could not be written or imported; the database is unchanged.
    #[error("{0}")]
    Export(String),
    /// Anything else the user asked for that cannot be done.
    #[error("{0}")]
    Unsupported(String),
}

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

/// Database settings.
#[derive(Debug, Clone, Default)]
pub struct DbConfig {
    /// Worker threads for loads and queries; `None`: all cores.
    pub threads: Option<usize>,
}

/// An in-memory database: a catalog and a SQL session over it.
pub struct Database {
    catalog: Arc<Catalog>,
    schema: Arc<CatalogSchema>,
    ctx: SessionContext,
    pool: Arc<rayon::ThreadPool>,
    threads: usize,
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
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("wireload-load-{i}"))
            .build()
            .expect("cannot start the load thread pool");
        let mut session = SessionConfig::new()
            .with_target_partitions(threads)
            .with_information_schema(true)
            .with_default_catalog_and_schema(DEFAULT_CATALOG, DEFAULT_SCHEMA);
        session.options_mut().sql_parser.dialect = SqlDialect::PostgreSQL;
        let ctx = SessionContext::new_with_config(session);
        let catalog = Arc::new(Catalog::default());
        let schema = Arc::new(CatalogSchema::new(Arc::clone(&catalog)));
        let df_catalog = ctx
            .catalog(DEFAULT_CATALOG)
            .expect("the default catalog exists");
        df_catalog
            .register_schema(DEFAULT_SCHEMA, Arc::clone(&schema) as _)
            .expect("the default catalog accepts schemas");
        Database {
            catalog,
            schema,
            ctx,
            pool: Arc::new(pool),
            threads,
        }
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

    /// Runs one or more `;`-separated statements in order, stopping at the first error;
    /// returns one output per statement. Loads watch `ctl` for cancellation and report progress in it.
    pub async fn execute(
        &self,
        sql: &str,
        ctl: &LoadControl,
    ) -> Result<Vec<StatementOutput>, SqlError> {
        let statements = tokens::split_statements(sql)?;
        let mut outputs = Vec::with_capacity(statements.len());
        for statement in &statements {
            outputs.push(self.execute_statement(statement, ctl).await?);
        }
        Ok(outputs)
    }

    /// Loads `source` into table `table` on the database's load threads, off the async runtime.
    pub async fn load(
        &self,
        table: &str,
        source: Source,
        options: LoadOptions,
        ctl: &LoadControl,
    ) -> Result<LoadReport, SqlError> {
        let target = self.table(table)?;
        let name = target.name().to_string();
        let ctl = ctl.clone();
        self.run_blocking(None, move || {
            wireload_load::load_into(&target, &source, &options, &ctl)
                .map_err(|error| SqlError::Load { table: name, error })
        })
        .await
    }

    /// Loads the CSV `source` in `dialect` into table `table` on the GPU (the emulator when
    /// `WIRELOAD_GPU=emulate`), off the async runtime; the host side runs on the database's
    /// load threads (or a pool of `threads`). Without a GPU this fails with
    /// [`SqlError::Gpu`] holding [`GpuError::NoGpu`]; errors in the input are
    /// [`SqlError::Load`], as the CPU loader reports them. On any error the table is unchanged.
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

    /// Runs `work` on the load thread pool (or a pool of `threads`), off the async runtime.
    async fn run_blocking<T: Send + 'static>(
        &self,
        threads: Option<usize>,
        work: impl FnOnce() -> Result<T, SqlError> + Send + 'static,
    ) -> Result<T, SqlError> {
        let pool = match threads {
            Some(n) if n != self.threads => Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| SqlError::Unsupported(format!("cannot start {n} threads: {e}")))?,
            ),
            _ => Arc::clone(&self.pool),
        };
        let work = move || pool.install(work);
        match tokio::runtime::Handle::try_current() {
            Ok(_) => match tokio::task::spawn_blocking(work).await {
                Ok(r) => r,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => Err(SqlError::Unsupported(format!("the work was aborted: {e}"))),
            },
            // not on a tokio runtime: nothing to keep unblocked
            Err(_) => work(),
        }
    }

    fn table(&self, name: &str) -> Result<Arc<Table>, SqlError> {
        self.catalog.table(name).ok_or_else(|| {
            if self.schema.has_other(name) {
                SqlError::Unsupported(format!("\"{name}\" is a view, not a table"))
            } else {
                SqlError::Storage(StorageError::NoSuchTable(name.to_string()))
            }
        })
    }

    async fn execute_statement(
        &self,
        stmt: &StatementText<'_>,
        ctl: &LoadControl,
    ) -> Result<StatementOutput, SqlError> {
        let first = &stmt.tokens[0].token;
        if is_keyword(first, "copy") {
            return match copy::parse_copy(stmt)? {
                CopyStatement::From(from) => {
                    self.copy_from(from, ctl).await.map(StatementOutput::Loaded)
                }
                CopyStatement::To(to) => self.copy_to(to, ctl).await.map(StatementOutput::Unloaded),
            };
        }
        if let Some(export) = export::parse(stmt)? {
            return self
                .export_or_import(export, ctl)
                .await
                .map(StatementOutput::Done);
        }
        if ddl::is_create_index(&stmt.tokens) {
            let create = ddl::parse_create_index(stmt)?;
            return self.create_index(create).await;
        }
        if ddl::is_drop_index(&stmt.tokens) {
            let drop = ddl::parse_drop_index(stmt)?;
            return self.drop_index(drop);
        }
        if ddl::is_create_table(&stmt.tokens) {
            let create = ddl::parse_create_table(stmt)?;
            let name = create.def.name.clone();
            if self.catalog.table(&name).is_none() {
                for ix in &create.def.indexes {
                    if let Some(owner) = self.index_owner(&ix.name) {
                        return Err(SqlError::Unsupported(format!(
                            "an index called \"{}\" already exists (on table \"{}\")",
                            ix.name,
                            owner.name()
                        )));
                    }
                }
            }
            if self.schema.has_other(&name) {
                if create.if_not_exists {
                    return Ok(StatementOutput::Done("CREATE TABLE".into()));
                }
                return Err(SqlError::Storage(StorageError::TableExists(name)));
            }
            self.catalog
                .create_table(create.def, create.if_not_exists)?;
            return Ok(StatementOutput::Done("CREATE TABLE".into()));
        }
        if ddl::is_drop_table(&stmt.tokens) {
            let drop = ddl::parse_drop_table(stmt)?;
            // check every name first: a failing DROP drops nothing
            for name in &drop.names {
                if self.catalog.table(name).is_none() {
                    if self.schema.has_other(name) {
                        return Err(SqlError::Unsupported(format!(
                            "\"{name}\" is a view; use DROP VIEW {name}"
                        )));
                    }
                    if !drop.if_exists {
                        return Err(SqlError::Storage(StorageError::NoSuchTable(name.clone())));
                    }
                }
            }
            for name in &drop.names {
                self.catalog.drop_table(name, true)?;
            }
            return Ok(StatementOutput::Done("DROP TABLE".into()));
        }
        self.run_datafusion(stmt).await
    }

    /// The table that has an index called `name`.
    fn index_owner(&self, name: &str) -> Option<Arc<Table>> {
        self.catalog
            .table_names()
            .into_iter()
            .filter_map(|t| self.catalog.table(&t))
            .find(|t| t.snapshot().index(name).is_some())
    }

    async fn create_index(&self, create: ddl::CreateIndex) -> Result<StatementOutput, SqlError> {
        let table = self.table(&create.table)?;
        let ix = create.resolve(table.def())?;
        if let Some(owner) = self.index_owner(&ix.name) {
            if create.if_not_exists {
                return Ok(StatementOutput::Done("CREATE INDEX".into()));
            }
            return Err(SqlError::Unsupported(format!(
                "an index called \"{}\" already exists (on table \"{}\")",
                ix.name,
                owner.name()
            )));
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

    fn drop_index(&self, drop: ddl::DropIndex) -> Result<StatementOutput, SqlError> {
        // check every name first: a failing DROP drops nothing
        let mut owners = Vec::with_capacity(drop.names.len());
        for name in &drop.names {
            match self.index_owner(name) {
                Some(t) => {
                    if t.def().indexes.iter().any(|i| &i.name == name) {
                        return Err(SqlError::Unsupported(format!(
                            "cannot drop index \"{name}\": the constraint of table \"{}\" requires it",
                            t.name()
                        )));
                    }
                    owners.push((name, t));
                }
                None if drop.if_exists => {}
                None => {
                    return Err(SqlError::Unsupported(format!(
                        "index \"{name}\" does not exist"
                    )));
                }
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
        let table = self.table(&copy.table)?;
        if let Some(cols) = &copy.columns {
            let names: Vec<&str> = table
                .def()
                .schema
                .columns
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            if cols.iter().map(String::as_str).ne(names.iter().copied()) {
                return Err(SqlError::Unsupported(format!(
                    "the COPY column list ({}) must name every column of \"{}\" in table order ({}); \
                     subsets and reordering are not supported yet",
                    cols.join(", "),
                    table.name(),
                    names.join(", ")
                )));
            }
        }
        let (format, threads) = match copy.format {
            InputFormat::Csv { options, engine } => {
                let source = Source::File(PathBuf::from(&copy.path));
                return match engine {
                    Engine::Cpu => self.load(&copy.table, source, options, ctl).await,
                    Engine::Gpu => self
                        .load_gpu(&copy.table, source, options.dialect, options.threads, ctl)
                        .await
                        .map(|report| report.load),
                };
            }
            InputFormat::Arrow { threads } => (BinaryFormat::Arrow, threads),
            InputFormat::Parquet { threads } => (BinaryFormat::Parquet, threads),
        };
        let ctl = ctl.clone();
        self.run_blocking(threads, move || {
            unload::load_binary(&table, Path::new(&copy.path), format, &ctl)
        })
        .await
    }

    async fn copy_to(&self, copy: CopyTo, ctl: &LoadControl) -> Result<UnloadSummary, SqlError> {
        let started = Instant::now();
        let (name, rows) = match &copy.source {
            CopySource::Table { table, columns } => {
                let t = self.table(table)?;
                (
                    t.name().to_string(),
                    unload::table_rows(&t, columns.as_deref())?,
                )
            }
            CopySource::Query(sql) => {
                let df = self.ctx.sql(sql).await?;
                let schema = Arc::new(df.schema().as_arrow().clone());
                let batches = df.collect().await?;
                ("query".to_string(), unload::Rows { schema, batches })
            }
        };
        let cancel = Arc::clone(&ctl.cancel);
        self.run_blocking(copy.threads, move || {
            let report = unload::write(&rows, Path::new(&copy.path), &copy.format, &cancel)?;
            Ok(unload::summary(
                name,
                &copy.path,
                &copy.format,
                &report,
                started,
            ))
        })
        .await
    }

    async fn export_or_import(
        &self,
        statement: export::Statement,
        ctl: &LoadControl,
    ) -> Result<String, SqlError> {
        let catalog = Arc::clone(&self.catalog);
        let ctl = ctl.clone();
        let taken: Vec<String> = self.schema.other_names();
        self.run_blocking(None, move || match statement {
            export::Statement::Export { dir, compression } => {
                export::export_database(&catalog, Path::new(&dir), compression, &ctl)
            }
            export::Statement::Import { dir } => {
                export::import_database(&catalog, Path::new(&dir), &taken, &ctl)
            }
        })
        .await
    }

    async fn run_datafusion(&self, stmt: &StatementText<'_>) -> Result<StatementOutput, SqlError> {
        let plan = self.ctx.state().create_logical_plan(stmt.text).await?;
        let done = match &plan {
            LogicalPlan::Ddl(
                DdlStatement::CreateMemoryTable(_)
                | DdlStatement::CreateExternalTable(_)
                | DdlStatement::DropTable(_),
            ) => {
                return Err(SqlError::Unsupported(format!(
                    "unsupported table statement: {}",
                    stmt.text
                )));
            }
            LogicalPlan::Ddl(_) => true,
            LogicalPlan::Statement(Statement::Execute(_)) => false,
            LogicalPlan::Statement(_) => true,
            _ => false,
        };
        let df = self.ctx.execute_logical_plan(plan).await?;
        if done {
            df.collect().await?;
            return Ok(StatementOutput::Done(command_tag(stmt)));
        }
        let schema = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await?;
        Ok(StatementOutput::Rows { schema, batches })
    }
}

/// A short name of what a statement did, such as `CREATE VIEW` or `SET`.
fn command_tag(stmt: &StatementText<'_>) -> String {
    use datafusion::sql::sqlparser::tokenizer::Token;
    let words: Vec<String> = stmt
        .tokens
        .iter()
        .take(6)
        .map_while(|t| match &t.token {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        })
        .collect();
    let Some(first) = words.first() else {
        return "OK".into();
    };
    if first == "CREATE" || first == "DROP" {
        const SKIP: [&str; 8] = [
            "OR",
            "REPLACE",
            "TEMP",
            "TEMPORARY",
            "IF",
            "NOT",
            "EXISTS",
            "EXTERNAL",
        ];
        if let Some(object) = words[1..].iter().find(|w| !SKIP.contains(&w.as_str())) {
            return format!("{first} {object}");
        }
    }
    first.clone()
}

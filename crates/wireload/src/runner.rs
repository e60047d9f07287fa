//! The database as the binary uses it: statements run to completion on a tokio runtime,
//! Ctrl-C cancels the running one, and loads show a progress bar.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use wireload_load::{LoadControl, LoadOptions, LoadReport, Source};
use wireload_sql::{Database, DbConfig, Statement, StatementOutput};
use wireload_storage::{Catalog, TableDef};

use crate::interrupt;
use crate::progress::ProgressWatch;

/// How long a cancelled statement may take to stop by itself (a load reports "cancelled"
/// and that the table is unchanged) before its future is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(3);

/// Which loader a load runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Loader {
    /// The parallel CPU loader.
    #[default]
    Cpu,
    /// The GPU loader.
    Gpu,
}

/// A database, the runtime its statements run on, and the Ctrl-C flag.
pub struct Runner {
    db: Database,
    runtime: tokio::runtime::Runtime,
    interrupt: Arc<AtomicBool>,
}

impl Runner {
    /// A new empty database using `threads` workers (all cores when `None`).
    pub fn new(threads: Option<usize>) -> Result<Self> {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.enable_all().thread_name("wireload-sql");
        if let Some(n) = threads {
            builder.worker_threads(n);
        }
        let runtime = builder.build().context("cannot start the query runtime")?;
        let db = Database::new(DbConfig {
            threads,
            ..Default::default()
        });
        Ok(Runner {
            db,
            runtime,
            interrupt: interrupt::flag(),
        })
    }

    /// The catalog of the database.
    pub fn catalog(&self) -> &Arc<Catalog> {
        self.db.catalog()
    }

    /// True while a transaction is open (`BEGIN` without its `COMMIT` or `ROLLBACK` yet).
    pub fn in_transaction(&self) -> bool {
        self.db.in_transaction()
    }

    /// Runs one parsed statement; Ctrl-C cancels it.
    pub fn run_statement(&self, statement: Statement) -> Result<StatementOutput> {
        self.interruptible(|db, ctl| async move { db.execute_statement(statement, &ctl).await })
    }

    /// Creates the empty table `def`.
    pub fn create_table(&self, def: TableDef) -> Result<()> {
        Ok(self.db.create_table(def, false)?)
    }

    /// Loads `source` into `table` with `loader`; Ctrl-C cancels it (the table is unchanged).
    pub fn load(
        &self,
        table: &str,
        source: Source,
        options: LoadOptions,
        loader: Loader,
    ) -> Result<LoadReport> {
        self.interruptible(|db, ctl| async move {
            match loader {
                Loader::Cpu => db.load(table, source, options, &ctl).await,
                Loader::Gpu => db
                    .load_gpu(table, source, options.dialect, options.threads, &ctl)
                    .await
                    .map(|r| r.load),
            }
        })
    }

    /// Creates table `name` from CSV `sources` with the columns and dialect `spec` gives or
    /// the files show (see [`Database::create_from_sources`]); Ctrl-C cancels it.
    pub fn create_from_sources(
        &self,
        name: &str,
        sources: Vec<Source>,
        spec: wireload_sql::ReadSpec,
    ) -> Result<LoadReport> {
        self.interruptible(|db, ctl| async move {
            db.create_from_sources(name, sources, spec, &ctl).await
        })
    }

    /// Loads many CSV `sources` into `table` as one load; Ctrl-C cancels it.
    pub fn load_many(
        &self,
        table: &str,
        sources: Vec<Source>,
        options: LoadOptions,
    ) -> Result<LoadReport> {
        self.interruptible(
            |db, ctl| async move { db.load_sources(table, sources, options, &ctl).await },
        )
    }

    /// Runs `COPY ... FROM STDIN` with `source` as the data; Ctrl-C cancels it.
    pub fn copy_from_client(
        &self,
        copy: wireload_sql::CopyFrom,
        source: Source,
    ) -> Result<StatementOutput> {
        self.interruptible(|db, ctl| async move {
            db.copy_from_client(copy, source, &ctl)
                .await
                .map(StatementOutput::Loaded)
        })
    }

    /// Makes the mixed-case column names of `table` (a file's header names) resolve
    /// case-insensitively.
    pub fn mark_header_named(&self, table: &str) {
        self.db.mark_header_named(table);
    }

    /// The notices of the statements run since the last call.
    pub fn take_notices(&self) -> Vec<String> {
        self.db.take_notices()
    }

    /// Runs `work` on the runtime with a fresh load control, a progress bar, and Ctrl-C.
    fn interruptible<'a, T, F>(
        &'a self,
        work: impl FnOnce(&'a Database, LoadControl) -> F,
    ) -> Result<T>
    where
        F: Future<Output = Result<T, wireload_sql::SqlError>> + 'a,
    {
        self.interrupt.store(false, Ordering::SeqCst);
        let ctl = LoadControl {
            cancel: Arc::clone(&self.interrupt),
            ..LoadControl::default()
        };
        let watch = ProgressWatch::start(&ctl);
        let result = self.runtime.block_on(async {
            let statement = work(&self.db, ctl);
            tokio::pin!(statement);
            tokio::select! {
                result = &mut statement => result.map_err(anyhow::Error::from),
                () = interrupted(&self.interrupt) => {
                    match tokio::time::timeout(CANCEL_GRACE, &mut statement).await {
                        Ok(result) => result.map_err(anyhow::Error::from),
                        Err(_) => Err(anyhow::anyhow!("statement cancelled")),
                    }
                }
            }
        });
        drop(watch);
        self.interrupt.store(false, Ordering::SeqCst);
        result
    }
}

/// The demo's cycle runs on the engine: a progress bar on its loads, Ctrl-C cancels.
impl wireload_tpch::Session for Runner {
    fn create_table(&self, def: TableDef) -> Result<()> {
        Runner::create_table(self, def)
    }

    fn load(&self, table: &str, source: Source, options: LoadOptions) -> Result<LoadReport> {
        Runner::load(self, table, source, options, Loader::Cpu)
    }

    fn run_statement(&self, statement: Statement) -> Result<StatementOutput> {
        Runner::run_statement(self, statement)
    }

    fn catalog(&self) -> &Arc<Catalog> {
        Runner::catalog(self)
    }
}

/// Resolves once Ctrl-C was pressed.
async fn interrupted(flag: &AtomicBool) {
    while !flag.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

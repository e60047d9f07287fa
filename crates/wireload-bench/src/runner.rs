//! The database the benchmarks run statements on: each statement runs to completion on a
//! tokio runtime, without a progress bar or Ctrl-C handling.

use std::sync::Arc;

use anyhow::{Context, Result};
use wireload_load::{LoadControl, LoadOptions, LoadReport, Source};
use wireload_sql::{Database, DbConfig, Statement, StatementOutput};
use wireload_storage::{Catalog, TableDef};

/// A database and the runtime its statements run on.
pub struct Runner {
    db: Database,
    runtime: tokio::runtime::Runtime,
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
        Ok(Runner { db, runtime })
    }
}

impl wireload_tpch::Session for Runner {
    fn create_table(&self, def: TableDef) -> Result<()> {
        Ok(self.db.create_table(def, false)?)
    }

    fn load(&self, table: &str, source: Source, options: LoadOptions) -> Result<LoadReport> {
        let ctl = LoadControl::default();
        Ok(self
            .runtime
            .block_on(self.db.load(table, source, options, &ctl))?)
    }

    fn run_statement(&self, statement: Statement) -> Result<StatementOutput> {
        let ctl = LoadControl::default();
        Ok(self
            .runtime
            .block_on(self.db.execute_statement(statement, &ctl))?)
    }

    fn catalog(&self) -> &Arc<Catalog> {
        self.db.catalog()
    }
}

//! SQL over wireload tables: an embedded DataFusion session whose tables are wireload
//! snapshots, plus wireload's own statements (`CREATE TABLE ... PARTITION BY`,
//! `DROP TABLE`, PostgreSQL-style `COPY ... FROM`).
#![deny(missing_docs)]

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use wireload_load::{LoadControl, LoadReport};
use wireload_storage::Catalog;

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
    /// Catalog errors (table exists, no such table...).
    #[error(transparent)]
    Storage(#[from] wireload_storage::StorageError),
    /// Errors from DataFusion while planning or running a query.
    #[error(transparent)]
    DataFusion(#[from] datafusion::error::DataFusionError),
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
    /// A statement without rows (CREATE, DROP...), with a short message such as `CREATE TABLE`.
    Done(String),
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
}

impl Database {
    /// An empty database.
    pub fn new(config: DbConfig) -> Self {
        let _ = config;
        Database { catalog: Arc::new(Catalog::default()) }
    }

    /// The catalog (for programs that create and load tables directly).
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// Runs one or more `;`-separated statements in order, stopping at the first error;
    /// returns one output per statement. Loads watch `ctl` for cancellation and report progress in it.
    pub async fn execute(&self, sql: &str, ctl: &LoadControl) -> Result<Vec<StatementOutput>, SqlError> {
        let _ = (sql, ctl);
        todo!()
    }
}

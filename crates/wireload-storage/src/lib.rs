//! Tables as immutable versions: a catalog of tables, each table a current
//! [`TableVersion`] of partitions of Arrow chunks, replaced in one atomic step by a writer.
//!
//! ```
//! use wireload_storage::{Catalog, Partitioning, TableDef};
//! use wireload_types::{ColumnDef, SqlType, TableSchema};
//! let catalog = Catalog::default();
//! let columns = vec![ColumnDef { name: "id".into(), ty: SqlType::Integer, nullable: true }];
//! let schema = TableSchema { columns };
//! let t = catalog.create_table(TableDef::new("t", schema, Partitioning::Single).unwrap(), false).unwrap();
//! assert_eq!(t.snapshot().num_rows(), 0);
//! ```
#![deny(missing_docs)]

mod catalog;
mod compression;
pub mod dictionary;
mod index;
mod table;
mod version;

pub use catalog::{Catalog, LOADS_KEPT, LoadRecord};
pub use compression::{
    Compression, StoredAs, coded_against, column_bytes, conform, conform_array, dictionary_type,
    is_dictionary, own_buffers, plain_batch, plain_schema, replace_columns, scan_type,
};
pub use index::{IndexDef, TableIndex};
pub use table::{Partitioning, Table, TableDef, WriteGuard};
pub use version::{Deletions, Partition, TableVersion};
pub use wireload_index::{Index, IndexKind, KeyEncoder, RowId};

/// Errors of catalog and table operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// CREATE TABLE of a name that exists.
    #[error("table \"{0}\" already exists")]
    TableExists(String),
    /// A table name that does not exist.
    #[error("table \"{0}\" does not exist")]
    NoSuchTable(String),
    /// A table definition that is not valid.
    #[error("invalid table definition: {0}")]
    InvalidDefinition(String),
}

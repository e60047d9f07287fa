//! DataFusion over wireload tables: a table provider per table that scans one snapshot per
//! query (the whole snapshot, or the rows an index lookup selects at execution), scans whose
//! parallel partitions keep the table's insertion order through the plan, and the session
//! that plans SQL over a catalog.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use wireload_storage::{Catalog, Partitioning, TableDef};
//! use wireload_types::{ColumnDef, SqlType, TableSchema};
//!
//! let catalog = Arc::new(Catalog::default());
//! let columns = vec![ColumnDef { name: "id".into(), ty: SqlType::Integer, nullable: false }];
//! let def = TableDef::new("t", TableSchema { columns }, Partitioning::Single).unwrap();
//! catalog.create_table(def, false).unwrap();
//! let (ctx, _) = wireload_query::new_session(catalog, 2, wireload_query::runtime(None));
//! let batches = ctx.sql("SELECT count(*) FROM t").await.unwrap().collect().await.unwrap();
//! assert_eq!(batches[0].num_rows(), 1);
//! # });
//! ```
#![deny(missing_docs)]

mod code_filters;
mod index;
mod order;
mod provider;
mod scan;
mod session;
mod system;

pub use order::{KeepInsertionOrder, ORDER_BUFFER_BYTES, OrderedCoalesceExec};
pub use provider::{CatalogSchema, SnapshotTable};
pub use scan::SnapshotScanExec;
pub use session::{DEFAULT_CATALOG, DEFAULT_SCHEMA, new_session, new_sibling_session, runtime};
pub use system::{SystemTable, SystemView};

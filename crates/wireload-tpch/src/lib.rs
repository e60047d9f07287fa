//! TPC-H for wireload: the 8 tables generated as `.tbl` files ([`tables`]), the 22
//! queries ([`queries`]), the check of query results against expected answers
//! ([`answers`]), and the load–work–unload cycle that loads the tables, runs the queries,
//! unloads and reloads the database, timing every phase ([`cycle`]).
//!
//! The `wireload` binary's `demo` and `gen tpch` and the `wireload-bench` binary are
//! built on it.

pub mod answers;
pub mod cycle;
pub mod queries;
pub mod tables;

pub use answers::{Answer, Comparison, Tolerance};
pub use cycle::{CycleReport, Phase, QueryRun, Session};
pub use queries::{TPCH_QUERIES, TpchQuery};
pub use tables::{GeneratedTable, SCHEMA_SQL, TABLES, TpchTable};

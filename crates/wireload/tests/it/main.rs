//! The integration tests of the `wireload` binary, one test binary: the command line
//! (`cli`), Shared Loading with `wireload push` (`push`), the server (`serve`), and the 22
//! TPC-H queries against DuckDB's answers (`tpch_queries`).

mod cli;
mod common;
mod push;
mod serve;
mod tpch_queries;

//! The integration tests of wireload-sql, one binary: each module was one file.

mod cancel;
mod common;
mod conformance;
mod deletions;
mod dictionary;
mod dml;
mod dml_concurrency;
mod dml_model;
mod files;
mod index_pushdown;
mod keys;
mod online;
mod order;
mod privileges;
mod slt;
mod sql;
mod transactions;
mod unload;

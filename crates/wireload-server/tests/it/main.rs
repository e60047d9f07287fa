//! The integration tests of wireload-server, one binary: each module was one file.

#[path = "../common/mod.rs"]
mod common;
mod files;
mod fuzz;
mod pg;
mod pg_catalog;
mod roles;

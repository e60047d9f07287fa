//! The integration tests of wireload-load, one binary: each module was one file.

mod common;

mod compressed;
mod differential;
mod encoding;
mod errors;
mod files;
mod limits;
mod on_error;
mod projection;
mod stream;
mod tpch;

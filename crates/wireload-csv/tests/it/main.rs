//! The integration tests of wireload-csv, one binary: each module was one file.

mod aarch64;
mod differential;

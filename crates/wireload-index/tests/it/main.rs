//! The integration tests of wireload-index, one binary: each module was one file.

mod common;

mod art;
mod hash;
mod keys;
mod remove;

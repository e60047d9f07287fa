//! The integration tests of wireload-flight, one binary: each module was one file.

mod clients;
mod push;

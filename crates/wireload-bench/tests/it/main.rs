//! The integration tests of the `wireload-bench` binary, one test binary.

mod cli;

//! The integration tests of wireload-sniff, one binary: each module was one file.

mod load_path;

mod regressions;
mod tricky;

//! The integration tests of wireload-push, one binary: each module was one file.

mod pipe;

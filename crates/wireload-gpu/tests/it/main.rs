//! The integration tests of wireload-gpu, one binary: each module was one file.

mod common;

mod conformance;
mod emulated;
mod gpu;
mod nvrtc;
mod reference;
mod tpch;

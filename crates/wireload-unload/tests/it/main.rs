//! The integration tests of wireload-unload, one binary: each module was one file.

mod binary_round_trip;
mod csv_round_trip;

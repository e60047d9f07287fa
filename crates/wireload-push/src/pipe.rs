//! The `pipe` baseline (being written).

//! The Shared Loading client (CIDR 2019): next to the CSV files, it deserializes chunks into
//! columnar fragments with the loader's own deserializers, decides per fragment column
//! whether to dictionary-encode it there (`SL_S`: when the estimated dictionary plus codes
//! are smaller than the plain column), and streams the fragments to a wireload server,
//! which validates and merges them into its dictionary storage.
//!
//! Built so far: the estimates the decision rests on.
//!
//! - [`hll`]: HyperLogLog with the HIP estimator (distinct values in one pass);
//! - [`size`]: a fragment column's plain and encoded sizes, and the decision.
#![deny(missing_docs)]

pub mod hll;
pub mod size;

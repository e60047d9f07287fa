//! Shared Loading (Noll et al., CIDR 2019): a client next to the CSV files deserializes
//! chunks into columnar *fragments* with the loader's own deserializers, dictionary-encodes
//! fragment columns where the mode says so (`SL_A` all, `SL_N` none, `SL_S` where the
//! estimated dictionary plus codes are smaller than the plain column, `auto` from measured
//! feedback), groups fragments into *partitions* with one dictionary per column, and streams
//! them to a wireload server, which validates every frame and merges the fragments into its
//! dictionary storage, publishing the load atomically. `pipe` (COPY FROM STDIN over the
//! PostgreSQL protocol) and `seq` (send the file, then load it) are the baselines.
//!
//! - [`hll`], [`size`]: the estimates `SL_S` decides on;
//! - [`protocol`]: the frames of a push (Arrow IPC payloads in Arrow Flight `DoPut`);
//! - [`client`]: the client pipeline and its modes;
//! - [`ingest`]: the server side (validation, units for the append/publish stage; the
//!   check of an encoded column's codes is `wireload_publish::dictionary::mark_used`);
//! - [`throttle`]: a token bucket on the client's socket;
//! - [`pipe`]: the `pipe` baseline;
//! - [`account`]: CPU time per process, thread and step.
#![deny(missing_docs)]

pub mod account;
pub mod client;
mod error;
pub mod hll;
pub mod ingest;
pub mod pipe;
pub mod protocol;
pub mod size;
pub mod throttle;

pub use error::PushError;

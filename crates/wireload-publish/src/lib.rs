//! The write path of wireload: the one append/publish stage every way rows enter a table
//! goes through (CSV loads, Arrow IPC and Parquet reloads, IMPORT DATABASE, INSERT, UPDATE,
//! DELETE, the GPU engine, Shared Loading pushes). A parse stage hands over [`Unit`]s
//! (partition buffers as Arrow arrays with their buffer indexes); the [`Appender`] places
//! them (chunk, copy or insert merge), merges the buffer indexes into copies of the table's
//! indexes, merges and encodes dictionary columns, and publishes the new table version in
//! one atomic step: nothing is visible before it, and a failure publishes nothing.
//!
//! Around it: [`append_batches`] (Arrow batches into a table), [`create_index`],
//! [`rebuild_indexes`] and [`encode_dictionaries`] (for writes that replace chunks),
//! [`compact`] (deleted rows dropped), hash partitioning ([`partition_ids`]), the pools the
//! work runs on ([`pool`], [`locked_pool`]), and the vocabulary a write shares with its
//! caller ([`LoadError`], [`LoadControl`], [`LoadReport`], [`MergeStrategy`], [`Schedule`]).
#![deny(missing_docs)]

mod append;
mod compact;
mod dictionaries;
pub mod dictionary;
mod error;
mod indexing;
mod merge;
mod partition;
mod pool;
mod publish;
mod report;

pub use append::{append_batches, check_pushed_column, table_chunks};
pub use compact::{compact, worth_compacting};
pub use dictionaries::{
    AUTO_MAX_ENTRIES, AUTO_MAX_RATIO, AUTO_MIN_ROWS, DICTIONARY_RUN_ROWS, MERGE_COLUMNS,
};
pub use error::{BadValue, KeySite, LoadError, Position};
pub use indexing::key_text;
pub use partition::partition_ids;
pub use pool::{
    apply_load_nice, compaction_pool, install, locked_pool, pool, pool_cpu_seconds, set_load_nice,
    thread_cpu_seconds,
};
pub use publish::{Appender, Published, Sink, Sites, Text, Unit};
pub use report::{
    LoadControl, LoadReport, MAX_REJECTS, MergeStrategy, RAW_LINE_CHARS, Reject, Schedule,
};

use wireload_storage::Table;

/// Builds the index `index` over the rows `table` holds now, in parallel, and publishes the
/// version that has it. Returns the number of keys. Fails (publishing nothing) when the index
/// is unique and two rows have equal keys or a key is NULL.
pub fn create_index(table: &Table, index: wireload_storage::IndexDef) -> Result<usize, LoadError> {
    indexing::create_index(table, index)
}

/// `version` with the dictionary columns of every chunk encoded (chunks a write replaced
/// with plain columns merged into their partitions' open dictionary runs, which re-encodes
/// a run when its dictionary grows). Runs parallel work: call it before taking the
/// table's writer lock.
pub fn encode_dictionaries(
    def: &wireload_storage::TableDef,
    mut version: wireload_storage::TableVersion,
) -> Result<wireload_storage::TableVersion, LoadError> {
    if def.has_dictionaries() {
        let none = vec![Vec::new(); version.partitions.len()];
        dictionaries::encode(def, &mut version, none)?;
    }
    Ok(version)
}

/// `version` with each of its indexes built anew over its rows, in parallel (for writes
/// that replace chunks: UPDATE, DELETE). Fails when a unique key is duplicated or NULL.
pub fn rebuild_indexes(
    def: &wireload_storage::TableDef,
    version: wireload_storage::TableVersion,
) -> Result<wireload_storage::TableVersion, LoadError> {
    indexing::rebuild_indexes(def, version)
}

//! Indexes during a load (Instant Loading, section 3.6): each chunk task indexes the keys of
//! its partition buffers (one *segment* per buffer), the merge folds these buffer indexes
//! into copies of the table's indexes in parallel, and every segment then learns the row
//! its buffer's first row landed at.
//!
//! A buffer is known by its *slot*, a number unique within the load (for a CSV load
//! `task * partitions + partition`); its segment id is the index's first free id plus the slot.

use std::sync::Arc;

use arrow::array::Array;
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use rayon::prelude::*;
use wireload_index::{Duplicate, EntryRef, Index, KeyEncoder, KeyError, RowId, hash_buckets_for};
use wireload_storage::dictionary::value_type;
use wireload_storage::{IndexDef, Table, TableDef, TableIndex, TableVersion};

use crate::error::{KeySite, LoadError};

/// The indexes a load maintains.
pub(crate) struct LoadIndexes {
    specs: Vec<Spec>,
}

/// One index of the table, as the load sees it.
struct Spec {
    /// the index of the version the load builds on
    base: TableIndex,
    encoder: KeyEncoder,
    /// segment id of slot 0
    first_segment: u32,
}

/// Why a buffer could not be indexed (rows are positions in the buffer).
#[derive(Debug)]
pub(crate) enum BufferKeyError {
    /// a NULL key in table column `column`
    Null {
        index: usize,
        row: usize,
        column: usize,
    },
    /// two rows of the buffer have equal keys
    Duplicate {
        index: usize,
        first: usize,
        second: usize,
    },
    /// a key that cannot be encoded
    Key { index: usize, error: KeyError },
}

impl LoadIndexes {
    /// The indexes of `base` (the version being appended to).
    pub(crate) fn new(def: &TableDef, base: &TableVersion) -> Self {
        let specs = base
            .indexes
            .iter()
            .map(|ti| Spec {
                encoder: ti
                    .def
                    .encoder(&def.schema)
                    .expect("index definitions are checked when created"),
                first_segment: ti.index.segments().next_id(),
                base: ti.clone(),
            })
            .collect();
        LoadIndexes { specs }
    }

    /// A new index `index` over `rows` rows, not yet in any version.
    pub(crate) fn new_index(def: &TableDef, index: IndexDef) -> Result<Self, LoadError> {
        let encoder = index
            .encoder(&def.schema)
            .map_err(|e| LoadError::Options(e.to_string()))?;
        Ok(LoadIndexes {
            specs: vec![Spec {
                encoder,
                first_segment: 0,
                base: TableIndex::empty(index),
            }],
        })
    }

    /// True when the table has no indexes.
    pub(crate) fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Number of indexes.
    pub(crate) fn len(&self) -> usize {
        self.specs.len()
    }

    /// True when some index is unique (so duplicates must be located).
    pub(crate) fn any_unique(&self) -> bool {
        self.specs.iter().any(|s| s.base.def.unique)
    }

    /// The buffer indexes of the buffer in `slot`, one per table index.
    pub(crate) fn build(
        &self,
        slot: u32,
        batch: &RecordBatch,
    ) -> Result<Vec<Index>, BufferKeyError> {
        self.specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let def = &s.base.def;
                let cols: Vec<_> = def
                    .columns
                    .iter()
                    .map(|&c| batch.column(c).clone())
                    .collect();
                let keys = s.encoder.encode(&cols).map_err(|e| match e {
                    KeyError::Null { row, column } => BufferKeyError::Null {
                        index: i,
                        row,
                        column: def.columns[column],
                    },
                    error => BufferKeyError::Key { index: i, error },
                })?;
                // a hash directory sized for this buffer: one sized for the whole load in
                // every buffer would cost (buffers x load) memory; merges grow it instead
                let buckets = hash_buckets_for(batch.num_rows());
                Index::build(def.kind, def.unique, s.first_segment + slot, keys, buckets).map_err(
                    |d| BufferKeyError::Duplicate {
                        index: i,
                        first: d.first.pos() as usize,
                        second: d.second.pos() as usize,
                    },
                )
            })
            .collect()
    }

    /// Merges `parts[i]` (buffer indexes of index `i`, of the buffers in `slots`) into
    /// `into[i]` (the base indexes, or what earlier merge steps of the load made of them;
    /// copied when shared), in parallel, and places the segments of `slots`: `place(slot)`
    /// is the row of the slot's first row. A duplicate key names the index and the two
    /// entries.
    pub(crate) fn merge(
        &self,
        into: Vec<TableIndex>,
        parts: Vec<Vec<Index>>,
        slots: std::ops::Range<u32>,
        place: &(dyn Fn(u32) -> RowId + Sync),
    ) -> Result<Vec<TableIndex>, (usize, Duplicate)> {
        assert!(
            parts.len() == self.specs.len() && into.len() == self.specs.len(),
            "buffer indexes for every index"
        );
        self.specs
            .par_iter()
            .zip(into)
            .zip(parts)
            .enumerate()
            .map(|(i, ((s, ti), p))| {
                let mut all = Vec::with_capacity(p.len() + 1);
                all.push(Arc::try_unwrap(ti.index).unwrap_or_else(|shared| (*shared).clone()));
                all.extend(p);
                let mut merged = Index::merge_all(all).map_err(|d| (i, d))?;
                for slot in slots.clone() {
                    let id = s.first_segment + slot;
                    if merged.segments().get(id).is_some() {
                        merged.place_segment(id, place(slot));
                    }
                }
                Ok(TableIndex {
                    def: ti.def,
                    index: merged.into(),
                })
            })
            .collect()
    }

    /// The slot of a new entry of index `i`, or None for an entry the table held before.
    pub(crate) fn slot(&self, i: usize, e: EntryRef) -> Option<u32> {
        e.segment().checked_sub(self.specs[i].first_segment)
    }

    /// The row of an entry the table held before the load.
    pub(crate) fn base_row(&self, i: usize, e: EntryRef) -> RowId {
        self.specs[i].base.index.row_id(e)
    }

    /// The key columns of index `i` as `a, b`.
    pub(crate) fn column_list(&self, def: &TableDef, i: usize) -> String {
        self.specs[i].base.def.column_names(&def.schema).join(", ")
    }

    /// The index's name.
    pub(crate) fn name(&self, i: usize) -> &str {
        &self.specs[i].base.def.name
    }

    /// The key of row `row` of `batch` under index `i`, as `v1, v2`.
    pub(crate) fn key_text(&self, i: usize, batch: &RecordBatch, row: usize) -> String {
        key_text(batch, &self.specs[i].base.def.columns, row)
    }

    /// The error for a key that cannot be encoded.
    pub(crate) fn key_error(&self, i: usize, error: KeyError) -> LoadError {
        LoadError::Options(format!("index \"{}\": {error}", self.name(i)))
    }

    /// The error for a NULL key.
    pub(crate) fn null_error(
        &self,
        def: &TableDef,
        i: usize,
        column: usize,
        site: KeySite,
    ) -> LoadError {
        LoadError::NullKey {
            index: self.name(i).to_string(),
            column: def.schema.columns[column].name.clone(),
            site,
        }
    }

    /// The error for a duplicate key of index `i`, `key` rendered by the caller.
    pub(crate) fn duplicate_error(
        &self,
        def: &TableDef,
        i: usize,
        key: String,
        first: KeySite,
        second: KeySite,
    ) -> LoadError {
        // name the earlier place first
        let (first, second) = match (&first, &second) {
            (KeySite::Line { byte: a, .. }, KeySite::Line { byte: b, .. }) if a > b => {
                (second, first)
            }
            (KeySite::Row { row: Some(a), .. }, KeySite::Row { row: Some(b), .. }) if a > b => {
                (second, first)
            }
            (_, KeySite::Table) => (second, first),
            _ => (first, second),
        };
        LoadError::DuplicateKey {
            index: self.name(i).to_string(),
            columns: self.column_list(def, i),
            key,
            second: Box::new(second),
            first: Box::new(first),
        }
    }
}

/// The values of `columns` at `row` of `batch`, as `v1, v2` (strings quoted as SQL literals).
pub fn key_text(batch: &RecordBatch, columns: &[usize], row: usize) -> String {
    let opts = FormatOptions::default().with_null("NULL");
    columns
        .iter()
        .map(|&c| {
            // the row alone, a dictionary column's value decoded (its type decides the quotes)
            let one = batch.column(c).slice(row, 1);
            let col = wireload_storage::conform_array(&one, &value_type(&one)).unwrap_or(one);
            let text = ArrayFormatter::try_new(col.as_ref(), &opts)
                .map(|f| f.value(0).to_string())
                .unwrap_or_else(|_| "?".into());
            if col.data_type().is_numeric() || col.is_null(0) {
                text
            } else {
                format!("'{}'", text.replace('\'', "''"))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The row a version holds at `id`.
pub(crate) fn version_row(version: &TableVersion, id: RowId) -> (&RecordBatch, usize) {
    (
        &version.partitions[id.partition as usize].chunks[id.chunk as usize],
        id.row as usize,
    )
}

/// Builds index `index` over the current rows of `table` (every chunk a segment, indexed in
/// parallel, then merged) and publishes the version that has it. Returns the number of keys.
///
/// The index is built without the writer lock (no parallel work ever runs under it: a
/// pool thread waiting for the lock could otherwise hold the work the holder waits for);
/// when another write published meanwhile, it is built again over that version.
pub(crate) fn create_index(table: &Table, index: IndexDef) -> Result<usize, LoadError> {
    let def = table.def();
    let mut base = table.snapshot();
    loop {
        if base.index(&index.name).is_some() {
            return Err(LoadError::Options(format!(
                "index \"{}\" already exists",
                index.name
            )));
        }
        let next = if base.deleted_rows() == 0 {
            base.with_index(build_over(def, &base, index.clone())?)
        } else {
            // an index holds live rows only: the deleted ones are dropped first, and the
            // other indexes built again over the rows' new places
            let empty = TableIndex::empty(index.clone());
            rebuild_indexes(def, base.with_index(empty))?
        };
        let guard = table.begin_write();
        if guard.base().number != base.number {
            base = Arc::clone(guard.base());
            continue;
        }
        let keys = next.indexes.last().expect("the new index").index.len();
        guard.publish(next);
        return Ok(keys);
    }
}

/// `version` without its deleted rows and with each of its indexes built anew over its
/// rows; fails when a unique key is duplicated or NULL.
pub(crate) fn rebuild_indexes(
    def: &TableDef,
    mut version: TableVersion,
) -> Result<TableVersion, LoadError> {
    for p in &mut version.partitions {
        p.compact()
            .map_err(|e| LoadError::Internal(e.to_string()))?;
    }
    let defs: Vec<IndexDef> = version.indexes.iter().map(|i| (*i.def).clone()).collect();
    let mut indexes = Vec::with_capacity(defs.len());
    for index in defs {
        indexes.push(build_over(def, &version, index)?);
    }
    version.indexes = indexes;
    Ok(version)
}

/// Index `index` over the rows of `base`: every chunk a segment, indexed in parallel, then
/// merged.
fn build_over(
    def: &TableDef,
    base: &TableVersion,
    index: IndexDef,
) -> Result<TableIndex, LoadError> {
    let indexes = LoadIndexes::new_index(def, index)?;
    let slots: Vec<(usize, usize)> = base
        .partitions
        .iter()
        .enumerate()
        .flat_map(|(p, part)| (0..part.chunks.len()).map(move |k| (p, k)))
        .collect();
    let chunk = |slot: usize| {
        let (p, k) = slots[slot];
        &base.partitions[p].chunks[k]
    };
    let built: Vec<Index> = (0..slots.len())
        .into_par_iter()
        .map(|slot| {
            // dictionary key columns are decoded by the key encoder, and by `key_text`
            let batch = chunk(slot);
            indexes
                .build(slot as u32, batch)
                .map(|mut v| v.pop().expect("one index"))
                .map_err(|e| match e {
                    BufferKeyError::Null { index, column, .. } => {
                        indexes.null_error(def, index, column, KeySite::Table)
                    }
                    BufferKeyError::Key { index, error } => indexes.key_error(index, error),
                    BufferKeyError::Duplicate { index, second, .. } => {
                        LoadError::DuplicateInTable {
                            index: indexes.name(index).to_string(),
                            columns: indexes.column_list(def, index),
                            key: indexes.key_text(index, batch, second),
                        }
                    }
                })
        })
        .collect::<Result<_, _>>()?;
    let place = |slot: u32| {
        let (p, k) = slots[slot as usize];
        RowId {
            partition: p as u32,
            chunk: k as u32,
            row: 0,
        }
    };
    let into = indexes.specs.iter().map(|s| s.base.clone()).collect();
    let all = 0..slots.len() as u32;
    let mut merged = indexes
        .merge(into, vec![built], all, &place)
        .map_err(|(i, dup)| {
            let slot = indexes.slot(i, dup.second).expect("every entry is new") as usize;
            LoadError::DuplicateInTable {
                index: indexes.name(i).to_string(),
                columns: indexes.column_list(def, i),
                key: indexes.key_text(i, chunk(slot), dup.second.pos() as usize),
            }
        })?;
    Ok(merged.pop().expect("one index"))
}

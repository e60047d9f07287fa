//! Immutable table versions: partitions holding lists of Arrow chunks.

use std::sync::Arc;

use arrow::array::{ArrayData, ArrayRef, BooleanArray};
use arrow::buffer::BooleanBuffer;
use arrow::compute::filter_record_batch;
use arrow::datatypes::{Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;

use crate::compression::{StoredAs, coded_against, column_bytes, scan_type};
use crate::index::TableIndex;

/// The rows deleted from one chunk: a bitmap of its live rows (a published deletion
/// vector never changes; a later delete makes a new one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletions {
    live: BooleanBuffer,
    deleted: usize,
}

impl Deletions {
    /// The deletions of a chunk whose rows still there are the bits set in `live` (one bit
    /// per row of the chunk).
    pub fn from_live(live: BooleanBuffer) -> Self {
        let deleted = live.len() - live.count_set_bits();
        Deletions { live, deleted }
    }

    /// One bit per row of the chunk: set for a row that is still there.
    pub fn live(&self) -> &BooleanBuffer {
        &self.live
    }

    /// Number of deleted rows.
    pub fn deleted(&self) -> usize {
        self.deleted
    }

    /// True when row `row` of the chunk is deleted.
    pub fn is_deleted(&self, row: usize) -> bool {
        !self.live.value(row)
    }

    /// These deletions and the rows `more` marks (one bit per row of the chunk).
    pub fn and_deleted(&self, more: &BooleanBuffer) -> Deletions {
        Deletions::from_live(&self.live & &!more)
    }
}

/// One partition of a table version: its chunks in order, and the rows deleted from them.
#[derive(Debug, Clone, Default)]
pub struct Partition {
    /// Arrow chunks; a published chunk never changes.
    pub chunks: Vec<RecordBatch>,
    /// The deletions of chunk `i` at `i`; a chunk past the end, or `None`, has none.
    pub deleted: Vec<Option<Arc<Deletions>>>,
    /// The dictionary of column `i` at `i` (sorted, duplicate-free: code order is value
    /// order): the dictionary of the column's open run, the last chunks that share it,
    /// which the next write extends (earlier runs' chunks hold their own); a column past
    /// the end, or `None`, has none.
    pub dictionaries: Vec<Option<ArrayRef>>,
}

impl Partition {
    /// A partition of `chunks`, none of their rows deleted.
    pub fn new(chunks: Vec<RecordBatch>) -> Self {
        Partition {
            chunks,
            deleted: Vec::new(),
            dictionaries: Vec::new(),
        }
    }

    /// The dictionary of column `column`, when it has one.
    pub fn dictionary(&self, column: usize) -> Option<&ArrayRef> {
        self.dictionaries.get(column).and_then(Option::as_ref)
    }

    /// Sets the dictionary of column `column`.
    pub fn set_dictionary(&mut self, column: usize, dictionary: ArrayRef) {
        if self.dictionaries.len() <= column {
            self.dictionaries.resize(column + 1, None);
        }
        self.dictionaries[column] = Some(dictionary);
    }

    /// Bytes in memory of column `column`: every chunk's array, and each dictionary once.
    pub fn column_bytes(&self, column: usize) -> usize {
        self.chunks
            .iter()
            .map(|b| column_bytes(b.column(column)))
            .sum::<usize>()
            + self
                .column_dictionaries(column)
                .iter()
                .map(|d| d.get_slice_memory_size().unwrap_or(0))
                .sum::<usize>()
    }

    /// The distinct dictionaries the chunks of column `column` are coded against, in chunk
    /// order (one per dictionary run).
    pub fn column_dictionaries(&self, column: usize) -> Vec<ArrayData> {
        let mut runs: Vec<ArrayData> = Vec::new();
        for chunk in &self.chunks {
            let Some(values) = coded_against(chunk.column(column)) else {
                continue;
            };
            if !runs.iter().rev().any(|d| d.ptr_eq(&values)) {
                runs.push(values);
            }
        }
        runs
    }

    /// Rows in this partition (deleted rows not counted).
    pub fn num_rows(&self) -> usize {
        self.chunks.iter().map(RecordBatch::num_rows).sum::<usize>() - self.deleted_rows()
    }

    /// Deleted rows still held by this partition's chunks.
    pub fn deleted_rows(&self) -> usize {
        self.deleted.iter().flatten().map(|d| d.deleted()).sum()
    }

    /// The deletions of chunk `chunk`, if it has any.
    pub fn deletions(&self, chunk: usize) -> Option<&Arc<Deletions>> {
        self.deleted.get(chunk).and_then(Option::as_ref)
    }

    /// Marks the rows `rows` (one bit per row) of chunk `chunk` deleted as well.
    pub fn delete(&mut self, chunk: usize, rows: &BooleanBuffer) {
        let next = match self.deletions(chunk) {
            Some(d) => d.and_deleted(rows),
            None => Deletions::from_live(!rows),
        };
        if self.deleted.len() <= chunk {
            self.deleted.resize(chunk + 1, None);
        }
        self.deleted[chunk] = Some(Arc::new(next));
    }

    /// The live rows of chunk `chunk` (the chunk itself when none is deleted).
    pub fn live_chunk(&self, chunk: usize) -> Result<RecordBatch, ArrowError> {
        let batch = &self.chunks[chunk];
        match self.deletions(chunk) {
            None => Ok(batch.clone()),
            Some(d) => filter_record_batch(batch, &BooleanArray::new(d.live().clone(), None)),
        }
    }

    /// Drops the deleted rows: every chunk with deletions is replaced by its live rows (or
    /// left out when none is left). Row ids change: indexes over the partition must be
    /// built anew.
    pub fn compact(&mut self) -> Result<(), ArrowError> {
        if self.deleted.iter().any(Option::is_some) {
            self.chunks = self.live_chunks()?;
        }
        self.deleted.clear();
        Ok(())
    }

    /// The live rows of every chunk, in order, chunks left without rows skipped.
    pub fn live_chunks(&self) -> Result<Vec<RecordBatch>, ArrowError> {
        (0..self.chunks.len())
            .filter(|&c| {
                self.deletions(c)
                    .is_none_or(|d| d.deleted() < self.chunks[c].num_rows())
            })
            .map(|c| self.live_chunk(c))
            .collect()
    }
}

/// An immutable view of a table's contents.
#[derive(Debug, Clone)]
pub struct TableVersion {
    /// Increases by one with every published version.
    pub number: u64,
    /// The number of the newest version that changed the table's rows or indexes: a
    /// compaction, which only drops deleted rows, keeps its base's (so it is no write that
    /// a transaction could conflict with). Set when the version is published.
    pub content: u64,
    /// Schema of every chunk.
    pub schema: SchemaRef,
    /// Partitions, as many as the table's partitioning says.
    pub partitions: Vec<Partition>,
    /// Indexes over exactly these rows (constraint indexes first, in definition order).
    pub indexes: Vec<TableIndex>,
    /// How each column is stored; a dictionary column's chunks hold dictionary arrays (of
    /// their partition's code width) where `schema` says the value type.
    pub stored_as: Vec<StoredAs>,
}

impl TableVersion {
    /// Version 0: `partitions` empty partitions, every column plain.
    pub fn empty(partitions: usize, schema: SchemaRef) -> Self {
        TableVersion {
            number: 0,
            content: 0,
            stored_as: vec![StoredAs::Plain; schema.fields().len()],
            schema,
            partitions: vec![Partition::default(); partitions],
            indexes: Vec::new(),
        }
    }

    /// The schema scans hand to queries ([`scan_type`] of each column).
    pub fn scan_schema(&self) -> SchemaRef {
        if !self.stored_as.contains(&StoredAs::Dictionary) {
            return Arc::clone(&self.schema);
        }
        let fields: Vec<Field> = self
            .schema
            .fields()
            .iter()
            .zip(&self.stored_as)
            .map(|(f, &e)| {
                let ty = scan_type(f.data_type(), e);
                f.as_ref().clone().with_data_type(ty)
            })
            .collect();
        Arc::new(Schema::new_with_metadata(
            fields,
            self.schema.metadata().clone(),
        ))
    }

    /// True when some column is dictionary-encoded.
    pub fn has_dictionaries(&self) -> bool {
        self.stored_as.contains(&StoredAs::Dictionary)
    }

    /// Bytes in memory of column `column` over every partition.
    pub fn column_bytes(&self, column: usize) -> usize {
        self.partitions.iter().map(|p| p.column_bytes(column)).sum()
    }

    /// Bytes in memory of every column (dictionaries counted once per partition).
    pub fn data_bytes(&self) -> usize {
        (0..self.schema.fields().len())
            .map(|c| self.column_bytes(c))
            .sum()
    }

    /// Bytes in memory of the indexes.
    pub fn index_bytes(&self) -> usize {
        self.indexes.iter().map(|i| i.index.heap_bytes()).sum()
    }

    /// How column `column` is stored, for people: `plain`, `dictionary (N entries)`, ...
    pub fn storage_label(&self, column: usize) -> String {
        match self.dictionary_entries(column) {
            Some(n) => format!("dictionary ({n} entries)"),
            None => self.stored_as[column].name().to_string(),
        }
    }

    /// Entries of column `column`'s dictionaries, summed over the partitions and their
    /// dictionary runs (None for a column without dictionaries).
    pub fn dictionary_entries(&self, column: usize) -> Option<usize> {
        (self.stored_as.get(column) == Some(&StoredAs::Dictionary)).then(|| {
            self.partitions
                .iter()
                .flat_map(|p| p.column_dictionaries(column))
                .map(|d| d.len())
                .sum()
        })
    }

    /// Total rows.
    pub fn num_rows(&self) -> usize {
        self.partitions.iter().map(Partition::num_rows).sum()
    }

    /// The live rows of every chunk of every partition, partition by partition (chunks
    /// without deletions as they are, the others filtered; chunks left empty skipped).
    pub fn live_chunks(&self) -> Result<Vec<RecordBatch>, ArrowError> {
        let mut out = Vec::new();
        for p in &self.partitions {
            out.extend(p.live_chunks()?);
        }
        Ok(out)
    }

    /// Deleted rows the chunks still hold (until a compaction drops them).
    pub fn deleted_rows(&self) -> usize {
        self.partitions.iter().map(Partition::deleted_rows).sum()
    }

    /// The next version: this one's chunks followed by `added[p]` in partition `p`, with
    /// `indexes` (this version's indexes with the added rows merged in, in the same order).
    pub fn with_appended(
        &self,
        added: Vec<Vec<RecordBatch>>,
        indexes: Vec<TableIndex>,
    ) -> TableVersion {
        assert_eq!(
            indexes.len(),
            self.indexes.len(),
            "every index is carried into the next version"
        );
        let mut next = TableVersion {
            number: self.number + 1,
            content: self.content,
            schema: self.schema.clone(),
            partitions: self.partitions.clone(),
            indexes,
            stored_as: self.stored_as.clone(),
        };
        next.append(added);
        next
    }

    /// Appends `added[p]` to partition `p`, in place (number and indexes unchanged: a
    /// version being built, not yet published).
    pub fn append(&mut self, added: Vec<Vec<RecordBatch>>) {
        assert_eq!(
            added.len(),
            self.partitions.len(),
            "one chunk list per partition"
        );
        for (p, new) in self.partitions.iter_mut().zip(added) {
            p.chunks.extend(new.into_iter().inspect(|b| {
                assert!(
                    b.num_rows() > 0,
                    "an added chunk has rows (indexes count on it)"
                )
            }));
        }
    }

    /// The next version: no rows, every index kept (and emptied).
    pub fn truncated(&self) -> TableVersion {
        TableVersion {
            number: self.number + 1,
            content: self.content,
            schema: self.schema.clone(),
            partitions: vec![Partition::default(); self.partitions.len()],
            indexes: self
                .indexes
                .iter()
                .map(|i| TableIndex::empty((*i.def).clone()))
                .collect(),
            stored_as: self.stored_as.clone(),
        }
    }

    /// The next version: the same rows with one more index (built over these rows).
    pub fn with_index(&self, index: TableIndex) -> TableVersion {
        let mut next = self.clone();
        next.number += 1;
        next.indexes.push(index);
        next
    }

    /// The next version: the same rows without the index called `name`.
    pub fn without_index(&self, name: &str) -> TableVersion {
        let mut next = self.clone();
        next.number += 1;
        next.indexes.retain(|i| i.def.name != name);
        next
    }

    /// The index called `name`.
    pub fn index(&self, name: &str) -> Option<&TableIndex> {
        self.indexes.iter().find(|i| i.def.name == name)
    }

    /// Number of chunks in each partition.
    pub fn chunk_counts(&self) -> Vec<usize> {
        self.partitions.iter().map(|p| p.chunks.len()).collect()
    }
}

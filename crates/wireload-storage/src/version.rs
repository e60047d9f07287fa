//! Immutable table versions: partitions holding lists of Arrow chunks.

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

use crate::index::TableIndex;

/// One partition of a table version: its chunks in order.
#[derive(Debug, Clone, Default)]
pub struct Partition {
    /// Arrow chunks; a published chunk never changes.
    pub chunks: Vec<RecordBatch>,
}

impl Partition {
    /// Rows in this partition.
    pub fn num_rows(&self) -> usize {
        self.chunks.iter().map(RecordBatch::num_rows).sum()
    }
}

/// An immutable view of a table's contents.
#[derive(Debug, Clone)]
pub struct TableVersion {
    /// Increases by one with every published version.
    pub number: u64,
    /// Schema of every chunk.
    pub schema: SchemaRef,
    /// Partitions, as many as the table's partitioning says.
    pub partitions: Vec<Partition>,
    /// Indexes over exactly these rows (constraint indexes first, in definition order).
    pub indexes: Vec<TableIndex>,
}

impl TableVersion {
    /// Version 0: `partitions` empty partitions.
    pub fn empty(partitions: usize, schema: SchemaRef) -> Self {
        TableVersion {
            number: 0,
            schema,
            partitions: vec![Partition::default(); partitions],
            indexes: Vec::new(),
        }
    }

    /// Total rows.
    pub fn num_rows(&self) -> usize {
        self.partitions.iter().map(Partition::num_rows).sum()
    }

    /// Every chunk of every partition, partition by partition.
    pub fn chunks(&self) -> impl Iterator<Item = &RecordBatch> {
        self.partitions.iter().flat_map(|p| p.chunks.iter())
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
            schema: self.schema.clone(),
            partitions: self.partitions.clone(),
            indexes,
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
            schema: self.schema.clone(),
            partitions: vec![Partition::default(); self.partitions.len()],
            indexes: self
                .indexes
                .iter()
                .map(|i| TableIndex::empty((*i.def).clone()))
                .collect(),
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

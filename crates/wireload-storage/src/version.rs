//! Immutable table versions: partitions holding lists of Arrow chunks.

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;

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
}

impl TableVersion {
    /// Version 0: `partitions` empty partitions.
    pub fn empty(partitions: usize, schema: SchemaRef) -> Self {
        TableVersion {
            number: 0,
            schema,
            partitions: vec![Partition::default(); partitions],
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

    /// The next version: this one's chunks followed by `added[p]` in partition `p`.
    pub fn with_appended(&self, added: Vec<Vec<RecordBatch>>) -> TableVersion {
        assert_eq!(
            added.len(),
            self.partitions.len(),
            "one chunk list per partition"
        );
        let partitions = self
            .partitions
            .iter()
            .zip(added)
            .map(|(p, new)| {
                let mut chunks = p.chunks.clone();
                chunks.extend(new.into_iter().filter(|b| b.num_rows() > 0));
                Partition { chunks }
            })
            .collect();
        TableVersion {
            number: self.number + 1,
            schema: self.schema.clone(),
            partitions,
        }
    }

    /// The next version with `partitions` replacing this one's (for merges that rewrite chunks).
    pub fn replaced(&self, partitions: Vec<Partition>) -> TableVersion {
        assert_eq!(
            partitions.len(),
            self.partitions.len(),
            "one partition per partition"
        );
        TableVersion {
            number: self.number + 1,
            schema: self.schema.clone(),
            partitions,
        }
    }
}

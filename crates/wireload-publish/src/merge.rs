//! Merge strategies: how task buffers become the new table version's chunks.
//!
//! * `chunk`: every buffer becomes a chunk (a pointer append), in input order.
//! * `copy`: a partition's buffers are copied into one contiguous chunk, columns in parallel.
//! * `insert`: finished buffers are appended value by value to one growing chunk per
//!   partition, under a lock, in input order, while other tasks still run.

use std::collections::BTreeMap;
use std::sync::Mutex;

use arrow::array::ArrayRef;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;
use wireload_types::{ColumnBuilder, ColumnDef};

/// The insert strategy's shared state: the growing partitions and buffers that finished
/// before their turn.
pub(crate) struct InsertMerge {
    inner: Mutex<InsertState>,
}

struct InsertState {
    next: usize,
    parked: BTreeMap<usize, Vec<Option<RecordBatch>>>,
    builders: Vec<Vec<ColumnBuilder>>,
}

impl InsertMerge {
    pub(crate) fn new(columns: &[ColumnDef], partitions: usize) -> Self {
        let builders = (0..partitions)
            .map(|_| {
                columns
                    .iter()
                    .map(|c| ColumnBuilder::new(&c.ty, c.nullable, 0, 0))
                    .collect()
            })
            .collect();
        InsertMerge {
            inner: Mutex::new(InsertState {
                next: 0,
                parked: BTreeMap::new(),
                builders,
            }),
        }
    }

    /// Hands over the buffers of task `index`; inserts every buffer whose turn has come.
    pub(crate) fn offer(&self, index: usize, buffers: Vec<Option<RecordBatch>>) {
        let mut st = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        st.parked.insert(index, buffers);
        loop {
            let next = st.next;
            let Some(bufs) = st.parked.remove(&next) else {
                break;
            };
            for (p, buf) in bufs.into_iter().enumerate() {
                if let Some(batch) = buf {
                    for (b, col) in st.builders[p].iter_mut().zip(batch.columns()) {
                        b.append_array(col);
                    }
                }
            }
            st.next += 1;
        }
    }

    /// The merged chunk of every partition (once: the builders are taken).
    pub(crate) fn finish(&self, schema: &SchemaRef) -> Vec<Vec<RecordBatch>> {
        let mut st = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        assert!(
            st.parked.is_empty(),
            "every task offered its buffers in turn"
        );
        std::mem::take(&mut st.builders)
            .into_iter()
            .map(|mut bs| {
                let arrays: Vec<ArrayRef> = bs.iter_mut().map(ColumnBuilder::finish).collect();
                let batch = RecordBatch::try_new(schema.clone(), arrays).expect("schema matches");
                if batch.num_rows() > 0 {
                    vec![batch]
                } else {
                    vec![]
                }
            })
            .collect()
    }
}

/// Chunk merge: buffers of each partition in task order.
pub(crate) fn chunk_merge(
    outputs: Vec<Vec<Option<RecordBatch>>>,
    partitions: usize,
) -> Vec<Vec<RecordBatch>> {
    let mut out: Vec<Vec<RecordBatch>> = vec![Vec::new(); partitions];
    for buffers in outputs {
        for (p, b) in buffers.into_iter().enumerate() {
            if let Some(b) = b {
                out[p].push(b);
            }
        }
    }
    out
}

/// Copy merge: one contiguous chunk per partition, columns concatenated in parallel.
pub(crate) fn copy_merge(
    outputs: Vec<Vec<Option<RecordBatch>>>,
    partitions: usize,
    schema: &SchemaRef,
) -> Vec<Vec<RecordBatch>> {
    let per_part = chunk_merge(outputs, partitions);
    per_part
        .into_par_iter()
        .map(|batches| {
            if batches.len() <= 1 {
                return batches;
            }
            let ncols = schema.fields().len();
            let columns: Vec<ArrayRef> = (0..ncols)
                .into_par_iter()
                .map(|c| {
                    let parts: Vec<&dyn arrow::array::Array> =
                        batches.iter().map(|b| b.column(c).as_ref()).collect();
                    arrow::compute::concat(&parts).expect("same types")
                })
                .collect();
            vec![RecordBatch::try_new(schema.clone(), columns).expect("schema matches")]
        })
        .collect()
}

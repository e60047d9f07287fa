//! The host image of what one partition's passes produce: the columns' buffers as the
//! kernels laid them out, the fallback list, the status, and (when asked for) every
//! intermediate array, so two implementations of the passes can be compared byte for byte.

use arrow::buffer::MutableBuffer;

use crate::layout::{ChunkCount, Fallback, Span, Status};

/// One column's output buffers.
#[derive(Debug)]
pub struct ColumnOut {
    /// Numeric: one value per row (BOOLEAN: bits in 32-bit words); strings: the bytes.
    pub values: MutableBuffer,
    /// One bit per row in 32-bit words (set: not NULL).
    pub validity: Vec<u32>,
    /// Strings: `rows + 1` offsets.
    pub offsets: Vec<u32>,
}

/// Every intermediate array of a partition's passes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Trace {
    /// Per chunk, from the count pass.
    pub counts: Vec<ChunkCount>,
    /// Per chunk, the exclusive scan of `counts`.
    pub prefix: Vec<ChunkCount>,
    /// The combination of all counts.
    pub total: ChunkCount,
    /// Quoted passes: the FieldsIndex with sentinels.
    pub index: Vec<u32>,
    /// Quoted passes: the FieldsIndex without sentinels.
    pub compacted: Vec<u32>,
    /// Quoted passes: per row, the index of its record delimiter in `compacted`.
    pub row_end: Vec<u32>,
    /// Per column with a tape: the tape (empty for strings).
    pub tapes: Vec<Vec<u8>>,
    /// Per string column: the spans (empty for the other columns).
    pub spans: Vec<Vec<Span>>,
}

/// What one partition's passes produced.
#[derive(Debug)]
pub struct PartitionBuffers {
    /// Records in the partition.
    pub rows: usize,
    /// The quoted passes ran (else the fast ones).
    pub quoted: bool,
    /// The partition has an odd number of quotes (a quoted field never closed).
    pub unterminated: bool,
    /// Errors and the fallback count.
    pub status: Status,
    /// The fallback entries (in the order the kernels appended them).
    pub fallbacks: Vec<Fallback>,
    /// Per column.
    pub columns: Vec<ColumnOut>,
    /// The intermediates, when asked for (only tests ask).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub trace: Option<Trace>,
}

impl PartitionBuffers {
    /// A partition with an odd number of quotes: the passes stop after the scan.
    pub fn unterminated(trace: Option<Trace>) -> Self {
        PartitionBuffers {
            rows: 0,
            quoted: true,
            unterminated: true,
            status: Status::default(),
            fallbacks: Vec::new(),
            columns: Vec::new(),
            trace,
        }
    }

    /// A partition whose fields pass flagged an error: the passes stop there, so it has
    /// no outputs (the CPU loader names the error).
    pub fn flagged(rows: usize, quoted: bool, status: Status, trace: Option<Trace>) -> Self {
        PartitionBuffers {
            rows,
            quoted,
            unterminated: false,
            status,
            fallbacks: Vec::new(),
            columns: Vec::new(),
            trace,
        }
    }

    /// Whether the passes flagged an error the CPU loader must name.
    pub fn has_error(&self) -> bool {
        self.unterminated
            || self.status.error_at != crate::layout::NONE
            || self.status.error_pos != crate::layout::NONE
    }

    /// Whether the fallback list overflowed.
    pub fn overflowed(&self) -> bool {
        self.status.fallbacks as usize > self.fallbacks.len()
    }

    /// The fallback entries in (row, column) order, for comparisons.
    #[cfg(feature = "testing")]
    pub fn sorted_fallbacks(&self) -> Vec<Fallback> {
        let mut v = self.fallbacks.clone();
        v.sort_by_key(|f| (f.row, f.col, f.kind));
        v
    }
}

/// Words of a bitmap of `rows` bits.
pub fn bitmap_words(rows: usize) -> usize {
    rows.div_ceil(32)
}

#[cfg(feature = "testing")]
impl PartitionBuffers {
    /// Where `self` and `other` differ (rows, mode, status, every output byte, the
    /// fallbacks as a set, and the intermediates both traced), or `None`.
    ///
    /// When both flag an error, only the flags and the FieldsIndex intermediates are
    /// compared: a record with the wrong number of fields leaves cells of its row
    /// unwritten, so the tapes and outputs of such a partition are undefined (it goes to
    /// the CPU loader).
    pub fn diff(&self, other: &PartitionBuffers) -> Option<String> {
        if (self.rows, self.quoted, self.unterminated)
            != (other.rows, other.quoted, other.unterminated)
        {
            return Some(format!(
                "rows/quoted/unterminated {:?} vs {:?}",
                (self.rows, self.quoted, self.unterminated),
                (other.rows, other.quoted, other.unterminated)
            ));
        }
        let errors = |s: &Status| (s.error_at, s.error_pos);
        if errors(&self.status) != errors(&other.status) {
            return Some(format!("status {:?} vs {:?}", self.status, other.status));
        }
        if self.has_error() {
            return match (&self.trace, &other.trace) {
                (Some(a), Some(b))
                    if (
                        &a.counts,
                        &a.prefix,
                        a.total,
                        &a.index,
                        &a.compacted,
                        &a.row_end,
                    ) != (
                        &b.counts,
                        &b.prefix,
                        b.total,
                        &b.index,
                        &b.compacted,
                        &b.row_end,
                    ) =>
                {
                    Some("the FieldsIndex intermediates differ".into())
                }
                _ => None,
            };
        }
        if self.status != other.status {
            return Some(format!("status {:?} vs {:?}", self.status, other.status));
        }
        if !self.overflowed() && self.sorted_fallbacks() != other.sorted_fallbacks() {
            return Some(format!(
                "fallbacks {:?} vs {:?}",
                self.sorted_fallbacks(),
                other.sorted_fallbacks()
            ));
        }
        if let (Some(a), Some(b)) = (&self.trace, &other.trace) {
            let fields: [(&str, bool); 8] = [
                ("counts", a.counts == b.counts),
                ("prefix", a.prefix == b.prefix),
                ("total", a.total == b.total),
                ("index", a.index == b.index),
                ("compacted", a.compacted == b.compacted),
                ("row_end", a.row_end == b.row_end),
                ("tapes", a.tapes == b.tapes),
                ("spans", a.spans == b.spans),
            ];
            if let Some((name, _)) = fields.iter().find(|(_, same)| !same) {
                return Some(format!("trace.{name} differs"));
            }
        }
        if self.columns.len() != other.columns.len() {
            return Some("column count differs".into());
        }
        for (c, (x, y)) in self.columns.iter().zip(&other.columns).enumerate() {
            if x.values.as_slice() != y.values.as_slice() {
                let at = x
                    .values
                    .as_slice()
                    .iter()
                    .zip(y.values.as_slice())
                    .position(|(p, q)| p != q);
                return Some(format!(
                    "column {c}: values differ (lengths {} vs {}, first at byte {at:?})",
                    x.values.len(),
                    y.values.len()
                ));
            }
            if x.validity != y.validity {
                return Some(format!("column {c}: validity differs"));
            }
            if x.offsets != y.offsets {
                return Some(format!("column {c}: offsets differ"));
            }
        }
        None
    }
}

//! The field index of a batch of records: where each field's text is.

/// Bit of `Span::end` set when the field was quoted.
const QUOTED: u32 = 1 << 31;
/// Bit of `Span::end` set when the field's text lives in the scratch buffer.
const ESCAPED: u32 = 1 << 30;
/// The offset (or side-table index) bits of `Span::end`.
const LOW: u32 = ESCAPED - 1;
/// Largest relative offset a span can hold.
pub(crate) const MAX_REL: usize = LOW as usize;

/// Where one field's text is: `start..end` relative to the batch base, quotes excluded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    end: u32,
}

/// Fields of up to `max_rows` records, row-major, `ncols + 1` slots per record (the extra
/// slot absorbs a trailing delimiter). Reused across batches: no allocation per field.
#[derive(Debug, Clone)]
pub struct FieldBatch {
    ncols: usize,
    stride: usize,
    base: usize,
    rows: usize,
    spans: Vec<Span>,
    row_starts: Vec<u32>,
    escaped: Vec<(u32, u32)>,
    scratch: Vec<u8>,
}

impl FieldBatch {
    /// An empty batch for records of `ncols` fields.
    pub fn new(ncols: usize) -> Self {
        FieldBatch {
            ncols,
            stride: ncols + 1,
            base: 0,
            rows: 0,
            spans: Vec::new(),
            row_starts: Vec::new(),
            escaped: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Number of records in the batch.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Fields per record.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Byte offset in the input where record `row` starts.
    pub fn row_start(&self, row: usize) -> usize {
        self.base + self.row_starts[row] as usize
    }

    /// The text of field `col` of record `row` (unescaped) and whether it was quoted.
    /// `data` is the input the batch was scanned from.
    #[inline(always)]
    pub fn field<'a>(&'a self, data: &'a [u8], row: usize, col: usize) -> (&'a [u8], bool) {
        let s = self.spans[row * self.stride + col];
        let quoted = s.end & QUOTED != 0;
        if s.end & ESCAPED != 0 {
            let (a, b) = self.escaped[(s.end & LOW) as usize];
            (&self.scratch[a as usize..b as usize], quoted)
        } else {
            (
                &data[self.base + s.start as usize..self.base + (s.end & LOW) as usize],
                quoted,
            )
        }
    }

    /// Byte offset in the input of the first byte of field `col` of record `row`
    /// (the opening quote of a quoted field).
    pub fn field_offset(&self, row: usize, col: usize) -> usize {
        let s = self.spans[row * self.stride + col];
        let quoted = s.end & QUOTED != 0;
        self.base + s.start as usize - usize::from(quoted)
    }

    /// Empties the batch; the next record scanned starts at `base`.
    pub(crate) fn reset(&mut self, base: usize, max_rows: usize) {
        self.base = base;
        self.rows = 0;
        self.escaped.clear();
        self.scratch.clear();
        self.row_starts.clear();
        let need = max_rows * self.stride;
        if self.spans.len() < need {
            self.spans.resize(need, Span::default());
        }
    }

    /// Base offset of the batch.
    pub(crate) fn base(&self) -> usize {
        self.base
    }

    /// Slot capacity in records.
    pub(crate) fn capacity_rows(&self) -> usize {
        self.spans.len() / self.stride
    }

    /// Stores field `k` of the record being built (row `self.rows`); `k < stride`.
    #[inline(always)]
    pub(crate) fn set_plain(&mut self, k: usize, start: usize, end: usize, quoted: bool) {
        let rel_s = (start - self.base) as u32;
        let rel_e = (end - self.base) as u32 | if quoted { QUOTED } else { 0 };
        self.spans[self.rows * self.stride + k] = Span {
            start: rel_s,
            end: rel_e,
        };
    }

    /// Stores field `k` whose unescaped text is `scratch[from..]`; `start` is its raw content start.
    pub(crate) fn set_escaped(&mut self, k: usize, start: usize, from: usize) {
        let idx = self.escaped.len() as u32;
        self.escaped.push((from as u32, self.scratch.len() as u32));
        let rel_s = (start - self.base) as u32;
        self.spans[self.rows * self.stride + k] = Span {
            start: rel_s,
            end: idx | QUOTED | ESCAPED,
        };
    }

    /// The scratch buffer escaped fields are written into.
    pub(crate) fn scratch_mut(&mut self) -> &mut Vec<u8> {
        &mut self.scratch
    }

    /// Ends the record being built, which started at `record_start`.
    #[inline(always)]
    pub(crate) fn commit_row(&mut self, record_start: usize) {
        self.row_starts.push((record_start - self.base) as u32);
        self.rows += 1;
    }
}

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

    /// The fields of column `col`, record by record: `(text, quoted)` as
    /// [`field`](Self::field) gives them. `data` is the input the batch was scanned from.
    #[inline]
    pub fn column<'a>(&'a self, data: &'a [u8], col: usize) -> ColumnFields<'a> {
        ColumnFields {
            spans: self.spans.get(col..self.rows * self.stride).unwrap_or(&[]),
            next: 0,
            stride: self.stride,
            data: &data[self.base.min(data.len())..],
            batch: self,
        }
    }

    /// The unescaped text of the escaped field `idx` of the side table.
    #[cold]
    #[inline(never)]
    fn escaped_text(&self, idx: u32) -> &[u8] {
        let (a, b) = self.escaped[idx as usize];
        &self.scratch[a as usize..b as usize]
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
        let need = max_rows * self.stride + WINDOW;
        if self.spans.len() < need {
            self.spans.resize(need, Span::default());
        }
        if self.row_starts.len() < max_rows {
            self.row_starts.resize(max_rows, 0);
        }
    }

    /// A writer that fills the batch with its state in locals (the scan's hot loop);
    /// [`Fill::done`] hands the row count back.
    #[inline(always)]
    pub(crate) fn fill(&mut self) -> Fill<'_> {
        Fill {
            spans: &mut self.spans,
            row_starts: &mut self.row_starts,
            escaped: &mut self.escaped,
            scratch: &mut self.scratch,
            rows_out: &mut self.rows,
            rows: 0,
            base: self.base,
        }
        .resume()
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
        self.row_starts[self.rows] = (record_start - self.base) as u32;
        self.rows += 1;
    }
}

/// The fields of one column of a [`FieldBatch`]; see [`FieldBatch::column`].
#[derive(Debug, Clone)]
pub struct ColumnFields<'a> {
    /// the batch's spans from the column's first field to the end of the last record
    spans: &'a [Span],
    /// index in `spans` of the next field (one compare a field, unlike `step_by`)
    next: usize,
    stride: usize,
    /// the input from the batch base on
    data: &'a [u8],
    batch: &'a FieldBatch,
}

impl<'a> Iterator for ColumnFields<'a> {
    type Item = (&'a [u8], bool);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let s = *self.spans.get(self.next)?;
        self.next += self.stride;
        let quoted = s.end & QUOTED != 0;
        let text = if s.end & ESCAPED == 0 {
            &self.data[s.start as usize..(s.end & LOW) as usize]
        } else {
            self.batch.escaped_text(s.end & LOW)
        };
        Some((text, quoted))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self
            .spans
            .len()
            .saturating_sub(self.next)
            .div_ceil(self.stride);
        (n, Some(n))
    }
}

impl ExactSizeIterator for ColumnFields<'_> {}

/// A [`FieldBatch`] being filled, borrowed apart so that its pointers and counters live
/// in registers; see [`FieldBatch::fill`].
pub(crate) struct Fill<'b> {
    spans: &'b mut [Span],
    row_starts: &'b mut [u32],
    escaped: &'b mut Vec<(u32, u32)>,
    scratch: &'b mut Vec<u8>,
    rows_out: &'b mut usize,
    /// records in the batch
    pub(crate) rows: usize,
    base: usize,
}

impl Fill<'_> {
    #[inline(always)]
    fn resume(mut self) -> Self {
        self.rows = *self.rows_out;
        self
    }

    /// Stores the rows count back into the batch.
    #[inline(always)]
    pub(crate) fn done(self) {
        *self.rows_out = self.rows;
    }

    /// Offset in the input that span offsets are relative to.
    #[inline(always)]
    pub(crate) fn base(&self) -> usize {
        self.base
    }

    /// Stores an unquoted field at `rel_s..rel_e` (relative to the base) in `slot`.
    #[inline(always)]
    pub(crate) fn put(&mut self, slot: usize, rel_s: u32, rel_e: u32) {
        self.spans[slot] = Span {
            start: rel_s,
            end: rel_e,
        };
    }

    /// Stores in `slot` the quoted field whose content (between its quotes) is
    /// `data[start..end]`; see [`quoted_span`].
    #[inline]
    pub(crate) fn put_quoted(
        &mut self,
        slot: usize,
        data: &[u8],
        start: usize,
        end: usize,
        q: Quoting,
    ) {
        self.spans[slot] = quoted_span(data, start, end, q, self.base, self.escaped, self.scratch);
    }

    /// The window of [`WINDOW`] slots from `slot0`, if the batch has them.
    #[inline(always)]
    pub(crate) fn window(&mut self, slot0: usize) -> Option<Window<'_>> {
        let spans = self.spans.get_mut(slot0..slot0 + WINDOW)?.try_into().ok()?;
        Some(Window {
            spans,
            slot0,
            escaped: self.escaped,
            scratch: self.scratch,
            row_starts: self.row_starts,
            rows: &mut self.rows,
            base: self.base,
        })
    }

    /// See [`FieldBatch::commit_row`].
    #[inline(always)]
    pub(crate) fn commit_row(&mut self, record_start: usize) {
        self.row_starts[self.rows] = (record_start - self.base) as u32;
        self.rows += 1;
    }
}

/// Slots one 64-byte block can write from the slot of its first field: each structural
/// byte ends a field (one slot) and may end a record (one more skipped slot).
pub(crate) const WINDOW: usize = 128;

/// The quote character and whether doubled quotes are escapes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quoting {
    /// the quote character
    pub(crate) quote: u8,
    /// a doubled quote inside quotes is one literal quote
    pub(crate) doubling: bool,
}

/// The span of a quoted field whose content (between its quotes) is `data[start..end]`;
/// doubled quotes are unescaped into `scratch` (the span then points there).
#[inline]
fn quoted_span(
    data: &[u8],
    start: usize,
    end: usize,
    q: Quoting,
    base: usize,
    escaped: &mut Vec<(u32, u32)>,
    scratch: &mut Vec<u8>,
) -> Span {
    let content = &data[start..end];
    if q.doubling && memchr::memchr(q.quote, content).is_some() {
        let from = scratch.len();
        let mut rest = content;
        while let Some(i) = memchr::memchr(q.quote, rest) {
            scratch.extend_from_slice(&rest[..=i]);
            rest = &rest[i + 2..]; // skip the second quote of the pair
        }
        scratch.extend_from_slice(rest);
        let idx = escaped.len() as u32;
        escaped.push((from as u32, scratch.len() as u32));
        Span {
            start: (start - base) as u32,
            end: idx | QUOTED | ESCAPED,
        }
    } else {
        Span {
            start: (start - base) as u32,
            end: (end - base) as u32 | QUOTED,
        }
    }
}

/// [`WINDOW`] span slots of a [`Fill`] from `slot0`, indexed without bounds checks
/// (offsets are masked; the scan guarantees they stay below [`WINDOW`] in valid input).
pub(crate) struct Window<'w> {
    spans: &'w mut [Span; WINDOW],
    slot0: usize,
    escaped: &'w mut Vec<(u32, u32)>,
    scratch: &'w mut Vec<u8>,
    row_starts: &'w mut [u32],
    rows: &'w mut usize,
    base: usize,
}

impl Window<'_> {
    /// Records in the batch.
    #[inline(always)]
    pub(crate) fn rows(&self) -> usize {
        *self.rows
    }

    /// Stores an unquoted field at `rel_s..rel_e` (relative to the base) in `slot`.
    #[inline(always)]
    pub(crate) fn put(&mut self, slot: usize, rel_s: u32, rel_e: u32) {
        self.spans[slot.wrapping_sub(self.slot0) & (WINDOW - 1)] = Span {
            start: rel_s,
            end: rel_e,
        };
    }

    /// See [`Fill::put_quoted`].
    #[inline]
    pub(crate) fn put_quoted(
        &mut self,
        slot: usize,
        data: &[u8],
        start: usize,
        end: usize,
        q: Quoting,
    ) {
        self.spans[slot.wrapping_sub(self.slot0) & (WINDOW - 1)] =
            quoted_span(data, start, end, q, self.base, self.escaped, self.scratch);
    }

    /// See [`FieldBatch::commit_row`].
    #[inline(always)]
    pub(crate) fn commit_row(&mut self, record_start: usize) {
        self.row_starts[*self.rows] = (record_start - self.base) as u32;
        *self.rows += 1;
    }
}

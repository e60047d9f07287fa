//! The structural scan: records of a chunk into a [`FieldBatch`], 64 bytes at a time.
//!
//! Per block, the classifier gives delimiter, quote and newline masks. A prefix XOR of the
//! quote mask gives the in-quote mask `x` (RFC 4180 doubled quotes toggle twice, so the
//! toggle model is exact); structural bytes are delimiters and newlines outside quotes.
//! Strict RFC 4180 is checked with the same masks: an opening quote must start a field (or,
//! with doubled quotes, follow a closing quote), and a closing quote must be followed by a
//! structural byte, a doubled quote or the end of input. Errors become events ordered with
//! the structural bytes, so the first error in byte order is the one reported.

use crate::block::{Specials, classify, prefix_xor};
use crate::dialect::{Dialect, ScanMode};
use crate::error::{DialectError, ScanError, ScanErrorKind};
use crate::fields::{FieldBatch, MAX_REL};
use crate::reference::RefScanner;

/// A dialect prepared for scanning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanConfig {
    /// delimiter and quote
    pub specials: Specials,
    /// an escape character distinct from the quote (backslash style), if any
    pub escape: Option<u8>,
    /// a doubled quote inside a quoted field is a literal quote (escape == quote)
    pub doubling: bool,
    /// fast mode: a record delimiter inside quotes is an error
    pub fast: bool,
    /// a byte that is none of the special characters, used to pad the last block
    pad: u8,
}

impl ScanConfig {
    /// Prepares `dialect` for scanning in `mode`.
    pub fn new(dialect: &Dialect, mode: ScanMode) -> Result<Self, DialectError> {
        dialect.validate()?;
        let quote = dialect.quote;
        let doubling = quote.is_some() && dialect.escape == quote;
        let escape = if quote.is_some() && !doubling {
            dialect.escape
        } else {
            None
        };
        let specials = [
            Some(dialect.delimiter),
            quote,
            escape,
            Some(b'\n'),
            Some(b'\r'),
        ];
        let pad = (b'a'..=255)
            .find(|c| !specials.contains(&Some(*c)))
            .unwrap_or(b'a');
        Ok(ScanConfig {
            specials: Specials {
                delimiter: dialect.delimiter,
                quote,
            },
            escape,
            doubling,
            fast: mode == ScanMode::Fast,
            pad,
        })
    }

    /// True when the block scanner can handle this dialect (no distinct escape character).
    pub fn block_scannable(&self) -> bool {
        self.escape.is_none()
    }
}

/// Scans the records that start in a byte range of the input.
#[derive(Debug, Clone)]
pub enum Scanner<'a> {
    /// 64-byte block scanner (all dialects without a distinct escape character).
    Blocks(BlockScanner<'a>),
    /// byte-at-a-time scanner (every dialect)
    Reference(RefScanner<'a>),
}

impl<'a> Scanner<'a> {
    /// Scans the records of `data` that start in `start..end` (`start` must be a record
    /// start), expecting `ncols` fields per record.
    pub fn new(cfg: &ScanConfig, data: &'a [u8], start: usize, end: usize, ncols: usize) -> Self {
        if cfg.block_scannable() {
            Scanner::Blocks(BlockScanner::new(cfg, data, start, end, ncols))
        } else {
            Scanner::Reference(RefScanner::new(cfg, data, start, end, ncols))
        }
    }

    /// Fills `batch` with up to `max_rows` records; returns false once the range is exhausted.
    pub fn next_batch(
        &mut self,
        batch: &mut FieldBatch,
        max_rows: usize,
    ) -> Result<bool, ScanError> {
        match self {
            Scanner::Blocks(s) => s.next_batch(batch, max_rows),
            Scanner::Reference(s) => s.next_batch(batch, max_rows),
        }
    }

    /// Offset of the first byte not yet consumed (after the last record returned).
    pub fn position(&self) -> usize {
        match self {
            Scanner::Blocks(s) => s.record_start,
            Scanner::Reference(s) => s.position(),
        }
    }
}

/// Block-at-a-time scanner; see the module documentation.
#[derive(Debug, Clone)]
pub struct BlockScanner<'a> {
    cfg: ScanConfig,
    data: &'a [u8],
    end: usize,
    ncols: usize,
    stride: usize,
    // the current block
    block_pos: usize,
    events: u64,
    newline: u64,
    bad_open: u64,
    bad_after_close: u64,
    fast_nl: u64,
    // carries into the next block
    next_pos: usize,
    quote_carry: u64,
    fs_carry: u64,
    close_carry: u64,
    // the record being scanned
    record_start: usize,
    field_start: usize,
    k: usize,
    last_empty_unquoted: bool,
    done: bool,
}

impl<'a> BlockScanner<'a> {
    /// See [`Scanner::new`].
    pub fn new(cfg: &ScanConfig, data: &'a [u8], start: usize, end: usize, ncols: usize) -> Self {
        BlockScanner {
            cfg: *cfg,
            data,
            end,
            ncols,
            stride: ncols + 1,
            block_pos: start,
            events: 0,
            newline: 0,
            bad_open: 0,
            bad_after_close: 0,
            fast_nl: 0,
            next_pos: start,
            quote_carry: 0,
            fs_carry: 1,
            close_carry: 0,
            record_start: start,
            field_start: start,
            k: 0,
            last_empty_unquoted: false,
            done: start >= end || start >= data.len(),
        }
    }

    /// Loads the block at `next_pos` and computes its event masks; false at end of input.
    #[inline(always)]
    fn load_block(&mut self) -> bool {
        let len = self.data.len();
        let pos = self.next_pos;
        if pos >= len {
            return false;
        }
        let mut tail = [self.cfg.pad; 64];
        let (block, valid): (&[u8; 64], usize) = match self.data.get(pos..pos + 64) {
            Some(b) => (b.try_into().expect("64 bytes"), 64),
            None => {
                let n = len - pos;
                tail[..n].copy_from_slice(&self.data[pos..]);
                (&tail, n)
            }
        };
        let m = classify(block, self.cfg.specials);
        let valid_mask = if valid == 64 {
            u64::MAX
        } else {
            (1u64 << valid) - 1
        };
        let eof_bit = if pos + 64 >= len && valid < 64 {
            1u64 << valid
        } else {
            0
        };
        let x = prefix_xor(m.quote) ^ self.quote_carry;
        let st = (m.delimiter | m.newline) & !x & valid_mask;
        let mut bad_open = 0;
        let mut bad_after_close = 0;
        if (m.quote | self.close_carry) != 0 {
            let open = m.quote & x;
            let close = m.quote & !x;
            let fs_bits = (st << 1) | self.fs_carry;
            let after_close = (close << 1) | self.close_carry;
            let valid_open = open & (fs_bits | if self.cfg.doubling { after_close } else { 0 });
            bad_open = open & !valid_open & valid_mask;
            let follow_ok = st | eof_bit | if self.cfg.doubling { open } else { 0 };
            bad_after_close = after_close & !follow_ok & valid_mask;
            self.close_carry = close >> 63;
        }
        let fast_nl = if self.cfg.fast {
            m.newline & x & valid_mask
        } else {
            0
        };
        self.fs_carry = st >> 63;
        self.quote_carry = if (x >> 63) & 1 == 1 { u64::MAX } else { 0 };
        self.block_pos = pos;
        self.newline = m.newline;
        self.bad_open = bad_open;
        self.bad_after_close = bad_after_close;
        self.fast_nl = fast_nl;
        self.events = st | bad_open | bad_after_close | fast_nl;
        self.next_pos = pos + 64;
        true
    }

    /// See [`Scanner::next_batch`].
    pub fn next_batch(
        &mut self,
        batch: &mut FieldBatch,
        max_rows: usize,
    ) -> Result<bool, ScanError> {
        batch.reset(self.record_start, max_rows);
        debug_assert!(batch.capacity_rows() >= max_rows);
        if max_rows == 0 {
            return Ok(!self.done);
        }
        while !self.done {
            while self.events != 0 {
                let bit = self.events.trailing_zeros();
                self.events &= self.events - 1;
                let pos = self.block_pos + bit as usize;
                if (self.bad_open | self.bad_after_close | self.fast_nl) >> bit & 1 == 1 {
                    return Err(self.error_at(bit, pos));
                }
                self.end_field(batch, pos)?;
                if self.newline >> bit & 1 == 1 {
                    self.end_record(batch, pos)?;
                    if pos + 1 >= self.end {
                        self.done = true;
                        return Ok(false);
                    }
                    if batch.rows() == max_rows {
                        return Ok(true);
                    }
                }
            }
            if !self.load_block() {
                self.finish_input(batch)?;
                self.done = true;
                return Ok(false);
            }
        }
        Ok(false)
    }

    /// At the end of the input: close the last record, or report an open quote.
    fn finish_input(&mut self, batch: &mut FieldBatch) -> Result<(), ScanError> {
        let len = self.data.len();
        if self.quote_carry != 0 {
            return Err(ScanError {
                kind: ScanErrorKind::UnterminatedQuote,
                at: self.field_start,
                record_start: self.record_start,
                field: self.k + 1,
            });
        }
        if self.field_start < len || self.k > 0 {
            self.end_field(batch, len)?;
            self.end_record(batch, len)?;
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn error_at(&self, bit: u32, pos: usize) -> ScanError {
        let (kind, at) = if self.fast_nl >> bit & 1 == 1 {
            (ScanErrorKind::QuotedRecordDelimiter, self.field_start)
        } else if self.bad_after_close >> bit & 1 == 1 {
            (ScanErrorKind::TextAfterClosingQuote, pos)
        } else {
            (ScanErrorKind::QuoteInUnquotedField, pos)
        };
        ScanError {
            kind,
            at,
            record_start: self.record_start,
            field: self.k + 1,
        }
    }

    /// Ends the field that runs from `field_start` to the structural byte at `e`.
    #[inline(always)]
    fn end_field(&mut self, batch: &mut FieldBatch, e: usize) -> Result<(), ScanError> {
        let fs = self.field_start;
        if e - batch.base() > MAX_REL {
            return Err(ScanError {
                kind: ScanErrorKind::RecordTooLarge,
                at: self.record_start,
                record_start: self.record_start,
                field: self.k + 1,
            });
        }
        let k = self.k;
        if k < self.stride {
            match self.cfg.specials.quote {
                Some(q) if fs < e && self.data[fs] == q => {
                    // validated: data[e - 1] is the closing quote
                    let content = &self.data[fs + 1..e - 1];
                    if self.cfg.doubling && memchr::memchr(q, content).is_some() {
                        let scratch = batch.scratch_mut();
                        let from = scratch.len();
                        let mut rest = content;
                        while let Some(i) = memchr::memchr(q, rest) {
                            scratch.extend_from_slice(&rest[..=i]);
                            rest = &rest[i + 2..]; // skip the second quote of the pair
                        }
                        scratch.extend_from_slice(rest);
                        batch.set_escaped(k, fs + 1, from);
                    } else {
                        batch.set_plain(k, fs + 1, e - 1, true);
                    }
                    self.last_empty_unquoted = false;
                }
                _ => {
                    batch.set_plain(k, fs, e, false);
                    self.last_empty_unquoted = fs == e;
                }
            }
        }
        self.k = k + 1;
        self.field_start = e + 1;
        Ok(())
    }

    /// Ends the record at the record delimiter at `e` (or the end of input).
    #[inline(always)]
    fn end_record(&mut self, batch: &mut FieldBatch, e: usize) -> Result<(), ScanError> {
        let k = self.k;
        let rs = self.record_start;
        self.k = 0;
        self.record_start = e + 1;
        if keep_record(k, self.ncols, self.last_empty_unquoted, rs)? {
            batch.commit_row(rs);
        }
        Ok(())
    }
}

/// The end-of-record rule both scanners share: a record of `k` fields starting at `rs`
/// whose last field was empty and unquoted (`last_empty_unquoted`) is an empty line to
/// skip (`Ok(false)`), a record to keep (`Ok(true)`: `ncols` fields, or `ncols + 1` with an
/// empty last field from a trailing delimiter), or a field-count error.
#[inline(always)]
pub(crate) fn keep_record(
    k: usize,
    ncols: usize,
    last_empty_unquoted: bool,
    rs: usize,
) -> Result<bool, ScanError> {
    if k == 1 && last_empty_unquoted {
        return Ok(false);
    }
    if k == ncols || (k == ncols + 1 && last_empty_unquoted) {
        return Ok(true);
    }
    Err(ScanError {
        kind: ScanErrorKind::FieldCount {
            found: k,
            expected: ncols,
        },
        at: rs,
        record_start: rs,
        field: k,
    })
}

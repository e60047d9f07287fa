//! The structural scan: records of a chunk into a [`FieldBatch`], 64 bytes at a time.
//!
//! Per block, the classifier gives delimiter, quote and newline masks. A prefix XOR of the
//! quote mask gives the in-quote mask `x` (RFC 4180 doubled quotes toggle twice, so the
//! toggle model is exact); structural bytes are delimiters and newlines outside quotes.
//! Strict RFC 4180 is checked with the same masks: an opening quote must start a field (or,
//! with doubled quotes, follow a closing quote), and a closing quote must be followed by a
//! structural byte, a doubled quote or the end of input. Errors become events ordered with
//! the structural bytes, so the first error in byte order is the one reported.
//!
//! The classifier comes from the process's SIMD backend ([`Backend::selected`]); the loop
//! is compiled once per x86 backend with its target features. A block without errors
//! whose offsets fit a span takes the fast path ([`BlockScanner::drain_fast`]) with the
//! scan state in registers; other blocks go event by event through `end_field` and
//! `end_record`, which also find errors' exact places.

#[cfg(target_arch = "aarch64")]
use crate::block::neon;
#[cfg(target_arch = "x86_64")]
use crate::block::x86;
use crate::block::{Classifier, Masks, Portable, Specials};
use crate::dialect::{Dialect, ScanMode};
use crate::error::{DialectError, ScanError, ScanErrorKind};
use crate::fields::{FieldBatch, Fill, MAX_REL, Quoting, Window};
use crate::reference::RefScanner;
use crate::simd::Backend;

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
    /// start), expecting `ncols` fields per record, with this process's SIMD backend
    /// ([`Backend::selected`]).
    pub fn new(cfg: &ScanConfig, data: &'a [u8], start: usize, end: usize, ncols: usize) -> Self {
        Scanner::with_backend(Backend::selected(), cfg, data, start, end, ncols)
    }

    /// [`Scanner::new`] with a given backend (the scalar one where `backend` cannot run
    /// here); [`Backend::Scalar`] and dialects with a distinct escape character get the
    /// reference scanner.
    pub fn with_backend(
        backend: Backend,
        cfg: &ScanConfig,
        data: &'a [u8],
        start: usize,
        end: usize,
        ncols: usize,
    ) -> Self {
        if cfg.block_scannable() && backend != Backend::Scalar && backend.supported() {
            Scanner::Blocks(BlockScanner::with_backend(
                backend, cfg, data, start, end, ncols,
            ))
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

/// The block classifier a [`BlockScanner`] runs with.
#[derive(Debug, Clone, Copy)]
enum Kernel {
    Portable(Portable),
    #[cfg(target_arch = "x86_64")]
    Sse42(x86::Sse42),
    #[cfg(target_arch = "x86_64")]
    Avx2(x86::Avx2),
    #[cfg(target_arch = "x86_64")]
    Avx512(x86::Avx512),
    #[cfg(target_arch = "aarch64")]
    Neon(neon::Neon),
}

impl Kernel {
    /// `backend`'s classifier, or the portable one where it cannot run here.
    fn new(backend: Backend, s: Specials) -> Kernel {
        let kernel = match backend {
            #[cfg(target_arch = "x86_64")]
            Backend::Sse42 => x86::Sse42::new(s).map(Kernel::Sse42),
            #[cfg(target_arch = "x86_64")]
            Backend::Avx2 => x86::Avx2::new(s).map(Kernel::Avx2),
            #[cfg(target_arch = "x86_64")]
            Backend::Avx512 => x86::Avx512::new(s).map(Kernel::Avx512),
            #[cfg(target_arch = "aarch64")]
            Backend::Neon => neon::Neon::new(s).map(Kernel::Neon),
            _ => None,
        };
        kernel.unwrap_or(Kernel::Portable(Portable(s)))
    }
}

/// Defines the scan loop of an x86 backend: [`BlockScanner::scan`] compiled with the
/// backend's target features, so that the classifier's intrinsics inline into it.
macro_rules! x86_scan_loop {
    ($($name:ident: $classifier:ty, $features:literal;)*) => {$(
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        fn $name(
            s: &mut BlockScanner<'_>,
            c: $classifier,
            batch: &mut FieldBatch,
            max_rows: usize,
        ) -> Result<bool, ScanError> {
            s.scan(c, batch, max_rows)
        }
    )*};
}

x86_scan_loop! {
    scan_sse42: x86::Sse42, "sse4.2,pclmulqdq,popcnt";
    scan_avx2: x86::Avx2, "avx2,pclmulqdq,popcnt";
    scan_avx512: x86::Avx512, "avx512f,avx512bw,pclmulqdq,popcnt";
}

/// Block-at-a-time scanner; see the module documentation.
#[derive(Debug, Clone)]
pub struct BlockScanner<'a> {
    cfg: ScanConfig,
    kernel: Kernel,
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
    /// `bad_open | bad_after_close | fast_nl`
    errors: u64,
    /// whether the block holds a quote character
    block_quotes: bool,
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
    /// A block scanner classifying with `backend` (the portable classifier for
    /// [`Backend::Scalar`] and for backends this CPU cannot run).
    pub fn with_backend(
        backend: Backend,
        cfg: &ScanConfig,
        data: &'a [u8],
        start: usize,
        end: usize,
        ncols: usize,
    ) -> Self {
        BlockScanner {
            cfg: *cfg,
            kernel: Kernel::new(backend, cfg.specials),
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
            errors: 0,
            block_quotes: false,
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
    fn load_block<C: Classifier>(&mut self, c: C) -> bool {
        let pos = self.next_pos;
        prefetch(self.data.as_ptr().wrapping_add(pos + PREFETCH_DISTANCE));
        match self.data.get(pos..pos + 64) {
            Some(b) => {
                let m = c.classify(b.try_into().expect("64 bytes"));
                self.set_block(c, pos, m, u64::MAX, 0);
                true
            }
            None => self.load_tail(c),
        }
    }

    /// [`load_block`](Self::load_block) for the last, partial block: padded with a byte
    /// that is no special character.
    #[cold]
    #[inline(never)]
    fn load_tail<C: Classifier>(&mut self, c: C) -> bool {
        let len = self.data.len();
        let pos = self.next_pos;
        if pos >= len {
            return false;
        }
        let mut tail = [self.cfg.pad; 64];
        let valid = len - pos;
        tail[..valid].copy_from_slice(&self.data[pos..]);
        let m = c.classify(&tail);
        self.set_block(c, pos, m, (1u64 << valid) - 1, 1u64 << valid);
        true
    }

    /// Computes the event masks of the block at `pos` from its classification `m`: the
    /// bytes in `valid_mask` are input, `eof_bit` marks the end of input inside the block.
    #[inline(always)]
    fn set_block<C: Classifier>(
        &mut self,
        c: C,
        pos: usize,
        m: Masks,
        valid_mask: u64,
        eof_bit: u64,
    ) {
        let x = c.prefix_xor(m.quote) ^ self.quote_carry;
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
        self.errors = bad_open | bad_after_close | fast_nl;
        self.block_quotes = m.quote != 0;
        self.events = st | self.errors;
        self.next_pos = pos + 64;
    }

    /// See [`Scanner::next_batch`].
    pub fn next_batch(
        &mut self,
        batch: &mut FieldBatch,
        max_rows: usize,
    ) -> Result<bool, ScanError> {
        match self.kernel {
            Kernel::Portable(c) => self.scan(c, batch, max_rows),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Sse42` exists only when the CPU has SSE 4.2 and PCLMULQDQ (its
            // `new` checks), the features `scan_sse42` is compiled with; POPCNT comes
            // with SSE 4.2 on every x86-64 CPU and is checked by `Backend::supported` too.
            Kernel::Sse42(c) => unsafe { scan_sse42(self, c, batch, max_rows) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Avx2` exists only when the CPU has the features of `scan_avx2`.
            Kernel::Avx2(c) => unsafe { scan_avx2(self, c, batch, max_rows) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Avx512` exists only when the CPU has the features of `scan_avx512`.
            Kernel::Avx512(c) => unsafe { scan_avx512(self, c, batch, max_rows) },
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon(c) => self.scan(c, batch, max_rows),
        }
    }

    /// The scan loop with classifier `c`.
    #[inline(always)]
    fn scan<C: Classifier>(
        &mut self,
        c: C,
        batch: &mut FieldBatch,
        max_rows: usize,
    ) -> Result<bool, ScanError> {
        batch.reset(self.record_start, max_rows);
        debug_assert!(batch.capacity_rows() >= max_rows);
        if max_rows == 0 {
            return Ok(!self.done);
        }
        let mut fill = batch.fill();
        let result = self.scan_into(c, &mut fill, max_rows);
        fill.done();
        result
    }

    /// [`scan`](Self::scan) after the batch is reset.
    #[inline(always)]
    fn scan_into<C: Classifier>(
        &mut self,
        c: C,
        fill: &mut Fill<'_>,
        max_rows: usize,
    ) -> Result<bool, ScanError> {
        while !self.done {
            if self.errors == 0
                && self.block_pos + 64 - fill.base() <= MAX_REL
                && let Some(more) = self.drain_fast(c, fill, max_rows)?
            {
                return Ok(more);
            }
            while self.events != 0 {
                let bit = self.events.trailing_zeros();
                self.events &= self.events - 1;
                let pos = self.block_pos + bit as usize;
                if self.errors >> bit & 1 == 1 {
                    return Err(self.error_at(bit, pos));
                }
                self.end_field(fill, pos)?;
                if self.newline >> bit & 1 == 1 {
                    self.end_record(fill, pos)?;
                    if pos + 1 >= self.end {
                        self.done = true;
                        return Ok(false);
                    }
                    if fill.rows == max_rows {
                        return Ok(true);
                    }
                }
            }
            if !self.load_block(c) {
                self.finish_input(fill)?;
                self.done = true;
                return Ok(false);
            }
        }
        Ok(false)
    }

    /// The events of the current block (which has no errors, and every offset in it fits a
    /// span) and of the whole blocks after it that are alike: ends fields and records with
    /// the scan state in registers. `Some(more)` when the batch is full or the range is
    /// done; `None` at a block it does not take (the partial last block, one with errors,
    /// or one the batch has no window of slots for), which the caller loads or drains.
    ///
    /// In a block without quote characters only the field still open from an earlier
    /// block can be quoted, so just the first event looks at the field's first byte.
    #[inline(always)]
    fn drain_fast<C: Classifier>(
        &mut self,
        c: C,
        fill: &mut Fill<'_>,
        max_rows: usize,
    ) -> Result<Option<bool>, ScanError> {
        let base = fill.base();
        loop {
            let row0 = fill.rows * self.stride;
            let slot0 = row0 + self.k;
            let Some(mut window) = fill.window(slot0) else {
                return Ok(None);
            };
            let mut cur = Cursor {
                events: self.events,
                fs_rel: (self.field_start - base) as u32,
                row0,
                slot: slot0,
            };
            let result = match self.cfg.specials.quote {
                Some(q) if self.block_quotes => {
                    self.drain_events::<true, false>(&mut cur, &mut window, base, q, max_rows)
                }
                Some(q) => {
                    match self.drain_events::<true, true>(&mut cur, &mut window, base, q, max_rows)
                    {
                        Ok(None) => self.drain_events::<false, false>(
                            &mut cur,
                            &mut window,
                            base,
                            q,
                            max_rows,
                        ),
                        other => other,
                    }
                }
                None => self.drain_events::<false, false>(&mut cur, &mut window, base, 0, max_rows),
            };
            self.events = cur.events;
            self.k = cur.slot - cur.row0;
            self.field_start = base + cur.fs_rel as usize;
            if !matches!(result, Ok(None)) {
                return result;
            }
            // The block is used up: go on with the next one here while it is a whole
            // block that qualifies; otherwise the caller loads it (or drains it slowly).
            if self.next_pos + 64 > self.data.len() || !self.load_block(c) {
                return Ok(None);
            }
            if self.errors != 0 || self.block_pos + 64 - base > MAX_REL {
                return Ok(None);
            }
        }
    }

    /// The loop of [`drain_fast`](Self::drain_fast): fields whose first byte may be the
    /// quote `q` (`QUOTES`), and only for the first event (`ONE`).
    #[inline(always)]
    fn drain_events<const QUOTES: bool, const ONE: bool>(
        &mut self,
        cur: &mut Cursor,
        window: &mut Window<'_>,
        base: usize,
        q: u8,
        max_rows: usize,
    ) -> Result<Option<bool>, ScanError> {
        let data = self.data;
        let nl = self.newline;
        let quoting = Quoting {
            quote: q,
            doubling: self.cfg.doubling,
        };
        // the batch may start inside the block: `bp_rel` wraps then, but every event left
        // in the block lies at or after the batch base
        let bp_rel = self.block_pos.wrapping_sub(base) as u32;
        while cur.events != 0 {
            let bit = cur.events.trailing_zeros();
            cur.events &= cur.events - 1;
            let e_rel = bp_rel.wrapping_add(bit);
            let fs_rel = cur.fs_rel;
            // A record with more fields than slots writes its extra fields into the next
            // record's slots (or leaves the window): it is an error at its end anyway.
            let quoted = QUOTES && fs_rel < e_rel && data[base + fs_rel as usize] == q;
            if quoted {
                let (s, e) = (base + fs_rel as usize, base + e_rel as usize);
                window.put_quoted(cur.slot, data, s + 1, e - 1, quoting);
            } else {
                window.put(cur.slot, fs_rel, e_rel);
            }
            cur.slot += 1;
            cur.fs_rel = e_rel + 1;
            if nl >> bit & 1 == 1 {
                let rs = self.record_start;
                let next = base + e_rel as usize + 1;
                self.record_start = next;
                let fields = cur.slot - cur.row0;
                cur.slot = cur.row0;
                if keep_record(fields, self.ncols, !quoted && fs_rel == e_rel, rs)? {
                    window.commit_row(rs);
                    cur.row0 += self.stride;
                    cur.slot = cur.row0;
                }
                if next >= self.end {
                    self.done = true;
                    return Ok(Some(false));
                }
                if window.rows() == max_rows {
                    return Ok(Some(true));
                }
            }
            if ONE {
                break;
            }
        }
        Ok(None)
    }

    /// At the end of the input: close the last record, or report an open quote.
    fn finish_input(&mut self, fill: &mut Fill<'_>) -> Result<(), ScanError> {
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
            self.end_field(fill, len)?;
            self.end_record(fill, len)?;
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
    fn end_field(&mut self, fill: &mut Fill<'_>, e: usize) -> Result<(), ScanError> {
        let fs = self.field_start;
        let base = fill.base();
        if e - base > MAX_REL {
            return Err(ScanError {
                kind: ScanErrorKind::RecordTooLarge,
                at: self.record_start,
                record_start: self.record_start,
                field: self.k + 1,
            });
        }
        let k = self.k;
        if k < self.stride {
            let slot = fill.rows * self.stride + k;
            match self.cfg.specials.quote {
                Some(q) if fs < e && self.data[fs] == q => {
                    let quoting = Quoting {
                        quote: q,
                        doubling: self.cfg.doubling,
                    };
                    fill.put_quoted(slot, self.data, fs + 1, e - 1, quoting);
                    self.last_empty_unquoted = false;
                }
                _ => {
                    fill.put(slot, (fs - base) as u32, (e - base) as u32);
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
    fn end_record(&mut self, fill: &mut Fill<'_>, e: usize) -> Result<(), ScanError> {
        let k = self.k;
        let rs = self.record_start;
        self.k = 0;
        self.record_start = e + 1;
        if keep_record(k, self.ncols, self.last_empty_unquoted, rs)? {
            fill.commit_row(rs);
        }
        Ok(())
    }
}

/// How far ahead of the block being classified the scan asks for input.
const PREFETCH_DISTANCE: usize = 1024;

/// Asks the CPU to bring the cache line at `p` into the cache (a hint; any address is
/// allowed, none is dereferenced).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` is SSE (x86-64 baseline) and never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The scan state of [`BlockScanner::drain_fast`], kept in registers.
struct Cursor {
    /// structural bytes of the block not yet handled
    events: u64,
    /// start of the open field, relative to the batch base
    fs_rel: u32,
    /// the first field slot of the record being scanned
    row0: usize,
    /// the slot of the open field
    slot: usize,
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

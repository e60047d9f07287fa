//! The reference scanner: a byte-at-a-time state machine. It handles every dialect
//! (including a backslash-style escape distinct from the quote), serves as the scalar twin
//! the block scanner is tested against, and finds the precise place of errors.

use crate::error::{ScanError, ScanErrorKind};
use crate::fields::{FieldBatch, MAX_REL};
use crate::scan::{ScanConfig, keep_record};

/// Scans records one byte at a time.
#[derive(Debug, Clone)]
pub struct RefScanner<'a> {
    cfg: ScanConfig,
    data: &'a [u8],
    pos: usize,
    end: usize,
    ncols: usize,
    flexible: bool,
    last_count: usize,
    done: bool,
}

impl<'a> RefScanner<'a> {
    /// Scans the records of `data` that start in `start..end`; `start` must be a record start.
    pub fn new(cfg: &ScanConfig, data: &'a [u8], start: usize, end: usize, ncols: usize) -> Self {
        RefScanner {
            cfg: *cfg,
            data,
            pos: start,
            end,
            ncols,
            flexible: false,
            last_count: 0,
            done: false,
        }
    }

    /// Offset of the next record to scan.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Fills `batch` with up to `max_rows` records; returns false once the range is exhausted.
    pub fn next_batch(
        &mut self,
        batch: &mut FieldBatch,
        max_rows: usize,
    ) -> Result<bool, ScanError> {
        batch.reset(self.pos, max_rows);
        while batch.rows() < max_rows {
            if self.done || self.pos >= self.end || self.pos >= self.data.len() {
                self.done = true;
                return Ok(false);
            }
            self.record(batch)?;
        }
        Ok(true)
    }

    /// Scans the record at `self.pos` into `batch` (skipping it when it is an empty line).
    fn record(&mut self, batch: &mut FieldBatch) -> Result<(), ScanError> {
        let data = self.data;
        let len = data.len();
        let cfg = &self.cfg;
        let delim = cfg.specials.delimiter;
        let rs = self.pos;
        let stride = self.ncols + 1;
        let mut k = 0usize;
        let mut i = rs;
        let mut last_empty_unquoted;
        let err = |kind, at, k: usize| ScanError {
            kind,
            at,
            record_start: rs,
            field: k + 1,
        };
        loop {
            let fs = i;
            if i - batch.base() > MAX_REL {
                return Err(err(ScanErrorKind::RecordTooLarge, rs, k));
            }
            match cfg.specials.quote {
                Some(q) if i < len && data[i] == q => {
                    i += 1;
                    let content = i;
                    let mut escaped_from: Option<usize> = None;
                    loop {
                        if i >= len {
                            return Err(err(ScanErrorKind::UnterminatedQuote, fs, k));
                        }
                        let b = data[i];
                        let lit = if b == q {
                            if cfg.doubling && i + 1 < len && data[i + 1] == q {
                                Some(q)
                            } else {
                                break;
                            }
                        } else if cfg.escape.is_some_and(|e| b == e)
                            && i + 1 < len
                            && (data[i + 1] == q || Some(data[i + 1]) == cfg.escape)
                        {
                            Some(data[i + 1])
                        } else {
                            if cfg.fast && (b == b'\n' || b == b'\r') {
                                return Err(err(ScanErrorKind::QuotedRecordDelimiter, fs, k));
                            }
                            None
                        };
                        match lit {
                            Some(c) => {
                                let scratch = batch.scratch_mut();
                                if escaped_from.is_none() {
                                    escaped_from = Some(scratch.len());
                                    scratch.extend_from_slice(&data[content..i]);
                                }
                                batch.scratch_mut().push(c);
                                i += 2;
                            }
                            None => {
                                if escaped_from.is_some() {
                                    batch.scratch_mut().push(b);
                                }
                                i += 1;
                            }
                        }
                    }
                    // data[i] is the closing quote
                    let content_end = i;
                    i += 1;
                    if i < len && data[i] != delim && data[i] != b'\n' && data[i] != b'\r' {
                        return Err(err(ScanErrorKind::TextAfterClosingQuote, i, k));
                    }
                    if content_end - batch.base() > MAX_REL {
                        return Err(err(ScanErrorKind::RecordTooLarge, rs, k));
                    }
                    if k < stride {
                        match escaped_from {
                            Some(from) => batch.set_escaped(k, content, from),
                            None => batch.set_plain(k, content, content_end, true),
                        }
                    }
                    last_empty_unquoted = false;
                }
                _ => {
                    while i < len {
                        let b = data[i];
                        if b == delim || b == b'\n' || b == b'\r' {
                            break;
                        }
                        if Some(b) == cfg.specials.quote {
                            return Err(err(ScanErrorKind::QuoteInUnquotedField, i, k));
                        }
                        i += 1;
                    }
                    if i - batch.base() > MAX_REL {
                        return Err(err(ScanErrorKind::RecordTooLarge, rs, k));
                    }
                    if k < stride {
                        batch.set_plain(k, fs, i, false);
                    }
                    last_empty_unquoted = fs == i;
                }
            }
            k += 1;
            if i < len && data[i] == delim {
                i += 1;
                continue;
            }
            // record delimiter or end of input
            self.pos = if i < len { i + 1 } else { len };
            let keep = if self.flexible {
                !(k == 1 && last_empty_unquoted)
            } else {
                keep_record(k, self.ncols, last_empty_unquoted, rs)?
            };
            if keep {
                self.last_count = k;
                batch.commit_row(rs);
            }
            return Ok(());
        }
    }
}

/// A record's unescaped fields and the offset where the next record starts.
pub type Record = (Vec<Vec<u8>>, usize);

/// Most fields [`first_record`] accepts.
const MAX_HEADER_FIELDS: usize = 65_536;

/// The first non-empty record at or after `start` (a record start) as unescaped fields,
/// with the offset where the next record starts; `None` when there is no record.
pub fn first_record(
    cfg: &ScanConfig,
    data: &[u8],
    start: usize,
) -> Result<Option<Record>, ScanError> {
    let ncols = MAX_HEADER_FIELDS;
    let mut scanner = RefScanner::new(cfg, data, start, data.len(), ncols);
    scanner.flexible = true;
    let mut batch = FieldBatch::new(ncols);
    scanner.next_batch(&mut batch, 1)?;
    if batch.rows() == 0 {
        return Ok(None);
    }
    let n = scanner.last_count.min(ncols);
    let fields = (0..n).map(|c| batch.field(data, 0, c).0.to_vec()).collect();
    Ok(Some((fields, scanner.pos)))
}

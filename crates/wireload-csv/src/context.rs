//! Chunk planning and quote context: where chunks are, in which quote state each one
//! starts (computed for all chunks in parallel), and where its first record begins.

use std::ops::Range;

use rayon::prelude::*;

use crate::dialect::ScanMode;
use crate::scan::ScanConfig;

/// The quote state at a byte position, in the toggle model of quoting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuoteState {
    /// outside any quoted field
    #[default]
    Outside,
    /// inside a quoted field
    Inside,
    /// inside a quoted field, right after an escape character (distinct-escape dialects)
    InsideAfterEscape,
}

impl QuoteState {
    fn index(self) -> usize {
        self as usize
    }
    const ALL: [QuoteState; 3] = [
        QuoteState::Outside,
        QuoteState::Inside,
        QuoteState::InsideAfterEscape,
    ];
}

/// Cuts `start..len` into consecutive ranges of `chunk_size` bytes (the last may be shorter).
pub fn chunk_ranges(start: usize, len: usize, chunk_size: usize) -> Vec<Range<usize>> {
    let size = chunk_size.max(1);
    (start..len)
        .step_by(size)
        .map(|s| s..(s + size).min(len))
        .collect()
}

/// The quote state at the start of every chunk. Fast mode (and dialects without quoting)
/// assume `Outside`; safe mode derives it from per-chunk quote counts (or, with a distinct
/// escape character, per-chunk state transition functions) computed in parallel and
/// combined by a prefix over the chunks.
pub fn chunk_start_states(
    data: &[u8],
    chunks: &[Range<usize>],
    cfg: &ScanConfig,
    mode: ScanMode,
) -> Vec<QuoteState> {
    let Some(q) = cfg.specials.quote else {
        return vec![QuoteState::Outside; chunks.len()];
    };
    if mode == ScanMode::Fast {
        return vec![QuoteState::Outside; chunks.len()];
    }
    let mut out = Vec::with_capacity(chunks.len());
    match cfg.escape {
        None => {
            let parities: Vec<bool> = chunks
                .par_iter()
                .map(|r| count_byte(&data[r.clone()], q) % 2 == 1)
                .collect();
            let mut inside = false;
            for p in parities {
                out.push(if inside {
                    QuoteState::Inside
                } else {
                    QuoteState::Outside
                });
                inside ^= p;
            }
        }
        Some(_) => {
            let transitions: Vec<[QuoteState; 3]> = chunks
                .par_iter()
                .map(|r| QuoteState::ALL.map(|s| run_states(&data[r.clone()], cfg, s)))
                .collect();
            let mut state = QuoteState::Outside;
            for t in transitions {
                out.push(state);
                state = t[state.index()];
            }
        }
    }
    out
}

/// Number of bytes equal to `b` (SIMD, dispatched at run time by `bytecount`).
fn count_byte(bytes: &[u8], b: u8) -> usize {
    bytecount::count(bytes, b)
}

/// The quote state after `bytes`, starting in `state` (distinct-escape dialects).
fn run_states(bytes: &[u8], cfg: &ScanConfig, mut state: QuoteState) -> QuoteState {
    let q = cfg.specials.quote.expect("quoting enabled");
    let e = cfg.escape.unwrap_or(q);
    let mut i = 0;
    while i < bytes.len() {
        match state {
            QuoteState::Outside => match memchr::memchr(q, &bytes[i..]) {
                Some(j) => {
                    i += j + 1;
                    state = QuoteState::Inside;
                }
                None => return state,
            },
            QuoteState::Inside => match memchr::memchr2(q, e, &bytes[i..]) {
                Some(j) => {
                    let b = bytes[i + j];
                    i += j + 1;
                    state = if b == q {
                        QuoteState::Outside
                    } else {
                        QuoteState::InsideAfterEscape
                    };
                }
                None => return state,
            },
            QuoteState::InsideAfterEscape => {
                let b = bytes[i];
                if b == q || b == e {
                    i += 1; // escaped literal
                    state = QuoteState::Inside;
                } else {
                    state = QuoteState::Inside; // a lone escape is literal; rescan b as Inside
                }
            }
        }
    }
    state
}

/// The first record start at or after `pos`, given the quote state at `pos`; `data.len()`
/// when no record starts there. A record starts after a record delimiter (`\n` or `\r`)
/// outside quotes. In fast mode every record delimiter ends a record (quotes are not
/// looked at; the scan of the previous chunk checks that assumption).
pub fn first_record_start(data: &[u8], cfg: &ScanConfig, pos: usize, state: QuoteState) -> usize {
    let is_nl = |b: u8| b == b'\n' || b == b'\r';
    if pos == 0 || (state == QuoteState::Outside && is_nl(data[pos - 1])) {
        return pos;
    }
    let quote = if cfg.fast { None } else { cfg.specials.quote };
    match (quote, cfg.escape) {
        (None, _) => match memchr::memchr2(b'\n', b'\r', &data[pos..]) {
            Some(j) => pos + j + 1,
            None => data.len(),
        },
        (Some(q), None) => {
            let mut inside = state != QuoteState::Outside;
            for j in memchr::memchr3_iter(q, b'\n', b'\r', &data[pos..]) {
                if data[pos + j] == q {
                    inside = !inside;
                } else if !inside {
                    return pos + j + 1;
                }
            }
            data.len()
        }
        (Some(q), Some(e)) => {
            let mut state = state;
            let mut i = pos;
            while i < data.len() {
                let b = data[i];
                state = match state {
                    QuoteState::Outside if is_nl(b) => return i + 1,
                    QuoteState::Outside if b == q => QuoteState::Inside,
                    QuoteState::Outside => QuoteState::Outside,
                    QuoteState::Inside if b == q => QuoteState::Outside,
                    QuoteState::Inside if b == e => QuoteState::InsideAfterEscape,
                    QuoteState::Inside => QuoteState::Inside,
                    // after an escape: b is literal (escaped quote or escape), or b is an
                    // ordinary byte and the escape was literal; either way we stay inside
                    QuoteState::InsideAfterEscape => QuoteState::Inside,
                };
                i += 1;
            }
            data.len()
        }
    }
}

/// The position right after the last record delimiter (`\n` or `\r`) outside quotes in
/// `data[pos..end]`, given the quote state at `pos`; None when there is none. A streamed
/// load cuts its window there, so the next window starts at a record boundary. In fast mode
/// quotes are not looked at.
pub fn last_record_end(
    data: &[u8],
    end: usize,
    cfg: &ScanConfig,
    pos: usize,
    state: QuoteState,
) -> Option<usize> {
    let end = end.min(data.len());
    if pos >= end {
        return None;
    }
    let is_nl = |b: u8| b == b'\n' || b == b'\r';
    let quote = if cfg.fast { None } else { cfg.specials.quote };
    match (quote, cfg.escape) {
        (None, _) => memchr::memrchr2(b'\n', b'\r', &data[pos..end]).map(|j| pos + j + 1),
        (Some(q), None) => {
            let mut inside = state != QuoteState::Outside;
            let mut last = None;
            for j in memchr::memchr3_iter(q, b'\n', b'\r', &data[pos..end]) {
                if data[pos + j] == q {
                    inside = !inside;
                } else if !inside {
                    last = Some(pos + j + 1);
                }
            }
            last
        }
        (Some(q), Some(e)) => {
            let mut state = state;
            let mut last = None;
            for (i, &b) in data[pos..end].iter().enumerate() {
                state = match state {
                    QuoteState::Outside if is_nl(b) => {
                        last = Some(pos + i + 1);
                        QuoteState::Outside
                    }
                    QuoteState::Outside if b == q => QuoteState::Inside,
                    QuoteState::Outside => QuoteState::Outside,
                    QuoteState::Inside if b == q => QuoteState::Outside,
                    QuoteState::Inside if b == e => QuoteState::InsideAfterEscape,
                    QuoteState::Inside => QuoteState::Inside,
                    QuoteState::InsideAfterEscape => QuoteState::Inside,
                };
            }
            last
        }
    }
}

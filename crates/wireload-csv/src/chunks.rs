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
    start_states(data, chunks, cfg, mode, true)
}

/// [`chunk_start_states`], the chunks counted in parallel (on the current rayon pool) or
/// one after the other on the calling thread.
fn start_states(
    data: &[u8],
    chunks: &[Range<usize>],
    cfg: &ScanConfig,
    mode: ScanMode,
    parallel: bool,
) -> Vec<QuoteState> {
    let Some(q) = cfg.specials.quote else {
        return vec![QuoteState::Outside; chunks.len()];
    };
    if mode == ScanMode::Fast {
        return vec![QuoteState::Outside; chunks.len()];
    }
    match cfg.escape {
        None => {
            let odd = |r: &Range<usize>| count_byte(&data[r.clone()], q) % 2 == 1;
            let parities: Vec<bool> = if parallel {
                chunks.par_iter().map(odd).collect()
            } else {
                chunks.iter().map(odd).collect()
            };
            states_from_parities(&parities)
        }
        Some(_) => {
            let transition =
                |r: &Range<usize>| QuoteState::ALL.map(|s| run_states(&data[r.clone()], cfg, s));
            let transitions: Vec<[QuoteState; 3]> = if parallel {
                chunks.par_iter().map(transition).collect()
            } else {
                chunks.iter().map(transition).collect()
            };
            let mut state = QuoteState::Outside;
            transitions
                .into_iter()
                .map(|t| {
                    let start = state;
                    state = t[state.index()];
                    start
                })
                .collect()
        }
    }
}

/// The state at the start of each chunk from whether each holds an odd number of quotes.
fn states_from_parities(odd: &[bool]) -> Vec<QuoteState> {
    let mut inside = false;
    odd.iter()
        .map(|&p| {
            let state = if inside {
                QuoteState::Inside
            } else {
                QuoteState::Outside
            };
            inside ^= p;
            state
        })
        .collect()
}

/// [`chunk_start_states`] of `chunks`, and the line ends in each chunk (as
/// [`crate::line_ends`] counts them, looking past a chunk's end into `data`), counted one
/// chunk after the other on the calling thread (a stream's cutting thread, which must not
/// queue behind the parse). Without a distinct escape character, the quotes and the line
/// ends of a chunk are counted in one pass over it.
pub fn chunk_states_and_lines(
    data: &[u8],
    chunks: &[Range<usize>],
    cfg: &ScanConfig,
    mode: ScanMode,
) -> (Vec<QuoteState>, Vec<u64>) {
    let parity_quote = match (cfg.specials.quote, cfg.escape) {
        (Some(q), None) if mode != ScanMode::Fast => Some(q),
        _ => None,
    };
    let Some(q) = parity_quote else {
        let lines = chunks
            .iter()
            .map(|r| crate::line_ends(data, r.clone()))
            .collect();
        return (start_states(data, chunks, cfg, mode, false), lines);
    };
    let (lines, odd): (Vec<u64>, Vec<bool>) = chunks
        .iter()
        .map(|r| {
            let (lines, quotes) = crate::line_ends_and_count(data, r.clone(), Some(q));
            (lines, quotes % 2 == 1)
        })
        .unzip();
    (states_from_parities(&odd), lines)
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
            // the last record delimiter of all, when it is outside quotes (an even number
            // of quotes before it in the range, from outside): no walk over every record
            let last_nl = memchr::memrchr2(b'\n', b'\r', &data[pos..end])?;
            let quotes = count_byte(&data[pos..pos + last_nl], q);
            if (state != QuoteState::Outside) == (quotes % 2 == 1) {
                return Some(pos + last_nl + 1);
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dialect, line_ends};

    /// Bytes of `a`, quotes, LF and CR, mixed by a fixed sequence.
    fn mixed(len: usize, salt: u32) -> Vec<u8> {
        (0..len as u32)
            .map(|i| match (i ^ salt).wrapping_mul(2_654_435_761) % 29 {
                0 | 1 => b'"',
                2..=4 => b'\n',
                5 => b'\r',
                _ => b'a',
            })
            .collect()
    }

    /// The last record end by walking every byte in the toggle model.
    fn naive_last_end(data: &[u8], end: usize, pos: usize, inside: bool) -> Option<usize> {
        let mut inside = inside;
        let mut last = None;
        for (i, &b) in data[pos..end].iter().enumerate() {
            if b == b'"' {
                inside = !inside;
            } else if (b == b'\n' || b == b'\r') && !inside {
                last = Some(pos + i + 1);
            }
        }
        last
    }

    #[test]
    fn last_record_end_matches_the_walk_from_either_state() {
        let cfg = ScanConfig::new(&Dialect::default(), ScanMode::Safe).unwrap();
        for salt in 0..40 {
            let data = mixed(3000, salt);
            for (pos, end) in [(0, 3000), (17, 2999), (1500, 1600), (2990, 3000), (5, 5)] {
                for state in [QuoteState::Outside, QuoteState::Inside] {
                    let inside = state == QuoteState::Inside;
                    assert_eq!(
                        last_record_end(&data, end, &cfg, pos, state),
                        naive_last_end(&data, end, pos, inside),
                        "salt {salt}, {pos}..{end}, {state:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn states_and_lines_counted_together_equal_those_counted_apart() {
        let escaped = Dialect {
            escape: Some(b'\\'),
            ..Dialect::default()
        };
        for dialect in [Dialect::default(), escaped] {
            for mode in [ScanMode::Safe, ScanMode::Fast] {
                let cfg = ScanConfig::new(&dialect, mode).unwrap();
                let data = mixed(200_000, 7);
                for size in [1, 1000, 65_537, 300_000] {
                    let chunks = chunk_ranges(3, data.len() - 1, size);
                    let (states, lines) = chunk_states_and_lines(&data, &chunks, &cfg, mode);
                    assert_eq!(states, chunk_start_states(&data, &chunks, &cfg, mode));
                    let apart: Vec<u64> =
                        chunks.iter().map(|r| line_ends(&data, r.clone())).collect();
                    assert_eq!(lines, apart, "chunks of {size} bytes, {mode:?}");
                }
            }
        }
    }
}

//! Dialect detection: every candidate dialect reads the start of each window, and the
//! one whose records agree best on a field count wins.
//!
//! Candidates are the delimiters `,` `|` `;` and tab, each with quote `"`, no quoting or
//! quote `'` (a quote escaped by doubling or by a backslash), less those the options fix. `:` is no
//! candidate: it would split every time of day. A candidate is ranked by, in order:
//! 1. reading the sample without structural errors (a quote inside an unquoted field, text
//!    after a closing quote, an unclosed quote);
//! 2. splitting records into more than one field with at least 90% of them agreeing on
//!    the count (the *consistent* records; as DuckDB, more than one column is preferred);
//! 3. the share of consistent records;
//! 4. quoting some field (a quote that quotes beats one that is never used, so a file of
//!    `'a, b'` fields gets quote `'`);
//! 5. more fields per record;
//! 6. the order above (comma first, `"` first, doubling first): a file without quotes
//!    gets `"`, the COPY default, which reads it the same.
//!
//! A file of one column thus gets the first delimiter that never occurs in it (usually the
//! comma), one whose values contain commas a delimiter they do not contain.

use std::cmp::Reverse;
use std::ops::Range;

use wireload_csv::Dialect;

use crate::records::{Broken, Reader, Record, Step, Syntax};
use crate::sample::resync;

/// Delimiters tried, in order of preference.
const DELIMITERS: [u8; 4] = [b',', b'|', b';', b'\t'];

/// Bytes each window contributes to detection at most.
pub(crate) const PROBE_BYTES: usize = 64 << 10;

/// Detection's total bytes at most (spread over the windows).
const DETECT_BUDGET: usize = 1 << 20;

/// One candidate dialect and what it read.
#[derive(Debug)]
pub(crate) struct Trial {
    /// the candidate (header unset)
    pub dialect: Dialect,
    /// the record start in each window
    pub starts: Vec<usize>,
    /// columns: the field count most records agree on
    pub ncols: usize,
    /// records read, and how many have `ncols` fields
    records: usize,
    consistent: usize,
    /// fields that were quoted
    quoted: usize,
    /// the first structural error, and how many there were
    pub broken: Option<(Broken, usize)>,
    broken_count: usize,
    /// position in the candidate order
    order: usize,
}

impl Trial {
    /// The ranking key (see the module doc); larger is better.
    fn key(&self) -> (bool, bool, u64, bool, usize, Reverse<usize>) {
        let share = (self.consistent as u64 * 1_000_000)
            .checked_div(self.records as u64)
            .unwrap_or(0);
        (
            self.broken_count == 0,
            self.ncols > 1 && share >= 900_000,
            share,
            self.quoted > 0,
            self.ncols,
            Reverse(self.order),
        )
    }
}

/// The candidate dialects allowed by the fixed values (`None`: detect), in order of
/// preference; `null` is the NULL string, which each candidate must allow. `present`
/// says which bytes occur in the sample: a candidate that would read the sample exactly
/// as one before it is left out (a quote `'` or a backslash escape that never occurs,
/// all but the first delimiter that never occurs, which a one-column file needs).
pub(crate) fn candidates(
    delimiter: Option<u8>,
    quote: Option<Option<u8>>,
    escape: Option<Option<u8>>,
    null: &[u8],
    present: &[bool; 256],
) -> Vec<Dialect> {
    let delimiters = match delimiter {
        Some(d) => vec![d],
        None => {
            let absent = DELIMITERS.iter().copied().find(|&d| !present[d as usize]);
            DELIMITERS
                .iter()
                .copied()
                .filter(|&d| present[d as usize] || Some(d) == absent)
                .collect()
        }
    };
    let quotes = match quote {
        Some(q) => vec![q],
        // no quoting before `'`: of two candidates that quote nothing, the one that
        // cannot break on a later apostrophe
        None if present[b'\'' as usize] => vec![Some(b'"'), None, Some(b'\'')],
        None => vec![Some(b'"'), None],
    };
    let mut out = Vec::new();
    for &d in &delimiters {
        for &q in &quotes {
            let escapes = match (escape, q) {
                // an escape needs quoting (COPY refuses ESCAPE with QUOTE '')
                (Some(Some(_)), None) => vec![],
                (Some(e), _) => vec![e],
                (None, Some(q)) if present[b'\\' as usize] => vec![Some(q), Some(b'\\')],
                (None, Some(q)) => vec![Some(q)],
                (None, None) => vec![None],
            };
            for e in escapes {
                let dialect = Dialect {
                    delimiter: d,
                    quote: q,
                    escape: e,
                    header: false,
                    null: null.to_vec(),
                };
                if dialect.validate().is_ok() {
                    out.push(dialect);
                }
            }
        }
    }
    out
}

/// Which bytes occur in the part of each window that detection reads.
pub(crate) fn present_bytes(data: &[u8], windows: &[Range<usize>]) -> [bool; 256] {
    let probe = probe_bytes(windows.len());
    let mut present = [false; 256];
    for w in windows {
        for &b in &data[w.start..(w.start + probe).min(w.end)] {
            present[b as usize] = true;
        }
    }
    present
}

/// How many bytes of each of `windows` detection reads.
pub(crate) fn probe_bytes(windows: usize) -> usize {
    (DETECT_BUDGET / windows.max(1)).clamp(16 << 10, PROBE_BYTES)
}

/// Reads the start of every window with `dialect`.
pub(crate) fn trial(
    data: &[u8],
    windows: &[Range<usize>],
    dialect: Dialect,
    order: usize,
    complete_at_end: bool,
) -> Trial {
    let syntax = Syntax::of(&dialect);
    let probe = probe_bytes(windows.len());
    let mut counts: Vec<(usize, bool)> = Vec::new();
    let mut rec = Record::default();
    let mut trial = Trial {
        dialect,
        starts: Vec::with_capacity(windows.len()),
        ncols: 0,
        records: 0,
        consistent: 0,
        quoted: 0,
        broken: None,
        broken_count: 0,
        order,
    };
    let mut first_mode = None;
    for (i, window) in windows.iter().enumerate() {
        let start = if i == 0 {
            window.start
        } else {
            resync(data, window, &trial.dialect, first_mode, probe)
        };
        trial.starts.push(start);
        let end = (start + probe).min(window.end);
        if start >= end {
            continue;
        }
        let whole = complete_at_end && end == data.len();
        let mut reader = Reader::new(syntax, &data[..end], start, whole);
        let from = counts.len();
        loop {
            match reader.next(&mut rec) {
                Step::Record => {
                    let n = rec.len();
                    trial.quoted += (0..n).filter(|&k| rec.field(k).1).count();
                    counts.push((n, rec.field(n - 1) == (&[][..], false)));
                }
                Step::Broken(broken, at) => {
                    trial.broken_count += 1;
                    trial.broken.get_or_insert((broken, at));
                }
                Step::End => break,
            }
        }
        if i == 0 {
            first_mode = mode(&counts[from..]);
        }
        if trial.broken_count > 0 {
            // ranked below every candidate that reads without errors: no need to read on
            break;
        }
    }
    trial.records = counts.len();
    trial.ncols = mode(&counts).unwrap_or(1);
    trial.consistent = counts
        .iter()
        .filter(|&&(n, trailing_empty)| {
            n == trial.ncols || (n == trial.ncols + 1 && trailing_empty)
        })
        .count();
    trial
}

/// The field count most records have (the larger on a tie), less one when every record
/// with that count ends in an empty unquoted field (a trailing delimiter, which the loader
/// reads as no field).
fn mode(counts: &[(usize, bool)]) -> Option<usize> {
    let max = counts.iter().map(|c| c.0).max()?;
    let mut tally = vec![(0usize, true); max + 1];
    for &(n, trailing_empty) in counts {
        tally[n].0 += 1;
        tally[n].1 &= trailing_empty;
    }
    let (n, &(_, all_trailing)) = tally
        .iter()
        .enumerate()
        .max_by_key(|(n, (count, _))| (*count, *n))?;
    Some(if all_trailing && n > 1 { n - 1 } else { n })
}

/// The best of the trials (see the module doc).
pub(crate) fn best(trials: Vec<Trial>) -> Option<Trial> {
    trials.into_iter().max_by_key(Trial::key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_prefers_the_common_count_and_drops_a_trailing_delimiter() {
        assert_eq!(mode(&[]), None);
        assert_eq!(mode(&[(3, false), (3, false), (2, false)]), Some(3));
        assert_eq!(mode(&[(2, false), (3, false)]), Some(3));
        assert_eq!(mode(&[(4, true), (4, true)]), Some(3));
        assert_eq!(mode(&[(4, true), (4, false)]), Some(4));
        assert_eq!(mode(&[(1, true)]), Some(1));
    }

    #[test]
    fn candidates_respect_fixed_values_and_the_null_string() {
        let all = [true; 256];
        assert_eq!(candidates(None, None, None, b"", &all).len(), 4 * 5);
        let fixed = candidates(Some(b';'), Some(None), None, b"", &all);
        assert_eq!(fixed.len(), 1);
        assert_eq!((fixed[0].delimiter, fixed[0].quote), (b';', None));
        // a NULL string containing ',' rules the comma out
        assert!(
            candidates(None, None, None, b"a,b", &all)
                .iter()
                .all(|d| d.delimiter != b',')
        );
        // a fixed escape rules quoting out of nothing
        assert!(
            candidates(None, None, Some(Some(b'\\')), b"", &all)
                .iter()
                .all(|d| d.quote.is_some() && d.escape == Some(b'\\'))
        );
        assert!(candidates(None, Some(None), Some(Some(b'\\')), b"", &all).is_empty());
    }

    #[test]
    fn candidates_that_read_like_an_earlier_one_are_left_out() {
        let mut present = [false; 256];
        present[b',' as usize] = true;
        let found: Vec<(u8, Option<u8>, Option<u8>)> = candidates(None, None, None, b"", &present)
            .iter()
            .map(|d| (d.delimiter, d.quote, d.escape))
            .collect();
        let q = Some(b'"');
        assert_eq!(
            found,
            [
                (b',', q, q),
                (b',', None, None),
                (b'|', q, q),
                (b'|', None, None)
            ]
        );
    }
}

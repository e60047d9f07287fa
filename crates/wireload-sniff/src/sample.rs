//! Where the sample is taken: windows at the start, evenly spaced in the middle and at the
//! end of the input, and the first record start in each.

use std::ops::Range;

use wireload_csv::{Dialect, QuoteState, ScanConfig, ScanMode};

use crate::records::{Reader, Record, Step, Syntax};

/// The sample taken when the options name no size.
pub const DEFAULT_SAMPLE_BYTES: usize = 8 << 20;

/// The smallest window worth taking: a few dozen records of a wide file.
const MIN_WINDOW: usize = 16 << 10;

/// Most windows taken.
const MAX_WINDOWS: usize = 64;

/// The windows of `body` (the input after its BOM) sampled with `budget` bytes in all:
/// all of it when it fits, else windows at the start, the end and evenly spaced between,
/// more of them (up to 64) the more times the input exceeds the budget.
pub(crate) fn windows(body: Range<usize>, budget: usize) -> Vec<Range<usize>> {
    let len = body.len();
    let budget = budget.max(MIN_WINDOW);
    if len <= budget {
        return vec![body];
    }
    let by_size = len.div_ceil(budget).saturating_mul(2);
    let count = by_size
        .clamp(3, MAX_WINDOWS)
        .min(budget / MIN_WINDOW)
        .max(1);
    let width = budget / count;
    let span = len - width;
    (0..count)
        .map(|i| {
            let at = body.start + (span * i).checked_div(count - 1).unwrap_or(0);
            at..at + width
        })
        .collect()
}

/// The first record start in `window` (which does not start at the beginning of the
/// input) for `dialect`: after a record delimiter, in whichever quote state at the
/// window's start (outside or inside a quoted field) lets the records that follow parse
/// without errors and with `ncols` fields (None: unknown) most often. `window.end` when
/// no record starts in it.
pub(crate) fn resync(
    data: &[u8],
    window: &Range<usize>,
    dialect: &Dialect,
    ncols: Option<usize>,
    probe: usize,
) -> usize {
    let Ok(cfg) = ScanConfig::new(dialect, ScanMode::Safe) else {
        return window.end;
    };
    let slice = &data[..window.end];
    let outside = wireload_csv::first_record_start(slice, &cfg, window.start, QuoteState::Outside);
    if dialect.quote.is_none() {
        return outside;
    }
    let inside = wireload_csv::first_record_start(slice, &cfg, window.start, QuoteState::Inside);
    if inside == outside {
        return outside;
    }
    let syntax = Syntax::of(dialect);
    let score = |start: usize| {
        if start >= window.end {
            return (false, 0);
        }
        let end = (start + probe).min(window.end);
        let mut reader = Reader::new(syntax, &data[..end], start, false);
        let mut rec = Record::default();
        let (mut fitting, mut clean) = (0usize, true);
        loop {
            match reader.next(&mut rec) {
                Step::Record => fitting += ncols.is_none_or(|n| rec.fits(n)) as usize,
                Step::Broken(..) => clean = false,
                Step::End => break,
            }
        }
        (clean, fitting)
    };
    if score(inside) > score(outside) {
        inside
    } else {
        outside
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_inputs_are_read_whole() {
        assert_eq!(windows(3..1000, 8 << 20), vec![3..1000]);
        assert_eq!(windows(0..(8 << 20), 8 << 20), vec![0..(8 << 20)]);
    }

    #[test]
    fn large_inputs_get_spread_windows_within_the_budget() {
        let len = 100 << 20;
        let w = windows(0..len, 8 << 20);
        // 100 MiB / 8 MiB rounds up to 13, twice that many windows
        assert_eq!(w.len(), 26);
        assert_eq!(w[0].start, 0);
        assert_eq!(w.last().unwrap().end, len);
        assert!(w.iter().map(|r| r.len()).sum::<usize>() <= 8 << 20);
        assert!(w.windows(2).all(|p| p[0].end <= p[1].start));
        // at least three windows even when the input is barely larger than the budget
        assert_eq!(windows(0..(9 << 20), 8 << 20).len(), 4);
        assert_eq!(windows(0..(1 << 30), 1 << 20).len(), 64);
        // a tiny budget still takes one window of the minimum size
        assert_eq!(windows(0..(1 << 20), 100), vec![0..MIN_WINDOW]);
    }

    #[test]
    fn resync_finds_the_record_start_inside_a_quoted_field() {
        let dialect = Dialect::default();
        // the window starts inside the quoted field of the second record, which holds a
        // newline: assuming "outside" would start a record at "more text"
        let mut data = b"1,\"x\"\n2,\"some\nmore text\"\n".to_vec();
        for i in 3..40 {
            data.extend_from_slice(format!("{i},\"v\"\n").as_bytes());
        }
        let at = 10; // inside "some"
        let start = resync(&data, &(at..data.len()), &dialect, Some(2), 4096);
        assert_eq!(&data[start..start + 2], b"3,");
        // a window outside quotes starts after the next newline
        let start = resync(&data, &(1..data.len()), &dialect, Some(2), 4096);
        assert_eq!(start, 6);
    }
}

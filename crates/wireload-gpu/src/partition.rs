//! Cutting the input into the partitions streamed to the device.
//!
//! A partition is cut at a nominal size; the record that straddles the cut (the orphan of
//! the next partition, in the paper's words) is finished by this partition: its tail, the
//! widow, is added to this partition and the next one starts after it. Quote context
//! decides where records end, so the quotes before a cut are counted on the host (the
//! toggle model: an odd count means the cut is inside a quoted field). Every partition
//! therefore holds whole records and starts outside quotes.

use std::ops::Range;

use wireload_csv::{QuoteState, ScanConfig, first_record_start};

/// Hands out consecutive partitions of `data[start..]`.
#[derive(Debug)]
pub struct Partitioner<'a> {
    data: &'a [u8],
    scan: ScanConfig,
    quote: Option<u8>,
    size: usize,
    next: usize,
    index: usize,
}

/// One partition: its number and its bytes in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// 0-based partition number
    pub index: usize,
    /// bytes of the input
    pub range: Range<usize>,
}

impl<'a> Partitioner<'a> {
    /// Partitions of about `size` bytes of `data` from `start` (a record start outside
    /// quotes); `scan` is the dialect's safe-mode scan configuration.
    pub fn new(
        data: &'a [u8],
        start: usize,
        scan: ScanConfig,
        quote: Option<u8>,
        size: usize,
    ) -> Self {
        Partitioner {
            data,
            scan,
            quote,
            size: size.max(1),
            next: start,
            index: 0,
        }
    }
}

impl Iterator for Partitioner<'_> {
    type Item = Part;

    fn next(&mut self) -> Option<Part> {
        let data = self.data;
        let start = self.next;
        if start >= data.len() {
            return None;
        }
        let cut = start.saturating_add(self.size);
        let end = if cut >= data.len() {
            data.len()
        } else {
            let state = match self.quote {
                Some(q) if bytecount::count(&data[start..cut], q) % 2 == 1 => QuoteState::Inside,
                _ => QuoteState::Outside,
            };
            first_record_start(data, &self.scan, cut, state)
        };
        self.next = end;
        let part = Part {
            index: self.index,
            range: start..end,
        };
        self.index += 1;
        Some(part)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wireload_csv::{Dialect, ScanMode};

    fn parts(data: &[u8], size: usize) -> Vec<Range<usize>> {
        let scan = ScanConfig::new(&Dialect::default(), ScanMode::Safe).unwrap();
        Partitioner::new(data, 0, scan, Some(b'"'), size)
            .map(|p| p.range)
            .collect()
    }

    #[test]
    fn partitions_hold_whole_records_and_cover_the_input() {
        let data = b"a,1\n\"x\ny\",2\nbb,3\r\nc,\"4\"\n";
        for size in 1..data.len() + 2 {
            let ps = parts(data, size);
            assert_eq!(ps.first().unwrap().start, 0);
            assert_eq!(ps.last().unwrap().end, data.len());
            for w in ps.windows(2) {
                assert_eq!(w[0].end, w[1].start, "size {size}: contiguous");
                let b = data[w[0].end - 1];
                assert!(
                    b == b'\n' || b == b'\r',
                    "size {size}: ends with a record delimiter"
                );
            }
            // the quoted newline never ends a partition
            assert!(ps.iter().all(|p| p.end != 7), "size {size}: {ps:?}");
        }
    }
}

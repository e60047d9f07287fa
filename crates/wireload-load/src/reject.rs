//! Rejected records (ON_ERROR ignore): what a load skipped, where, and why.
//!
//! A chunk task that meets a bad record notes it with its line counted from the chunk's
//! start; the window's parse adds the line ends before the chunk once the window is done
//! (counted only when some record was rejected), so line numbers are exact in parallel and
//! streamed loads without counting lines on the fast path. At most [`MAX_REJECTS`] are kept
//! (the first ones in input order); every one is counted.
//!
//! A broken record ends where the toggle model of quoting (the one that places chunks and
//! stream windows) ends it: at the first record delimiter outside quotes after its start.
//! A wrong field count or text after a closing quote spoils one record; a stray quote
//! character opens a quoted region, so the broken record runs on until the quotes balance
//! again, and a quote never closed makes the rest of the input one rejected record.

use std::collections::BTreeMap;

use wireload_csv::{QuoteState, ScanConfig, first_record_start};
pub(crate) use wireload_publish::Reject;
use wireload_publish::{MAX_REJECTS, RAW_LINE_CHARS};

/// Where the record starting at `rs` ends: the offset after its record delimiter (outside
/// quotes, in the toggle model), or `data.len()`.
pub(crate) fn record_end(data: &[u8], scan: &ScanConfig, rs: usize) -> usize {
    if rs >= data.len() {
        return data.len();
    }
    let state = if scan.specials.quote == Some(data[rs]) {
        QuoteState::Inside
    } else {
        QuoteState::Outside
    };
    // from the byte after the first: `first_record_start` takes a position right after a
    // delimiter as a record start
    first_record_start(data, scan, rs + 1, state)
}

/// The text of the record `data[rs..end]` for a [`Reject`]: its record delimiter left out,
/// lossy UTF-8, cut at [`RAW_LINE_CHARS`] characters.
pub(crate) fn raw_line(data: &[u8], rs: usize, end: usize) -> String {
    let mut e = end.min(data.len());
    if e > rs && data[e - 1] == b'\n' {
        e -= 1;
    }
    if e > rs && data[e - 1] == b'\r' {
        e -= 1;
    }
    let text = &data[rs.min(e)..e];
    // every character takes at most 4 bytes: more than this is more than the limit
    let head = &text[..text.len().min(4 * RAW_LINE_CHARS + 4)];
    let s = String::from_utf8_lossy(head);
    if head.len() < text.len() || s.chars().count() > RAW_LINE_CHARS {
        s.chars().take(RAW_LINE_CHARS).collect::<String>() + "..."
    } else {
        s.into_owned()
    }
}

/// The rejects of one chunk task, in input order; lines counted from the chunk start.
pub(crate) struct ChunkRejects {
    /// every reject of the chunk
    pub count: u64,
    /// the first ones, at most `room`
    pub kept: Vec<Reject>,
    room: usize,
    /// line ends counted from the chunk start up to `line_pos`
    line_pos: usize,
    lines: u64,
}

impl ChunkRejects {
    /// No rejects yet, in the chunk starting at `chunk_start`; keeps at most `room`.
    pub(crate) fn new(chunk_start: usize, room: usize) -> Self {
        ChunkRejects {
            count: 0,
            kept: Vec::new(),
            room,
            line_pos: chunk_start,
            lines: 0,
        }
    }

    /// Notes a reject of the record starting at `rs` (after every one noted so far); `make`
    /// builds it, given the line ends between the chunk start and `rs`, when it is kept.
    pub(crate) fn note(&mut self, data: &[u8], rs: usize, make: impl FnOnce(u64) -> Reject) {
        self.count += 1;
        if self.kept.len() < self.room {
            self.lines += wireload_csv::line_ends(data, self.line_pos..rs.max(self.line_pos));
            self.line_pos = rs.max(self.line_pos);
            self.kept.push(make(self.lines));
        }
    }
}

/// The rejects of one window's chunk tasks, by chunk; kept to the first `room` in input
/// order as tasks finish in any order.
#[derive(Default)]
pub(crate) struct WindowRejects {
    pub count: u64,
    pub by_chunk: BTreeMap<usize, Vec<Reject>>,
    kept: usize,
    room: usize,
}

impl WindowRejects {
    /// Keeps at most `room` rejects.
    pub(crate) fn new(room: usize) -> Self {
        WindowRejects {
            room,
            ..WindowRejects::default()
        }
    }

    /// Adds the rejects of chunk `index`, dropping the last ones in input order when more
    /// than `room` are kept.
    pub(crate) fn add(&mut self, index: usize, chunk: ChunkRejects) {
        self.count += chunk.count;
        if chunk.kept.is_empty() {
            return;
        }
        self.kept += chunk.kept.len();
        self.by_chunk.insert(index, chunk.kept);
        while self.kept > self.room {
            let Some(mut last) = self.by_chunk.last_entry() else {
                break;
            };
            let excess = self.kept - self.room;
            let len = last.get().len();
            if len <= excess {
                last.remove();
                self.kept -= len;
            } else {
                last.get_mut().truncate(len - excess);
                self.kept -= excess;
            }
        }
    }
}

/// The rejects of a whole load.
#[derive(Debug, Default)]
pub(crate) struct RejectLog {
    /// every reject
    pub count: u64,
    /// the first [`MAX_REJECTS`], in input order
    pub kept: Vec<Reject>,
}

impl RejectLog {
    /// How many more rejects are kept.
    pub(crate) fn room(&self) -> usize {
        MAX_REJECTS - self.kept.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wireload_csv::{Dialect, ScanMode};

    #[test]
    fn record_end_follows_quotes_and_raw_line_drops_the_delimiter() {
        let scan = ScanConfig::new(&Dialect::default(), ScanMode::Safe).unwrap();
        let data = b"1,\"a\nb\",2\r\n3,x\"y\"z,4\n\"open\n5,6\n";
        assert_eq!(record_end(data, &scan, 0), 10);
        assert_eq!(raw_line(data, 0, 10), "1,\"a\nb\",2");
        assert_eq!(record_end(data, &scan, 11), 21);
        assert_eq!(raw_line(data, 11, 21), "3,x\"y\"z,4");
        assert_eq!(record_end(data, &scan, 21), data.len());
        assert_eq!(raw_line(data, 21, data.len()), "\"open\n5,6");
        let long = vec![b'x'; 5000];
        let s = raw_line(&long, 0, long.len());
        assert_eq!(s.len(), RAW_LINE_CHARS + 3);
        assert!(s.ends_with("x..."));
    }

    #[test]
    fn window_rejects_keep_the_first_in_input_order() {
        let r = |line| Reject {
            file: "f".into(),
            line,
            byte_offset: 0,
            column: None,
            column_name: None,
            raw_line: String::new(),
            error: String::new(),
        };
        let chunk = |lines: &[u64]| {
            let mut c = ChunkRejects::new(0, 10);
            for &l in lines {
                c.note(b"", 0, |_| r(l));
            }
            c
        };
        let mut w = WindowRejects::new(3);
        w.add(2, chunk(&[20, 21]));
        w.add(1, chunk(&[10, 11]));
        w.add(3, chunk(&[30]));
        w.add(0, chunk(&[]));
        assert_eq!(w.count, 5);
        let kept: Vec<u64> = w.by_chunk.values().flatten().map(|r| r.line).collect();
        assert_eq!(kept, [10, 11, 20]);
    }
}

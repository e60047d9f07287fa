//! CSV dialects, quote-safe parallel chunking, and the structural scan that splits
//! records into fields.
//!
//! A load cuts its input into fixed-size *chunks*. Every record belongs to the chunk in
//! which it starts; the task of a chunk skips the *orphan* at its start (the rest of the
//! previous chunk's last record) and finishes its own *widow* past its end. Where a chunk
//! starts inside a quoted field is decided before the tasks run, in parallel, by
//! [`chunks::chunk_start_states`] (safe mode), or assumed impossible and checked (fast mode).
//! The scan classifies 64-byte blocks with the SIMD backend chosen for the process
//! ([`simd::Backend`]: AVX-512, AVX2, SSE 4.2, NEON, or the scalar reference scanner).
//!
//! ```
//! use wireload_csv::{Dialect, FieldBatch, ScanConfig, ScanMode, Scanner};
//! let data = b"1,\"a,b\"\n2,c\n";
//! let cfg = ScanConfig::new(&Dialect::default(), ScanMode::Safe).unwrap();
//! let mut scanner = Scanner::new(&cfg, data, 0, data.len(), 2);
//! let mut batch = FieldBatch::new(2);
//! scanner.next_batch(&mut batch, 1024).unwrap();
//! assert_eq!(batch.rows(), 2);
//! assert_eq!(batch.field(data, 0, 1), (&b"a,b"[..], true));
//! ```
#![deny(missing_docs)]

pub mod block;
pub mod chunks;
mod dialect;
mod encoding;
mod error;
mod fields;
pub mod reference;
mod scan;
pub mod simd;

pub use chunks::{
    QuoteState, chunk_ranges, chunk_start_states, chunk_states_and_lines, first_record_start,
    last_record_end,
};
pub use dialect::{Dialect, ScanMode};
pub use encoding::Encoding;
pub use error::{DialectError, ScanError, ScanErrorKind};
pub use fields::{ColumnFields, FieldBatch};
pub use scan::{BlockScanner, ScanConfig, Scanner};
pub use simd::Backend;

/// The UTF-8 byte order mark, skipped at the start of the input.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Offset of the first byte after a leading UTF-8 BOM (0 when there is none).
pub fn skip_bom(data: &[u8]) -> usize {
    if data.starts_with(BOM) { BOM.len() } else { 0 }
}

/// 1-based physical line of byte `pos`: one more than the record delimiters before it,
/// counting `\r\n` once and a lone `\r` as a line end.
pub fn line_of(data: &[u8], pos: usize) -> u64 {
    1 + line_ends(data, 0..pos.min(data.len()))
}

/// Line ends in `data[range]` as [`line_of`] counts them (`\n`, and `\r` not followed by
/// `\n`, looking past the range's end for that): `line_of(data, b) = 1 + line_ends(data,
/// 0..b)`, and the counts of adjacent ranges add up.
pub fn line_ends(data: &[u8], range: std::ops::Range<usize>) -> u64 {
    line_ends_and_count(data, range, None).0
}

/// [`line_ends`] of `data[range]`, and how many of its bytes equal `byte` (0 without one):
/// the input is read from memory once for both.
pub fn line_ends_and_count(
    data: &[u8],
    range: std::ops::Range<usize>,
    byte: Option<u8>,
) -> (u64, usize) {
    // the searches run over one cache-sized slice after the other: the input is read
    // from memory once
    const SLICE: usize = 64 << 10;
    let (mut ends, mut count) = (0, 0);
    let mut at = range.start;
    for head in data[range].chunks(SLICE) {
        ends += bytecount::count(head, b'\n') as u64;
        if memchr::memchr(b'\r', head).is_some() {
            ends += memchr::memchr_iter(b'\r', head)
                .filter(|&i| data.get(at + i + 1) != Some(&b'\n'))
                .count() as u64;
        }
        // most slices of most files hold no quote: finding none is cheaper than counting
        if let Some(b) = byte
            && memchr::memchr(b, head).is_some()
        {
            count += bytecount::count(head, b);
        }
        at += head.len();
    }
    (ends, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Line ends counted one byte at a time.
    fn naive(data: &[u8], range: std::ops::Range<usize>) -> u64 {
        range
            .filter(|&i| data[i] == b'\n' || (data[i] == b'\r' && data.get(i + 1) != Some(&b'\n')))
            .count() as u64
    }

    #[test]
    fn line_ends_count_lf_and_lone_cr_across_slices_and_ranges() {
        // CR, LF and CRLF everywhere, including a CRLF split at each 64 KiB slice boundary
        let mut data: Vec<u8> = (0..300_000u32)
            .map(|i| match i.wrapping_mul(2_654_435_761) % 13 {
                0 => b'\n',
                1 => b'\r',
                _ => b'a',
            })
            .collect();
        for k in 1..4 {
            data[k * (64 << 10) - 1] = b'\r';
            data[k * (64 << 10)] = b'\n';
        }
        for range in [0..data.len(), 1..(64 << 10), (64 << 10) - 1..200_001, 5..5] {
            assert_eq!(line_ends(&data, range.clone()), naive(&data, range));
        }
        let (a, b) = (
            line_ends(&data, 0..131_071),
            line_ends(&data, 131_071..data.len()),
        );
        assert_eq!(a + b, line_ends(&data, 0..data.len()));
        assert_eq!(line_of(&data, 70_000), 1 + naive(&data, 0..70_000));
        for range in [0..data.len(), 3..200_001, 5..5] {
            let quotes = data[range.clone()].iter().filter(|&&b| b == b'a').count();
            assert_eq!(
                line_ends_and_count(&data, range.clone(), Some(b'a')),
                (naive(&data, range), quotes)
            );
        }
    }
}

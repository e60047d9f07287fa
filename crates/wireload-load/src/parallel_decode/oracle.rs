//! The parallel reader checked against the sequential decoder ([`Codec::decoder`]): the
//! same bytes, the same error after bytes that agree, the same progress, whether its
//! bytes are read or its decoded jobs taken whole. Used by the unit tests and, through
//! the `testing` feature, by the `decode` fuzz target.

use std::io::{Cursor, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{Bytes, MAX_UNIT, ParallelReader, Part, Settings};
use crate::compressed::Codec;

/// What a reader gives: its bytes up to the first error (or the limit), and that error's
/// text.
pub(crate) type Got = (Vec<u8>, Option<String>);

/// Reads `reader` to its end or first error, or until `limit` bytes.
fn drain_up_to(reader: &mut impl Read, limit: usize) -> Got {
    let mut out = Vec::new();
    // an odd size, so reads end inside jobs
    let mut buf = vec![0; 7919];
    while out.len() < limit {
        match reader.read(&mut buf) {
            Ok(0) => return (out, None),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return (out, Some(e.to_string())),
        }
    }
    out.truncate(limit);
    (out, None)
}

#[cfg(test)]
/// Reads `reader` to its end or first error.
pub(crate) fn drain(reader: &mut impl Read) -> Got {
    drain_up_to(reader, usize::MAX)
}

/// What a reader gives when its decoded jobs are taken whole (buffers given back to it
/// with junk in them, for the threads to decode into again), up to `limit` bytes, and how
/// many jobs were taken whole.
fn drain_parts_up_to(reader: &mut ParallelReader, limit: usize) -> (Got, usize) {
    let front = reader.settings.front;
    let mut out = Vec::new();
    let mut whole = 0;
    let mut buf = vec![0; 7919];
    while out.len() < limit {
        match reader.next_part() {
            Ok(Part::Decoded(mut data)) => {
                assert!(data.len() > front, "an empty part");
                out.extend_from_slice(&data[front..]);
                whole += 1;
                data.fill(b'#');
                reader.give(data);
            }
            Ok(Part::Stream) => loop {
                match reader.read_part(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => out.extend_from_slice(&buf[..n]),
                    Err(e) => return ((out, Some(e.to_string())), whole),
                }
            },
            Ok(Part::End) => return ((out, None), whole),
            Err(e) => return ((out, Some(e.to_string())), whole),
        }
    }
    out.truncate(limit);
    ((out, None), whole)
}

#[cfg(test)]
/// [`drain_parts_up_to`] without a limit.
pub(crate) fn drain_parts(reader: &mut ParallelReader) -> (Got, usize) {
    drain_parts_up_to(reader, usize::MAX)
}

/// The sequential decoder's outcome ([`Codec::decoder`]), up to `limit` bytes.
fn sequential_up_to(codec: Codec, input: &[u8], limit: usize) -> Got {
    match codec.decoder(Cursor::new(input.to_vec())) {
        Ok(mut decoder) => drain_up_to(&mut decoder, limit),
        Err(e) => (Vec::new(), Some(e.to_string())),
    }
}

#[cfg(test)]
/// The sequential decoder's outcome.
pub(crate) fn sequential(codec: Codec, input: &[u8]) -> Got {
    sequential_up_to(codec, input, usize::MAX)
}

/// A parallel reader of `input`, or None when it declines; the progress it counts.
pub(crate) fn reader(
    codec: Codec,
    input: &[u8],
    settings: Settings,
) -> Option<(ParallelReader, Arc<AtomicU64>)> {
    let consumed = Arc::new(AtomicU64::new(0));
    let bytes: Bytes = Arc::new(input.to_vec());
    ParallelReader::new(bytes, codec, Arc::clone(&consumed), settings).map(|r| (r, consumed))
}

/// An error's text as the parallel reader must match it: zstd's own detail (after the
/// colon) names what a decoder met, which depends on the buffers earlier frames left it
/// (a frame whose block overflows its window is "Destination buffer is too small" to a
/// fresh decoder, "Data corruption detected" to one that decoded a larger frame before),
/// so only the kind is compared there.
fn kind(codec: Codec, error: Option<&String>) -> Option<&str> {
    error.map(|e| match codec {
        Codec::Zstd => e.split(':').next().unwrap_or(e),
        Codec::Gzip => e.as_str(),
    })
}

/// Asserts that `got` (a parallel reader's outcome, read up to `limit` bytes) is `want`
/// (the sequential decoder's): the same bytes, or the same error after bytes that agree.
/// True when the whole input was compared (no limit reached, no error).
fn agrees(
    got: &Got,
    want: &Got,
    codec: Codec,
    limit: usize,
    how: &str,
    settings: &Settings,
) -> bool {
    assert_eq!(
        kind(codec, got.1.as_ref()),
        kind(codec, want.1.as_ref()),
        "error ({how}), {settings:?}: {:?} against {:?}",
        got.1,
        want.1
    );
    if want.1.is_none() {
        assert!(got.0 == want.0, "output differs ({how}), {settings:?}");
        want.0.len() < limit
    } else {
        let n = got.0.len().min(want.0.len());
        assert!(
            got.0[..n] == want.0[..n],
            "output before the error differs ({how}), {settings:?}"
        );
        false
    }
}

/// Asserts that the parallel reader (when it takes `input`) gives what the sequential
/// decoder gives, up to `limit` bytes, read and taken whole; returns the reader's
/// speculative chains (taken, refused) and whether it took the input.
fn same_up_to(
    codec: Codec,
    input: &[u8],
    settings: Settings,
    limit: usize,
) -> ((usize, usize), bool) {
    let want = sequential_up_to(codec, input, limit);
    let Some((mut r, consumed)) = reader(codec, input, settings) else {
        return ((0, 0), false);
    };
    let got = drain_up_to(&mut r, limit);
    if agrees(&got, &want, codec, limit, "read", &settings) {
        assert_eq!(consumed.load(Relaxed), input.len() as u64, "progress");
        // and the end stays the end
        assert_eq!(r.read(&mut [0; 10]).unwrap(), 0);
    } else if let Some(error) = &got.1 {
        // a failed reader keeps failing
        assert_eq!(&r.read(&mut [0; 10]).unwrap_err().to_string(), error);
    }
    assert!(consumed.load(Relaxed) <= input.len() as u64);
    // the same when the decoded jobs are taken whole
    let (mut whole, consumed) = reader(codec, input, settings).expect("took it before");
    let (got, _) = drain_parts_up_to(&mut whole, limit);
    if agrees(&got, &want, codec, limit, "parts", &settings) {
        assert_eq!(consumed.load(Relaxed), input.len() as u64, "progress");
        assert!(matches!(whole.next_part(), Ok(Part::End)));
    } else if got.1.is_some() {
        assert!(whole.next_part().is_err() && whole.read(&mut [0; 10]).is_err());
    }
    assert!(consumed.load(Relaxed) <= input.len() as u64);
    (r.chains, true)
}

#[cfg(test)]
/// Asserts that the parallel reader (when it takes `input`) gives what the sequential
/// decoder gives; returns its speculative chains (taken, refused) and whether it took it.
pub(crate) fn same(codec: Codec, input: &[u8], settings: Settings) -> ((usize, usize), bool) {
    same_up_to(codec, input, settings, usize::MAX)
}

/// Checks the parallel reader against the sequential decoder on `input` (gzip or zstd by
/// its first bytes; anything else is skipped) under settings chosen by `knobs`, up to
/// 16 MiB of output; panics where they differ.
pub fn check(input: &[u8], knobs: [u8; 4]) {
    let Some(codec) = Codec::sniff(input) else {
        return;
    };
    let [a, b, c, d] = knobs.map(usize::from);
    let job_bytes = [1, 100, 1000, 5000, 20_000, 1 << 16, 1 << 20, 8][a % 8];
    let settings = Settings {
        threads: 1 + a / 8 % 4,
        ahead: b % 6,
        max_unit: [300, 5000, 40_000, MAX_UNIT][b / 6 % 4],
        job_bytes,
        run_bytes: job_bytes << (c % 4),
        region: Some([16, 64, 200, 1000, 4096, 50_000, 300, 2000][c / 4 % 8]),
        front: [0, 1, 64, 7][d % 4],
    };
    same_up_to(codec, input, settings, 16 << 20);
}

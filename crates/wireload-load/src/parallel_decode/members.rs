//! gzip: member headers, the plausible places where a member may start, and one member
//! decoded from a given offset.

use std::io::Read;

use flate2::bufread::GzDecoder;

use super::{Bytes, GZIP_HEADER, MAX_HEADER_FIELD, Tail, slice};

/// What a gzip header that parses tells.
pub(super) struct GzipHeader {
    /// Where the header ends (the deflate stream starts).
    end: usize,
    /// A BGZF member's size (its `BC` extra subfield), when it has one.
    pub(super) bgzf: Option<usize>,
}

/// The gzip header at `at` when it parses as flate2 parses it (and names a known OS).
pub(super) fn gzip_header(data: &[u8], at: usize) -> Option<GzipHeader> {
    let fixed = data.get(at..at.checked_add(10)?)?;
    let flags = fixed[3];
    if fixed[..3] != GZIP_HEADER || flags & 0xe0 != 0 || (fixed[9] > 13 && fixed[9] != 255) {
        return None;
    }
    let mut end = at + 10;
    let mut bgzf = None;
    if flags & 0x04 != 0 {
        let length = data.get(end..end + 2)?;
        let length = usize::from(u16::from_le_bytes([length[0], length[1]]));
        bgzf = bgzf_size(data.get(end + 2..end + 2 + length)?);
        end += 2 + length;
    }
    for field in [0x08, 0x10] {
        // file name, comment: up to a NUL
        if flags & field != 0 {
            let text = &data[end..(end + MAX_HEADER_FIELD + 1).min(data.len())];
            end += memchr::memchr(0, text)? + 1;
        }
    }
    if flags & 0x02 != 0 {
        let stored = data.get(end..end + 2)?;
        let mut crc = flate2::Crc::new();
        crc.update(&data[at..end]);
        if crc.sum() as u16 != u16::from_le_bytes([stored[0], stored[1]]) {
            return None;
        }
        end += 2;
    }
    Some(GzipHeader { end, bgzf })
}

/// The member size a BGZF `BC` subfield of a gzip `extra` field gives.
fn bgzf_size(extra: &[u8]) -> Option<usize> {
    let mut rest = extra;
    while rest.len() >= 4 {
        let length = usize::from(u16::from_le_bytes([rest[2], rest[3]]));
        let field = rest.get(4..4 + length)?;
        if rest[..2] == *b"BC" && length == 2 {
            return Some(usize::from(u16::from_le_bytes([field[0], field[1]])) + 1);
        }
        rest = &rest[4 + length..];
    }
    None
}

/// Whether a gzip member plausibly starts at `at`: its header parses, there is room for a
/// deflate stream and a trailer, the first block is of a known type; for `bgzf`, it is a
/// BGZF member followed by the end or another member.
pub(super) fn plausible(data: &[u8], at: usize, bgzf: bool) -> bool {
    let Some(header) = gzip_header(data, at) else {
        return false;
    };
    let room = header.end + 10 <= data.len();
    let block = data.get(header.end).is_some_and(|b| (b >> 1) & 3 != 3);
    let bgzf = !bgzf
        || header.bgzf.is_some_and(|size| {
            let next = at + size;
            next == data.len() || data.get(next..next + 2) == Some(&GZIP_HEADER[..2])
        });
    room && block && bgzf
}

/// The first offset in `from..to` where a gzip member plausibly starts.
pub(super) fn candidate(data: &[u8], from: usize, to: usize, bgzf: bool) -> Option<usize> {
    let window = &data[from..(to + GZIP_HEADER.len() - 1).min(data.len())];
    memchr::memmem::find_iter(window, &GZIP_HEADER)
        .map(|i| from + i)
        .take_while(|&at| at < to)
        .find(|&at| plausible(data, at, bgzf))
}

/// Decodes the gzip member at `at` onto `out` with flate2 (header, deflate, CRC32 and
/// ISIZE checked): where it ends, or Err with the bytes it decoded when it fails or would
/// decode more than `cap` bytes.
pub(super) fn member(
    bytes: &Bytes,
    at: usize,
    cap: usize,
    out: &mut Vec<u8>,
) -> Result<usize, usize> {
    let end = slice(bytes).len();
    let mut decoder = GzDecoder::new(Tail::new(bytes, at, end));
    let before = out.len();
    let read = (&mut decoder).take(cap as u64 + 1).read_to_end(out);
    let n = out.len() - before;
    match read {
        Ok(_) if n <= cap => Ok(decoder.get_ref().pos),
        _ => Err(n),
    }
}

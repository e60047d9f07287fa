//! ASCII digits eight at a time in a `u64` ("SIMD within a register"): loading, validation
//! and conversion without a branch per byte.
//!
//! Words are little-endian: byte 0 of a word is the first byte of the text, so the most
//! significant digit of a number sits in the lowest byte. Loads never read outside their
//! slice: a slice shorter than a word is zero-padded, and 0 is no digit. No `unsafe`.
//!
//! Per-byte arithmetic here never carries from one byte into the next: every addition
//! works on bytes whose high bit was cleared first, and every product stays below the
//! lane it is computed in (checked in the comments of [`parse8`]).

/// `0x01` in every byte; times a byte value, that value in every byte.
const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte.
pub(crate) const HIGH: u64 = ONES * 0x80;

/// The first `min(len, 8)` bytes of `bytes` as a word, zero-padded above them.
///
/// Short slices take two overlapping loads of 4 or 2 bytes (bytes loaded twice are equal,
/// so OR-ing the two halves is exact), never a byte loop.
#[inline(always)]
pub(crate) fn load(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    if n >= 8 {
        u64::from_le_bytes([
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
        ])
    } else if n >= 4 {
        let lo = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as u64;
        let hi =
            u32::from_le_bytes([bytes[n - 4], bytes[n - 3], bytes[n - 2], bytes[n - 1]]) as u64;
        lo | hi << (8 * (n - 4))
    } else if n >= 2 {
        let lo = u16::from_le_bytes([bytes[0], bytes[1]]) as u64;
        let hi = u16::from_le_bytes([bytes[n - 2], bytes[n - 1]]) as u64;
        lo | hi << (8 * (n - 2))
    } else if n == 1 {
        bytes[0] as u64
    } else {
        0
    }
}

/// The first `min(len, 16)` bytes of `bytes` as a 128-bit word, zero-padded.
#[inline(always)]
pub(crate) fn load16(bytes: &[u8]) -> u128 {
    let lo = load(bytes) as u128;
    let hi = if bytes.len() > 8 {
        load(&bytes[8..])
    } else {
        0
    };
    lo | (hi as u128) << 64
}

/// The high bit of every byte of `w` that is not an ASCII digit (`0x30..=0x39`).
#[inline(always)]
pub(crate) fn non_digits(w: u64) -> u64 {
    let low7 = w & (ONES * 0x7F);
    // Bit 7 of each sum is set when the byte's low seven bits reach '0' (resp. pass '9');
    // the sums stay below 0x100 (at most 0x7F + 0x50), so no carry leaves a byte.
    let at_least_zero = low7 + ONES * (0x80 - b'0' as u64);
    let above_nine = low7 + ONES * (0x80 - b'9' as u64 - 1);
    // A byte with its own high bit set (non-ASCII) is no digit either.
    (!at_least_zero | above_nine | w) & HIGH
}

/// [`non_digits`] of each half of a 128-bit word.
#[inline(always)]
pub(crate) fn non_digits16(x: u128) -> u128 {
    non_digits(x as u64) as u128 | (non_digits((x >> 64) as u64) as u128) << 64
}

/// How many bytes at the start of `w` are digits (0 to 8).
#[inline(always)]
pub(crate) fn leading_digits(w: u64) -> usize {
    (non_digits(w).trailing_zeros() / 8) as usize
}

/// The value of a word of eight digit bytes, most significant first. Bytes that are no
/// digits give a meaningless value but no overflow.
#[inline(always)]
pub(crate) fn parse8(w: u64) -> u64 {
    // Each byte 0..=15 (0..=9 for digits).
    let v = w & (ONES * 0x0F);
    // Byte 2i: 10 * byte 2i + byte 2i+1 <= 165 < 2^8.
    let v = (v * 10 + (v >> 8)) & 0x00FF_00FF_00FF_00FF;
    // 16-bit lane 2i: 100 * lane 2i + lane 2i+1 <= 16665 < 2^16.
    let v = (v * 100 + (v >> 16)) & 0x0000_FFFF_0000_FFFF;
    // 32-bit lane 0: 10^4 * lane 0 + lane 1 < 2^32.
    (v * 10_000 + (v >> 32)) & 0xFFFF_FFFF
}

/// The value of the first `k` bytes of `w` (`1 <= k <= 8`), all digits.
#[inline(always)]
pub(crate) fn parse_first(w: u64, k: usize) -> u64 {
    debug_assert!((1..=8).contains(&k));
    // Shift the k digits to the top; the zeros shifted in are leading zeros.
    parse8(w << (8 * (8 - k)))
}

/// The value of the first `k` bytes of `x` (`1 <= k <= 16`), all digits.
#[inline(always)]
pub(crate) fn parse_first16(x: u128, k: usize) -> u64 {
    debug_assert!((1..=16).contains(&k));
    if k <= 8 {
        parse_first(x as u64, k)
    } else {
        let aligned = x << (8 * (16 - k));
        parse8(aligned as u64) * 100_000_000 + parse8((aligned >> 64) as u64)
    }
}

/// A mask of the high bits of bytes `n..8` of a word (`1 <= n <= 8`): the padding of a
/// load of `n` bytes.
#[inline(always)]
pub(crate) fn padding(n: usize) -> u64 {
    debug_assert!((1..=8).contains(&n));
    // Two shifts, so that n = 8 shifts all out.
    (HIGH << (8 * (n - 1))) << 8
}

/// A mask of the high bits of bytes `n..16` of a 128-bit word: the padding of a load of
/// `n` bytes.
#[inline(always)]
pub(crate) fn padding16(n: usize) -> u128 {
    let high = (HIGH as u128) | (HIGH as u128) << 64;
    high.checked_shl(8 * n as u32).unwrap_or(0)
}

//! A byte buffer for hot formatting loops: short values are copied with fixed-size moves
//! (over-copying into slack past the end) instead of a `memcpy` call per value, and
//! numbers are written in place.
//!
//! The buffer's `Vec` is always initialized up to its length, which stays at least
//! [`SLACK`] bytes past the logical end (`pos`); so every write is a plain bounds-checked
//! slice write, the bytes past `pos` may hold anything, and memory is zeroed only when the
//! buffer grows (it is reused from piece to piece).

/// Bytes always available past the logical end.
pub(crate) const SLACK: usize = 64;

/// Values of at most this many bytes are copied with one fixed-size move.
const SHORT: usize = 32;

/// `10^k` for `k` in `0..20`.
pub(crate) const POW10: [u64; 20] = {
    let mut table = [1u64; 20];
    let mut k = 1;
    while k < 20 {
        table[k] = table[k - 1] * 10;
        k += 1;
    }
    table
};

/// Two ASCII digits of every number below 100.
pub(crate) const DIGIT_PAIRS: [[u8; 2]; 100] = {
    let mut table = [[0u8; 2]; 100];
    let mut i = 0;
    while i < 100 {
        table[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    table
};

/// A growable byte buffer with a cursor; see the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Out {
    buf: Vec<u8>,
    pos: usize,
}

impl Out {
    /// Empties the buffer, keeping its memory.
    #[inline]
    pub fn clear(&mut self) {
        self.pos = 0;
    }

    /// Bytes written.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.pos
    }

    /// The bytes written.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[..self.pos]
    }

    /// The bytes written and the slack after them (for over-copying reads).
    #[inline(always)]
    pub fn padded(&self) -> &[u8] {
        &self.buf
    }

    /// Drops the bytes after the first `len`.
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        self.pos = self.pos.min(len);
    }

    /// Makes room for `n` more bytes (and the slack).
    #[inline(always)]
    pub fn reserve(&mut self, n: usize) {
        if self.buf.len() < self.pos + n + SLACK {
            self.grow(n);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) {
        let want = (self.pos + n + SLACK).max(self.buf.len() * 2);
        self.buf.resize(want, 0);
    }

    /// The next `n` bytes to write into; [`Out::advance`] then keeps those written.
    #[inline(always)]
    pub fn spare(&mut self, n: usize) -> &mut [u8] {
        self.reserve(n);
        &mut self.buf[self.pos..self.pos + n]
    }

    /// Keeps `n` bytes written through [`Out::spare`].
    #[inline(always)]
    pub fn advance(&mut self, n: usize) {
        debug_assert!(self.pos + n + SLACK <= self.buf.len());
        self.pos += n;
    }

    /// Appends one byte.
    #[inline(always)]
    pub fn push(&mut self, b: u8) {
        self.reserve(1);
        self.buf[self.pos] = b;
        self.pos += 1;
    }

    /// Appends `bytes`.
    #[inline(always)]
    pub fn put(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }

    /// Appends `src[start..end]`; when it is short and `src` has [`SHORT`] bytes from
    /// `start`, with one fixed-size move.
    #[inline(always)]
    pub fn put_from(&mut self, src: &[u8], start: usize, end: usize) {
        let n = end - start;
        if n <= SHORT && start + SHORT <= src.len() {
            self.reserve(SHORT);
            self.buf[self.pos..self.pos + SHORT].copy_from_slice(&src[start..start + SHORT]);
        } else {
            self.reserve(n);
            self.buf[self.pos..self.pos + n].copy_from_slice(&src[start..end]);
        }
        self.pos += n;
    }

    /// Appends `n` copies of `b`.
    #[inline]
    pub fn fill(&mut self, b: u8, n: usize) {
        self.spare(n).fill(b);
        self.advance(n);
    }

    /// Appends the decimal digits of `v`.
    #[inline(always)]
    pub fn put_u64(&mut self, v: u64) {
        let n = digit_count(v);
        write_digits(&mut self.spare(20)[..n], v);
        self.advance(n);
    }

    /// Appends `v` with a leading `-` when negative.
    #[inline(always)]
    pub fn put_i64(&mut self, v: i64) {
        let negative = v < 0;
        let m = v.unsigned_abs();
        let n = digit_count(m);
        let dst = self.spare(21);
        dst[0] = b'-';
        write_digits(&mut dst[negative as usize..negative as usize + n], m);
        self.advance(negative as usize + n);
    }

    /// Appends `m * 10^-scale` for `scale` in `1..20`: `0.05`, `12.00` (no division by a
    /// variable power of ten).
    #[inline(always)]
    pub fn put_scaled(&mut self, m: u64, scale: usize) {
        debug_assert!((1..20).contains(&scale));
        let int_digits = digit_count(m).saturating_sub(scale).max(1);
        let n = int_digits + 1 + scale;
        let dst = self.spare(41);
        let int = write_digits(&mut dst[int_digits + 1..n], m);
        dst[int_digits] = b'.';
        write_digits(&mut dst[..int_digits], int);
        self.advance(n);
    }

    /// Appends exactly `width` digits of `v < 10^width`, zero-padded on the left.
    #[inline(always)]
    pub fn put_fixed_digits(&mut self, v: u64, width: usize) {
        debug_assert!(width < 20 && v < POW10[width]);
        write_digits(&mut self.spare(20)[..width], v);
        self.advance(width);
    }
}

/// How many decimal digits `v` has (1 for 0).
#[inline(always)]
pub(crate) fn digit_count(v: u64) -> usize {
    // floor(log10(2^bits)) is bits * 1233 >> 12 for bits < 64 (1233 / 4096 ~ log10 2).
    // `v | 1` counts 0 as one digit and changes no other count (10^k is even).
    let x = v | 1;
    let bits = 64 - x.leading_zeros() as usize;
    let guess = (bits * 1233) >> 12;
    guess + (x >= POW10[guess]) as usize
}

/// Writes the last `dst.len()` digits of `v` into `dst`, zero-padding on the left;
/// returns the digits before them (`v / 10^dst.len()`).
#[inline(always)]
fn write_digits(dst: &mut [u8], mut v: u64) -> u64 {
    let mut i = dst.len();
    while i >= 2 {
        let pair = (v % 100) as usize;
        v /= 100;
        i -= 2;
        dst[i..i + 2].copy_from_slice(&DIGIT_PAIRS[pair]);
    }
    if i == 1 {
        dst[0] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_count_around_every_power_of_ten() {
        assert_eq!(digit_count(0), 1);
        assert_eq!(digit_count(u64::MAX), 20);
        for (k, &p) in POW10.iter().enumerate().skip(1) {
            assert_eq!(digit_count(p - 1), k, "{}", p - 1);
            assert_eq!(digit_count(p), k + 1, "{p}");
            assert_eq!(digit_count(p + 1), k + 1, "{}", p + 1);
        }
        for v in (0..64)
            .map(|s| 1u64 << s)
            .chain((0..64).map(|s| (1u64 << s) - 1))
        {
            assert_eq!(digit_count(v), v.to_string().len(), "{v}");
        }
    }

    #[test]
    fn numbers_match_the_standard_library() {
        let mut out = Out::default();
        let samples = [0i64, 1, -1, 9, 10, 99, 100, -100, 12345, i64::MIN, i64::MAX];
        let mut want = String::new();
        for v in samples {
            out.put_i64(v);
            out.push(b',');
            out.put_u64(v.unsigned_abs());
            out.push(b';');
            want += &format!("{v},{};", v.unsigned_abs());
        }
        out.put_u64(u64::MAX);
        want += &u64::MAX.to_string();
        out.put_fixed_digits(7, 3);
        out.put_fixed_digits(0, 0);
        out.put_fixed_digits(42, 2);
        want += "00742";
        assert_eq!(std::str::from_utf8(out.as_slice()).unwrap(), want);
    }

    #[test]
    fn short_and_long_copies_and_growth() {
        let mut out = Out::default();
        let src: Vec<u8> = (0..200u8).collect();
        let mut want = Vec::new();
        for (start, end) in [(0, 0), (0, 5), (3, 35), (150, 199), (190, 200), (0, 200)] {
            out.put_from(&src, start, end);
            want.extend_from_slice(&src[start..end]);
        }
        for _ in 0..1000 {
            out.put(b"abc");
            want.extend_from_slice(b"abc");
        }
        out.fill(b'0', 3);
        want.extend_from_slice(b"000");
        assert_eq!(out.as_slice(), want.as_slice());
        assert!(out.padded().len() >= out.len() + SLACK);
        out.truncate(4);
        assert_eq!(out.as_slice(), &[0, 1, 2, 3]);
    }
}

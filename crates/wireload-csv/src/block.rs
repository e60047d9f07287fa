//! Classification of 64-byte blocks into bit masks (bit `i` = byte `i`): the data-parallel
//! core of the structural scan. Each routine has a scalar twin; the SSE2 version is the
//! x86-64 baseline, so it needs no runtime detection.

/// The special bytes of a dialect, as the block classifier sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Specials {
    /// field delimiter
    pub delimiter: u8,
    /// quote character (`None`: quoting disabled)
    pub quote: Option<u8>,
}

/// Bit masks of one 64-byte block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Masks {
    /// bytes equal to the delimiter
    pub delimiter: u64,
    /// bytes equal to the quote
    pub quote: u64,
    /// bytes equal to `\n` or `\r`
    pub newline: u64,
}

/// Classifies a block, choosing the fastest routine this build has.
#[inline(always)]
pub fn classify(block: &[u8; 64], s: Specials) -> Masks {
    #[cfg(target_arch = "x86_64")]
    {
        classify_sse2(block, s)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        classify_scalar(block, s)
    }
}

/// Scalar twin of [`classify`].
pub fn classify_scalar(block: &[u8; 64], s: Specials) -> Masks {
    let mut m = Masks::default();
    for (i, &b) in block.iter().enumerate() {
        let bit = 1u64 << i;
        if b == s.delimiter {
            m.delimiter |= bit;
        }
        if Some(b) == s.quote {
            m.quote |= bit;
        }
        if b == b'\n' || b == b'\r' {
            m.newline |= bit;
        }
    }
    m
}

/// SSE2 version of [`classify`] (16 bytes per compare).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn classify_sse2(block: &[u8; 64], s: Specials) -> Masks {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86_64 baseline, so these intrinsics are always available;
    // every load reads 16 bytes at offsets 0, 16, 32, 48 of a 64-byte array, in bounds, and
    // `_mm_loadu_si128` allows unaligned addresses.
    unsafe {
        let d = _mm_set1_epi8(s.delimiter as i8);
        let q = _mm_set1_epi8(s.quote.unwrap_or(0) as i8);
        let lf = _mm_set1_epi8(b'\n' as i8);
        let cr = _mm_set1_epi8(b'\r' as i8);
        let mut m = Masks::default();
        for k in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * k) as *const __m128i);
            let dm = _mm_movemask_epi8(_mm_cmpeq_epi8(v, d)) as u16 as u64;
            let qm = _mm_movemask_epi8(_mm_cmpeq_epi8(v, q)) as u16 as u64;
            let nm = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, cr)))
                as u16 as u64;
            m.delimiter |= dm << (16 * k);
            m.quote |= qm << (16 * k);
            m.newline |= nm << (16 * k);
        }
        if s.quote.is_none() {
            m.quote = 0;
        }
        m
    }
}

/// Prefix XOR: bit `i` of the result is the XOR of bits `0..=i` of `x`
/// (turns quote positions into an "inside quotes" mask).
#[inline(always)]
pub fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// Scalar twin of [`prefix_xor`].
pub fn prefix_xor_scalar(x: u64) -> u64 {
    let mut out = 0;
    let mut acc = 0;
    for i in 0..64 {
        acc ^= (x >> i) & 1;
        out |= acc << i;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn specials() -> Vec<Specials> {
        vec![
            Specials {
                delimiter: b',',
                quote: Some(b'"'),
            },
            Specials {
                delimiter: b'|',
                quote: None,
            },
            Specials {
                delimiter: b'\t',
                quote: Some(b'\''),
            },
            Specials {
                delimiter: 0,
                quote: Some(0xFF),
            },
        ]
    }

    #[test]
    fn classify_matches_scalar_on_random_and_adversarial_blocks() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for s in specials() {
            let alphabet = [
                s.delimiter,
                s.quote.unwrap_or(b'x'),
                b'\n',
                b'\r',
                b'a',
                0,
                0xFF,
                0x80,
            ];
            for _ in 0..2000 {
                let mut block = [0u8; 64];
                for b in block.iter_mut() {
                    *b = if rng.random_bool(0.5) {
                        alphabet[rng.random_range(0..alphabet.len())]
                    } else {
                        rng.random()
                    };
                }
                assert_eq!(classify(&block, s), classify_scalar(&block, s));
            }
            // every special byte at every position
            for &c in &alphabet {
                for pos in 0..64 {
                    let mut block = [b'a'; 64];
                    block[pos] = c;
                    assert_eq!(
                        classify(&block, s),
                        classify_scalar(&block, s),
                        "byte {c} at {pos}"
                    );
                }
            }
            // every byte value
            for v in 0..=255u8 {
                let block = [v; 64];
                assert_eq!(classify(&block, s), classify_scalar(&block, s), "all {v}");
            }
        }
    }

    #[test]
    fn prefix_xor_matches_scalar() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        for x in [0, 1, u64::MAX, 1 << 63, 0x8000_0000_0000_0001] {
            assert_eq!(prefix_xor(x), prefix_xor_scalar(x));
        }
        for _ in 0..10_000 {
            let x: u64 = rng.random();
            assert_eq!(prefix_xor(x), prefix_xor_scalar(x));
        }
    }
}

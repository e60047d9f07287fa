//! Classification of 64-byte blocks into bit masks (bit `i` = byte `i`): the data-parallel
//! core of the structural scan, one [`Classifier`] per SIMD backend, each tested against
//! its scalar twin [`classify_scalar`] / [`prefix_xor_scalar`].

use crate::simd::Backend;

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

/// A block classifier of one backend: special-byte masks of 64 bytes and the prefix XOR
/// that turns quote positions into the in-quote mask. A value of an x86 or NEON classifier
/// exists only on a CPU that has its features (see each `new`).
pub trait Classifier: Copy {
    /// The masks of `block`.
    fn classify(&self, block: &[u8; 64]) -> Masks;
    /// Bit `i` of the result is the XOR of bits `0..=i` of `x`.
    fn prefix_xor(&self, x: u64) -> u64;
}

/// The portable classifier: [`classify_scalar`] and the shift cascade [`prefix_xor`].
#[derive(Debug, Clone, Copy)]
pub struct Portable(pub Specials);

impl Classifier for Portable {
    #[inline(always)]
    fn classify(&self, block: &[u8; 64]) -> Masks {
        classify_scalar(block, self.0)
    }
    #[inline(always)]
    fn prefix_xor(&self, x: u64) -> u64 {
        prefix_xor(x)
    }
}

/// Classifies `block` with `backend`'s routines; `None` when this CPU cannot run it.
/// (The scan inlines the classifiers into its loop; this is for tests and benchmarks.)
pub fn classify_with(backend: Backend, block: &[u8; 64], s: Specials) -> Option<Masks> {
    match backend {
        Backend::Scalar => Some(classify_scalar(block, s)),
        #[cfg(target_arch = "x86_64")]
        Backend::Sse42 => x86::Sse42::new(s).map(|c| c.classify(block)),
        #[cfg(target_arch = "x86_64")]
        Backend::Avx2 => x86::Avx2::new(s).map(|c| c.classify(block)),
        #[cfg(target_arch = "x86_64")]
        Backend::Avx512 => x86::Avx512::new(s).map(|c| c.classify(block)),
        #[cfg(target_arch = "aarch64")]
        Backend::Neon => neon::Neon::new(s).map(|c| c.classify(block)),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// [`prefix_xor`] with `backend`'s routine (carry-less multiply on x86); `None` when this
/// CPU cannot run it.
pub fn prefix_xor_with(backend: Backend, x: u64) -> Option<u64> {
    let s = Specials {
        delimiter: b',',
        quote: Some(b'"'),
    };
    match backend {
        Backend::Scalar => Some(prefix_xor_scalar(x)),
        #[cfg(target_arch = "x86_64")]
        Backend::Sse42 => x86::Sse42::new(s).map(|c| c.prefix_xor(x)),
        #[cfg(target_arch = "x86_64")]
        Backend::Avx2 => x86::Avx2::new(s).map(|c| c.prefix_xor(x)),
        #[cfg(target_arch = "x86_64")]
        Backend::Avx512 => x86::Avx512::new(s).map(|c| c.prefix_xor(x)),
        #[cfg(target_arch = "aarch64")]
        Backend::Neon => neon::Neon::new(s).map(|c| c.prefix_xor(x)),
        #[allow(unreachable_patterns)]
        _ => {
            let _ = s;
            None
        }
    }
}

/// Scalar twin of every classifier.
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

/// The x86-64 classifiers: SSE 4.2 string compares, AVX2, AVX-512BW; all with a
/// carry-less multiply (PCLMULQDQ) prefix XOR.
#[cfg(target_arch = "x86_64")]
pub mod x86 {
    use std::arch::x86_64::*;

    use super::{Classifier, Masks, Specials};
    use crate::simd::Backend;

    /// Prefix XOR as a carry-less multiply by all ones.
    ///
    /// # Safety
    /// The CPU must have PCLMULQDQ and SSE2.
    #[inline(always)]
    unsafe fn clmul_prefix_xor(x: u64) -> u64 {
        // SAFETY: the caller guarantees PCLMULQDQ; the rest is SSE2 (x86-64 baseline).
        unsafe {
            let product = _mm_clmulepi64_si128::<0>(_mm_set_epi64x(0, x as i64), _mm_set1_epi8(-1));
            _mm_cvtsi128_si64(product) as u64
        }
    }

    /// The paper's SSE 4.2 method: `pcmpestrm` with EQUAL_ANY, one per character set and
    /// 16 bytes (explicit lengths, so NUL bytes in the data are ordinary bytes).
    #[derive(Debug, Clone, Copy)]
    pub struct Sse42 {
        s: Specials,
    }

    impl Sse42 {
        /// The classifier, if this CPU has SSE 4.2 and PCLMULQDQ.
        pub fn new(s: Specials) -> Option<Self> {
            Backend::Sse42.supported().then_some(Sse42 { s })
        }
    }

    impl Classifier for Sse42 {
        #[inline(always)]
        fn classify(&self, block: &[u8; 64]) -> Masks {
            const MODE: i32 = _SIDD_UBYTE_OPS | _SIDD_CMP_EQUAL_ANY | _SIDD_BIT_MASK;
            let s = self.s;
            // SAFETY: a `Sse42` exists only when the CPU has SSE 4.2 (checked in `new`);
            // the loads read 16 bytes at offsets 0, 16, 32, 48 of a 64-byte array.
            unsafe {
                let d = _mm_set1_epi8(s.delimiter as i8);
                let q = _mm_set1_epi8(s.quote.unwrap_or(0) as i8);
                let nl = _mm_set_epi8(
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    b'\r' as i8,
                    b'\n' as i8,
                );
                let mut m = Masks::default();
                for k in 0..4 {
                    let v = _mm_loadu_si128(block.as_ptr().add(16 * k) as *const __m128i);
                    let dm = _mm_cvtsi128_si32(_mm_cmpestrm::<MODE>(d, 1, v, 16)) as u16 as u64;
                    let qm = _mm_cvtsi128_si32(_mm_cmpestrm::<MODE>(q, 1, v, 16)) as u16 as u64;
                    let nm = _mm_cvtsi128_si32(_mm_cmpestrm::<MODE>(nl, 2, v, 16)) as u16 as u64;
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

        #[inline(always)]
        fn prefix_xor(&self, x: u64) -> u64 {
            // SAFETY: a `Sse42` exists only when the CPU has PCLMULQDQ (checked in `new`).
            unsafe { clmul_prefix_xor(x) }
        }
    }

    /// AVX2: two 32-byte compares per character class.
    #[derive(Debug, Clone, Copy)]
    pub struct Avx2 {
        s: Specials,
    }

    impl Avx2 {
        /// The classifier, if this CPU has AVX2 and PCLMULQDQ.
        pub fn new(s: Specials) -> Option<Self> {
            Backend::Avx2.supported().then_some(Avx2 { s })
        }
    }

    impl Classifier for Avx2 {
        #[inline(always)]
        fn classify(&self, block: &[u8; 64]) -> Masks {
            let s = self.s;
            // SAFETY: an `Avx2` exists only when the CPU has AVX2 (checked in `new`); the
            // loads read 32 bytes at offsets 0 and 32 of a 64-byte array.
            unsafe {
                let d = _mm256_set1_epi8(s.delimiter as i8);
                let q = _mm256_set1_epi8(s.quote.unwrap_or(0) as i8);
                let lf = _mm256_set1_epi8(b'\n' as i8);
                let cr = _mm256_set1_epi8(b'\r' as i8);
                let lo = _mm256_loadu_si256(block.as_ptr() as *const __m256i);
                let hi = _mm256_loadu_si256(block.as_ptr().add(32) as *const __m256i);
                let mask = |c: __m256i| -> u64 {
                    let l = _mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, c)) as u32 as u64;
                    let h = _mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, c)) as u32 as u64;
                    l | (h << 32)
                };
                let m = Masks {
                    delimiter: mask(d),
                    quote: if s.quote.is_some() { mask(q) } else { 0 },
                    newline: mask(lf) | mask(cr),
                };
                // Without this barrier LLVM sinks the byte masks past the scan's branches
                // and rebuilds them from 64 spilled bytes (3x the instructions).
                std::hint::black_box(m)
            }
        }

        #[inline(always)]
        fn prefix_xor(&self, x: u64) -> u64 {
            // SAFETY: an `Avx2` exists only when the CPU has PCLMULQDQ (checked in `new`).
            unsafe { clmul_prefix_xor(x) }
        }
    }

    /// AVX-512BW: one 64-byte load, each compare straight into a 64-bit mask.
    #[derive(Debug, Clone, Copy)]
    pub struct Avx512 {
        s: Specials,
    }

    impl Avx512 {
        /// The classifier, if this CPU has AVX-512F/BW and PCLMULQDQ.
        pub fn new(s: Specials) -> Option<Self> {
            Backend::Avx512.supported().then_some(Avx512 { s })
        }
    }

    impl Classifier for Avx512 {
        #[inline(always)]
        fn classify(&self, block: &[u8; 64]) -> Masks {
            let s = self.s;
            // SAFETY: an `Avx512` exists only when the CPU has AVX-512F and BW (checked in
            // `new`); the load reads exactly the 64 bytes of `block`.
            unsafe {
                let v = _mm512_loadu_si512(block.as_ptr() as *const _);
                let delimiter = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(s.delimiter as i8));
                let quote = match s.quote {
                    Some(q) => _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(q as i8)),
                    None => 0,
                };
                let newline = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\n' as i8))
                    | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\r' as i8));
                Masks {
                    delimiter,
                    quote,
                    newline,
                }
            }
        }

        #[inline(always)]
        fn prefix_xor(&self, x: u64) -> u64 {
            // SAFETY: an `Avx512` exists only when the CPU has PCLMULQDQ (checked in `new`).
            unsafe { clmul_prefix_xor(x) }
        }
    }
}

/// The AArch64 classifier: NEON compares, 16 bytes at a time, narrowed to bit masks by
/// pairwise additions of bit weights.
#[cfg(target_arch = "aarch64")]
pub mod neon {
    use std::arch::aarch64::*;

    use super::{Classifier, Masks, Specials, prefix_xor};
    use crate::simd::Backend;

    /// The NEON classifier.
    #[derive(Debug, Clone, Copy)]
    pub struct Neon {
        s: Specials,
    }

    impl Neon {
        /// The classifier, if this CPU has NEON.
        pub fn new(s: Specials) -> Option<Self> {
            Backend::Neon.supported().then_some(Neon { s })
        }
    }

    impl Classifier for Neon {
        #[inline(always)]
        fn classify(&self, block: &[u8; 64]) -> Masks {
            const WEIGHTS: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
            let s = self.s;
            // SAFETY: a `Neon` exists only when the CPU has NEON (checked in `new`); the
            // loads read 16 bytes at offsets 0, 16, 32, 48 of a 64-byte array and 16 bytes
            // of `WEIGHTS`.
            unsafe {
                let w = vld1q_u8(WEIGHTS.as_ptr());
                let v = [
                    vld1q_u8(block.as_ptr()),
                    vld1q_u8(block.as_ptr().add(16)),
                    vld1q_u8(block.as_ptr().add(32)),
                    vld1q_u8(block.as_ptr().add(48)),
                ];
                // byte compares (0xFF / 0x00) of the four vectors into one u64
                let to_bits = |m: [uint8x16_t; 4]| -> u64 {
                    let a = vpaddq_u8(vandq_u8(m[0], w), vandq_u8(m[1], w));
                    let b = vpaddq_u8(vandq_u8(m[2], w), vandq_u8(m[3], w));
                    let c = vpaddq_u8(a, b);
                    let c = vpaddq_u8(c, c);
                    vgetq_lane_u64::<0>(vreinterpretq_u64_u8(c))
                };
                let eq = |c: u8| -> u64 {
                    let c = vdupq_n_u8(c);
                    to_bits([
                        vceqq_u8(v[0], c),
                        vceqq_u8(v[1], c),
                        vceqq_u8(v[2], c),
                        vceqq_u8(v[3], c),
                    ])
                };
                let lf = vdupq_n_u8(b'\n');
                let cr = vdupq_n_u8(b'\r');
                let nl = |x: uint8x16_t| vorrq_u8(vceqq_u8(x, lf), vceqq_u8(x, cr));
                Masks {
                    delimiter: eq(s.delimiter),
                    quote: s.quote.map_or(0, eq),
                    newline: to_bits([nl(v[0]), nl(v[1]), nl(v[2]), nl(v[3])]),
                }
            }
        }

        #[inline(always)]
        fn prefix_xor(&self, x: u64) -> u64 {
            prefix_xor(x)
        }
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

    /// Every backend this machine has agrees with the scalar twin on `block`.
    fn check(block: &[u8; 64], s: Specials, what: &str) {
        let want = classify_scalar(block, s);
        for b in Backend::available() {
            assert_eq!(classify_with(b, block, s), Some(want), "{b}: {what}");
        }
        assert_eq!(Portable(s).classify(block), want, "portable: {what}");
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
                check(&block, s, "random");
            }
            // every special byte at every position
            for &c in &alphabet {
                for pos in 0..64 {
                    let mut block = [b'a'; 64];
                    block[pos] = c;
                    check(&block, s, &format!("byte {c} at {pos}"));
                }
            }
            // every byte value
            for v in 0..=255u8 {
                let block = [v; 64];
                check(&block, s, &format!("all {v}"));
            }
            // all special characters at every position, every combination in a window
            for pos in 0..64 {
                let mut block = [b'a'; 64];
                for (k, &c) in alphabet.iter().enumerate() {
                    block[(pos + k) % 64] = c;
                }
                check(&block, s, &format!("window at {pos}"));
            }
        }
    }

    #[test]
    fn prefix_xor_matches_scalar() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let mut xs: Vec<u64> = vec![0, 1, u64::MAX, 1 << 63, 0x8000_0000_0000_0001];
        xs.extend((0..64).map(|i| 1u64 << i));
        xs.extend((0..10_000).map(|_| rng.random::<u64>()));
        for x in xs {
            let want = prefix_xor_scalar(x);
            assert_eq!(prefix_xor(x), want);
            for b in Backend::available() {
                assert_eq!(prefix_xor_with(b, x), Some(want), "{b}: {x:#x}");
            }
        }
    }
}

//! HyperLogLog with the HIP estimator: the number of distinct values of a fragment column,
//! estimated in one pass over its hashes and a few KiB of registers, before anything is
//! sorted (the Shared Loading paper's `SL_S` mode decides per fragment column from it).
//!
//! A hash's first `p` bits pick one of `m = 2^p` registers; the register keeps the largest
//! *rank* (leading zeros of the remaining bits, plus one) it has seen. The HIP (historic
//! inverse probability) estimator (Ting 2014; Cohen 2015) counts while inserting: a new
//! distinct value changes the registers with probability `q = sum(2^-M[j]) / m`, so each
//! change adds `1 / q` to the estimate. Its relative standard error is about `0.833 /
//! sqrt(m)` ([`Hll::relative_standard_error`]), against `1.04 / sqrt(m)` for HyperLogLog's
//! own estimator, and it needs no bias correction at small counts. HIP estimates do not
//! survive a merge of two sketches: each fragment column has its own.

/// Precision (`p`, registers `2^p`) a client uses per fragment column: 4 KiB, about 1.3%
/// relative standard error.
pub const DEFAULT_PRECISION: u8 = 12;

/// A HyperLogLog sketch of `2^p` registers with a running HIP estimate.
#[derive(Debug, Clone)]
pub struct Hll {
    precision: u8,
    registers: Vec<u8>,
    /// `sum(2^-M[j])` over the registers
    weight: f64,
    /// the HIP estimate
    estimate: f64,
}

impl Hll {
    /// An empty sketch of `2^precision` registers; `precision` is clamped to 4..=18.
    pub fn new(precision: u8) -> Self {
        let precision = precision.clamp(4, 18);
        let m = 1usize << precision;
        Hll {
            precision,
            registers: vec![0; m],
            weight: m as f64,
            estimate: 0.0,
        }
    }

    /// The precision `p` (the sketch has `2^p` registers).
    pub fn precision(&self) -> u8 {
        self.precision
    }

    /// Adds a value by its 64-bit hash (which must be uniformly distributed).
    #[inline]
    pub fn insert_hash(&mut self, hash: u64) {
        let p = u32::from(self.precision);
        let register = (hash >> (64 - p)) as usize;
        // rank of the remaining 64 - p bits: leading zeros plus one, at most 64 - p + 1
        let rest = hash << p;
        let rank = if rest == 0 {
            (64 - p + 1) as u8
        } else {
            (rest.leading_zeros() + 1) as u8
        };
        let old = self.registers[register];
        if rank > old {
            let m = self.registers.len() as f64;
            self.estimate += m / self.weight;
            self.weight -= inverse_power(old) - inverse_power(rank);
            self.registers[register] = rank;
        }
    }

    /// Adds a value by its bytes (hashed with XXH3).
    #[inline]
    pub fn insert(&mut self, bytes: &[u8]) {
        self.insert_hash(hash(bytes));
    }

    /// The estimated number of distinct values added.
    pub fn estimate(&self) -> f64 {
        self.estimate
    }

    /// The relative standard error of [`Hll::estimate`] for large counts: `0.833 /
    /// sqrt(2^p)` (smaller for counts near `2^p` and below).
    pub fn relative_standard_error(&self) -> f64 {
        0.833 / (self.registers.len() as f64).sqrt()
    }
}

impl Default for Hll {
    fn default() -> Self {
        Hll::new(DEFAULT_PRECISION)
    }
}

/// `2^-rank`.
#[inline]
fn inverse_power(rank: u8) -> f64 {
    f64::from_bits((1023 - u64::from(rank)) << 52)
}

/// The 64-bit hash values are sketched by.
#[inline]
pub fn hash(bytes: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: distinct inputs give distinct, well-mixed outputs.
    fn mix(x: u64) -> u64 {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    #[test]
    fn inverse_powers_are_exact() {
        for r in 0..=64u8 {
            assert_eq!(inverse_power(r), 0.5f64.powi(i32::from(r)));
        }
    }

    #[test]
    fn small_counts_are_nearly_exact_and_duplicates_count_once() {
        let mut h = Hll::new(12);
        assert_eq!(h.estimate(), 0.0);
        for round in 0..3 {
            for v in 0..50u64 {
                h.insert(&v.to_le_bytes());
            }
            // far below m, nearly every new value changes a register by itself
            assert!(
                (h.estimate() - 50.0).abs() < 1.0,
                "round {round}: {}",
                h.estimate()
            );
        }
    }

    #[test]
    fn error_stays_within_the_documented_bound() {
        // known cardinalities, many independent sketches (distinct seeds): the empirical
        // relative standard error is close to 0.833 / sqrt(m), and no single estimate is
        // off by more than 5 of them
        for precision in [8u8, 12] {
            for n in [1_000u64, 20_000, 200_000] {
                let trials = if n > 50_000 { 20 } else { 60 };
                let mut squares = 0.0;
                let mut bound = 0.0;
                for t in 0..trials {
                    let mut h = Hll::new(precision);
                    let seed = mix(t + 1) << 24;
                    for v in 0..n {
                        // each value twice: duplicates must not count
                        h.insert_hash(mix(seed ^ v));
                        h.insert_hash(mix(seed ^ v));
                    }
                    let error = h.estimate() / n as f64 - 1.0;
                    bound = h.relative_standard_error();
                    assert!(
                        error.abs() < 5.0 * bound,
                        "p={precision} n={n} trial {t}: {}",
                        h.estimate()
                    );
                    squares += error * error;
                }
                let rse = (squares / trials as f64).sqrt();
                assert!(
                    rse < 1.5 * bound,
                    "p={precision} n={n}: {rse} against {bound}"
                );
            }
        }
    }

    #[test]
    fn hashes_of_bytes_spread_over_registers() {
        let mut h = Hll::new(10);
        for v in 0..100_000u32 {
            h.insert(format!("value {v}").as_bytes());
        }
        let e = h.estimate();
        assert!(
            (e / 100_000.0 - 1.0).abs() < 5.0 * h.relative_standard_error(),
            "{e}"
        );
        assert!(h.registers.iter().all(|&r| r > 0));
    }
}

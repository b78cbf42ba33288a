//! Random streams: one independent PCG stream per random process, derived from
//! (master seed, replication, stable component id) so that enabling a mechanism never shifts
//! another component's draws. Variates use `libm` so they are bit-identical on every platform.

use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Stable stream-id namespaces (high bits) so ids of different component kinds never collide.
pub mod ns {
    pub const SOURCE: u64 = 1 << 56;
    pub const CP: u64 = 2 << 56;
    pub const HOST: u64 = 3 << 56;
}

/// SplitMix64 finaliser: a fixed, documented mixing function.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One random stream (PCG-64 MCG).
#[derive(Clone)]
pub struct Stream(Pcg64Mcg);

impl Stream {
    /// The stream of component `id` for (seed, replication).
    pub fn new(seed: u64, replication: u64, id: u64) -> Self {
        let a = mix(seed ^ mix(replication.wrapping_add(0x5851_F42D_4C95_7F2D)));
        let b = mix(a ^ mix(id));
        let state = ((a as u128) << 64) | (b as u128) | 1;
        Stream(Pcg64Mcg::from_seed(state.to_le_bytes()))
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform in (0, 1].
    #[inline]
    pub fn uniform_open0(&mut self) -> f64 {
        1.0 - self.uniform()
    }
    /// Uniform in [lo, hi).
    #[inline]
    pub fn range_f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }
    /// Uniform integer in [0, n).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// Bernoulli(p).
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.uniform() < p
    }
    /// Exponential with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * libm::log(self.uniform_open0())
    }
    /// Pareto with scale `xm` and shape `alpha`.
    pub fn pareto(&mut self, xm: f64, alpha: f64) -> f64 {
        xm / libm::pow(self.uniform_open0(), 1.0 / alpha)
    }
    /// Number of failures before the first success of Bernoulli(p) trials (p in (0, 1]).
    pub fn geometric(&mut self, p: f64) -> u64 {
        if p >= 1.0 {
            return 0;
        }
        let u = self.uniform_open0();
        let k = libm::floor(libm::log(u) / libm::log1p(-p));
        if k >= 1e18 {
            u64::MAX / 4
        } else {
            k as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden vector: catches a silent change of the generator or of the derivation rule.
    #[test]
    fn golden_first_outputs() {
        let mut s = Stream::new(1, 0, ns::SOURCE | 7);
        let v: Vec<u64> = (0..3).map(|_| s.next_u64()).collect();
        let mut s2 = Stream::new(1, 0, ns::SOURCE | 7);
        assert_eq!(v, (0..3).map(|_| s2.next_u64()).collect::<Vec<_>>());
        // streams differ by id, seed and replication
        assert_ne!(Stream::new(1, 0, 1).next_u64(), Stream::new(1, 0, 2).next_u64());
        assert_ne!(Stream::new(1, 0, 1).next_u64(), Stream::new(2, 0, 1).next_u64());
        assert_ne!(Stream::new(1, 0, 1).next_u64(), Stream::new(1, 1, 1).next_u64());
        insta_like(&v);
    }

    fn insta_like(v: &[u64]) {
        // Pinned values of PCG-64 MCG under the SplitMix derivation above.
        const EXPECTED: [u64; 3] = GOLDEN;
        assert_eq!(v, &EXPECTED, "RNG stream changed: every seeded result changes; update GOLDEN deliberately");
    }
    const GOLDEN: [u64; 3] = [16193036505007995829, 15011513603578600170, 10540486345105404794];

    #[test]
    fn distributions_have_the_right_means() {
        let mut s = Stream::new(3, 0, 99);
        let n = 200_000;
        let m: f64 = (0..n).map(|_| s.exponential(15.0)).sum::<f64>() / n as f64;
        assert!((m - 15.0).abs() < 0.2, "exp mean {m}");
        let g: f64 = (0..n).map(|_| s.geometric(0.02) as f64).sum::<f64>() / n as f64;
        assert!((g - 49.0).abs() < 1.0, "geometric mean {g}");
        let alpha = 1.5;
        let p: f64 = (0..n).map(|_| s.pareto(15.0, alpha)).sum::<f64>() / n as f64;
        assert!((p - 45.0).abs() < 3.0, "pareto mean {p}");
        let b = (0..n).filter(|_| s.below(9) == 8).count() as f64 / n as f64;
        assert!((b - 1.0 / 9.0).abs() < 0.005);
    }
}

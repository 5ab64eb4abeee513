//! A small seeded random number generator (SplitMix64) for runtimes and
//! workload drivers. Protocol state machines never own one: the simulator
//! and the load generators do, so a seed replays a run exactly.

#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        debug_assert!((0.0..1.0).contains(&u));
        u
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        debug_assert!(!p.is_nan(), "a probability, not NaN");
        p > 0.0 && self.f64() < p
    }
    /// Uniform in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        let x = ((self.next_u64() as u128 * n as u128) >> 64) as u64;
        debug_assert!(x < n);
        x
    }
    /// A new generator whose stream is independent of this one's.
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }
}

/// Zipf-distributed ranks over `n` items with exponent `s` (0 = uniform),
/// sampled by inverting a precomputed CDF.
#[derive(Clone, Debug)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub fn new(n: usize, s: f64) -> Zipf {
        assert!(n > 0 && s >= 0.0 && s.is_finite());
        let w: Vec<f64> = (1..=n).map(|k| 1.0 / (k as f64).powf(s)).collect();
        let total: f64 = w.iter().sum();
        let mut acc = 0.0;
        let cdf = w.iter().map(|x| {
            acc += x / total;
            acc
        });
        let zipf = Zipf { cdf: cdf.collect() };
        debug_assert!(zipf.cdf.windows(2).all(|w| w[0] <= w[1]), "a CDF never decreases");
        debug_assert_eq!(zipf.cdf.len(), n);
        zipf
    }
    /// A rank in [0, n): rank 0 is the most popular.
    pub fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.f64();
        let rank = self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1);
        debug_assert!(rank < self.cdf.len());
        rank
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
    }

    #[test]
    fn zipf_zero_is_uniform_and_skew_prefers_rank_zero() {
        let mut r = Rng::new(1);
        let u = Zipf::new(10, 0.0);
        let mut c = [0u32; 10];
        for _ in 0..100_000 {
            c[u.sample(&mut r)] += 1;
        }
        assert!(c.iter().all(|&x| (9_000..11_000).contains(&x)), "{c:?}");
        let z = Zipf::new(10, 2.0);
        let hits0 = (0..10_000).filter(|_| z.sample(&mut r) == 0).count();
        assert!(hits0 > 6_000, "{hits0}");
    }
}

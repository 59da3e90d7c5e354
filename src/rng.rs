//! Layer 1: the runtime's pseudo-random generator, shared by the trainer, the benchmarks and the
//! tests.

/// SplitMix64: a small, fast, deterministic generator with a 64-bit state. The trainer draws its
/// view order, backgrounds and the seeds of its GPU random draws (splits, MCMC) from it, so a run
/// is a function of its seed.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }

    /// `n` values uniform in [lo, hi).
    pub fn vec_f32(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.range(lo, hi)).collect()
    }

    /// `n` random u32 below `bound` (any u32 when `bound` is 0).
    pub fn vec_u32(&mut self, n: usize, bound: u32) -> Vec<u32> {
        (0..n)
            .map(|_| {
                if bound == 0 {
                    self.next_u32()
                } else {
                    (self.next_u64() % u64::from(bound)) as u32
                }
            })
            .collect()
    }
}

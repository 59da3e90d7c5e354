//! bfloat16 moments on the host: the conversions a checkpoint needs between moment storages, and
//! the rounding of `adam_step_packed` (shaders/adam.wgsl) with this packing, for its CPU reference
//! ([`super::packed::reference_step`]).
//!
//! A bfloat16 is the upper half of an f32: the same exponent range, 8 significant bits. The GPU
//! keeps both Adam moments of an element in one u32, m in the high half and v in the low half.

/// The PCG hash of `shaders/shared/random.wgsl`.
pub fn pcg(v: u32) -> u32 {
    let state = v.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
    (word >> 22) ^ word
}

/// `x` widened from bfloat16 bits (exact).
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// `x` rounded to the nearest bfloat16 (ties to even); NaN stays NaN. Used to convert f32 moments
/// (an older checkpoint) to the packed storage.
pub fn f32_to_bf16_nearest(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let lsb = (bits >> 16) & 1;
    (bits.wrapping_add(0x7fff + lsb) >> 16) as u16
}

/// `x` rounded to a bfloat16 neighbour stochastically by the 16 random bits `r`, exactly as
/// `bf16_stochastic` in `shaders/adam.wgsl`: infinities and NaN are truncated, and a finite value
/// never rounds to infinity.
pub fn f32_to_bf16_stochastic(x: f32, r: u32) -> u16 {
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(r & 0xffff) >> 16;
    let truncated = bits >> 16;
    let exponent_max = bits & 0x7f80_0000 == 0x7f80_0000 || rounded & 0x7f80 == 0x7f80;
    (if exponent_max { truncated } else { rounded }) as u16
}

/// Packs m (high half) and v (low half) into the kernel's word.
pub fn pack(m: u16, v: u16) -> u32 {
    (u32::from(m) << 16) | u32::from(v)
}

/// The (m, v) of a packed word, widened to f32.
pub fn unpack(word: u32) -> (f32, f32) {
    (bf16_to_f32((word >> 16) as u16), bf16_to_f32(word as u16))
}

/// The rounding key of element `element` at `step` (1-based) of attribute `attribute` (its index
/// in [`crate::splat::gaussians::Attribute::ALL`]); the kernel's `seed` uniform.
pub fn rounding_seed(step: u64, attribute: usize) -> u32 {
    pcg((step as u32).wrapping_mul(8).wrapping_add(attribute as u32) ^ pcg((step >> 32) as u32))
}

/// The 32 random bits of element `element` (global index, modulo 2^32) under `seed`: the high 16
/// round m, the low 16 round v.
pub fn rounding_bits(element: u32, seed: u32) -> u32 {
    pcg(pcg(element) ^ seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rounds_ties_to_even_and_round_trips() {
        assert_eq!(f32_to_bf16_nearest(1.0), 0x3f80);
        // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even (1.0) wins.
        assert_eq!(f32_to_bf16_nearest(1.0 + 2f32.powi(-8)), 0x3f80);
        assert_eq!(f32_to_bf16_nearest(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82);
        for h in [0u16, 0x3f80, 0x8001, 0x7f7f, 0x0001] {
            assert_eq!(f32_to_bf16_nearest(bf16_to_f32(h)), h);
        }
        assert!(bf16_to_f32(f32_to_bf16_nearest(f32::NAN)).is_nan());
    }

    #[test]
    fn stochastic_rounding_is_unbiased_and_bounded() {
        let x = 1.0f32 + 2f32.powi(-9); // a quarter of the way from 1 to the next bfloat16
        let (lo, hi) = (bf16_to_f32(0x3f80), bf16_to_f32(0x3f81));
        let n = 1 << 16;
        let mut sum = 0.0f64;
        for k in 0..n {
            let y = bf16_to_f32(f32_to_bf16_stochastic(x, rounding_bits(k, 7)));
            assert!(y == lo || y == hi);
            sum += f64::from(y);
        }
        let mean = sum / f64::from(n);
        assert!((mean - f64::from(x)).abs() < 2e-4, "mean {mean} vs {x}");
        // A finite value never becomes infinite; a representable value never moves.
        assert_eq!(f32_to_bf16_stochastic(f32::MAX, 0xffff), 0x7f7f);
        assert_eq!(f32_to_bf16_stochastic(-2.0, 0xffff), 0xc000);
    }
}

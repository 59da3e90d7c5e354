//! The 16-bit optimizer state on the host: one u32 per parameter element holding both Adam
//! moments, the conversions a checkpoint needs, and the CPU reference of `adam_step_packed`
//! (shaders/adam.wgsl), which the tests hold the kernel to (for both packings).
//!
//! A word holds v in its high 19 bits (the f32 bits 30..12: v is never negative, so the sign is
//! dropped, and 11 explicit mantissa bits are kept) and m in its low 13 bits, as a signed integer
//! `k` with `m = k * ratio_step * sqrt(v)`. Adam bounds |m| / sqrt(v)
//! ([`AdamConfig::ratio_bound`]), so a fixed-point fraction of sqrt(v) needs no exponent, and the
//! update `m / sqrt(v)` is quantised uniformly in its own unit. The bits go where the error
//! lasts: an error in v persists for about 1 / (1 - β2) = 1,000 steps, one in m for about 10.

use super::adam::{AdamConfig, MomentStorage};
use super::bf16::rounding_bits;

/// Largest magnitude of the 13-bit integer (two's complement, kept symmetric): the kernel's.
pub const RATIO_MAX: i32 = crate::gpu::kernels::adam::RATIO_MAX;

/// The second moment of a word, widened to f32 (exact).
pub fn v_of(word: u32) -> f32 {
    f32::from_bits((word >> 13) << 12)
}

/// The 13-bit integer of a word.
pub fn ratio_of(word: u32) -> i32 {
    ((word << 19) as i32) >> 19
}

/// The first moment of a word, widened to f32 in the kernel's order: `(k * ratio_step) * sqrt(v)`.
pub fn m_of(word: u32, ratio_step: f32) -> f32 {
    (ratio_of(word) as f32 * ratio_step) * v_of(word).sqrt()
}

/// The (m, v) of a word, widened to f32.
pub fn unpack(word: u32, ratio_step: f32) -> (f32, f32) {
    (m_of(word, ratio_step), v_of(word))
}

/// The 19-bit v of `x` (f32 bits 30..12), rounded stochastically by the 12 random bits `r`
/// (`r = 0x800` rounds half up: nearest). As `v19_stochastic` in `shaders/adam.wgsl`: infinities
/// and NaN are truncated, a finite value never rounds to infinity, and the sign is dropped.
pub fn v19_stochastic(x: f32, r: u32) -> u32 {
    let bits = x.to_bits() & 0x7fff_ffff;
    let rounded = (bits + (r & 0xfff)) >> 12;
    let truncated = bits >> 12;
    let exponent_max = bits & 0x7f80_0000 == 0x7f80_0000 || rounded & 0x7f800 == 0x7f800;
    if exponent_max { truncated } else { rounded }
}

/// `m / s` in units of `ratio_step` as the word's low 13 bits, rounded stochastically by the 16
/// random bits `r` (`r = 0x8000` rounds to nearest) and clamped to ±[`RATIO_MAX`]; 0 where `s`
/// is 0. As `ratio_stochastic` in `shaders/adam.wgsl`.
pub fn ratio_stochastic(m: f32, s: f32, ratio_step: f32, r: u32) -> u32 {
    let limit = RATIO_MAX as f32;
    let q = if s > 0.0 {
        (m / s / ratio_step).clamp(-limit, limit)
    } else {
        0.0
    };
    let below = q.floor();
    let up = (q - below) * 65536.0 > (r & 0xffff) as f32;
    let k = (below as i32 + i32::from(up)).clamp(-RATIO_MAX, RATIO_MAX);
    (k as u32) & 0x1fff
}

/// The word of (m, v) rounded by the random bits `r` (high 16 for m, low 12 for v), as the kernel
/// narrows them: v first, then m against the rounded v's square root.
pub fn pack_stochastic(m: f32, v: f32, ratio_step: f32, r: u32) -> u32 {
    let v_bits = v19_stochastic(v, r);
    let s = v_of(v_bits << 13).sqrt();
    (v_bits << 13) | ratio_stochastic(m, s, ratio_step, r >> 16)
}

/// The word nearest to (m, v): converts f32 moments (a checkpoint in another storage) to the
/// packed state.
pub fn pack_nearest(m: f32, v: f32, ratio_step: f32) -> u32 {
    pack_stochastic(m, v, ratio_step, 0x8000_0800)
}

/// How a packed word widens to (m, v) and narrows from them with 32 random bits.
struct Packing<'a> {
    unpack: &'a dyn Fn(u32) -> (f32, f32),
    pack: &'a dyn Fn(f32, f32, u32) -> u32,
}

/// CPU reference of one `adam_step_packed` update (shaders/adam.wgsl) of `param` and the packed
/// `moments` by `grad`, for elements `first_element..` of an attribute, in f32 arithmetic in the
/// kernel's order, with the words of `config.moments` (the 16-bit state or bfloat16 pairs; f32 is
/// refused). `factors` are the folded `(step_size, inv_sqrt_bc2)` of [`AdamConfig::folded_factors`].
pub fn reference_step(
    param: &mut [f32],
    moments: &mut [u32],
    grad: &[f32],
    config: &AdamConfig,
    (step_size, inv_sqrt_bc2): (f32, f32),
    (first_element, seed): (u64, u32),
) -> crate::error::Result<()> {
    use super::bf16;
    let ratio_step = config.ratio_step();
    let packing = match config.moments {
        MomentStorage::Packed => Packing {
            unpack: &|word| unpack(word, ratio_step),
            pack: &|m, v, r| pack_stochastic(m, v, ratio_step, r),
        },
        MomentStorage::Bf16 => Packing {
            unpack: &bf16::unpack,
            pack: &|m, v, r| {
                bf16::pack(
                    bf16::f32_to_bf16_stochastic(m, r >> 16),
                    bf16::f32_to_bf16_stochastic(v, r),
                )
            },
        },
        MomentStorage::F32 => {
            return Err(crate::error::Error::InvalidArgument {
                op: "packed::reference_step",
                detail: "f32 moments are not packed".into(),
            });
        }
    };
    let (b1, b2) = (config.beta1 as f32, config.beta2 as f32);
    let (omb1, omb2) = ((1.0 - config.beta1) as f32, (1.0 - config.beta2) as f32);
    let eps = config.eps as f32;
    for (i, ((p, word), &g)) in param
        .iter_mut()
        .zip(moments.iter_mut())
        .zip(grad)
        .enumerate()
    {
        let (m_old, v_old) = (packing.unpack)(*word);
        let m = b1 * m_old + omb1 * g;
        let v = b2 * v_old + omb2 * (g * g);
        let denom = v.sqrt() * inv_sqrt_bc2 + eps;
        *p -= step_size * (m / denom);
        let r = rounding_bits((first_element + i as u64) as u32, seed);
        *word = (packing.pack)(m, v, r);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_and_zero_is_zero() {
        let step = AdamConfig::default().ratio_step();
        assert_eq!(
            step,
            2f32.powi(-9),
            "default betas bound the ratio by 7.3 < 8"
        );
        assert_eq!(unpack(0, step), (0.0, 0.0));
        // Values on the grid survive nearest rounding unchanged.
        for (k, v) in [(1, 1.0f32), (-4095, 2.5e-7), (4095, 3.0e9), (-1, 0.75)] {
            let v = v_of(v19_stochastic(v, 0) << 13);
            let m = (k as f32 * step) * v.sqrt();
            let word = pack_nearest(m, v, step);
            assert_eq!((ratio_of(word), v_of(word)), (k, v));
        }
        // v keeps 12 significant bits; m is within half a step of sqrt(v) per unit.
        let (m, v) = (0.012_345f32, 0.000_678f32);
        let (m2, v2) = unpack(pack_nearest(m, v, step), step);
        assert!((v2 - v).abs() <= v * 2f32.powi(-12));
        assert!((m2 - m).abs() <= 0.5 * step * v2.sqrt() * 1.001);
    }

    #[test]
    fn ratios_clamp_and_empty_second_moments_give_zero() {
        let step = 2f32.powi(-9);
        assert_eq!(ratio_of(ratio_stochastic(1e9, 1.0, step, 0)), RATIO_MAX);
        assert_eq!(
            ratio_of(ratio_stochastic(-1e9, 1.0, step, 0xffff)),
            -RATIO_MAX
        );
        assert_eq!(ratio_of(ratio_stochastic(1.0, 0.0, step, 0xffff)), 0);
        // Infinite and NaN v truncate instead of wrapping; a finite v never becomes infinite.
        assert!(v_of(v19_stochastic(f32::INFINITY, 0xfff) << 13).is_infinite());
        assert!(v_of(v19_stochastic(f32::MAX, 0xfff) << 13).is_finite());
        assert_eq!(v19_stochastic(-0.0, 0xfff), 0);
    }

    #[test]
    fn stochastic_rounding_is_unbiased() {
        let step = 2f32.powi(-9);
        let (v, m) = (1.0f32 + 2f32.powi(-14), 0.3f32 * step + 17.0 * step);
        let n = 1 << 16;
        let (mut sum_m, mut sum_v) = (0.0f64, 0.0f64);
        for k in 0..n {
            let (m2, v2) = unpack(pack_stochastic(m, v, step, rounding_bits(k, 3)), step);
            sum_m += f64::from(m2);
            sum_v += f64::from(v2);
        }
        let (mean_m, mean_v) = (sum_m / f64::from(n), sum_v / f64::from(n));
        assert!(
            (mean_v - f64::from(v)).abs() < 1e-5,
            "v mean {mean_v} vs {v}"
        );
        assert!(
            (mean_m - f64::from(m)).abs() < 0.01 * f64::from(step),
            "m mean {mean_m} vs {m}"
        );
    }
}

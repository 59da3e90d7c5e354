//! Texels of the SOG writer ([`super::sog_write`]): the Morton order the Gaussians take in the
//! textures, one texture built from a per-Gaussian texel function in parallel, the rotation
//! texel, and lossless WebP encoding.

use super::sog::format_error;
use crate::error::Result;
use rayon::prelude::*;
use std::path::Path;

/// The Gaussians in Morton order of their positions (10 bits per axis over the finite bounds).
pub(super) fn morton_order(means: &[[f32; 3]]) -> Vec<u32> {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for m in means {
        for a in 0..3 {
            if m[a].is_finite() {
                lo[a] = lo[a].min(m[a]);
                hi[a] = hi[a].max(m[a]);
            }
        }
    }
    let spread = |v: u32| -> u64 {
        let mut code = 0u64;
        for bit in 0..10 {
            code |= u64::from((v >> bit) & 1) << (3 * bit);
        }
        code
    };
    let mut keyed: Vec<(u64, u32)> = means
        .par_iter()
        .enumerate()
        .map(|(i, m)| {
            let mut code = 0;
            for a in 0..3 {
                let range = hi[a] - lo[a];
                let t = if range > 0.0 {
                    (m[a] - lo[a]) / range
                } else {
                    0.0
                };
                let q = (t * 1023.0).round().clamp(0.0, 1023.0) as u32;
                code |= spread(q) << a;
            }
            (code, i as u32)
        })
        .collect();
    keyed.par_sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// Encodes `rgba` (`width × height` texels) as lossless WebP.
pub(super) fn encode_webp(
    path: &Path,
    rgba: &[u8],
    width: usize,
    height: usize,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    image::codecs::webp::WebPEncoder::new_lossless(&mut out)
        .encode(
            rgba,
            width as u32,
            height as u32,
            image::ExtendedColorType::Rgba8,
        )
        .map_err(|e| format_error(path, format!("WebP encoding failed: {e}")))?;
    Ok(out)
}

/// Builds a `width × height` RGBA texture whose texel `t` is `texel(order[t])`.
pub(super) fn texture(
    order: &[u32],
    width: usize,
    height: usize,
    texel: impl Fn(usize) -> [u8; 4] + Sync,
) -> Vec<u8> {
    let mut rgba = vec![0u8; width * height * 4];
    rgba.par_chunks_mut(4)
        .zip(order.par_iter())
        .for_each(|(out, &i)| out.copy_from_slice(&texel(i as usize)));
    rgba
}

/// The rotation texel: the three smallest components ×√2 as bytes, the largest's index + 252.
pub(super) fn pack_quat(q: [f32; 4]) -> [u8; 4] {
    let len = q.iter().map(|v| v * v).sum::<f32>().sqrt();
    if !len.is_finite() || len <= 0.0 {
        return [128, 128, 128, 252];
    }
    let q = q.map(|v| v / len);
    let largest = (0..4).fold(0, |m, i| if q[i].abs() > q[m].abs() { i } else { m });
    let sign = if q[largest] < 0.0 { -1.0 } else { 1.0 };
    let mut out = [0u8; 4];
    let mut k = 0;
    for (i, &v) in q.iter().enumerate() {
        if i != largest {
            let byte = 255.0 * (v * sign * std::f32::consts::SQRT_2 * 0.5 + 0.5);
            out[k] = byte.round().clamp(0.0, 255.0) as u8;
            k += 1;
        }
    }
    out[3] = 252 + largest as u8;
    out
}

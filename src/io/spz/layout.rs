//! SPZ's six attribute arrays (positions, alphas, colours, scales, rotations, SH), shared by
//! every version: packing a model into them and unpacking them into a model.

use super::{Header, SpzAxes, format_error, try_reserve};
use crate::error::Result;
use crate::io::ply::PlyModel;
use crate::io::splat_file::{logit_of_byte, sigmoid};
use crate::splat::reference::CpuGaussians;
use std::path::Path;

/// Fractional bits of the fixed-point positions written (1/4096 units).
pub(super) const FRACTIONAL_BITS: u8 = 12;
const COLOR_SCALE: f32 = 0.15;
/// Sign flips from right-down-front (PLY) to right-up-back (SPZ): positions, quaternion x y z,
/// and the 15 SH coefficients past DC.
const FLIP_P: [f32; 3] = [1.0, -1.0, -1.0];
const FLIP_Q: [f32; 3] = [1.0, -1.0, -1.0];
const FLIP_SH: [f32; 15] = [
    -1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0, 1.0, -1.0, 1.0,
];
/// Bytes a Gaussian takes once read: mean, log scale, quaternion, opacity and 16 SH colours.
const MODEL_BYTES_PER_GAUSSIAN: u64 = 4 * (3 + 3 + 4 + 1 + 16 * 3);

/// The sign flips of positions, quaternion x y z and SH coefficients for `axes`.
struct Flips {
    position: [f32; 3],
    quaternion: [f32; 3],
    sh: [f32; 15],
}

impl Flips {
    fn of(axes: SpzAxes) -> Flips {
        match axes {
            SpzAxes::Rub => Flips {
                position: FLIP_P,
                quaternion: FLIP_Q,
                sh: FLIP_SH,
            },
            SpzAxes::Ply => Flips {
                position: [1.0; 3],
                quaternion: [1.0; 3],
                sh: [1.0; 15],
            },
        }
    }
}

/// SH coefficients past DC (per colour) for SH degree `degree` (0 to 4).
pub(super) fn sh_count(degree: u8) -> usize {
    [0, 3, 8, 15, 24][usize::from(degree.min(4))]
}

/// The six attribute arrays, in file order.
#[derive(Default)]
pub(super) struct Arrays {
    /// The arrays: positions, alphas, colours, scales, rotations, SH.
    pub arrays: [Vec<u8>; 6],
}

/// The arrays' names, for messages.
pub(super) const ARRAY_NAMES: [&str; 6] = [
    "positions",
    "alphas",
    "colours",
    "scales",
    "rotations",
    "spherical harmonics",
];

/// Bytes per point of each array for `header` (rotations: 3 in version 2, 4 from version 3).
pub(super) fn bytes_per_point(header: &Header) -> [u64; 6] {
    let rotation = if header.version >= 3 { 4 } else { 3 };
    [9, 1, 3, 3, rotation, 3 * sh_count(header.degree) as u64]
}

/// The byte size of each array for `header`'s count (at most 2^32 × 72, so no overflow in u64).
pub(super) fn array_sizes(header: &Header) -> [u64; 6] {
    bytes_per_point(header).map(|b| b * u64::from(header.count))
}

fn byte(v: f32) -> u8 {
    v.round().clamp(0.0, 255.0) as u8
}

/// Packs `model` (SH truncated to `degree`) into the arrays of version 3 and later, converting
/// to `axes`. Returns the arrays and how many coordinates were clipped to the 24-bit range.
pub(super) fn pack(
    path: &Path,
    model: &PlyModel,
    degree: u8,
    axes: SpzAxes,
) -> Result<(Arrays, usize)> {
    let g = &model.gaussians;
    let n = g.means.len();
    let dim = sh_count(degree);
    let flips = Flips::of(axes);
    let mut out = Arrays::default();
    for (array, per_point) in out.arrays.iter_mut().zip([9, 1, 3, 3, 4, dim * 3]) {
        let bytes = n
            .checked_mul(per_point)
            .ok_or_else(|| format_error(path, format!("{n} Gaussians do not fit in memory")))?;
        try_reserve(path, array, bytes, "the SPZ arrays being written")?;
    }
    let [positions, alphas, colors, scales, rotations, sh_bytes] = &mut out.arrays;
    let scale = f32::from(1u16 << FRACTIONAL_BITS);
    let limit = (1 << 23) - 1;
    let mut clipped = 0usize;
    for mean in &g.means {
        for (v, flip) in mean.iter().zip(flips.position) {
            let fixed = (flip * v * scale).round();
            if fixed.abs() > limit as f32 {
                clipped += 1;
            }
            let fixed = (fixed as i32).clamp(-limit, limit);
            positions.extend(&fixed.to_le_bytes()[..3]);
        }
    }
    alphas.extend(g.opacity_logits.iter().map(|&o| byte(sigmoid(o) * 255.0)));
    for sh in &g.sh {
        colors.extend((0..3).map(|c| byte(sh[0][c] * (COLOR_SCALE * 255.0) + 127.5)));
    }
    for s in &g.log_scales {
        scales.extend(s.map(|v| byte((v + 10.0) * 16.0)));
    }
    for q in &g.quats {
        rotations.extend(pack_smallest_three(*q, &flips));
    }
    for sh in &g.sh {
        for (j, coefficient) in sh[1..=dim].iter().enumerate() {
            let bucket = if j < 3 { 8 } else { 16 };
            for &v in coefficient {
                let q = (flips.sh[j] * v * 128.0).round() as i32 + 128;
                let q = (q + bucket / 2) / bucket * bucket;
                sh_bytes.push(q.clamp(0, 255) as u8);
            }
        }
    }
    Ok((out, clipped))
}

/// The quaternion (w, x, y, z), normalised and flipped to the file's axes, packed as SPZ 3's
/// "smallest three" (components indexed x, y, z, w).
fn pack_smallest_three(q: [f32; 4], flips: &Flips) -> [u8; 4] {
    let norm = q.iter().map(|v| v * v).sum::<f32>().sqrt();
    let q = if norm > 0.0 && norm.is_finite() {
        q.map(|v| v / norm)
    } else {
        [1.0, 0.0, 0.0, 0.0]
    };
    let f = flips.quaternion;
    let xyzw = [q[1] * f[0], q[2] * f[1], q[3] * f[2], q[0]];
    let largest = (0..4)
        .max_by(|&a, &b| xyzw[a].abs().total_cmp(&xyzw[b].abs()))
        .unwrap_or(3);
    let negate = xyzw[largest] < 0.0;
    let mut packed = largest as u32;
    for (i, &v) in xyzw.iter().enumerate() {
        if i == largest {
            continue;
        }
        let sign = u32::from((v < 0.0) != negate);
        let magnitude = (511.0 * (v.abs() / std::f32::consts::FRAC_1_SQRT_2) + 0.5) as u32;
        packed = (packed << 10) | (sign << 9) | magnitude.min(511);
    }
    packed.to_le_bytes()
}

/// The quaternion (w, x, y, z) in the model's axes of SPZ 3's packed rotation.
fn unpack_smallest_three(bytes: &[u8], flips: &Flips) -> [f32; 4] {
    let mut packed = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let largest = (packed >> 30) as usize;
    let mut xyzw = [0.0f32; 4];
    let mut sum = 0.0;
    for i in (0..4).rev() {
        if i == largest {
            continue;
        }
        let magnitude = (packed & 511) as f32;
        let negative = (packed >> 9) & 1 == 1;
        packed >>= 10;
        let v = std::f32::consts::FRAC_1_SQRT_2 * magnitude / 511.0;
        xyzw[i] = if negative { -v } else { v };
        sum += v * v;
    }
    xyzw[largest] = (1.0 - sum).max(0.0).sqrt();
    let f = flips.quaternion;
    [xyzw[3], xyzw[0] * f[0], xyzw[1] * f[1], xyzw[2] * f[2]]
}

/// The quaternion (w, x, y, z) in the model's axes of SPZ 2's x, y, z bytes (w >= 0).
fn unpack_first_three(bytes: &[u8], flips: &Flips) -> [f32; 4] {
    let xyz = [0, 1, 2].map(|k| f32::from(bytes[k]) / 127.5 - 1.0);
    let w = (1.0 - xyz.iter().map(|v| v * v).sum::<f32>())
        .max(0.0)
        .sqrt();
    let f = flips.quaternion;
    [w, xyz[0] * f[0], xyz[1] * f[1], xyz[2] * f[2]]
}

/// Unpacks the arrays of a file with `header` into a model in the model's axes, given the
/// file's `axes`. Band 4 of the SH is dropped.
pub(super) fn unpack(
    path: &Path,
    header: &Header,
    arrays: &Arrays,
    axes: SpzAxes,
) -> Result<PlyModel> {
    for ((array, expected), name) in arrays
        .arrays
        .iter()
        .zip(array_sizes(header))
        .zip(ARRAY_NAMES)
    {
        if array.len() as u64 != expected {
            return Err(format_error(
                path,
                format!(
                    "{} points need {expected} bytes of {name}, but the file holds {}",
                    header.count,
                    array.len()
                ),
            ));
        }
    }
    let n = header.count as usize;
    let flips = Flips::of(axes);
    let mut g = CpuGaussians::default();
    let what = format!("{n} Gaussians");
    let model_error = || {
        super::memory_error(
            path,
            (n as u64).saturating_mul(MODEL_BYTES_PER_GAUSSIAN),
            &what,
        )
    };
    g.means.try_reserve_exact(n).map_err(|_| model_error())?;
    g.log_scales
        .try_reserve_exact(n)
        .map_err(|_| model_error())?;
    g.quats.try_reserve_exact(n).map_err(|_| model_error())?;
    g.opacity_logits
        .try_reserve_exact(n)
        .map_err(|_| model_error())?;
    g.sh.try_reserve_exact(n).map_err(|_| model_error())?;
    let [positions, alphas, colors, scales, rotations, sh_bytes] = &arrays.arrays;
    let unit = 2f32.powi(-i32::from(header.fractional_bits));
    let dim = sh_count(header.degree);
    let rotation_bytes = bytes_per_point(header)[4] as usize;
    for i in 0..n {
        let mean = [0, 1, 2].map(|k| {
            let b = &positions[9 * i + 3 * k..9 * i + 3 * k + 3];
            let fixed =
                i32::from_le_bytes([b[0], b[1], b[2], if b[2] & 0x80 != 0 { 0xff } else { 0 }]);
            flips.position[k] * fixed as f32 * unit
        });
        g.means.push(mean);
        g.opacity_logits.push(logit_of_byte(alphas[i]));
        g.log_scales
            .push([0, 1, 2].map(|k| f32::from(scales[3 * i + k]) / 16.0 - 10.0));
        let r = &rotations[rotation_bytes * i..rotation_bytes * (i + 1)];
        g.quats.push(if header.version >= 3 {
            unpack_smallest_three(r, &flips)
        } else {
            unpack_first_three(r, &flips)
        });
        let mut sh = [[0.0f32; 3]; 16];
        for c in 0..3 {
            sh[0][c] = (f32::from(colors[3 * i + c]) / 255.0 - 0.5) / COLOR_SCALE;
        }
        for j in 0..dim.min(15) {
            for c in 0..3 {
                let b = sh_bytes[(i * dim + j) * 3 + c];
                sh[j + 1][c] = flips.sh[j] * (f32::from(b) - 128.0) / 128.0;
            }
        }
        g.sh.push(sh);
    }
    Ok(PlyModel {
        gaussians: g,
        sh_degree: u32::from(header.degree.min(3)),
    })
}

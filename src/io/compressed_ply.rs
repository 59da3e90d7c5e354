//! PlayCanvas's compressed PLY (`.compressed.ply`, read by SuperSplat and PlayCanvas; written by
//! its `splat-transform`): binary little-endian PLY with three elements.
//!
//! - `chunk`: one row per 256 Gaussians, 18 floats (12 in older files, without the colour range):
//!   `min_x min_y min_z max_x max_y max_z`, the same for the log scales (`min_scale_x` ...), then
//!   `min_r min_g min_b max_r max_g max_b` of the base colour `0.5 + C0·f_dc`.
//! - `vertex`: four u32 per Gaussian. Position and log scale are 11-10-11-bit fractions of their
//!   chunk's range (x in the top bits); colour is 8-8-8-8 (r g b in their chunk range, then
//!   `sigmoid(opacity)`); rotation is "smallest three" over `rot_0..rot_3`: the largest
//!   component's index in the top 2 bits (made positive), then the other three as 10-bit
//!   fractions of ±1/√2.
//! - `sh` (when SH degree > 0): `f_rest_*` as u8 in the INRIA order, `value / 8 + 0.5` in 8 bits.
//!
//! Log scales are clamped to ±20 per chunk, as the reference writer does. The reader is
//! [`super::compressed_ply_read`].

use super::formats::ModelFormat;
use super::ply::PlyModel;
use super::splat_file::{SH_C0, sigmoid};
use super::{io_error, write_atomically};
use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

pub use super::compressed_ply_read::{read_compressed_ply, read_compressed_ply_bytes};

/// Gaussians per chunk.
pub const CHUNK: usize = 256;
pub(super) const CHUNK_PROPERTIES: [&str; 18] = [
    "min_x",
    "min_y",
    "min_z",
    "max_x",
    "max_y",
    "max_z",
    "min_scale_x",
    "min_scale_y",
    "min_scale_z",
    "max_scale_x",
    "max_scale_y",
    "max_scale_z",
    "min_r",
    "min_g",
    "min_b",
    "max_r",
    "max_g",
    "max_b",
];
pub(super) const VERTEX_PROPERTIES: [&str; 4] = [
    "packed_position",
    "packed_rotation",
    "packed_scale",
    "packed_color",
];

/// A header element: name, row count, and its properties as (type, name).
pub(super) type Element = (String, u64, Vec<(String, String)>);

pub(super) fn format_error(path: &Path, message: impl Into<String>) -> Error {
    crate::io::ply_read::format_error(path, "compressed PLY file", message)
}

fn pack_unorm(v: f32, bits: u32) -> u32 {
    let top = ((1u32 << bits) - 1) as f32;
    (v * top + 0.5).floor().clamp(0.0, top) as u32
}

pub(super) fn unpack_unorm(v: u32, bits: u32) -> f32 {
    let top = (1u32 << bits) - 1;
    (v & top) as f32 / top as f32
}

fn fraction(v: f32, min: f32, max: f32) -> f32 {
    if v <= min {
        0.0
    } else if v >= max || max - min < 1e-5 {
        if v >= max { 1.0 } else { 0.0 }
    } else {
        (v - min) / (max - min)
    }
}

fn pack_111011(v: [f32; 3]) -> u32 {
    (pack_unorm(v[0], 11) << 21) | (pack_unorm(v[1], 10) << 11) | pack_unorm(v[2], 11)
}

pub(super) fn unpack_111011(p: u32) -> [f32; 3] {
    [
        unpack_unorm(p >> 21, 11),
        unpack_unorm(p >> 11, 10),
        unpack_unorm(p, 11),
    ]
}

pub(super) fn lerp(min: f32, max: f32, t: f32) -> f32 {
    min * (1.0 - t) + max * t
}

fn range(values: impl Iterator<Item = f32>) -> (f32, f32) {
    values.fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

fn pack_rotation(q: [f32; 4]) -> u32 {
    let norm = q.iter().map(|v| v * v).sum::<f32>().sqrt();
    let mut a = if norm > 0.0 {
        q.map(|v| v / norm)
    } else {
        [1.0, 0.0, 0.0, 0.0]
    };
    let largest = (0..4).fold(
        0,
        |best, i| if a[i].abs() > a[best].abs() { i } else { best },
    );
    if a[largest] < 0.0 {
        a = a.map(|v| -v);
    }
    let mut packed = largest as u32;
    for (i, v) in a.iter().enumerate() {
        if i != largest {
            packed = (packed << 10) | pack_unorm(v * std::f32::consts::FRAC_1_SQRT_2 + 0.5, 10);
        }
    }
    packed
}

pub(super) fn unpack_rotation(p: u32) -> [f32; 4] {
    let others =
        [p >> 20, p >> 10, p].map(|v| (unpack_unorm(v, 10) - 0.5) * std::f32::consts::SQRT_2);
    let m = (1.0 - others.iter().map(|v| v * v).sum::<f32>())
        .max(0.0)
        .sqrt();
    let mut q = [0.0; 4];
    let largest = (p >> 30) as usize;
    let mut k = 0;
    for (i, slot) in q.iter_mut().enumerate() {
        if i == largest {
            *slot = m;
        } else {
            *slot = others[k];
            k += 1;
        }
    }
    q
}

/// Writes `model` as a compressed PLY (Gaussians in their order), atomically. Returns what the
/// format dropped (nothing past its quantisation, but log scales beyond ±20 are clamped).
pub fn write_compressed_ply(path: &Path, model: &PlyModel) -> Result<Vec<String>> {
    // Chunk ranges of non-finite values would not be finite, and the reader refuses those.
    super::formats::check_storable(path, ModelFormat::CompressedPly, model, |_, _| true)?;
    let g = &model.gaussians;
    let n = g.means.len();
    let chunks = n.div_ceil(CHUNK);
    let degree = model.sh_degree.min(3) as usize;
    let rest = [0, 3, 8, 15][degree];
    let mut header = format!(
        "ply\nformat binary_little_endian 1.0\ncomment written by wgsplat\nelement chunk {chunks}\n"
    );
    for p in CHUNK_PROPERTIES {
        header += &format!("property float {p}\n");
    }
    header += &format!("element vertex {n}\n");
    for p in VERTEX_PROPERTIES {
        header += &format!("property uint {p}\n");
    }
    if rest > 0 {
        header += &format!("element sh {n}\n");
        for i in 0..3 * rest {
            header += &format!("property uchar f_rest_{i}\n");
        }
    }
    header += "end_header\n";
    let mut chunk_bytes = Vec::with_capacity(chunks * 18 * 4);
    let mut vertex_bytes = Vec::with_capacity(n * 16);
    let mut clamped = 0usize;
    for c in 0..chunks {
        let members = c * CHUNK..((c + 1) * CHUNK).min(n);
        let colour = |i: usize, k: usize| 0.5 + SH_C0 * g.sh[i][0][k];
        let mut bounds = [(0.0, 0.0); 9];
        for k in 0..3 {
            bounds[k] = range(members.clone().map(|i| g.means[i][k]));
            let (lo, hi) = range(members.clone().map(|i| g.log_scales[i][k]));
            if lo < -20.0 || hi > 20.0 {
                clamped += 1;
            }
            bounds[3 + k] = (lo.clamp(-20.0, 20.0), hi.clamp(-20.0, 20.0));
            bounds[6 + k] = range(members.clone().map(|i| colour(i, k)));
        }
        // Per attribute (position, log scale, colour): its three minima, then its three maxima.
        for attribute in 0..3 {
            let axes = 3 * attribute..3 * attribute + 3;
            let values = axes
                .clone()
                .map(|k| bounds[k].0)
                .chain(axes.map(|k| bounds[k].1));
            for v in values {
                chunk_bytes.extend(v.to_le_bytes());
            }
        }
        for i in members {
            let position =
                pack_111011([0, 1, 2].map(|k| fraction(g.means[i][k], bounds[k].0, bounds[k].1)));
            let scale = pack_111011(
                [0, 1, 2].map(|k| fraction(g.log_scales[i][k], bounds[3 + k].0, bounds[3 + k].1)),
            );
            let rgb = [0, 1, 2]
                .map(|k| pack_unorm(fraction(colour(i, k), bounds[6 + k].0, bounds[6 + k].1), 8));
            let color = (rgb[0] << 24)
                | (rgb[1] << 16)
                | (rgb[2] << 8)
                | pack_unorm(sigmoid(g.opacity_logits[i]), 8);
            for word in [position, pack_rotation(g.quats[i]), scale, color] {
                vertex_bytes.extend(word.to_le_bytes());
            }
        }
    }
    let mut sh_bytes = Vec::with_capacity(n * 3 * rest);
    for sh in &g.sh {
        for c in 0..3 {
            for coefficient in &sh[1..=rest] {
                sh_bytes.push(
                    ((coefficient[c] / 8.0 + 0.5) * 256.0)
                        .trunc()
                        .clamp(0.0, 255.0) as u8,
                );
            }
        }
    }
    write_atomically(path, |w| {
        for part in [header.as_bytes(), &chunk_bytes, &vertex_bytes, &sh_bytes] {
            w.write_all(part).map_err(|e| io_error(path, "write", e))?;
        }
        Ok(())
    })?;
    let mut dropped = Vec::new();
    if clamped > 0 {
        dropped.push(format!(
            "log scales beyond ±20 were clamped in {clamped} chunk axes"
        ));
    }
    Ok(dropped)
}

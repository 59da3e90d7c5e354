//! SPZ, Niantic's compressed splat format, as its reference library (`nianticlabs/spz`,
//! `load-spz.cc`) defines it: a gzip stream holding a 16-byte header and the attributes as
//! separate arrays.
//!
//! - Header: magic `0x5053474e` ("NGSP"), version (u32; 2 and 3 are read, 3 is written), point
//!   count (u32), SH degree (u8), fractional bits (u8), flags (u8: 1 = antialiased, 2 = has
//!   extensions, which are refused), one reserved byte.
//! - Then, for all points in turn: positions (3 × 24-bit signed fixed point with `fractional
//!   bits`, 12 when written: 1/4096 units), alphas (`sigmoid·255`), colours (SH DC as
//!   `f_dc·0.15·255 + 127.5`), scales (log scale as `(s + 10)·16`), rotations (version 2: x, y, z of
//!   the normalised quaternion with w >= 0 as `q·127.5 + 127.5`; version 3: "smallest three",
//!   a 2-bit index of the largest component and three 10-bit sign-magnitude values of the
//!   others over `1/sqrt(2)`), and SH (per point, coefficient-major, colour-minor; bytes
//!   `x·128 + 128` rounded to buckets of 8 for band 1 and 16 for bands 2 and 3).
//! - Coordinates are right-up-back (three.js); PLY files are right-down-front, so y and z are
//!   negated, the quaternion's x is kept and y, z negated, and the SH coefficients flip as the
//!   reference library's `coordinateConverter(RDF, RUB)` says.

use super::ply::PlyModel;
use super::progress::Progress;
use super::splat_file::{logit_of_byte, sigmoid};
use super::{io_error, write_atomically};
use crate::error::{Error, Result};
use crate::splat::reference::CpuGaussians;
use std::io::{Read, Write};
use std::path::Path;

/// "NGSP", little-endian.
pub const MAGIC: u32 = 0x5053_474e;
/// The version [`write_spz`] writes.
pub const WRITE_VERSION: u32 = 3;
const COLOR_SCALE: f32 = 0.15;
const FRACTIONAL_BITS: u8 = 12;
const FLAG_ANTIALIASED: u8 = 1;
const FLAG_EXTENSIONS: u8 = 2;
/// The reference library's limit on points per file.
const MAX_POINTS: u32 = 10_000_000;
/// Sign flips from right-down-front (PLY) to right-up-back (SPZ): positions, quaternion x y z,
/// and the 15 SH coefficients past DC.
const FLIP_P: [f32; 3] = [1.0, -1.0, -1.0];
const FLIP_Q: [f32; 3] = [1.0, -1.0, -1.0];
const FLIP_SH: [f32; 15] = [
    -1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0, 1.0, -1.0, 1.0,
];

fn format_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        kind: "SPZ file".into(),
        message: message.into(),
    }
}

fn sh_count(degree: u8) -> usize {
    [0, 3, 8, 15][usize::from(degree.min(3))]
}

fn byte(v: f32) -> u8 {
    v.round().clamp(0.0, 255.0) as u8
}

/// Writes `model` as SPZ version 3, atomically, counting the bytes compressed in `progress`.
/// Returns what the format dropped or quantised beyond its stated precision (positions past the
/// 24-bit range), for the caller to report.
pub fn write_spz(path: &Path, model: &PlyModel, progress: &Progress) -> Result<Vec<String>> {
    let g = &model.gaussians;
    let n = g.means.len();
    let count = u32::try_from(n)
        .ok()
        .filter(|&c| c <= MAX_POINTS)
        .ok_or_else(|| {
            format_error(
                path,
                format!("{n} Gaussians exceed SPZ's limit of {MAX_POINTS}"),
            )
        })?;
    let degree = model.sh_degree.min(3) as u8;
    let dim = sh_count(degree);
    let mut data = Vec::with_capacity(16 + n * (9 + 1 + 3 + 3 + 4 + dim * 3));
    data.extend(MAGIC.to_le_bytes());
    data.extend(WRITE_VERSION.to_le_bytes());
    data.extend(count.to_le_bytes());
    data.extend([degree, FRACTIONAL_BITS, 0, 0]);
    let scale = f32::from(1u16 << FRACTIONAL_BITS);
    let limit = (1 << 23) - 1;
    let mut clipped = 0usize;
    for mean in &g.means {
        for k in 0..3 {
            let fixed = (FLIP_P[k] * mean[k] * scale).round();
            if fixed.abs() > limit as f32 {
                clipped += 1;
            }
            let fixed = (fixed as i32).clamp(-limit, limit);
            data.extend(&fixed.to_le_bytes()[..3]);
        }
    }
    data.extend(g.opacity_logits.iter().map(|&o| byte(sigmoid(o) * 255.0)));
    for sh in &g.sh {
        data.extend((0..3).map(|c| byte(sh[0][c] * (COLOR_SCALE * 255.0) + 127.5)));
    }
    for s in &g.log_scales {
        data.extend(s.map(|v| byte((v + 10.0) * 16.0)));
    }
    for q in &g.quats {
        data.extend(pack_smallest_three(*q));
    }
    for sh in &g.sh {
        for (j, coefficient) in sh[1..=dim].iter().enumerate() {
            let bucket = if j < 3 { 8 } else { 16 };
            for &v in coefficient {
                let q = (FLIP_SH[j] * v * 128.0).round() as i32 + 128;
                let q = (q + bucket / 2) / bucket * bucket;
                data.push(q.clamp(0, 255) as u8);
            }
        }
    }
    // Compressed straight into the file, a megabyte at a time, so the compressed copy never sits
    // in memory beside the raw one and the progress moves with the work.
    progress.begin("writing SPZ", data.len() as u64);
    write_atomically(path, |w| {
        let mut encoder = flate2::write::GzEncoder::new(w, flate2::Compression::default());
        for chunk in data.chunks(1 << 20) {
            encoder
                .write_all(chunk)
                .map_err(|e| io_error(path, "compress and write", e))?;
            progress.advance(chunk.len() as u64);
        }
        encoder
            .finish()
            .map_err(|e| io_error(path, "compress and write", e))?;
        Ok(())
    })?;
    let mut dropped = Vec::new();
    if model.sh_degree > 3 {
        dropped.push(format!(
            "SH bands past 3 (of {}) were dropped",
            model.sh_degree
        ));
    }
    if clipped > 0 {
        dropped.push(format!(
            "{clipped} position coordinates lie beyond SPZ's ±2048 units and were clipped"
        ));
    }
    Ok(dropped)
}

/// The quaternion (w, x, y, z), normalised and in right-up-back axes, packed as SPZ 3's
/// "smallest three" (components indexed x, y, z, w).
fn pack_smallest_three(q: [f32; 4]) -> [u8; 4] {
    let norm = q.iter().map(|v| v * v).sum::<f32>().sqrt();
    let q = if norm > 0.0 {
        q.map(|v| v / norm)
    } else {
        [1.0, 0.0, 0.0, 0.0]
    };
    let xyzw = [q[1] * FLIP_Q[0], q[2] * FLIP_Q[1], q[3] * FLIP_Q[2], q[0]];
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

/// The quaternion (w, x, y, z) in right-down-front axes of SPZ 3's packed rotation.
fn unpack_smallest_three(bytes: &[u8]) -> [f32; 4] {
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
    [
        xyzw[3],
        xyzw[0] * FLIP_Q[0],
        xyzw[1] * FLIP_Q[1],
        xyzw[2] * FLIP_Q[2],
    ]
}

/// Reads an SPZ file (versions 2 and 3). A wrong magic number, an unsupported version or flag, a
/// count the data does not hold, or a corrupt gzip stream is an error naming the file.
pub fn read_spz(path: &Path) -> Result<PlyModel> {
    let file = std::fs::File::open(path).map_err(|e| io_error(path, "open", e))?;
    let mut data = Vec::new();
    flate2::read::GzDecoder::new(std::io::BufReader::new(file))
        .read_to_end(&mut data)
        .map_err(|e| format_error(path, format!("not a gzip stream, or a corrupt one ({e})")))?;
    if data.len() < 16 {
        return Err(format_error(
            path,
            format!("{} bytes is too short for the 16-byte header", data.len()),
        ));
    }
    let word = |k: usize| u32::from_le_bytes([data[k], data[k + 1], data[k + 2], data[k + 3]]);
    if word(0) != MAGIC {
        return Err(format_error(
            path,
            format!("magic number {:#010x} is not SPZ's {MAGIC:#010x}", word(0)),
        ));
    }
    let version = word(4);
    if !(2..=3).contains(&version) {
        return Err(format_error(
            path,
            format!(
                "SPZ version {version} is not supported (2 and 3 are); write version 3 (splat-transform: --spz-version 3)"
            ),
        ));
    }
    let n = word(8);
    if n > MAX_POINTS {
        return Err(format_error(
            path,
            format!("{n} points exceed SPZ's limit of {MAX_POINTS}"),
        ));
    }
    let (degree, fractional, flags) = (data[12], data[13], data[14]);
    if degree > 3 {
        return Err(format_error(
            path,
            format!("SH degree {degree} is not supported (0 to 3)"),
        ));
    }
    if flags & FLAG_EXTENSIONS != 0 {
        return Err(format_error(
            path,
            "the file uses SPZ extensions, which wgsplat does not read",
        ));
    }
    if flags & FLAG_ANTIALIASED != 0 {
        eprintln!(
            "wgsplat: {} was trained antialiased; render it with --antialiased",
            path.display()
        );
    }
    let n = n as usize;
    let dim = sh_count(degree);
    let rotation_bytes = if version >= 3 { 4 } else { 3 };
    let expected = 16 + n * (9 + 1 + 3 + 3 + rotation_bytes + dim * 3);
    if data.len() != expected {
        return Err(format_error(
            path,
            format!(
                "{n} points of SH degree {degree} need {expected} bytes after decompression, but the stream holds {}",
                data.len()
            ),
        ));
    }
    let (positions, rest) = data[16..].split_at(9 * n);
    let (alphas, rest) = rest.split_at(n);
    let (colors, rest) = rest.split_at(3 * n);
    let (scales, rest) = rest.split_at(3 * n);
    let (rotations, sh_bytes) = rest.split_at(rotation_bytes * n);
    let unit = 1.0 / f32::from(1u16 << fractional.min(15));
    let mut g = CpuGaussians::default();
    for i in 0..n {
        let mean = [0, 1, 2].map(|k| {
            let b = &positions[9 * i + 3 * k..9 * i + 3 * k + 3];
            let fixed =
                i32::from_le_bytes([b[0], b[1], b[2], if b[2] & 0x80 != 0 { 0xff } else { 0 }]);
            FLIP_P[k] * fixed as f32 * unit
        });
        g.means.push(mean);
        g.opacity_logits.push(logit_of_byte(alphas[i]));
        g.log_scales
            .push([0, 1, 2].map(|k| f32::from(scales[3 * i + k]) / 16.0 - 10.0));
        let r = &rotations[rotation_bytes * i..rotation_bytes * (i + 1)];
        g.quats.push(if version >= 3 {
            unpack_smallest_three(r)
        } else {
            let xyz = [0, 1, 2].map(|k| f32::from(r[k]) / 127.5 - 1.0);
            let w = (1.0 - xyz.iter().map(|v| v * v).sum::<f32>())
                .max(0.0)
                .sqrt();
            [
                w,
                xyz[0] * FLIP_Q[0],
                xyz[1] * FLIP_Q[1],
                xyz[2] * FLIP_Q[2],
            ]
        });
        let mut sh = [[0.0f32; 3]; 16];
        for c in 0..3 {
            sh[0][c] = (f32::from(colors[3 * i + c]) / 255.0 - 0.5) / COLOR_SCALE;
        }
        for j in 0..dim {
            for c in 0..3 {
                let b = sh_bytes[(i * dim + j) * 3 + c];
                sh[j + 1][c] = FLIP_SH[j] * (f32::from(b) - 128.0) / 128.0;
            }
        }
        g.sh.push(sh);
    }
    Ok(PlyModel {
        gaussians: g,
        sh_degree: u32::from(degree),
    })
}

//! The `.splat` format of antimatter15's WebGL viewer (read by SuperSplat, Spark and PlayCanvas's
//! `splat-transform`): 32 bytes per Gaussian, little-endian, no header.
//!
//! | bytes | field |
//! |---|---|
//! | 0..12 | position, 3 × f32 |
//! | 12..24 | scale, 3 × f32 (linear: `exp` of the log scale) |
//! | 24..28 | colour RGBA, 4 × u8: `(0.5 + C0·f_dc)·255` and `sigmoid(opacity)·255` |
//! | 28..32 | rotation, 4 × u8: the normalised quaternion (w, x, y, z) as `q·128 + 128` |
//!
//! SH degree 0 only: writing drops the higher bands (the caller is told), colours are clamped to
//! [0, 1] and opacity and rotation are 8-bit.

use super::formats::ModelFormat;
use super::ply::PlyModel;
use super::{io_error, write_atomically};
use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

/// Bytes per Gaussian.
pub const BYTES_PER_GAUSSIAN: usize = 32;
/// The degree-0 SH constant `1 / (2·sqrt(pi))`.
pub const SH_C0: f32 = 0.282_094_8;

fn format_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        kind: ".splat file".into(),
        message: message.into(),
    }
}

/// The clamped byte of a value in [0, 1].
pub(crate) fn unit_byte(v: f32) -> u8 {
    (v * 255.0).round().clamp(0.0, 255.0) as u8
}

/// The logit of a byte-coded opacity, kept finite (0 and 255 map half a step inside).
pub(crate) fn logit_of_byte(a: u8) -> f32 {
    let p = (f32::from(a) / 255.0).clamp(0.5 / 255.0, 254.5 / 255.0);
    (p / (1.0 - p)).ln()
}

pub(crate) fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Writes `model` as a `.splat` file, atomically. Returns what the format dropped (SH bands
/// past degree 0), for the caller to report.
pub fn write_splat(path: &Path, model: &PlyModel) -> Result<Vec<String>> {
    // The reader refuses what is not finite, and scales that are not positive: `exp` of a log
    // scale must stay a positive finite f32.
    super::formats::check_storable(path, ModelFormat::Splat, model, |attribute, values| {
        attribute != "log scale"
            || values.iter().all(|v| {
                let scale = v.exp();
                scale.is_finite() && scale > 0.0
            })
    })?;
    let g = &model.gaussians;
    let mut bytes = Vec::with_capacity(g.means.len() * BYTES_PER_GAUSSIAN);
    for i in 0..g.means.len() {
        for v in g.means[i] {
            bytes.extend(v.to_le_bytes());
        }
        for v in g.log_scales[i] {
            bytes.extend(v.exp().to_le_bytes());
        }
        for c in 0..3 {
            bytes.push(unit_byte(0.5 + SH_C0 * g.sh[i][0][c]));
        }
        bytes.push(unit_byte(sigmoid(g.opacity_logits[i])));
        let q = g.quats[i];
        let norm = q
            .iter()
            .map(|v| v * v)
            .sum::<f32>()
            .sqrt()
            .max(f32::MIN_POSITIVE);
        for v in q {
            bytes.push((v / norm * 128.0 + 128.0).round().clamp(0.0, 255.0) as u8);
        }
    }
    write_atomically(path, |w| {
        w.write_all(&bytes).map_err(|e| io_error(path, "write", e))
    })?;
    let mut dropped = Vec::new();
    if model.sh_degree > 0 {
        dropped.push(format!(
            ".splat holds SH degree 0 only: bands 1..={} were dropped",
            model.sh_degree
        ));
    }
    Ok(dropped)
}

/// Reads a `.splat` file (an empty file is a model without Gaussians, as the writer writes
/// one). A size that is not a multiple of 32 bytes, or a non-finite position or scale, is an
/// error naming the file and the Gaussian.
pub fn read_splat(path: &Path) -> Result<PlyModel> {
    read_splat_bytes(path, &super::host::read_whole_file(path)?)
}

/// [`read_splat`] of a whole file held in memory; `path` names it in messages.
pub fn read_splat_bytes(path: &Path, bytes: &[u8]) -> Result<PlyModel> {
    if !bytes.len().is_multiple_of(BYTES_PER_GAUSSIAN) {
        return Err(format_error(
            path,
            format!(
                "{} bytes is not a whole number of 32-byte Gaussians (the file is truncated or not a .splat)",
                bytes.len()
            ),
        ));
    }
    let n = bytes.len() / BYTES_PER_GAUSSIAN;
    let mut g = super::host::gaussians_with_capacity(n, path)?;
    for (i, record) in bytes.chunks_exact(BYTES_PER_GAUSSIAN).enumerate() {
        let f =
            |k: usize| f32::from_le_bytes(record[4 * k..4 * k + 4].try_into().unwrap_or([0; 4]));
        let mean = [f(0), f(1), f(2)];
        let scale = [f(3), f(4), f(5)];
        if !mean.iter().chain(&scale).all(|v| v.is_finite()) || scale.iter().any(|&s| s <= 0.0) {
            return Err(format_error(
                path,
                format!(
                    "Gaussian {i} has a non-finite position or a non-positive scale: {mean:?}, {scale:?}"
                ),
            ));
        }
        g.means.push(mean);
        g.log_scales.push(scale.map(f32::ln));
        let mut sh = [[0.0f32; 3]; 16];
        for c in 0..3 {
            sh[0][c] = (f32::from(record[24 + c]) / 255.0 - 0.5) / SH_C0;
        }
        g.sh.push(sh);
        g.opacity_logits.push(logit_of_byte(record[27]));
        let q = [0, 1, 2, 3].map(|k| (f32::from(record[28 + k]) - 128.0) / 128.0);
        g.quats.push(if q.iter().all(|&v| v == 0.0) {
            [1.0, 0.0, 0.0, 0.0]
        } else {
            q
        });
    }
    Ok(PlyModel {
        gaussians: g,
        sh_degree: 0,
    })
}

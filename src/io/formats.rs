//! Splat model formats by file name: the INRIA PLY ([`super::ply`]), `.splat`
//! ([`super::splat_file`]), SPZ ([`super::spz`]), PlayCanvas's compressed PLY
//! ([`super::compressed_ply`]) and SOG ([`super::sog`]), read and written through one [`PlyModel`] so that any of them
//! converts to any other (`wgsplat convert`).

use super::ply::{PlyModel, read_ply_with_progress, write_ply_with_progress};
use super::progress::Progress;
use super::{compressed_ply, sog, splat_file, spz};
use crate::error::{Error, Result};
use std::path::Path;

/// A splat model file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFormat {
    /// The INRIA 3DGS PLY (full precision, SH up to degree 3).
    Ply,
    /// antimatter15's `.splat` (32 bytes per Gaussian, SH degree 0).
    Splat,
    /// Niantic's SPZ (gzip, quantised; version 3 written, 2 and 3 read).
    Spz,
    /// PlayCanvas's compressed PLY (chunks of 256 with per-chunk ranges, `.compressed.ply`).
    CompressedPly,
    /// PlayCanvas's SOG version 2 (WebP textures and `meta.json`: a `.sog` zip, or a folder's
    /// `meta.json`).
    Sog,
}

impl ModelFormat {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [ModelFormat; 5] = [
        ModelFormat::Ply,
        ModelFormat::Splat,
        ModelFormat::Spz,
        ModelFormat::CompressedPly,
        ModelFormat::Sog,
    ];

    /// The format's name on the command line (`ply`, `splat`, `spz`, `compressed-ply`, `sog`).
    pub fn name(self) -> &'static str {
        match self {
            ModelFormat::Ply => "ply",
            ModelFormat::Splat => "splat",
            ModelFormat::Spz => "spz",
            ModelFormat::CompressedPly => "compressed-ply",
            ModelFormat::Sog => "sog",
        }
    }

    /// The file extension, without the leading dot (`compressed.ply` for compressed PLY).
    pub fn extension(self) -> &'static str {
        match self {
            ModelFormat::CompressedPly => "compressed.ply",
            other => other.name(),
        }
    }

    /// The format called `name` (case-insensitive).
    pub fn from_name(name: &str) -> Result<ModelFormat> {
        let lower = name.to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|f| f.name() == lower)
            .ok_or_else(|| Error::InvalidSetting {
                name: "format".into(),
                value: name.into(),
                expected: "one of ply, splat, spz, compressed-ply, sog".into(),
            })
    }

    /// The format of `path` by its extension (`.compressed.ply` before `.ply`); a file named
    /// `meta.json` is an unbundled SOG.
    pub fn from_path(path: &Path) -> Result<ModelFormat> {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if name.ends_with(".compressed.ply") {
            return Ok(ModelFormat::CompressedPly);
        }
        if name.ends_with(".sog") || name == "meta.json" {
            return Ok(ModelFormat::Sog);
        }
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("ply") => Ok(ModelFormat::Ply),
            Some("splat") => Ok(ModelFormat::Splat),
            Some("spz") => Ok(ModelFormat::Spz),
            _ => Err(Error::InvalidSetting {
                name: "format".into(),
                value: path.display().to_string(),
                expected: "a file ending in .ply, .compressed.ply, .splat, .spz or .sog (or named meta.json), or an explicit --format".into(),
            }),
        }
    }
}

/// Reads the model at `path` in `format`.
pub fn read_model(path: &Path, format: ModelFormat) -> Result<PlyModel> {
    read_model_with_progress(path, format, &Progress::new())
}

/// [`read_model`], reporting in `progress` (Gaussians for PLY, one step per format otherwise).
pub fn read_model_with_progress(
    path: &Path,
    format: ModelFormat,
    progress: &Progress,
) -> Result<PlyModel> {
    super::host::check_regular_file(path)?;
    if format != ModelFormat::Ply {
        progress.begin(&format!("reading {}", format.name()), 1);
    }
    let model = match format {
        ModelFormat::Ply => read_ply_with_progress(path, progress),
        ModelFormat::Splat => splat_file::read_splat(path),
        ModelFormat::Spz => spz::read_spz(path),
        ModelFormat::CompressedPly => compressed_ply::read_compressed_ply(path),
        ModelFormat::Sog => sog::read_sog(path),
    }?;
    progress.finish();
    Ok(model)
}

/// Reads a whole model file held in memory (a browser's download or dropped file) in the format
/// its `name` says (as [`ModelFormat::from_path`]; SOG only as a `.sog` bundle). `name` names
/// the model in messages.
pub fn read_model_bytes(name: &str, bytes: &[u8]) -> Result<PlyModel> {
    let path = Path::new(name);
    match ModelFormat::from_path(path)? {
        ModelFormat::Ply => super::ply::read_ply_bytes(path, bytes),
        ModelFormat::Splat => splat_file::read_splat_bytes(path, bytes),
        ModelFormat::Spz => spz::read_spz_bytes(path, bytes),
        ModelFormat::CompressedPly => compressed_ply::read_compressed_ply_bytes(path, bytes),
        ModelFormat::Sog => sog::read_sog_bytes(path, bytes),
    }
}

/// Writes `model` to `path` in `format`, atomically. Returns one line per thing the format
/// dropped (SH bands, range), empty when it kept everything at its documented precision.
pub fn write_model(path: &Path, format: ModelFormat, model: &PlyModel) -> Result<Vec<String>> {
    write_model_with_progress(path, format, model, &Progress::new())
}

/// [`write_model`], reporting in `progress` (Gaussians for PLY, the textures for SOG, bytes
/// compressed for SPZ, one step otherwise).
pub fn write_model_with_progress(
    path: &Path,
    format: ModelFormat,
    model: &PlyModel,
    progress: &Progress,
) -> Result<Vec<String>> {
    if !matches!(
        format,
        ModelFormat::Ply | ModelFormat::Sog | ModelFormat::Spz
    ) {
        progress.begin(&format!("writing {}", format.name()), 1);
    }
    let notes = match format {
        ModelFormat::Ply => {
            write_ply_with_progress(path, &model.gaussians, model.sh_degree, progress)
                .map(|()| Vec::new())
        }
        ModelFormat::Splat => splat_file::write_splat(path, model),
        ModelFormat::Spz => spz::write_spz(path, model, progress),
        ModelFormat::CompressedPly => compressed_ply::write_compressed_ply(path, model),
        ModelFormat::Sog => sog::write_sog(path, model, progress),
    }?;
    progress.finish();
    Ok(notes)
}

/// Checks that every value of `model` is finite, and that `valid` accepts each (attribute, value
/// list) pair, before a format that cannot store other values writes it to `path`. The error
/// names the first Gaussian and attribute that fails.
pub(crate) fn check_storable(
    path: &Path,
    format: ModelFormat,
    model: &PlyModel,
    valid: impl Fn(&str, &[f32]) -> bool,
) -> Result<()> {
    let g = &model.gaussians;
    let n = g.means.len();
    let lengths = [
        g.log_scales.len(),
        g.quats.len(),
        g.opacity_logits.len(),
        g.sh.len(),
    ];
    if lengths.iter().any(|&l| l != n) {
        return Err(Error::Shape {
            op: "write model",
            detail: format!("{n} means but attribute lengths {lengths:?}"),
        });
    }
    let rest = crate::splat::sh::coefficient_count(model.sh_degree.min(3)) - 1;
    for i in 0..n {
        let sh = g.sh[i][..=rest].as_flattened();
        let attributes: [(&str, &[f32]); 5] = [
            ("position", &g.means[i]),
            ("log scale", &g.log_scales[i]),
            ("rotation", &g.quats[i]),
            ("opacity logit", std::slice::from_ref(&g.opacity_logits[i])),
            ("SH coefficients", sh),
        ];
        for (attribute, values) in attributes {
            if values.iter().any(|v| !v.is_finite()) || !valid(attribute, values) {
                return Err(Error::UnstorableValue {
                    path: path.display().to_string(),
                    format: format!(".{}", format.extension()),
                    index: i,
                    attribute: attribute.into(),
                    value: format!("{values:?}"),
                });
            }
        }
    }
    Ok(())
}

//! Reading SOG version 2 ([`super::sog`] describes the layout): a `.sog` zip bundle, or a
//! `meta.json` with its textures beside it. Gaussians come back in the file's texture order.
//! Every size, count, index and name is checked before use, and each failure says which file
//! and what is wrong.

use super::ply::PlyModel;
use super::sog::{Meta, VERSION, coefficients_of_bands, format_error};
use super::sog_source::Source;
use crate::data::init::logit;
use crate::error::Result;
use crate::splat::reference::CpuGaussians;
use std::path::Path;

/// Entries in every codebook.
const CODEBOOK_ENTRIES: usize = 256;

/// A decoded RGBA texture.
struct Texture {
    rgba: Vec<u8>,
    width: usize,
    height: usize,
}

impl Texture {
    fn texel(&self, i: usize) -> [u8; 4] {
        self.rgba[i * 4..][..4].try_into().expect("4 bytes")
    }
}

/// Decodes the WebP part `name`, which must hold at least `count` texels.
fn texture(source: &mut Source, path: &Path, name: &str, count: usize) -> Result<Texture> {
    let bytes = source.part(path, name)?;
    let image = image::load_from_memory_with_format(&bytes, image::ImageFormat::WebP)
        .map_err(|e| format_error(path, format!("{name} is not a decodable WebP image: {e}")))?
        .into_rgba8();
    let (width, height) = (image.width() as usize, image.height() as usize);
    if width * height < count {
        return Err(format_error(
            path,
            format!(
                "{name} is {width}×{height}, too small for the {count} Gaussians meta.json states"
            ),
        ));
    }
    Ok(Texture {
        rgba: image.into_raw(),
        width,
        height,
    })
}

/// `files`, checked to list at least `needed` names (`what` names the `meta.json` entry).
fn listed_files<'a>(
    path: &Path,
    files: &'a [String],
    what: &str,
    needed: usize,
) -> Result<&'a [String]> {
    if files.len() < needed {
        return Err(format_error(
            path,
            format!(
                "meta.json's {what}.files lists {} files, {needed} needed",
                files.len()
            ),
        ));
    }
    Ok(files)
}

/// The one texture of a `meta.json` entry whose `files` list a single part.
fn only_texture(
    source: &mut Source,
    path: &Path,
    files: &[String],
    what: &str,
    count: usize,
) -> Result<Texture> {
    texture(source, path, &listed_files(path, files, what, 1)?[0], count)
}

fn codebook<'a>(path: &Path, values: &'a [f32], what: &str) -> Result<&'a [f32]> {
    if values.len() != CODEBOOK_ENTRIES {
        return Err(format_error(
            path,
            format!(
                "meta.json's {what}.codebook has {} entries, not {CODEBOOK_ENTRIES}",
                values.len()
            ),
        ));
    }
    Ok(values)
}

/// `sign(t)·(e^|t| − 1)`, the inverse of the position transform.
fn inverse_log_transform(t: f32) -> f32 {
    t.signum() * t.abs().exp_m1()
}

/// The quaternion (w, x, y, z) of a rotation texel; an alpha outside 252–255 gives the identity,
/// as splat-transform reads it.
pub(crate) fn unpack_quat(texel: [u8; 4]) -> [f32; 4] {
    let Some(largest) = texel[3].checked_sub(252).filter(|&m| m < 4) else {
        return [1.0, 0.0, 0.0, 0.0];
    };
    let largest = usize::from(largest);
    let mut q = [0f32; 4];
    let mut k = 0;
    for (i, c) in q.iter_mut().enumerate() {
        if i != largest {
            *c = (f32::from(texel[k]) / 255.0 * 2.0 - 1.0) / std::f32::consts::SQRT_2;
            k += 1;
        }
    }
    q[largest] = (1.0 - q.iter().map(|v| v * v).sum::<f32>()).max(0.0).sqrt();
    q
}

/// Reads the SOG model at `path`: a `.sog` bundle, or the `meta.json` of loose files.
pub fn read_sog(path: &Path) -> Result<PlyModel> {
    let (mut source, meta_bytes) = Source::open(path)?;
    let raw: serde_json::Value = serde_json::from_slice(&meta_bytes)
        .map_err(|e| format_error(path, format!("meta.json is not valid JSON: {e}")))?;
    match raw.get("version").map(|v| v.as_u64()) {
        None => {
            return Err(format_error(
                path,
                "meta.json has no version: this is SOG version 1 (legacy), which wgsplat does not read; convert it with `splat-transform in/meta.json out.ply` first",
            ));
        }
        Some(Some(v)) if v == u64::from(VERSION) => {}
        Some(other) => {
            return Err(format_error(
                path,
                format!(
                    "meta.json says version {}, and only version {VERSION} is read",
                    other.map_or("(not a number)".into(), |v| v.to_string())
                ),
            ));
        }
    }
    let meta: Meta = serde_json::from_value(raw).map_err(|e| {
        format_error(
            path,
            format!("meta.json does not describe a SOG version 2 model: {e}"),
        )
    })?;
    let count = usize::try_from(meta.count)
        .ok()
        .filter(|&c| c <= super::sog::MAX_TEXTURE_SIDE * super::sog::MAX_TEXTURE_SIDE)
        .ok_or_else(|| {
            format_error(
                path,
                format!(
                    "meta.json's count {} exceeds what 16383² textures hold",
                    meta.count
                ),
            )
        })?;
    if meta
        .means
        .mins
        .iter()
        .chain(&meta.means.maxs)
        .any(|v| !v.is_finite())
    {
        return Err(format_error(
            path,
            "meta.json's means.mins or means.maxs are not finite numbers",
        ));
    }

    let means_files = listed_files(path, &meta.means.files, "means", 2)?;
    let low = texture(&mut source, path, &means_files[0], count)?;
    let high = texture(&mut source, path, &means_files[1], count)?;
    let axis = |a: usize, q: u16| {
        let range = meta.means.maxs[a] - meta.means.mins[a];
        let range = if range == 0.0 { 1.0 } else { range };
        inverse_log_transform(meta.means.mins[a] + range * (f32::from(q) / 65535.0))
    };
    let means: Vec<[f32; 3]> = (0..count)
        .map(|i| {
            let (l, h) = (low.texel(i), high.texel(i));
            std::array::from_fn(|a| axis(a, u16::from(l[a]) | (u16::from(h[a]) << 8)))
        })
        .collect();
    drop((low, high));

    let quats_texture = only_texture(&mut source, path, &meta.quats.files, "quats", count)?;
    let quats: Vec<[f32; 4]> = (0..count)
        .map(|i| unpack_quat(quats_texture.texel(i)))
        .collect();
    drop(quats_texture);

    let scale_book = codebook(path, &meta.scales.codebook, "scales")?;
    let scales_texture = only_texture(&mut source, path, &meta.scales.files, "scales", count)?;
    let log_scales: Vec<[f32; 3]> = (0..count)
        .map(|i| {
            let t = scales_texture.texel(i);
            std::array::from_fn(|a| scale_book[usize::from(t[a])])
        })
        .collect();
    drop(scales_texture);

    let colour_book = codebook(path, &meta.sh0.codebook, "sh0")?;
    let sh0_texture = only_texture(&mut source, path, &meta.sh0.files, "sh0", count)?;
    let mut sh = vec![[[0f32; 3]; 16]; count];
    let mut opacity_logits = Vec::with_capacity(count);
    for (i, s) in sh.iter_mut().enumerate() {
        let t = sh0_texture.texel(i);
        s[0] = std::array::from_fn(|c| colour_book[usize::from(t[c])]);
        // Clamped as splat-transform decodes it (not `.splat`'s half step), so both agree.
        opacity_logits.push(logit((f32::from(t[3]) / 255.0).clamp(1e-6, 1.0 - 1e-6)));
    }
    drop(sh0_texture);

    let mut sh_degree = 0;
    if let Some(sh_n) = &meta.sh_n {
        if !(1..=3).contains(&sh_n.bands) {
            return Err(format_error(
                path,
                format!("meta.json's shN.bands is {}; 1 to 3 expected", sh_n.bands),
            ));
        }
        sh_degree = sh_n.bands;
        let k = coefficients_of_bands(sh_n.bands);
        let book = codebook(path, &sh_n.codebook, "shN")?;
        let files = listed_files(path, &sh_n.files, "shN", 2)?;
        let centroids = texture(&mut source, path, &files[0], 0)?;
        if centroids.width != 64 * k {
            return Err(format_error(
                path,
                format!(
                    "{} is {} texels wide; {} expected for {} SH bands (64 centroids × {k} coefficients)",
                    files[0],
                    centroids.width,
                    64 * k,
                    sh_n.bands
                ),
            ));
        }
        let entries = usize::try_from(sh_n.count).unwrap_or(usize::MAX);
        if entries > 65_536 || entries.div_ceil(64) > centroids.height {
            return Err(format_error(
                path,
                format!(
                    "meta.json's shN.count {} does not fit {} ({} rows of 64 centroids; at most 65536)",
                    sh_n.count, files[0], centroids.height
                ),
            ));
        }
        let labels = texture(&mut source, path, &files[1], count)?;
        for (i, s) in sh.iter_mut().enumerate() {
            let t = labels.texel(i);
            let label = usize::from(t[0]) | (usize::from(t[1]) << 8);
            if label >= entries {
                return Err(format_error(
                    path,
                    format!(
                        "{} gives Gaussian {i} the palette entry {label}, past the {entries} meta.json's shN.count states",
                        files[1]
                    ),
                ));
            }
            let row = (label / 64) * centroids.width + (label % 64) * k;
            for j in 0..k {
                let texel = centroids.texel(row + j);
                s[1 + j] = std::array::from_fn(|c| book[usize::from(texel[c])]);
            }
        }
    }
    Ok(PlyModel {
        gaussians: CpuGaussians {
            means,
            log_scales,
            quats,
            opacity_logits,
            sh,
        },
        sh_degree,
    })
}

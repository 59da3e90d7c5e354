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
use image::ImageDecoder;
use std::path::Path;

/// Entries in every codebook.
const CODEBOOK_ENTRIES: usize = 256;
/// Most Gaussians a SOG set may claim per byte of its files: the position textures of a real
/// model hardly compress (real sets take 10 to 20 bytes per Gaussian), so more is a damaged or
/// crafted file whose textures would inflate thousands of times over.
const MAX_GAUSSIANS_PER_BYTE: u64 = 64;
/// Rows of 64 centroids in an SH palette texture: 65,536 entries, with rounding.
const MAX_CENTROID_ROWS: usize = 1024 + 4;

/// A decoded RGBA texture.
struct Texture {
    rgba: Vec<u8>,
    width: usize,
    height: usize,
}

impl Texture {
    fn texel(&self, i: usize) -> [u8; 4] {
        match self.rgba.get(i * 4..i * 4 + 4) {
            Some(t) => [t[0], t[1], t[2], t[3]],
            None => [0; 4],
        }
    }
}

/// The texture sizes accepted for `count` Gaussians: at least one texel each, and not much more
/// (splat-transform's `W = ceil(sqrt(n) / 4)·4` by `ceil(n / W / 4)·4` is within it).
fn per_gaussian_texels(count: usize) -> (usize, usize) {
    (count, count.saturating_mul(2).saturating_add(65_536))
}

/// The sizes a texture may have, and what in `meta.json` they derive from (for messages).
struct TextureBounds {
    /// Fewest and most texels.
    texels: (usize, usize),
    /// The width, where it is fixed.
    width: Option<usize>,
    /// E.g. "the 5 Gaussians meta.json states".
    basis: String,
}

impl TextureBounds {
    /// One texel per Gaussian, and not many more.
    fn per_gaussian(count: usize) -> TextureBounds {
        TextureBounds {
            texels: per_gaussian_texels(count),
            width: None,
            basis: format!("the {count} Gaussians meta.json states"),
        }
    }
}

/// Decodes the WebP part `name`, whose size must lie within `bounds`. Its size is read from its
/// header, checked, and only then is it decoded, into a buffer reserved fallibly.
fn texture(
    source: &mut Source,
    path: &Path,
    name: &str,
    bounds: &TextureBounds,
) -> Result<Texture> {
    let TextureBounds {
        texels,
        width,
        basis,
    } = bounds;
    // A lossless WebP is at most a little over 4 bytes per texel.
    let max_bytes = (texels.1 as u64).saturating_mul(5).saturating_add(1 << 16);
    let bytes = source.part(path, name, max_bytes)?;
    let not_webp = |e: image::ImageError| {
        format_error(path, format!("{name} is not a decodable WebP image: {e}"))
    };
    let decoder =
        image::codecs::webp::WebPDecoder::new(std::io::Cursor::new(&bytes)).map_err(not_webp)?;
    let (w, h) = decoder.dimensions();
    let (width_px, height_px) = (w as usize, h as usize);
    let total = width_px.saturating_mul(height_px);
    if let Some(want) = width.filter(|&want| want != width_px) {
        return Err(format_error(
            path,
            format!("{name} is {width_px} texels wide; {basis} needs {want}"),
        ));
    }
    if total < texels.0 || total > texels.1 {
        let (size, bound) = if total < texels.0 {
            ("too small", format!("at least {}", texels.0))
        } else {
            ("too large", format!("at most {}", texels.1))
        };
        return Err(format_error(
            path,
            format!(
                "{name} is {width_px}×{height_px}, {size} for {basis} ({bound} texels); the set is damaged or its parts mixed up"
            ),
        ));
    }
    let channels = usize::from(decoder.color_type().bytes_per_pixel());
    let mut rgba = super::host::try_filled(total * 4, 0u8, || {
        format!(
            "the {width_px}×{height_px} texture {name} of {}",
            path.display()
        )
    })?;
    decoder
        .read_image(&mut rgba[..total * channels])
        .map_err(not_webp)?;
    if channels == 3 {
        // Spread RGB to RGBA in place, from the end.
        for i in (0..total).rev() {
            let rgb = [rgba[3 * i], rgba[3 * i + 1], rgba[3 * i + 2]];
            rgba[4 * i..4 * i + 4].copy_from_slice(&[rgb[0], rgb[1], rgb[2], 255]);
        }
    }
    Ok(Texture {
        rgba,
        width: width_px,
        height: height_px,
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
    let name = &listed_files(path, files, what, 1)?[0];
    texture(source, path, name, &TextureBounds::per_gaussian(count))
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
    decode_sog(path, Source::open(path)?)
}

/// [`read_sog`] of a `.sog` bundle held in memory; `path` names it in messages.
pub fn read_sog_bytes(path: &Path, bytes: &[u8]) -> Result<PlyModel> {
    decode_sog(path, Source::from_bytes(path, bytes.to_vec())?)
}

fn decode_sog(path: &Path, opened: (Source, Vec<u8>, u64)) -> Result<PlyModel> {
    let (mut source, meta_bytes, set_bytes) = opened;
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
    if meta.count > set_bytes.saturating_mul(MAX_GAUSSIANS_PER_BYTE) {
        return Err(format_error(
            path,
            format!(
                "meta.json states {} Gaussians, but the set is only {set_bytes} bytes: more than {MAX_GAUSSIANS_PER_BYTE} Gaussians per byte, \
                 far beyond what the textures of a real model compress to (10 to 20 bytes per Gaussian); the file is damaged or crafted",
                meta.count
            ),
        ));
    }
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
    let bounds = TextureBounds::per_gaussian(count);
    let low = texture(&mut source, path, &means_files[0], &bounds)?;
    let high = texture(&mut source, path, &means_files[1], &bounds)?;
    let gaussians = || format!("the {count} Gaussians of {}", path.display());
    let mut means = super::host::try_vec(count, gaussians)?;
    let mut quats = super::host::try_vec(count, gaussians)?;
    let mut log_scales = super::host::try_vec(count, gaussians)?;
    let mut sh = super::host::try_filled(count, [[0f32; 3]; 16], gaussians)?;
    let mut opacity_logits = super::host::try_vec(count, gaussians)?;
    let axis = |a: usize, q: u16| {
        let range = meta.means.maxs[a] - meta.means.mins[a];
        let range = if range == 0.0 { 1.0 } else { range };
        inverse_log_transform(meta.means.mins[a] + range * (f32::from(q) / 65535.0))
    };
    means.extend((0..count).map(|i| {
        let (l, h) = (low.texel(i), high.texel(i));
        std::array::from_fn(|a| axis(a, u16::from(l[a]) | (u16::from(h[a]) << 8)))
    }));
    drop((low, high));

    let quats_texture = only_texture(&mut source, path, &meta.quats.files, "quats", count)?;
    quats.extend((0..count).map(|i| unpack_quat(quats_texture.texel(i))));
    drop(quats_texture);

    let scale_book = codebook(path, &meta.scales.codebook, "scales")?;
    let scales_texture = only_texture(&mut source, path, &meta.scales.files, "scales", count)?;
    log_scales.extend((0..count).map(|i| {
        let t = scales_texture.texel(i);
        std::array::from_fn(|a| scale_book[usize::from(t[a])])
    }));
    drop(scales_texture);

    let colour_book = codebook(path, &meta.sh0.codebook, "sh0")?;
    let sh0_texture = only_texture(&mut source, path, &meta.sh0.files, "sh0", count)?;
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
        let palette = TextureBounds {
            texels: (0, 64 * k * MAX_CENTROID_ROWS),
            width: Some(64 * k),
            basis: format!(
                "a palette of {} SH bands (64 centroids of {k} coefficients a row, at most 65536 centroids)",
                sh_n.bands
            ),
        };
        let centroids = texture(&mut source, path, &files[0], &palette)?;
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
        let labels = texture(&mut source, path, &files[1], &bounds)?;
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

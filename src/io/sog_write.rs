//! Writing SOG version 2 (the layout is in [`super::sog`]): Morton order, the textures encoded as
//! lossless WebP one at a time (so at most one uncompressed texture is held), the codebooks and
//! the SH palette fitted by [`super::sog_codebook`], and `meta.json` last.

use super::ply::PlyModel;
use super::progress::Progress;
use super::sog::{
    Asset, CodebookMeta, FilesMeta, MAX_TEXTURE_SIDE, MeansMeta, Meta, ShMeta, VERSION,
    coefficients_of_bands, format_error, is_loose_set, log_transform, texture_size,
};
use super::sog_codebook::{ScalarCodebook, fit_palette};
use super::sog_texels::{encode_webp, morton_order, pack_quat, texture};
use super::splat_file::{sigmoid, unit_byte};
use super::{io_error, write_atomically};
use crate::error::Result;
use crate::splat::reference::CpuGaussians;
use rayon::prelude::*;
use std::io::Write;
use std::path::Path;

/// k-means iterations of the SH palette (splat-transform's default).
const PALETTE_ITERATIONS: usize = 10;
/// The largest SH palette (16-bit labels; splat-transform's cap).
const MAX_PALETTE: usize = 64 * 1024;

/// The SH palette size splat-transform uses for `n` Gaussians: the largest power of two not above
/// `n`, at most 65,536.
fn palette_size(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (1usize << n.ilog2()).min(MAX_PALETTE)
    }
}

/// Where the textures go: entries of a zip (a `.sog` bundle) or files beside `meta.json`.
enum Sink<'a> {
    Zip(Box<zip::ZipWriter<&'a mut std::io::BufWriter<std::fs::File>>>),
    Folder(&'a Path),
}

impl Sink<'_> {
    fn put(&mut self, path: &Path, name: &str, bytes: &[u8]) -> Result<()> {
        match self {
            Sink::Zip(zip) => {
                let options = zip::write::SimpleFileOptions::default()
                    .compression_method(zip::CompressionMethod::Stored);
                zip.start_file(name, options)
                    .map_err(|e| format_error(path, format!("zip entry {name}: {e}")))?;
                zip.write_all(bytes).map_err(|e| io_error(path, "write", e))
            }
            Sink::Folder(dir) => {
                let file = dir.join(name);
                write_atomically(&file, |w| {
                    w.write_all(bytes).map_err(|e| io_error(&file, "write", e))
                })
            }
        }
    }
}

/// Writes `model` as SOG version 2: the loose files beside `path` when it is named `meta.json`
/// (written last), else a zip bundle at `path`. Every file is written atomically. Returns what the
/// format quantised beyond its fixed precision (the SH palette), for the caller to report.
pub fn write_sog(path: &Path, model: &PlyModel, progress: &Progress) -> Result<Vec<String>> {
    if !is_loose_set(path) {
        let mut notes = Vec::new();
        write_atomically(path, |file| {
            let mut sink = Sink::Zip(Box::new(zip::ZipWriter::new(file)));
            notes = write_parts(path, model, &mut sink, progress)?;
            if let Sink::Zip(zip) = sink {
                zip.finish()
                    .map_err(|e| format_error(path, format!("finishing the zip: {e}")))?;
            }
            Ok(())
        })?;
        Ok(notes)
    } else {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        let dir = dir.unwrap_or(Path::new("."));
        let mut sink = Sink::Folder(dir);
        let notes = write_parts(path, model, &mut sink, progress)?;
        Ok(notes)
    }
}

/// Writes the textures, then `meta.json` (under `path`'s own name in a folder).
fn write_parts(
    path: &Path,
    model: &PlyModel,
    sink: &mut Sink,
    progress: &Progress,
) -> Result<Vec<String>> {
    let g: &CpuGaussians = &model.gaussians;
    let n = g.means.len();
    if n == 0 {
        return Err(format_error(
            path,
            "SOG cannot hold an empty model (no Gaussians)",
        ));
    }
    let (width, height) = texture_size(n);
    if width > MAX_TEXTURE_SIDE || height > MAX_TEXTURE_SIDE {
        return Err(format_error(
            path,
            format!(
                "{n} Gaussians need {width}×{height} textures, beyond WebP's {MAX_TEXTURE_SIDE}; write PLY or SPZ instead"
            ),
        ));
    }
    let bands = model.sh_degree.min(3);
    // Steps: the Morton order, five textures, and (with SH) the palette and its two textures.
    progress.begin("writing SOG", if bands > 0 { 9 } else { 6 });
    let order = morton_order(&g.means);
    progress.advance(1);
    let mut put = |name: &str, rgba: Vec<u8>, w: usize, h: usize| -> Result<()> {
        let webp = encode_webp(path, &rgba, w, h)?;
        drop(rgba);
        sink.put(path, name, &webp)?;
        progress.advance(1);
        Ok(())
    };

    // Positions.
    let mut mins = [f32::INFINITY; 3];
    let mut maxs = [f32::NEG_INFINITY; 3];
    for m in &g.means {
        for a in 0..3 {
            let t = log_transform(m[a]);
            if !t.is_finite() {
                continue;
            }
            mins[a] = mins[a].min(t);
            maxs[a] = maxs[a].max(t);
        }
    }
    for a in 0..3 {
        if mins[a] > maxs[a] {
            (mins[a], maxs[a]) = (0.0, 0.0);
        }
    }
    let quantised = |i: usize| -> [u16; 3] {
        std::array::from_fn(|a| {
            let range = maxs[a] - mins[a];
            let t = if range > 0.0 {
                (log_transform(g.means[i][a]) - mins[a]) / range
            } else {
                0.0
            };
            (t * 65535.0).round().clamp(0.0, 65535.0) as u16
        })
    };
    put(
        "means_l.webp",
        texture(&order, width, height, |i| {
            let q = quantised(i);
            [q[0] as u8, q[1] as u8, q[2] as u8, 255]
        }),
        width,
        height,
    )?;
    put(
        "means_u.webp",
        texture(&order, width, height, |i| {
            let q = quantised(i);
            [(q[0] >> 8) as u8, (q[1] >> 8) as u8, (q[2] >> 8) as u8, 255]
        }),
        width,
        height,
    )?;

    put(
        "quats.webp",
        texture(&order, width, height, |i| pack_quat(g.quats[i])),
        width,
        height,
    )?;

    let scales = ScalarCodebook::fit(g.log_scales.as_flattened().to_vec());
    put(
        "scales.webp",
        texture(&order, width, height, |i| {
            let s = g.log_scales[i];
            [
                scales.label(s[0]),
                scales.label(s[1]),
                scales.label(s[2]),
                255,
            ]
        }),
        width,
        height,
    )?;

    let colours = ScalarCodebook::fit(g.sh.iter().flat_map(|s| s[0]).collect());
    put(
        "sh0.webp",
        texture(&order, width, height, |i| {
            let dc = g.sh[i][0];
            let alpha = unit_byte(sigmoid(g.opacity_logits[i]));
            [
                colours.label(dc[0]),
                colours.label(dc[1]),
                colours.label(dc[2]),
                alpha,
            ]
        }),
        width,
        height,
    )?;

    let mut notes = Vec::new();
    let sh_n = if bands > 0 {
        let k = coefficients_of_bands(bands);
        let point = |i: usize| g.sh[i][1..=k].as_flattened();
        let palette = fit_palette(
            &point,
            n,
            3 * k,
            palette_size(n),
            PALETTE_ITERATIONS,
            super::sog_codebook::ONE_LEVEL_WORK,
        );
        progress.advance(1);
        let entries = palette.len(3 * k);
        let codebook = ScalarCodebook::fit(palette.centroids.clone());
        let rows = entries.div_ceil(64);
        let mut centroids = vec![0u8; 64 * k * rows * 4];
        for c in 0..entries {
            for j in 0..k {
                let texel = &mut centroids[((c / 64) * 64 * k + (c % 64) * k + j) * 4..][..4];
                for (ch, byte) in texel[..3].iter_mut().enumerate() {
                    *byte = codebook.label(palette.centroids[c * 3 * k + j * 3 + ch]);
                }
                texel[3] = 255;
            }
        }
        let decoded = |i: usize, v: usize| {
            codebook.values[usize::from(codebook.label(palette.centroids[i * 3 * k + v]))]
        };
        let squared: f64 = (0..n)
            .into_par_iter()
            .map(|i| {
                let label = palette.labels[i] as usize;
                point(i)
                    .iter()
                    .enumerate()
                    .map(|(v, &x)| f64::from(x - decoded(label, v)).powi(2))
                    .sum::<f64>()
            })
            .sum();
        let rms = (squared / (n * 3 * k) as f64).sqrt();
        notes.push(format!(
            "SH bands 1–{bands} ({} values per Gaussian) are clustered into a palette of {entries} entries with 8-bit values: RMS error {rms:.4}",
            3 * k
        ));
        put("shN_centroids.webp", centroids, 64 * k, rows)?;
        put(
            "shN_labels.webp",
            texture(&order, width, height, |i| {
                let label = palette.labels[i];
                [label as u8, (label >> 8) as u8, 0, 255]
            }),
            width,
            height,
        )?;
        Some(ShMeta {
            count: entries as u64,
            bands,
            codebook: codebook.values,
            files: vec!["shN_centroids.webp".into(), "shN_labels.webp".into()],
        })
    } else {
        None
    };

    let meta = Meta {
        version: Some(VERSION),
        asset: Some(Asset {
            generator: format!("wgsplat v{}", env!("CARGO_PKG_VERSION")),
        }),
        count: n as u64,
        means: MeansMeta {
            mins,
            maxs,
            files: vec!["means_l.webp".into(), "means_u.webp".into()],
        },
        scales: CodebookMeta {
            codebook: scales.values,
            files: vec!["scales.webp".into()],
        },
        quats: FilesMeta {
            files: vec!["quats.webp".into()],
        },
        sh0: CodebookMeta {
            codebook: colours.values,
            files: vec!["sh0.webp".into()],
        },
        sh_n,
    };
    let json =
        serde_json::to_vec(&meta).map_err(|e| format_error(path, format!("meta.json: {e}")))?;
    let meta_name = match sink {
        Sink::Zip(_) => "meta.json".to_string(),
        Sink::Folder(_) => path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("meta.json")
            .to_string(),
    };
    sink.put(path, &meta_name, &json)?;
    Ok(notes)
}

//! SOG ("Splat Optimized Graphics", version 2), PlayCanvas's web format, as its reference tool
//! `@playcanvas/splat-transform` writes and reads it: the attributes in WebP-lossless RGBA
//! textures and a `meta.json` that says how to decode them. A `.sog` file (or any path not named
//! `meta.json`) is a zip of those files; a path named `meta.json` is the same set as loose files
//! in its folder.
//!
//! Gaussian `i` (in Morton order of the positions) is texel `i` of every texture, row-major, in
//! textures `W = ceil(sqrt(n) / 4)·4` wide and `ceil(n / W / 4)·4` high.
//! - `means_l`, `means_u`: each coordinate as `t = sign(x)·ln(|x| + 1)`, quantised to 16 bits over
//!   the per-axis range of `t` (`means.mins`, `means.maxs`); low bytes in one texture, high bytes
//!   in the other.
//! - `quats`: the normalised quaternion (w, x, y, z) with its largest component made positive and
//!   dropped; the other three, times √2, as bytes `255·(v/2 + 1/2)`; alpha `252 + index` of the
//!   dropped one.
//! - `scales`: the three log scales as indexes into a 256-entry codebook (`scales.codebook`).
//! - `sh0`: the three DC colours as indexes into another 256-entry codebook, and
//!   `sigmoid(opacity)·255` in alpha.
//! - `shN` (SH degree ≥ 1): the coefficients past DC clustered into a palette of at most 65,536
//!   entries (`shN_labels`: 16-bit label per Gaussian in R and G), whose values are again indexes
//!   into a 256-entry codebook (`shN_centroids`: centroid `c`, coefficient `j` at texel
//!   `((c mod 64)·K + j, c / 64)` for `K` coefficients per channel).
//!
//! The writer is [`super::sog_write`], the reader [`super::sog_read`], the quantisers
//! [`super::sog_codebook`].

use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub use super::sog_read::{read_sog, read_sog_bytes};
pub use super::sog_write::write_sog;
/// Whether `path` names SOG's loose files (a file named `meta.json`, with the textures beside
/// it); any other name is a zip bundle (normally `.sog`).
pub fn is_loose_set(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.eq_ignore_ascii_case("meta.json"))
}

/// Bytes of the loose SOG set whose `meta.json` is `meta_path`: the file and every texture it
/// names (0 for a part that cannot be read).
pub fn loose_set_bytes(meta_path: &Path) -> u64 {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    // Regular files of a plausible size only: a FIFO would block, a huge file is not a meta.json.
    let readable = std::fs::metadata(meta_path).is_ok_and(|m| m.is_file() && m.len() < 4 << 20);
    let Some(meta) = readable
        .then(|| std::fs::read(meta_path).ok())
        .flatten()
        .and_then(|bytes| serde_json::from_slice::<Meta>(&bytes).ok())
    else {
        return size(meta_path);
    };
    let dir = meta_path.parent().unwrap_or(Path::new("."));
    let sh_files = meta.sh_n.iter().flat_map(|s| &s.files);
    let files = meta
        .means
        .files
        .iter()
        .chain(&meta.scales.files)
        .chain(&meta.quats.files);
    size(meta_path)
        + files
            .chain(&meta.sh0.files)
            .chain(sh_files)
            .map(|name| size(&dir.join(name)))
            .sum::<u64>()
}

/// The SOG version written and read.
pub const VERSION: u32 = 2;
/// WebP's largest texture side.
pub const MAX_TEXTURE_SIDE: usize = 16_383;

/// `meta.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Meta {
    /// 2; absent in the legacy version 1.
    pub version: Option<u32>,
    /// Who wrote the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asset: Option<Asset>,
    /// Gaussians.
    pub count: u64,
    /// Position ranges (in log space) and textures.
    pub means: MeansMeta,
    /// Log-scale codebook and texture.
    pub scales: CodebookMeta,
    /// Rotation texture.
    pub quats: FilesMeta,
    /// DC colour codebook and texture (opacity in alpha).
    pub sh0: CodebookMeta,
    /// SH past DC, when present.
    #[serde(rename = "shN", default, skip_serializing_if = "Option::is_none")]
    pub sh_n: Option<ShMeta>,
}

/// `meta.asset`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Asset {
    pub generator: String,
}

/// `meta.means`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct MeansMeta {
    pub mins: [f32; 3],
    pub maxs: [f32; 3],
    pub files: Vec<String>,
}

/// `meta.scales` and `meta.sh0`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct CodebookMeta {
    pub codebook: Vec<f32>,
    pub files: Vec<String>,
}

/// `meta.quats`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct FilesMeta {
    pub files: Vec<String>,
}

/// `meta.shN`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ShMeta {
    /// Palette entries.
    pub count: u64,
    /// SH bands past DC (1 to 3).
    pub bands: u32,
    pub codebook: Vec<f32>,
    /// Centroids, then labels.
    pub files: Vec<String>,
}

pub(crate) fn format_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        kind: "SOG file".into(),
        message: message.into(),
    }
}

/// SH coefficients per colour channel past DC for `bands` bands.
pub(crate) fn coefficients_of_bands(bands: u32) -> usize {
    [0, 3, 8, 15][bands.min(3) as usize]
}

/// The texture size for `n` Gaussians: `W = ceil(sqrt(n) / 4)·4`, `H = ceil(n / W / 4)·4`, in
/// integers.
pub fn texture_size(n: usize) -> (usize, usize) {
    let root = n.isqrt();
    let ceil_root = if root * root < n { root + 1 } else { root };
    let width = ceil_root.div_ceil(4) * 4;
    let height = if width == 0 {
        0
    } else {
        n.div_ceil(width * 4) * 4
    };
    (width, height)
}

/// `sign(x)·ln(|x| + 1)`, the position transform.
pub(crate) fn log_transform(x: f32) -> f32 {
    x.signum() * x.abs().ln_1p()
}

//! SPZ, Niantic's compressed splat format, as its reference library (`nianticlabs/spz`,
//! `load-spz.cc` and its README) defines it. Versions 2, 3 and 4 are read; 3 (the default) and 4
//! are written.
//!
//! - Versions 2 and 3: one gzip stream holding a 16-byte header and then the attributes as
//!   separate arrays. Header: magic `0x5053474e` ("NGSP"), version (u32), point count (u32), SH
//!   degree (u8), fractional bits (u8), flags (u8: 1 = antialiased, 2 = has extensions, which are
//!   refused), one reserved byte.
//! - Version 4: a plain 32-byte header (the same first 15 bytes, then the number of streams (u8),
//!   the byte offset of the table of contents (u32) and 12 reserved bytes), then the table of
//!   contents (per stream: compressed and uncompressed size, u64 each) and one zstd frame per
//!   non-empty attribute array, in the order below.
//! - The attribute arrays, each for all points in turn ([`layout`]): positions (3 × 24-bit
//!   signed fixed point with `fractional bits`, 12 when written: 1/4096 units), alphas
//!   (`sigmoid·255`), colours (SH DC as `f_dc·0.15·255 + 127.5`), scales (log scale as
//!   `(s + 10)·16`), rotations (version 2: x, y, z of the normalised quaternion with w >= 0 as
//!   `q·127.5 + 127.5`; versions 3 and 4: "smallest three", a 2-bit index of the largest
//!   component and three 10-bit sign-magnitude values of the others over `1/sqrt(2)`), and SH
//!   (per point, coefficient-major, colour-minor; bytes `x·128 + 128` rounded to buckets of 8 for
//!   band 1 and 16 for bands 2 and 3). Band 4 (version 4) is read and dropped.
//! - Coordinates are right-up-back (three.js); PLY files are right-down-front, so y and z are
//!   negated, the quaternion's x is kept and y, z negated, and the SH coefficients flip as the
//!   reference library's `coordinateConverter(RDF, RUB)` says. [`SpzAxes::Ply`] skips that
//!   conversion for tools that store PLY axes unchanged.
//!
//! Hostile files: the header's count is checked against what the file's size can hold before
//! anything is inflated, only the bytes the header implies are inflated (a stream holding more is
//! refused), and every large buffer is reserved fallibly, so a failure says how many bytes were
//! needed instead of aborting.

mod gzip;
mod layout;
mod zstd;

use super::io_error;
use super::ply::PlyModel;
use super::progress::Progress;
use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;

/// "NGSP", little-endian.
pub const MAGIC: u32 = 0x5053_474e;
/// The version [`write_spz`] writes by default.
pub const WRITE_VERSION: u32 = 3;
/// The versions [`write_spz_with`] writes.
pub const WRITTEN_VERSIONS: [u32; 2] = [3, 4];
/// The reference library's former limit on points per file, kept for writing so that older
/// readers take what wgsplat writes.
const MAX_WRITE_POINTS: u32 = 10_000_000;
const FLAG_ANTIALIASED: u8 = 1;
const FLAG_EXTENSIONS: u8 = 2;

/// How SPZ's axes relate to the model's (PLY's right-down-front).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpzAxes {
    /// The spec: SPZ holds right-up-back coordinates, converted from and to PLY's axes.
    #[default]
    Rub,
    /// No conversion: SPZ holds the PLY's coordinates as they are (what splat-transform 3.x
    /// writes and expects).
    Ply,
}

impl SpzAxes {
    /// The axes called `name` (`rub` or `ply`, case-insensitive).
    pub fn from_name(name: &str) -> Result<SpzAxes> {
        match name.to_ascii_lowercase().as_str() {
            "rub" => Ok(SpzAxes::Rub),
            "ply" => Ok(SpzAxes::Ply),
            _ => Err(Error::InvalidSetting {
                name: "spz-axes".into(),
                value: name.into(),
                expected: "rub (the SPZ spec: right-up-back, converted from PLY's axes) or ply (PLY's axes unchanged, as splat-transform 3.x writes)".into(),
            }),
        }
    }
}

/// How an SPZ file is written: its version and axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpzOptions {
    /// 3 (gzip, the default) or 4 (zstd streams).
    pub version: u32,
    /// The axes the file holds.
    pub axes: SpzAxes,
}

impl Default for SpzOptions {
    fn default() -> Self {
        SpzOptions {
            version: WRITE_VERSION,
            axes: SpzAxes::Rub,
        }
    }
}

impl SpzOptions {
    /// Checks that the version is one wgsplat writes.
    pub fn validate(&self) -> Result<()> {
        if WRITTEN_VERSIONS.contains(&self.version) {
            return Ok(());
        }
        Err(Error::InvalidSetting {
            name: "spz-version".into(),
            value: self.version.to_string(),
            expected: "3 (gzip, read by every SPZ reader) or 4 (zstd, the reference library's current version)".into(),
        })
    }
}

fn format_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        kind: "SPZ file".into(),
        message: message.into(),
    }
}

/// The error for a host allocation of `bytes` for `what` that the system refused.
fn memory_error(path: &Path, bytes: u64, what: &str) -> Error {
    Error::Io {
        path: path.display().to_string(),
        action: "reserve memory to read or write".into(),
        message: format!(
            "{bytes} bytes ({:.2} GiB) were needed for {what} and the system refused them; free memory or use a smaller model",
            bytes as f64 / f64::from(1u32 << 30)
        ),
    }
}

/// Reserves room for `extra` more elements in `v`, or fails with an error naming the bytes.
fn try_reserve<T>(path: &Path, v: &mut Vec<T>, extra: usize, what: &str) -> Result<()> {
    v.try_reserve_exact(extra).map_err(|_| {
        let bytes = (extra as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        memory_error(path, bytes, what)
    })
}

/// The fields of an SPZ header that the versions share.
#[derive(Clone, Copy, Debug)]
struct Header {
    version: u32,
    count: u32,
    degree: u8,
    fractional_bits: u8,
    flags: u8,
}

impl Header {
    /// Parses and checks the shared fields (the first 15 bytes of `bytes`) for a file of
    /// `versions`.
    fn parse(path: &Path, bytes: &[u8], versions: std::ops::RangeInclusive<u32>) -> Result<Self> {
        let word =
            |k: usize| u32::from_le_bytes([bytes[k], bytes[k + 1], bytes[k + 2], bytes[k + 3]]);
        if word(0) != MAGIC {
            return Err(format_error(
                path,
                format!("magic number {:#010x} is not SPZ's {MAGIC:#010x}", word(0)),
            ));
        }
        let header = Header {
            version: word(4),
            count: word(8),
            degree: bytes[12],
            fractional_bits: bytes[13],
            flags: bytes[14],
        };
        let version = header.version;
        if !versions.contains(&version) {
            return Err(format_error(
                path,
                format!(
                    "SPZ version {version} is not supported in this container (a gzip stream holds versions 2 and 3, a plain \"NGSP\" header version 4; version 1 and versions above 4 are not read); write version 3 or 4"
                ),
            ));
        }
        if header.degree > 4 {
            return Err(format_error(
                path,
                format!("SH degree {} is not supported (0 to 4)", header.degree),
            ));
        }
        if header.flags & FLAG_EXTENSIONS != 0 {
            return Err(format_error(
                path,
                "the file uses SPZ extensions, which wgsplat does not read; write it without extensions",
            ));
        }
        if header.flags & FLAG_ANTIALIASED != 0 {
            eprintln!(
                "wgsplat: {} was trained antialiased; render it with --antialiased",
                path.display()
            );
        }
        if header.degree > 3 {
            eprintln!(
                "wgsplat: {} has SH degree {}; band 4 is dropped (wgsplat keeps degree 3)",
                path.display(),
                header.degree
            );
        }
        Ok(header)
    }
}

/// Writes `model` as SPZ version 3 in right-up-back axes, atomically, counting the bytes
/// compressed in `progress`. Returns what the format dropped or quantised beyond its stated
/// precision (positions past the 24-bit range), for the caller to report.
pub fn write_spz(path: &Path, model: &PlyModel, progress: &Progress) -> Result<Vec<String>> {
    write_spz_with(path, model, progress, &SpzOptions::default())
}

/// [`write_spz`] with a chosen version (3 or 4) and axes.
pub fn write_spz_with(
    path: &Path,
    model: &PlyModel,
    progress: &Progress,
    options: &SpzOptions,
) -> Result<Vec<String>> {
    options.validate()?;
    let (header, arrays, clipped) = packed(path, model, options)?;
    if options.version >= 4 {
        zstd::write(path, &header, &arrays, progress)?;
    } else {
        gzip::write(path, &header, &arrays, progress)?;
    }
    Ok(dropped_notes(model, clipped))
}

/// The bytes of [`write_spz`]'s file (version 3, right-up-back axes), for a browser page to offer
/// as a download; `name` names the model in messages.
pub fn spz_bytes(name: &Path, model: &PlyModel) -> Result<Vec<u8>> {
    let options = SpzOptions {
        version: 3,
        axes: SpzAxes::Rub,
    };
    let (header, arrays, _) = packed(name, model, &options)?;
    gzip::bytes(name, &header, &arrays)
}

/// The header and packed arrays of `model` in `options`' version and axes, and how many
/// coordinates were clipped (`path` names the output in messages).
fn packed(
    path: &Path,
    model: &PlyModel,
    options: &SpzOptions,
) -> Result<(Header, layout::Arrays, usize)> {
    let n = model.gaussians.means.len();
    let count = u32::try_from(n)
        .ok()
        .filter(|&c| c <= MAX_WRITE_POINTS)
        .ok_or_else(|| {
            format_error(
                path,
                format!("{n} Gaussians exceed SPZ's limit of {MAX_WRITE_POINTS}"),
            )
        })?;
    let degree = model.sh_degree.min(3) as u8;
    let (arrays, clipped) = layout::pack(path, model, degree, options.axes)?;
    let header = Header {
        version: options.version,
        count,
        degree,
        fractional_bits: layout::FRACTIONAL_BITS,
        flags: 0,
    };
    Ok((header, arrays, clipped))
}

/// What [`write_spz_with`] reports it dropped or clipped.
fn dropped_notes(model: &PlyModel, clipped: usize) -> Vec<String> {
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
    dropped
}

/// Reads an SPZ file (versions 2 to 4) in right-up-back axes. A wrong magic number, an
/// unsupported version or flag, a count the file cannot hold or the data does not match, or a
/// corrupt gzip or zstd stream is an error naming the file.
pub fn read_spz(path: &Path) -> Result<PlyModel> {
    read_spz_with(path, SpzAxes::Rub)
}

/// [`read_spz`] of a file in the given axes.
pub fn read_spz_with(path: &Path, axes: SpzAxes) -> Result<PlyModel> {
    let file = std::fs::File::open(path).map_err(|e| io_error(path, "open", e))?;
    let metadata = file.metadata().map_err(|e| io_error(path, "inspect", e))?;
    if !metadata.is_file() {
        return Err(format_error(
            path,
            "it is not a regular file (a folder, pipe or device); give the path of an .spz file",
        ));
    }
    read_spz_from(path, std::io::BufReader::new(file), metadata.len(), axes)
}

/// [`read_spz`] of a whole file held in memory; `path` names it in messages.
pub fn read_spz_bytes(path: &Path, bytes: &[u8]) -> Result<PlyModel> {
    read_spz_from(path, bytes, bytes.len() as u64, SpzAxes::Rub)
}

/// Reads an SPZ stream of `size` bytes from `reader`.
fn read_spz_from(path: &Path, mut reader: impl Read, size: u64, axes: SpzAxes) -> Result<PlyModel> {
    let mut start = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match reader.read(&mut start[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(path, "read", e)),
        }
    }
    let start = &start[..got];
    let (header, arrays) = if start.starts_with(&[0x1f, 0x8b]) {
        gzip::read(path, start.chain(reader), size)?
    } else if start == MAGIC.to_le_bytes() {
        zstd::read(path, start.chain(reader), size)?
    } else {
        return Err(format_error(
            path,
            format!(
                "it starts with bytes {start:02x?}, neither a gzip stream (SPZ versions 2 and 3) nor \"NGSP\" (SPZ version 4)"
            ),
        ));
    };
    layout::unpack(path, &header, &arrays, axes)
}

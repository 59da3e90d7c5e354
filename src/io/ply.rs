//! The PLY files of 3D Gaussian Splatting: one `vertex` element with the float properties
//! `x y z nx ny nz f_dc_0..2 f_rest_0..(3K-1) opacity scale_0..2 rot_0..3`, written as
//! `binary_little_endian 1.0`, which the reference implementation and the common viewers read.
//!
//! Values are stored pre-activation, as the optimizer sees them: log scales, logit opacity,
//! unnormalised quaternions (w, x, y, z). The SH coefficients past DC are **channel-major**:
//! `f_rest_{c*K + k}` is coefficient `k + 1` of colour channel `c` (all K red coefficients, then
//! green, then blue). Normals are written as zeros and ignored on reading.
//!
//! Reading accepts ASCII and both binary byte orders, any scalar property type, extra properties
//! and extra elements, and reports missing properties, truncated data and non-PLY files as
//! [`Error::Format`] naming the file.

use super::{io_error, write_atomically};
use crate::error::{Error, Result};
use crate::io::ply_read::{Property, VertexReader};
use crate::splat::reference::CpuGaussians;
use crate::splat::sh::coefficient_count;
use std::io::Write;
use std::path::Path;

const KIND: &str = "3DGS PLY file";

/// Gaussians read from a PLY file with the SH degree its `f_rest` properties give.
#[derive(Clone, Debug)]
pub struct PlyModel {
    /// The Gaussians (SH entries past the degree are zero).
    pub gaussians: CpuGaussians,
    /// SH degree: 0 to 3 for 0, 9, 24 or 45 `f_rest` properties.
    pub sh_degree: u32,
}

fn format_error(path: &Path, message: impl Into<String>) -> Error {
    crate::io::ply_read::format_error(path, KIND, message)
}

/// The property names of a 3DGS PLY for `rest` SH coefficients past DC, in file order.
pub fn property_names(rest: usize) -> Vec<String> {
    let mut names: Vec<String> = [
        "x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2",
    ]
    .map(String::from)
    .to_vec();
    names.extend((0..3 * rest).map(|i| format!("f_rest_{i}")));
    names.push("opacity".into());
    names.extend((0..3).map(|i| format!("scale_{i}")));
    names.extend((0..4).map(|i| format!("rot_{i}")));
    names
}

/// Writes `gaussians` with SH up to `sh_degree` as a binary 3DGS PLY, atomically (see [`super`]).
pub fn write_ply(path: &Path, gaussians: &CpuGaussians, sh_degree: u32) -> Result<()> {
    write_ply_with_near_plane(path, gaussians, sh_degree, None)
}

/// [`write_ply`], recording the near plane the model was trained with, when given, in a header
/// comment (`comment near_plane DIST`; [`read_near_plane`] reads it back).
pub fn write_ply_with_near_plane(
    path: &Path,
    gaussians: &CpuGaussians,
    sh_degree: u32,
    near_plane: Option<f32>,
) -> Result<()> {
    write_ply_noting(
        path,
        gaussians,
        sh_degree,
        near_plane,
        &super::progress::Progress::new(),
    )
}

/// [`write_ply`], counting Gaussians written in `progress`.
pub fn write_ply_with_progress(
    path: &Path,
    gaussians: &CpuGaussians,
    sh_degree: u32,
    progress: &super::progress::Progress,
) -> Result<()> {
    write_ply_noting(path, gaussians, sh_degree, None, progress)
}

fn write_ply_noting(
    path: &Path,
    gaussians: &CpuGaussians,
    sh_degree: u32,
    near_plane: Option<f32>,
    progress: &super::progress::Progress,
) -> Result<()> {
    let (header, rest) = ply_header(gaussians, sh_degree, near_plane)?;
    let n = gaussians.means.len();
    progress.begin("writing PLY", n as u64);
    write_atomically(path, |w| {
        encode_ply(w, path, &header, gaussians, rest, progress)?;
        progress.finish();
        Ok(())
    })
}

/// The bytes of [`write_ply`]'s file (for a browser page to offer as a download).
pub fn ply_bytes(gaussians: &CpuGaussians, sh_degree: u32) -> Result<Vec<u8>> {
    ply_bytes_with_near_plane(gaussians, sh_degree, None)
}

/// The bytes of [`write_ply_with_near_plane`]'s file.
pub fn ply_bytes_with_near_plane(
    gaussians: &CpuGaussians,
    sh_degree: u32,
    near_plane: Option<f32>,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let (header, rest) = ply_header(gaussians, sh_degree, near_plane)?;
    encode_ply(
        &mut out,
        Path::new("model.ply"),
        &header,
        gaussians,
        rest,
        &super::progress::Progress::new(),
    )?;
    Ok(out)
}

/// The near plane the PLY at `path` records (`comment near_plane DIST` in its header, as
/// [`write_ply_with_near_plane`] writes it); `None` when it records none. Reads the header only.
pub fn read_near_plane(path: &Path) -> Result<Option<f32>> {
    let (file, _) = super::host::open_regular_file(path)?;
    let mut reader = std::io::BufReader::new(file);
    super::ply_header::parse_header(path, KIND, &mut reader)?.near_plane(path, KIND)
}

/// [`read_near_plane`] of a whole file held in memory; `name` names it in messages.
pub fn near_plane_of_bytes(name: &Path, mut bytes: &[u8]) -> Result<Option<f32>> {
    super::ply_header::parse_header(name, KIND, &mut bytes)?.near_plane(name, KIND)
}

/// Checks `gaussians` and returns the binary PLY header for them with SH up to `sh_degree` (and
/// the near plane's comment, when given), and the SH rest coefficients per channel.
fn ply_header(
    gaussians: &CpuGaussians,
    sh_degree: u32,
    near_plane: Option<f32>,
) -> Result<(String, usize)> {
    let n = gaussians.means.len();
    let lengths = [
        gaussians.log_scales.len(),
        gaussians.quats.len(),
        gaussians.opacity_logits.len(),
        gaussians.sh.len(),
    ];
    if lengths.iter().any(|&l| l != n) {
        return Err(Error::Shape {
            op: "write_ply",
            detail: format!("{n} means but attribute lengths {lengths:?}"),
        });
    }
    if sh_degree > 3 {
        return Err(Error::InvalidArgument {
            op: "write_ply",
            detail: format!("SH degree {sh_degree} is above 3"),
        });
    }
    let rest = coefficient_count(sh_degree) - 1;
    let names = property_names(rest);
    let mut header = String::from("ply\nformat binary_little_endian 1.0\n");
    if let Some(near) = near_plane {
        let near = crate::data::near_plane::check_near_plane(near, "near_plane")?;
        header.push_str(&format!(
            "comment {} {near}\n",
            super::ply_header::NEAR_PLANE_COMMENT
        ));
    }
    header.push_str(&format!("element vertex {n}\n"));
    for name in &names {
        header.push_str(&format!("property float {name}\n"));
    }
    header.push_str("end_header\n");
    Ok((header, rest))
}

/// Writes the header and one record per Gaussian to `w` (`path` names the output in messages).
fn encode_ply(
    w: &mut impl Write,
    path: &Path,
    header: &str,
    gaussians: &CpuGaussians,
    rest: usize,
    progress: &super::progress::Progress,
) -> Result<()> {
    let n = gaussians.means.len();
    let names_len = header.lines().filter(|l| l.starts_with("property")).count();
    w.write_all(header.as_bytes())
        .map_err(|e| io_error(path, "write", e))?;
    let mut record: Vec<f32> = Vec::with_capacity(names_len);
    let mut bytes: Vec<u8> = Vec::with_capacity(names_len * 4);
    for i in 0..n {
        record.clear();
        record.extend_from_slice(&gaussians.means[i]);
        record.extend_from_slice(&[0.0; 3]);
        record.extend_from_slice(&gaussians.sh[i][0]);
        for channel in 0..3 {
            record.extend((1..=rest).map(|k| gaussians.sh[i][k][channel]));
        }
        record.push(gaussians.opacity_logits[i]);
        record.extend_from_slice(&gaussians.log_scales[i]);
        record.extend_from_slice(&gaussians.quats[i]);
        bytes.clear();
        bytes.extend(record.iter().flat_map(|v| v.to_le_bytes()));
        w.write_all(&bytes)
            .map_err(|e| io_error(path, "write", e))?;
        if i % 4096 == 4095 {
            progress.advance(4096);
        }
    }
    Ok(())
}

/// Where each needed value lands in a vertex record.
struct Columns {
    /// For each vertex property, the slot it fills (None: ignored).
    slot_of_property: Vec<Option<usize>>,
    slots: usize,
    rest: usize,
}

const FIXED_SLOTS: [&str; 14] = [
    "x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity", "scale_0", "scale_1", "scale_2",
    "rot_0", "rot_1", "rot_2", "rot_3",
];

fn columns(path: &Path, properties: &[Property]) -> Result<(Columns, u32)> {
    let find = |name: &str| properties.iter().position(|p| p.name == name);
    let rest_props = properties
        .iter()
        .filter(|p| p.name.starts_with("f_rest_"))
        .count();
    let degree = match rest_props {
        0 => 0,
        9 => 1,
        24 => 2,
        45 => 3,
        n => {
            return Err(format_error(
                path,
                format!(
                    "it has {n} f_rest_* properties; 3DGS files have 0, 9, 24 or 45 (SH degree 0 to 3)"
                ),
            ));
        }
    };
    let rest = coefficient_count(degree) - 1;
    let mut names: Vec<String> = FIXED_SLOTS.map(String::from).to_vec();
    names.extend((0..3 * rest).map(|i| format!("f_rest_{i}")));
    let mut slot_of_property = vec![None; properties.len()];
    let mut missing = Vec::new();
    for (slot, name) in names.iter().enumerate() {
        match find(name) {
            Some(p) if properties[p].list_count.is_some() => {
                return Err(format_error(
                    path,
                    format!("vertex property {name} is a list; 3DGS files store it as a scalar"),
                ));
            }
            Some(p) => slot_of_property[p] = Some(slot),
            None => missing.push(name.clone()),
        }
    }
    if !missing.is_empty() {
        return Err(format_error(
            path,
            format!(
                "the vertex element lacks the properties {}; is this a 3D Gaussian Splatting model (not a plain point cloud)?",
                missing.join(", ")
            ),
        ));
    }
    Ok((
        Columns {
            slot_of_property,
            slots: names.len(),
            rest,
        },
        degree,
    ))
}

/// Reads a 3DGS PLY (ASCII or binary; extra properties and elements are ignored).
pub fn read_ply(path: &Path) -> Result<PlyModel> {
    read_ply_with_progress(path, &super::progress::Progress::new())
}

/// [`read_ply`], counting Gaussians read in `progress`.
pub fn read_ply_with_progress(
    path: &Path,
    progress: &super::progress::Progress,
) -> Result<PlyModel> {
    read_vertices(path, VertexReader::open(path, KIND)?, progress)
}

/// [`read_ply`] of a whole file held in memory (a browser's download or dropped file); `name`
/// names it in messages.
pub fn read_ply_bytes(name: &Path, bytes: &[u8]) -> Result<PlyModel> {
    read_vertices(
        name,
        VertexReader::from_bytes(name, KIND, bytes)?,
        &super::progress::Progress::new(),
    )
}

fn read_vertices<R: std::io::BufRead>(
    path: &Path,
    reader: VertexReader<R>,
    progress: &super::progress::Progress,
) -> Result<PlyModel> {
    let (columns, sh_degree) = columns(path, reader.properties())?;
    let capacity = reader.capacity_hint();
    progress.begin("reading PLY", reader.vertex_count());
    let mut g = super::host::gaussians_with_capacity(capacity, path)?;
    reader.read_records(&columns.slot_of_property, columns.slots, |_, r| {
        g.means.push([r[0], r[1], r[2]]);
        let mut sh = [[0f32; 3]; 16];
        sh[0] = [r[3], r[4], r[5]];
        for channel in 0..3 {
            for k in 0..columns.rest {
                sh[k + 1][channel] = r[FIXED_SLOTS.len() + channel * columns.rest + k];
            }
        }
        g.sh.push(sh);
        g.opacity_logits.push(r[6]);
        g.log_scales.push([r[7], r[8], r[9]]);
        g.quats.push([r[10], r[11], r[12], r[13]]);
        if g.means.len().is_multiple_of(4096) {
            progress.advance(4096);
        }
        Ok(())
    })?;
    progress.finish();
    Ok(PlyModel {
        gaussians: g,
        sh_degree,
    })
}

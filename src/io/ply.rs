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
use crate::io::ply_scalar::Scalar;
use crate::splat::reference::CpuGaussians;
use crate::splat::sh::coefficient_count;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

const KIND: &str = "3DGS PLY file";
/// Longest header line we read (guards against binary files without newlines).
const MAX_HEADER_LINE: u64 = 4096;
/// Most header lines we read.
const MAX_HEADER_LINES: usize = 10_000;

/// Gaussians read from a PLY file with the SH degree its `f_rest` properties give.
#[derive(Clone, Debug)]
pub struct PlyModel {
    /// The Gaussians (SH entries past the degree are zero).
    pub gaussians: CpuGaussians,
    /// SH degree: 0 to 3 for 0, 9, 24 or 45 `f_rest` properties.
    pub sh_degree: u32,
}

fn format_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        kind: KIND.into(),
        message: message.into(),
    }
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
    let mut header = format!("ply\nformat binary_little_endian 1.0\nelement vertex {n}\n");
    for name in &names {
        header.push_str(&format!("property float {name}\n"));
    }
    header.push_str("end_header\n");
    write_atomically(path, |w| {
        let temp = super::temp_path(path);
        w.write_all(header.as_bytes())
            .map_err(|e| io_error(&temp, "write", e))?;
        let mut record: Vec<f32> = Vec::with_capacity(names.len());
        let mut bytes: Vec<u8> = Vec::with_capacity(names.len() * 4);
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
                .map_err(|e| io_error(&temp, "write", e))?;
        }
        Ok(())
    })
}

/// How the body is encoded.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Encoding {
    Ascii,
    LittleEndian,
    BigEndian,
}

/// A property: a scalar, or a list with its count and item types.
#[derive(Clone, Debug)]
struct Property {
    name: String,
    ty: Scalar,
    list_count: Option<Scalar>,
}

#[derive(Clone, Debug)]
struct Element {
    name: String,
    count: u64,
    properties: Vec<Property>,
}

impl Element {
    /// Bytes per instance in a binary body, when it has no lists.
    fn fixed_stride(&self) -> Option<u64> {
        self.properties
            .iter()
            .map(|p| p.list_count.is_none().then_some(p.ty.size() as u64))
            .sum()
    }
}

struct Header {
    encoding: Encoding,
    elements: Vec<Element>,
    bytes: u64,
}

fn parse_header(path: &Path, reader: &mut impl BufRead) -> Result<Header> {
    let mut encoding = None;
    let mut elements: Vec<Element> = Vec::new();
    let mut bytes = 0u64;
    let mut line = Vec::new();
    for number in 1..=MAX_HEADER_LINES {
        line.clear();
        let read = reader
            .by_ref()
            .take(MAX_HEADER_LINE)
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error(path, "read", e))?;
        bytes += read as u64;
        if read == 0 && number == 1 {
            return Err(format_error(path, "the file is empty"));
        }
        if read == 0 {
            return Err(format_error(
                path,
                "the header ends without an end_header line (the file is truncated or not a PLY)",
            ));
        }
        let not_ply = || {
            format_error(
                path,
                "it does not start with the line \"ply\"; it is not a PLY file",
            )
        };
        let text = std::str::from_utf8(&line).map_err(|_| {
            if number == 1 {
                not_ply()
            } else {
                format_error(path, format!("header line {number} is not text"))
            }
        })?;
        let words: Vec<&str> = text.split_whitespace().collect();
        let bad = |what: &str| {
            format_error(
                path,
                format!("header line {number} ({:?}): {what}", text.trim_end()),
            )
        };
        if number == 1 {
            if words != ["ply"] {
                return Err(not_ply());
            }
            continue;
        }
        match words.as_slice() {
            [] | ["comment", ..] | ["obj_info", ..] => {}
            ["format", kind, version] => {
                if !version.starts_with('1') {
                    return Err(bad("only PLY version 1.0 is supported"));
                }
                encoding = Some(match *kind {
                    "ascii" => Encoding::Ascii,
                    "binary_little_endian" => Encoding::LittleEndian,
                    "binary_big_endian" => Encoding::BigEndian,
                    _ => {
                        return Err(bad(
                            "unknown format (expected ascii, binary_little_endian or binary_big_endian)",
                        ));
                    }
                });
            }
            ["element", name, count] => {
                let count = count
                    .parse::<u64>()
                    .map_err(|_| bad("the element count is not a non-negative integer"))?;
                elements.push(Element {
                    name: name.to_string(),
                    count,
                    properties: Vec::new(),
                });
            }
            ["property", "list", count_ty, item_ty, name] => {
                let element = elements
                    .last_mut()
                    .ok_or_else(|| bad("property before any element"))?;
                let count_ty =
                    Scalar::parse(count_ty).ok_or_else(|| bad("unknown list count type"))?;
                let ty = Scalar::parse(item_ty).ok_or_else(|| bad("unknown list item type"))?;
                element.properties.push(Property {
                    name: name.to_string(),
                    ty,
                    list_count: Some(count_ty),
                });
            }
            ["property", ty, name] => {
                let element = elements
                    .last_mut()
                    .ok_or_else(|| bad("property before any element"))?;
                let ty = Scalar::parse(ty).ok_or_else(|| bad("unknown property type"))?;
                element.properties.push(Property {
                    name: name.to_string(),
                    ty,
                    list_count: None,
                });
            }
            ["end_header"] => {
                let encoding =
                    encoding.ok_or_else(|| format_error(path, "the header has no format line"))?;
                return Ok(Header {
                    encoding,
                    elements,
                    bytes,
                });
            }
            _ => return Err(bad("not a PLY header line")),
        }
    }
    Err(format_error(
        path,
        format!("no end_header within {MAX_HEADER_LINES} header lines"),
    ))
}

/// Reads the values of a PLY body one scalar at a time.
enum Body<R: BufRead> {
    Binary { reader: R, big_endian: bool },
    Ascii { text: String, position: usize },
}

impl<R: BufRead> Body<R> {
    /// The next scalar, or `None` at the end of the data.
    fn next(&mut self, ty: Scalar) -> std::io::Result<Option<f64>> {
        match self {
            Body::Binary { reader, big_endian } => {
                let mut buf = [0u8; 8];
                let b = &mut buf[..ty.size()];
                match reader.read_exact(b) {
                    Ok(()) => Ok(Some(ty.decode(b, *big_endian))),
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
                    Err(e) => Err(e),
                }
            }
            Body::Ascii { text, position } => {
                let rest = &text[*position..];
                let start = rest.len() - rest.trim_start().len();
                let token_len = rest[start..]
                    .find(char::is_whitespace)
                    .unwrap_or(rest.len() - start);
                *position += start + token_len;
                if token_len == 0 {
                    return Ok(None);
                }
                let token = &rest[start..start + token_len];
                token.parse::<f64>().map(Some).map_err(|_| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("{token:?} is not a number"),
                    )
                })
            }
        }
    }
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

fn columns(path: &Path, vertex: &Element) -> Result<(Columns, u32)> {
    let find = |name: &str| vertex.properties.iter().position(|p| p.name == name);
    let rest_props = vertex
        .properties
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
    let mut slot_of_property = vec![None; vertex.properties.len()];
    let mut missing = Vec::new();
    for (slot, name) in names.iter().enumerate() {
        match find(name) {
            Some(p) if vertex.properties[p].list_count.is_some() => {
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
    let file = std::fs::File::open(path).map_err(|e| io_error(path, "open", e))?;
    let file_len = file
        .metadata()
        .map_err(|e| io_error(path, "read the size of", e))?
        .len();
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let header = parse_header(path, &mut reader)?;
    let vertex_index = header
        .elements
        .iter()
        .position(|e| e.name == "vertex")
        .ok_or_else(|| format_error(path, "it has no vertex element"))?;
    let vertex = header.elements[vertex_index].clone();
    let (columns, sh_degree) = columns(path, &vertex)?;
    let mut body = match header.encoding {
        Encoding::Ascii => {
            let mut text = String::new();
            reader
                .read_to_string(&mut text)
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::InvalidData => {
                        format_error(path, "the ASCII body is not text")
                    }
                    _ => io_error(path, "read", e),
                })?;
            Body::Ascii { text, position: 0 }
        }
        encoding => {
            // Refuse early when fixed-size data cannot fit in the file (also bounds allocations).
            let before: Option<u64> = header.elements[..vertex_index]
                .iter()
                .map(|e| e.fixed_stride().and_then(|s| s.checked_mul(e.count)))
                .sum();
            let needed = vertex
                .fixed_stride()
                .and_then(|s| s.checked_mul(vertex.count))
                .zip(before)
                .and_then(|(v, b)| v.checked_add(b));
            let available = file_len.saturating_sub(header.bytes);
            if let Some(needed) = needed.filter(|&n| n > available) {
                return Err(format_error(
                    path,
                    format!(
                        "it is truncated: the header declares {} vertices needing {needed} bytes of data, but only {available} bytes follow the header",
                        vertex.count
                    ),
                ));
            }
            Body::Binary {
                reader,
                big_endian: encoding == Encoding::BigEndian,
            }
        }
    };
    let truncated = |what: String| {
        format_error(
            path,
            format!("it is truncated or malformed: the data ends inside {what}"),
        )
    };
    let bad_value =
        |what: String, e: std::io::Error| format_error(path, format!("bad value in {what}: {e}"));
    // Skip the elements before the vertices.
    for element in &header.elements[..vertex_index] {
        for i in 0..element.count {
            for property in &element.properties {
                let what = || {
                    format!(
                        "{} {i} of {} ({})",
                        element.name, element.count, property.name
                    )
                };
                let items = match property.list_count {
                    Some(count_ty) => {
                        body.next(count_ty)
                            .map_err(|e| bad_value(what(), e))?
                            .ok_or_else(|| truncated(what()))? as u64
                    }
                    None => 1,
                };
                for _ in 0..items {
                    body.next(property.ty)
                        .map_err(|e| bad_value(what(), e))?
                        .ok_or_else(|| truncated(what()))?;
                }
            }
        }
    }
    let capacity = vertex
        .count
        .min(file_len / vertex.properties.len().max(1) as u64) as usize;
    let mut g = CpuGaussians {
        means: Vec::with_capacity(capacity),
        log_scales: Vec::with_capacity(capacity),
        quats: Vec::with_capacity(capacity),
        opacity_logits: Vec::with_capacity(capacity),
        sh: Vec::with_capacity(capacity),
    };
    let mut record = vec![0f32; columns.slots];
    // Binary vertices without lists are read a whole record at a time.
    let mut fixed = match (&mut body, vertex.fixed_stride()) {
        (Body::Binary { big_endian, .. }, Some(stride)) => {
            let mut offset = 0;
            let mut fields = Vec::new();
            for (property, slot) in vertex.properties.iter().zip(&columns.slot_of_property) {
                if let Some(slot) = slot {
                    fields.push((offset, property.ty, *slot));
                }
                offset += property.ty.size();
            }
            Some((vec![0u8; stride as usize], fields, *big_endian))
        }
        _ => None,
    };
    for i in 0..vertex.count {
        if let (Some((bytes, fields, big_endian)), Body::Binary { reader, .. }) =
            (&mut fixed, &mut body)
        {
            reader.read_exact(bytes).map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => {
                    truncated(format!("vertex {i} of {}", vertex.count))
                }
                _ => io_error(path, "read", e),
            })?;
            for &(offset, ty, slot) in fields.iter() {
                record[slot] = ty.decode(&bytes[offset..offset + ty.size()], *big_endian) as f32;
            }
        }
        let generic = if fixed.is_some() {
            &[][..]
        } else {
            &vertex.properties[..]
        };
        for (property, slot) in generic.iter().zip(&columns.slot_of_property) {
            let what = || format!("vertex {i} of {} ({})", vertex.count, property.name);
            let items = match property.list_count {
                Some(count_ty) => body
                    .next(count_ty)
                    .map_err(|e| bad_value(what(), e))?
                    .ok_or_else(|| truncated(what()))? as u64,
                None => 1,
            };
            for _ in 0..items {
                let value = body
                    .next(property.ty)
                    .map_err(|e| bad_value(what(), e))?
                    .ok_or_else(|| truncated(what()))?;
                if let Some(slot) = slot {
                    record[*slot] = value as f32;
                }
            }
        }
        let r = &record;
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
    }
    Ok(PlyModel {
        gaussians: g,
        sh_degree,
    })
}

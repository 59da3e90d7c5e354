//! Point clouds as PLY files: the `vertex` element's `x y z` and optional `red green blue`, in
//! ASCII or binary (either endianness). Written in 3DGS's `points3d.ply` layout.

use std::path::Path;

use super::image::write_atomically;
use super::{PointCloud, dataset_error};
use crate::error::Result;
use crate::io::ply_scalar::Scalar;

/// One element declaration of the header.
struct Element {
    name: String,
    count: usize,
    properties: Vec<(String, Scalar)>,
    has_list: bool,
}

/// Reads the vertex positions and colours (grey 0.5 when the file has none) of a PLY file.
pub fn read_points_ply(path: &Path) -> Result<PointCloud> {
    let bytes = std::fs::read(path)
        .map_err(|e| dataset_error(path, format!("could not read the point cloud: {e}")))?;
    let header_end = bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .map(|p| p + 11)
        .ok_or_else(|| dataset_error(path, "not a PLY file: no \"end_header\" line"))?;
    let header = String::from_utf8_lossy(&bytes[..header_end]);
    let mut format = "";
    let mut elements: Vec<Element> = Vec::new();
    for line in header.lines() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        match tokens.as_slice() {
            ["format", f, ..] => format = f,
            ["element", name, count] => elements.push(Element {
                name: name.to_string(),
                count: count
                    .parse()
                    .map_err(|_| dataset_error(path, format!("bad element count in {line:?}")))?,
                properties: Vec::new(),
                has_list: false,
            }),
            ["property", "list", ..] if elements.last().is_some_and(|e| e.name == "vertex") => {
                return Err(dataset_error(
                    path,
                    "list properties on vertices are not supported",
                ));
            }
            ["property", "list", ..] => {
                if let Some(e) = elements.last_mut() {
                    e.has_list = true;
                }
            }
            ["property", kind, name] => {
                let scalar = Scalar::parse(kind).ok_or_else(|| {
                    dataset_error(path, format!("unknown property type in {line:?}"))
                })?;
                if let Some(e) = elements.last_mut() {
                    e.properties.push((name.to_string(), scalar));
                }
            }
            _ => {}
        }
    }
    let vertex_index = elements
        .iter()
        .position(|e| e.name == "vertex")
        .ok_or_else(|| dataset_error(path, "the PLY file has no vertex element"))?;
    let vertex = &elements[vertex_index];
    let find = |name: &str| vertex.properties.iter().position(|(n, _)| n == name);
    let (Some(x), Some(y), Some(z)) = (find("x"), find("y"), find("z")) else {
        return Err(dataset_error(path, "the vertex element lacks x, y or z"));
    };
    let colour = match (find("red"), find("green"), find("blue")) {
        (Some(r), Some(g), Some(b)) => Some([r, g, b]),
        _ => None,
    };
    let rows: Vec<Vec<f64>> = match format {
        "ascii" => {
            let body = String::from_utf8_lossy(&bytes[header_end..]);
            let skip: usize = elements[..vertex_index].iter().map(|e| e.count).sum();
            let lines: Vec<&str> = body
                .lines()
                .filter(|l| !l.trim().is_empty())
                .skip(skip)
                .take(vertex.count)
                .collect();
            if lines.len() != vertex.count {
                return Err(dataset_error(
                    path,
                    format!(
                        "truncated: {} of {} vertex lines",
                        lines.len(),
                        vertex.count
                    ),
                ));
            }
            lines
                .iter()
                .map(|l| {
                    l.split_whitespace()
                        .map(|t| {
                            t.parse::<f64>()
                                .map_err(|_| dataset_error(path, format!("bad vertex value {t:?}")))
                        })
                        .collect::<Result<Vec<f64>>>()
                })
                .collect::<Result<_>>()?
        }
        "binary_little_endian" | "binary_big_endian" => {
            let little = format == "binary_little_endian";
            let mut offset = header_end;
            for e in &elements[..vertex_index] {
                if e.has_list && e.count > 0 {
                    return Err(dataset_error(
                        path,
                        format!(
                            "cannot skip element {:?} with list properties before the vertices",
                            e.name
                        ),
                    ));
                }
                offset += e.count * e.properties.iter().map(|(_, s)| s.size()).sum::<usize>();
            }
            let stride: usize = vertex.properties.iter().map(|(_, s)| s.size()).sum();
            let needed = offset + vertex.count * stride;
            if bytes.len() < needed {
                return Err(dataset_error(
                    path,
                    format!(
                        "truncated: the vertices need {needed} bytes, the file has {}",
                        bytes.len()
                    ),
                ));
            }
            (0..vertex.count)
                .map(|i| {
                    let mut at = offset + i * stride;
                    vertex
                        .properties
                        .iter()
                        .map(|(_, s)| {
                            let v = s.decode(&bytes[at..at + s.size()], !little);
                            at += s.size();
                            v
                        })
                        .collect()
                })
                .collect()
        }
        other => {
            return Err(dataset_error(
                path,
                format!("unsupported PLY format {other:?}"),
            ));
        }
    };
    let mut cloud = PointCloud::default();
    for row in rows {
        if row.len() < vertex.properties.len() {
            return Err(dataset_error(
                path,
                "a vertex line has fewer values than properties",
            ));
        }
        cloud
            .positions
            .push([row[x] as f32, row[y] as f32, row[z] as f32]);
        cloud.colors.push(match colour {
            Some(idx) => idx.map(|k| (row[k] * vertex.properties[k].1.colour_scale()) as f32),
            None => [0.5; 3],
        });
    }
    Ok(cloud)
}

/// Writes `points` as a binary PLY in 3DGS's layout (float x y z nx ny nz, uchar red green blue;
/// normals zero), atomically.
pub fn write_points_ply(path: &Path, points: &PointCloud) -> Result<()> {
    let mut bytes = format!(
        "ply\nformat binary_little_endian 1.0\nelement vertex {}\nproperty float x\nproperty float y\nproperty float z\n\
         property float nx\nproperty float ny\nproperty float nz\nproperty uchar red\nproperty uchar green\n\
         property uchar blue\nend_header\n",
        points.len()
    )
    .into_bytes();
    for (p, c) in points.positions.iter().zip(&points.colors) {
        for v in p.iter().chain(&[0.0f32; 3]) {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend(c.map(|v| (v * 255.0).round().clamp(0.0, 255.0) as u8));
    }
    write_atomically(path, &bytes)
}

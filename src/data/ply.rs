//! Point clouds as PLY files: the `vertex` element's `x y z` and optional `red green blue`, in
//! ASCII or binary (either endianness). Written in 3DGS's `points3d.ply` layout.

use std::path::Path;

use super::PointCloud;
use super::image::write_atomically;
use crate::error::Result;
use crate::io::ply_read::{VertexReader, format_error};

const KIND: &str = "point cloud (PLY)";

/// Reads the vertex positions and colours (grey 0.5 when the file has none) of a PLY file,
/// through the same reader as 3DGS models ([`crate::io::ply_read`]): any scalar type, ASCII or
/// binary, extra properties and elements; a short or malformed file is an error naming it.
pub fn read_points_ply(path: &Path) -> Result<PointCloud> {
    super::check_regular_file(path, "the point cloud")?;
    let reader = VertexReader::open(path, KIND)?;
    let properties = reader.properties();
    let find = |name: &str| properties.iter().position(|p| p.name == name);
    let (Some(x), Some(y), Some(z)) = (find("x"), find("y"), find("z")) else {
        return Err(format_error(
            path,
            KIND,
            "the vertex element lacks x, y or z",
        ));
    };
    let colour = match (find("red"), find("green"), find("blue")) {
        (Some(r), Some(g), Some(b)) => Some([r, g, b]),
        _ => None,
    };
    let mut slot_of_property = vec![None; properties.len()];
    let mut wanted = vec![x, y, z];
    wanted.extend(colour.into_iter().flatten());
    for (slot, &p) in wanted.iter().enumerate() {
        if properties[p].list_count.is_some() {
            return Err(format_error(
                path,
                KIND,
                format!(
                    "vertex property {} is a list, not a scalar",
                    properties[p].name
                ),
            ));
        }
        slot_of_property[p] = Some(slot);
    }
    let scales = colour.map(|c| c.map(|p| properties[p].ty.colour_scale() as f32));
    let capacity = reader.capacity_hint();
    let mut cloud = PointCloud {
        positions: Vec::with_capacity(capacity),
        colors: Vec::with_capacity(capacity),
    };
    reader.read_records(&slot_of_property, wanted.len(), |_, r| {
        cloud.positions.push([r[0], r[1], r[2]]);
        cloud.colors.push(match scales {
            Some(s) => [r[3] * s[0], r[4] * s[1], r[5] * s[2]],
            None => [0.5; 3],
        });
        Ok(())
    })?;
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

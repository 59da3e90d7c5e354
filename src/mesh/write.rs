//! Writing a [`Mesh`], the format chosen by the file's extension: PLY (binary little endian,
//! float positions, `uchar` colours, `int` index lists), OBJ (`v x y z r g b` with colours in
//! [0, 1], 1-based `f` lines) or binary glTF 2.0 (`.glb`: positions, `COLOR_0` as normalised
//! unsigned bytes RGBA, `u32` indices, one buffer). Every file is written atomically; an empty
//! mesh is an error, never an empty file.

use std::io::Write;
use std::path::Path;

use serde_json::json;

use super::Mesh;
use crate::error::{Error, Result};
use crate::io::{io_error, write_atomically};

/// The extensions [`write_mesh`] accepts (lower case; matched without regard to case).
pub const MESH_EXTENSIONS: [&str; 3] = ["ply", "obj", "glb"];

/// Writes `mesh` to `path` as the format its extension names ([`MESH_EXTENSIONS`]), atomically.
pub fn write_mesh(path: &Path, mesh: &Mesh) -> Result<()> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    if !MESH_EXTENSIONS.contains(&extension.as_str()) {
        return Err(Error::InvalidArgument {
            op: "write_mesh",
            detail: format!(
                "{}: unknown mesh format {extension:?}; name the file .ply, .obj or .glb",
                path.display()
            ),
        });
    }
    if mesh.is_empty() {
        return Err(Error::InvalidArgument {
            op: "write_mesh",
            detail: format!(
                "{}: the mesh has no triangles; nothing written",
                path.display()
            ),
        });
    }
    if mesh.colours.len() != mesh.positions.len()
        || mesh
            .triangles
            .iter()
            .flatten()
            .any(|&i| i as usize >= mesh.positions.len())
    {
        return Err(Error::InvalidArgument {
            op: "write_mesh",
            detail: format!(
                "{}: inconsistent mesh ({} positions, {} colours, an index out of range?)",
                path.display(),
                mesh.positions.len(),
                mesh.colours.len()
            ),
        });
    }
    let bytes = match extension.as_str() {
        "ply" => ply_bytes(mesh),
        "obj" => obj_bytes(mesh),
        _ => glb_bytes(mesh),
    };
    if extension == "glb" && bytes.len() as u64 > u64::from(u32::MAX) {
        return Err(Error::InvalidArgument {
            op: "write_mesh",
            detail: format!(
                "{}: {} bytes exceed binary glTF's 4 GiB limit; write .ply instead, or use a \
                 larger --voxel",
                path.display(),
                bytes.len()
            ),
        });
    }
    write_atomically(path, |w| {
        w.write_all(&bytes).map_err(|e| io_error(path, "write", e))
    })
}

/// The mesh as a binary little-endian PLY file.
pub fn ply_bytes(mesh: &Mesh) -> Vec<u8> {
    let header = format!(
        "ply\nformat binary_little_endian 1.0\ncomment written by wgsplat\n\
         element vertex {}\nproperty float x\nproperty float y\nproperty float z\n\
         property uchar red\nproperty uchar green\nproperty uchar blue\n\
         element face {}\nproperty list uchar int vertex_indices\nend_header\n",
        mesh.positions.len(),
        mesh.triangles.len()
    );
    let mut out = header.into_bytes();
    out.reserve(mesh.positions.len() * 15 + mesh.triangles.len() * 13);
    for (p, c) in mesh.positions.iter().zip(&mesh.colours) {
        for v in p {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(c);
    }
    for t in &mesh.triangles {
        out.push(3);
        for &i in t {
            out.extend_from_slice(&(i as i32).to_le_bytes());
        }
    }
    out
}

/// The mesh as a Wavefront OBJ file with vertex colours.
pub fn obj_bytes(mesh: &Mesh) -> Vec<u8> {
    let mut out = String::from("# written by wgsplat\n");
    for (p, c) in mesh.positions.iter().zip(&mesh.colours) {
        let c = c.map(|v| f32::from(v) / 255.0);
        out.push_str(&format!(
            "v {} {} {} {:.4} {:.4} {:.4}\n",
            p[0], p[1], p[2], c[0], c[1], c[2]
        ));
    }
    for t in &mesh.triangles {
        out.push_str(&format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1));
    }
    out.into_bytes()
}

/// glTF's component types and buffer view targets.
const FLOAT: u32 = 5126;
const UNSIGNED_BYTE: u32 = 5121;
const UNSIGNED_INT: u32 = 5125;
const ARRAY_BUFFER: u32 = 34962;
const ELEMENT_ARRAY_BUFFER: u32 = 34963;

/// The mesh as a binary glTF 2.0 file: a 12-byte header, a JSON chunk (padded with spaces) and a
/// BIN chunk (padded with zeros) holding positions, RGBA colours and indices, each 4-aligned.
pub fn glb_bytes(mesh: &Mesh) -> Vec<u8> {
    let mut bin = Vec::new();
    for p in &mesh.positions {
        p.iter()
            .for_each(|v| bin.extend_from_slice(&v.to_le_bytes()));
    }
    let colours_at = bin.len();
    for c in &mesh.colours {
        bin.extend_from_slice(&[c[0], c[1], c[2], 255]);
    }
    let indices_at = bin.len();
    for t in &mesh.triangles {
        t.iter()
            .for_each(|i| bin.extend_from_slice(&i.to_le_bytes()));
    }
    let indices_len = bin.len() - indices_at;
    pad(&mut bin, 0);
    let (min, max) = mesh.bounds().unwrap_or(([0.0; 3], [0.0; 3]));
    let n = mesh.positions.len();
    let document = json!({
        "asset": {"version": "2.0", "generator": "wgsplat"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{
            "attributes": {"POSITION": 0, "COLOR_0": 1},
            "indices": 2,
            "mode": 4
        }]}],
        "buffers": [{"byteLength": bin.len()}],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": colours_at, "target": ARRAY_BUFFER},
            {"buffer": 0, "byteOffset": colours_at, "byteLength": indices_at - colours_at,
             "target": ARRAY_BUFFER},
            {"buffer": 0, "byteOffset": indices_at, "byteLength": indices_len,
             "target": ELEMENT_ARRAY_BUFFER}
        ],
        "accessors": [
            {"bufferView": 0, "componentType": FLOAT, "count": n, "type": "VEC3",
             "min": min, "max": max},
            {"bufferView": 1, "componentType": UNSIGNED_BYTE, "normalized": true, "count": n,
             "type": "VEC4"},
            {"bufferView": 2, "componentType": UNSIGNED_INT, "count": mesh.triangles.len() * 3,
             "type": "SCALAR"}
        ]
    });
    let mut text = document.to_string().into_bytes();
    pad(&mut text, b' ');
    let total = 12 + 8 + text.len() + 8 + bin.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(b"glTF");
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend_from_slice(&text);
    out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
    out.extend_from_slice(b"BIN\0");
    out.extend_from_slice(&bin);
    out
}

/// Pads `bytes` with `fill` to a multiple of 4.
fn pad(bytes: &mut Vec<u8>, fill: u8) {
    while !bytes.len().is_multiple_of(4) {
        bytes.push(fill);
    }
}

//! Each mesh format read back: PLY's header, counts and binary records, OBJ's lines, GLB's
//! header, chunks and accessors.

use std::path::PathBuf;

use super::Mesh;
use super::write::write_mesh;

/// A tetrahedron with four colours.
fn tetrahedron() -> Mesh {
    Mesh {
        positions: vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.5, 0.0],
            [0.0, 0.0, -2.0],
        ],
        colours: vec![[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30]],
        triangles: vec![[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]],
    }
}

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgsplat-mesh-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn f32_at(bytes: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

#[test]
fn ply_reads_back() {
    let (dir, mesh) = (folder("ply"), tetrahedron());
    let path = dir.join("m.PLY");
    write_mesh(&path, &mesh).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let end = bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .unwrap()
        + 11;
    let header = std::str::from_utf8(&bytes[..end]).unwrap();
    assert!(header.starts_with("ply\nformat binary_little_endian 1.0\n"));
    assert!(header.contains("element vertex 4\n") && header.contains("element face 4\n"));
    assert!(header.contains("property uchar red\n"));
    assert_eq!(bytes.len(), end + 4 * 15 + 4 * 13);
    for (v, (p, c)) in mesh.positions.iter().zip(&mesh.colours).enumerate() {
        let at = end + v * 15;
        assert_eq!(&[0, 1, 2].map(|k| f32_at(&bytes, at + 4 * k)), p);
        assert_eq!(&bytes[at + 12..at + 15], c);
    }
    for (f, t) in mesh.triangles.iter().enumerate() {
        let at = end + 60 + f * 13;
        assert_eq!(bytes[at], 3);
        assert_eq!(&[0, 1, 2].map(|k| u32_at(&bytes, at + 1 + 4 * k)), t);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn obj_reads_back() {
    let (dir, mesh) = (folder("obj"), tetrahedron());
    let path = dir.join("m.obj");
    write_mesh(&path, &mesh).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let numbers = |line: &str| -> Vec<f32> {
        line.split_whitespace()
            .skip(1)
            .map(|v| v.parse().unwrap())
            .collect()
    };
    let v: Vec<_> = text
        .lines()
        .filter(|l| l.starts_with("v "))
        .map(numbers)
        .collect();
    let f: Vec<_> = text
        .lines()
        .filter(|l| l.starts_with("f "))
        .map(numbers)
        .collect();
    assert_eq!((v.len(), f.len()), (4, 4));
    for (k, row) in v.iter().enumerate() {
        assert_eq!(&row[..3], &mesh.positions[k]);
        for c in 0..3 {
            let want = f32::from(mesh.colours[k][c]) / 255.0;
            assert!((row[3 + c] - want).abs() < 1e-4, "{row:?}");
        }
    }
    for (row, t) in f.iter().zip(&mesh.triangles) {
        assert_eq!(row, &t.map(|i| (i + 1) as f32).to_vec());
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn glb_reads_back() {
    let (dir, mesh) = (folder("glb"), tetrahedron());
    let path = dir.join("m.glb");
    write_mesh(&path, &mesh).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..4], b"glTF");
    assert_eq!(u32_at(&bytes, 4), 2);
    assert_eq!(u32_at(&bytes, 8) as usize, bytes.len());
    let json_len = u32_at(&bytes, 12) as usize;
    assert_eq!(&bytes[16..20], b"JSON");
    assert_eq!(json_len % 4, 0);
    let json: serde_json::Value = serde_json::from_slice(&bytes[20..20 + json_len]).unwrap();
    let bin_at = 20 + json_len;
    let bin_len = u32_at(&bytes, bin_at) as usize;
    assert_eq!(&bytes[bin_at + 4..bin_at + 8], b"BIN\0");
    assert_eq!(bin_len % 4, 0);
    assert_eq!(bin_at + 8 + bin_len, bytes.len());
    let bin = &bytes[bin_at + 8..];
    assert_eq!(json["asset"]["version"], "2.0");
    assert_eq!(json["buffers"][0]["byteLength"], bin_len);
    let accessors = json["accessors"].as_array().unwrap();
    let counts: Vec<_> = accessors
        .iter()
        .map(|a| a["count"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [4, 4, 12]);
    assert_eq!(
        json["accessors"][0]["max"],
        serde_json::json!([1.0, 1.5, 0.0])
    );
    assert_eq!(
        json["accessors"][0]["min"],
        serde_json::json!([0.0, 0.0, -2.0])
    );
    let attributes = &json["meshes"][0]["primitives"][0];
    assert_eq!(attributes["attributes"]["COLOR_0"], 1);
    let view = |k: usize| {
        let v = &json["bufferViews"][k];
        let at = v["byteOffset"].as_u64().unwrap() as usize;
        (at, at + v["byteLength"].as_u64().unwrap() as usize)
    };
    let (p0, p1) = view(0);
    let positions: Vec<f32> = (p0..p1).step_by(4).map(|at| f32_at(bin, at)).collect();
    assert_eq!(positions, mesh.positions.concat());
    let (c0, c1) = view(1);
    assert_eq!(&bin[c0..c0 + 4], &[255, 0, 0, 255]);
    assert_eq!(c1 - c0, 16);
    let (i0, i1) = view(2);
    let indices: Vec<u32> = (i0..i1).step_by(4).map(|at| u32_at(bin, at)).collect();
    assert_eq!(indices, mesh.triangles.concat());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unknown_formats_and_empty_meshes_write_nothing() {
    let dir = folder("refused");
    let err = write_mesh(&dir.join("m.stl"), &tetrahedron())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(".ply, .obj or .glb") && err.contains("stl"),
        "{err}"
    );
    assert!(write_mesh(&dir.join("m"), &tetrahedron()).is_err());
    let err = write_mesh(&dir.join("m.ply"), &Mesh::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("no triangles"), "{err}");
    let mut broken = tetrahedron();
    broken.triangles.push([0, 1, 9]);
    assert!(write_mesh(&dir.join("b.glb"), &broken).is_err());
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "no file left behind"
    );
    let _ = std::fs::remove_dir_all(dir);
}

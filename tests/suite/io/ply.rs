//! 3DGS PLY files: bit-exact round trips at every SH degree, the channel-major f_rest layout,
//! tolerance of ASCII, big-endian, extra properties and elements, and clear errors (never panics)
//! for truncated, foreign and incomplete files.

use std::path::PathBuf;
use wgsplat::Error;
use wgsplat::io::ply::{property_names, read_ply, write_ply};
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::splat::sh::coefficient_count;
use wgsplat::testing::TestRng;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgsplat-ply-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn random_gaussians(rng: &mut TestRng, n: usize, degree: u32) -> CpuGaussians {
    let coeffs = coefficient_count(degree);
    let mut g = CpuGaussians::default();
    for _ in 0..n {
        g.means.push([
            rng.range(-5.0, 5.0),
            rng.range(-5.0, 5.0),
            rng.range(-5.0, 5.0),
        ]);
        g.log_scales.push([
            rng.range(-4.0, 0.0),
            rng.range(-4.0, 0.0),
            rng.range(-4.0, 0.0),
        ]);
        g.quats.push([
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
        ]);
        g.opacity_logits.push(rng.range(-3.0, 3.0));
        let mut sh = [[0f32; 3]; 16];
        for c in sh.iter_mut().take(coeffs) {
            *c = [
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
            ];
        }
        g.sh.push(sh);
    }
    g
}

fn bits(g: &CpuGaussians) -> Vec<u32> {
    let mut out = Vec::new();
    for i in 0..g.means.len() {
        out.extend(g.means[i].map(f32::to_bits));
        out.extend(g.log_scales[i].map(f32::to_bits));
        out.extend(g.quats[i].map(f32::to_bits));
        out.push(g.opacity_logits[i].to_bits());
        out.extend(g.sh[i].iter().flatten().map(|v| v.to_bits()));
    }
    out
}

fn assert_format_error(
    result: wgsplat::Result<wgsplat::io::PlyModel>,
    path: &std::path::Path,
    needle: &str,
) {
    match result {
        Err(e @ Error::Format { .. }) => {
            let message = e.to_string();
            assert!(
                message.contains(&path.display().to_string()),
                "error does not name the file: {message}"
            );
            assert!(
                message.contains(needle),
                "expected {needle:?} in: {message}"
            );
        }
        Err(e) => panic!("expected a format error, got {e}"),
        Ok(_) => panic!("expected an error for {}", path.display()),
    }
}

#[test]
fn ply_round_trip_is_bit_exact() {
    let dir = temp_dir("round-trip");
    let mut rng = TestRng::new(1);
    for degree in 0..=3 {
        for n in [0, 1, 257] {
            let mut g = random_gaussians(&mut rng, n, degree);
            if n > 0 {
                g.means[0][1] = -0.0;
                g.opacity_logits[0] = f32::INFINITY;
                g.log_scales[0][2] = f32::MIN_POSITIVE / 4.0;
            }
            let path = dir.join(format!("model-{degree}-{n}.ply"));
            write_ply(&path, &g, degree).unwrap();
            assert!(
                wgsplat::io::temporary_files_of(&path).is_empty(),
                "temporary file left behind"
            );
            let model = read_ply(&path).unwrap();
            assert_eq!(model.sh_degree, degree);
            assert_eq!(model.gaussians.means.len(), n);
            assert_eq!(bits(&model.gaussians), bits(&g), "degree {degree} n {n}");
            let expected_len = property_names(coefficient_count(degree) - 1).len() * 4 * n;
            let file_len = std::fs::metadata(&path).unwrap().len() as usize;
            assert!(file_len > expected_len && file_len < expected_len + 2000);
        }
    }
    // Writing over an existing file replaces it.
    let path = dir.join("model-3-257.ply");
    let g = random_gaussians(&mut rng, 5, 1);
    write_ply(&path, &g, 1).unwrap();
    assert_eq!(bits(&read_ply(&path).unwrap().gaussians), bits(&g));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ply_f_rest_is_channel_major() {
    let dir = temp_dir("layout");
    let degree = 3;
    let k = coefficient_count(degree) - 1;
    let mut g = random_gaussians(&mut TestRng::new(2), 2, degree);
    for (i, sh) in g.sh.iter_mut().enumerate() {
        for (j, c) in sh.iter_mut().enumerate() {
            *c = [0, 1, 2].map(|ch| (i * 1000 + j * 10 + ch) as f32);
        }
    }
    let path = dir.join("layout.ply");
    write_ply(&path, &g, degree).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let header_end = bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .unwrap()
        + 11;
    let header = std::str::from_utf8(&bytes[..header_end]).unwrap();
    let names = property_names(k);
    let header_names: Vec<&str> = header
        .lines()
        .filter_map(|l| l.strip_prefix("property float "))
        .collect();
    assert_eq!(header_names, names);
    assert!(header.starts_with("ply\nformat binary_little_endian 1.0\nelement vertex 2\n"));
    let floats: Vec<f32> = bytes[header_end..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(floats.len(), 2 * names.len());
    for i in 0..2 {
        let record = &floats[i * names.len()..(i + 1) * names.len()];
        let at = |name: &str| record[names.iter().position(|n| n == name).unwrap()];
        for channel in 0..3 {
            assert_eq!(at(&format!("f_dc_{channel}")), (i * 1000 + channel) as f32);
            for coefficient in 0..k {
                // f_rest_{channel * K + k} is SH coefficient k + 1 of that channel.
                let want = (i * 1000 + (coefficient + 1) * 10 + channel) as f32;
                assert_eq!(at(&format!("f_rest_{}", channel * k + coefficient)), want);
            }
        }
        assert_eq!([at("nx"), at("ny"), at("nz")], [0.0; 3]);
        assert_eq!(at("opacity"), g.opacity_logits[i]);
        assert_eq!(
            [at("rot_0"), at("rot_1"), at("rot_2"), at("rot_3")],
            g.quats[i]
        );
        assert_eq!(
            [at("scale_0"), at("scale_1"), at("scale_2")],
            g.log_scales[i]
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An ASCII file with an extra element before the vertices (with a list), properties in another
/// order, extra properties, doubles and integers, and a face element after.
#[test]
fn ply_reads_ascii_and_extra_properties() {
    let dir = temp_dir("ascii");
    let mut text = String::from(
        "ply\r\nformat ascii 1.0\ncomment made by hand\nelement camera 2\nproperty list uchar int ids\nproperty float f\n",
    );
    text.push_str("element vertex 2\nproperty double opacity\nproperty float x\nproperty float y\nproperty float z\nproperty uchar red\n");
    for i in (0..9).rev() {
        text.push_str(&format!("property float f_rest_{i}\n"));
    }
    text.push_str("property list uchar float extra\n");
    for name in [
        "f_dc_0", "f_dc_1", "f_dc_2", "scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2",
        "rot_3",
    ] {
        text.push_str(&format!("property float {name}\n"));
    }
    text.push_str("element face 1\nproperty list uchar int vertex_indices\nend_header\n");
    text.push_str("3 1 2 3 0.5\n0 7.0\n");
    for i in 0..2 {
        let base = i as f32 * 100.0;
        text.push_str(&format!(
            "{} {} {} {} 255",
            -0.25 + base,
            1.0 + base,
            2.0 + base,
            3.0 + base
        ));
        for r in (0..9).rev() {
            text.push_str(&format!(" {}", base + 10.0 + r as f32));
        }
        text.push_str(" 2 9.5 9.5");
        for j in 0..10 {
            text.push_str(&format!(" {}", base + 50.0 + j as f32));
        }
        text.push('\n');
    }
    text.push_str("3 0 1 1\n");
    let path = dir.join("hand.ply");
    std::fs::write(&path, &text).unwrap();
    let model = read_ply(&path).unwrap();
    assert_eq!(model.sh_degree, 1);
    let g = &model.gaussians;
    assert_eq!(g.means, vec![[1.0, 2.0, 3.0], [101.0, 102.0, 103.0]]);
    assert_eq!(g.opacity_logits, vec![-0.25, 99.75]);
    assert_eq!(g.sh[1][0], [150.0, 151.0, 152.0]);
    assert_eq!(g.log_scales[0], [53.0, 54.0, 55.0]);
    assert_eq!(g.quats[1], [156.0, 157.0, 158.0, 159.0]);
    // f_rest_{c*3 + k} = base + 10 + c*3 + k is coefficient k+1 of channel c.
    for c in 0..3 {
        for k in 0..3 {
            assert_eq!(g.sh[1][k + 1][c], 110.0 + (c * 3 + k) as f32);
        }
    }
    assert_eq!(g.sh[0][4], [0.0; 3]);

    // Truncated ASCII: every cut inside the body fails cleanly.
    let body_start = text.find("end_header\n").unwrap() + 11;
    // Up to the start of the last vertex's last value (cutting inside a number shortens it).
    let last_value = text.rfind(" 159\n").unwrap() + 1;
    for cut in (body_start..=last_value).step_by(3) {
        let cut_path = dir.join("cut.ply");
        std::fs::write(&cut_path, &text.as_bytes()[..cut]).unwrap();
        assert_format_error(read_ply(&cut_path), &cut_path, "truncated");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ply_reads_big_endian() {
    let dir = temp_dir("big-endian");
    let g = random_gaussians(&mut TestRng::new(3), 3, 2);
    let path = dir.join("le.ply");
    write_ply(&path, &g, 2).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let header_end = bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .unwrap()
        + 11;
    let header = std::str::from_utf8(&bytes[..header_end])
        .unwrap()
        .replace("binary_little_endian", "binary_big_endian");
    let mut swapped = header.into_bytes();
    for c in bytes[header_end..].chunks_exact(4) {
        swapped.extend(c.iter().rev());
    }
    let be = dir.join("be.ply");
    std::fs::write(&be, &swapped).unwrap();
    assert_eq!(bits(&read_ply(&be).unwrap().gaussians), bits(&g));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ply_truncated_files_give_errors() {
    let dir = temp_dir("truncated");
    let g = random_gaussians(&mut TestRng::new(4), 3, 3);
    let path = dir.join("full.ply");
    write_ply(&path, &g, 3).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let cut_path = dir.join("cut.ply");
    // Every cut near the start, the end of the header and the end; a stride elsewhere (file
    // writes are slow on some test machines).
    let header_end = bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .unwrap()
        + 11;
    let near = |cut: usize, at: usize| cut.abs_diff(at) <= 16;
    let cuts = (0..bytes.len())
        .filter(|&c| near(c, 0) || near(c, header_end) || near(c, bytes.len()) || c % 13 == 0);
    for cut in cuts {
        std::fs::write(&cut_path, &bytes[..cut]).unwrap();
        let result = read_ply(&cut_path);
        assert!(
            result.is_err(),
            "cut at {cut} of {} read without error",
            bytes.len()
        );
        let message = result.err().unwrap().to_string();
        assert!(
            message.contains(&cut_path.display().to_string()),
            "{message}"
        );
    }
    // Trailing bytes after the declared vertices are ignored.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[1, 2, 3]);
    std::fs::write(&cut_path, &longer).unwrap();
    assert_eq!(bits(&read_ply(&cut_path).unwrap().gaussians), bits(&g));
    // A header that promises far more vertices than the file holds is refused before reading.
    let header = std::str::from_utf8(&bytes[..header_end])
        .unwrap()
        .replace("element vertex 3", "element vertex 4000000000");
    let mut huge = header.into_bytes();
    huge.extend_from_slice(&bytes[header_end..]);
    std::fs::write(&cut_path, &huge).unwrap();
    assert_format_error(read_ply(&cut_path), &cut_path, "truncated");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ply_foreign_and_incomplete_files_give_errors() {
    let dir = temp_dir("foreign");
    let path = dir.join("x.ply");
    let cases: [(&[u8], &str); 9] = [
        (b"", "empty"),
        (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "not a PLY"),
        (b"hello world\nthis is text\n", "not a PLY"),
        (b"ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty float x\n", "end_header"),
        (b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n", "f_dc_0"),
        (b"ply\nformat ascii 2.0\nend_header\n", "version"),
        (b"ply\nformat ascii 1.0\nelement vertex 1\nproperty quaternion x\nend_header\n", "unknown property type"),
        (b"ply\nformat ascii 1.0\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n3 0 1 2\n", "no vertex element"),
        (b"ply\nelement vertex 0\nend_header\n", "no format line"),
    ];
    for (bytes, needle) in cases {
        std::fs::write(&path, bytes).unwrap();
        assert_format_error(read_ply(&path), &path, needle);
    }
    // Wrong f_rest count and a non-number in an ASCII body.
    let mut text = String::from("ply\nformat ascii 1.0\nelement vertex 1\n");
    for name in property_names(0)
        .iter()
        .chain(["f_rest_0".to_string()].iter())
    {
        text.push_str(&format!("property float {name}\n"));
    }
    text.push_str("end_header\n");
    std::fs::write(&path, &text).unwrap();
    assert_format_error(read_ply(&path), &path, "f_rest");
    let mut text = String::from("ply\nformat ascii 1.0\nelement vertex 1\n");
    for name in property_names(0) {
        text.push_str(&format!("property float {name}\n"));
    }
    text.push_str("end_header\n1 2 3 0 0 0 0.5 0.5 nope 1 1 1 1 1 1 1 1\n");
    std::fs::write(&path, &text).unwrap();
    assert_format_error(read_ply(&path), &path, "nope");
    // Missing files and unwritable destinations are I/O errors naming the path.
    let missing = dir.join("missing.ply");
    assert!(matches!(read_ply(&missing), Err(Error::Io { .. })));
    let unwritable = dir.join("no-such-dir").join("out.ply");
    let err = write_ply(
        &unwritable,
        &random_gaussians(&mut TestRng::new(5), 1, 0),
        0,
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::Io { .. }) && err.to_string().contains("no-such-dir"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Binary vertices with a list property take the value-by-value path.
#[test]
fn ply_reads_binary_with_list_properties() {
    let dir = temp_dir("binary-list");
    let g = random_gaussians(&mut TestRng::new(6), 4, 0);
    let names = property_names(0);
    let mut bytes = b"ply\nformat binary_little_endian 1.0\nelement vertex 4\nproperty list uchar float extra\n".to_vec();
    for name in &names {
        bytes.extend_from_slice(format!("property float {name}\n").as_bytes());
    }
    bytes.extend_from_slice(b"end_header\n");
    for i in 0..4 {
        bytes.push(i as u8);
        bytes.extend((0..i).flat_map(|j| (j as f32).to_le_bytes()));
        let mut record = g.means[i].to_vec();
        record.extend([0.0; 3]);
        record.extend(g.sh[i][0]);
        record.push(g.opacity_logits[i]);
        record.extend(g.log_scales[i]);
        record.extend(g.quats[i]);
        bytes.extend(record.iter().flat_map(|v| v.to_le_bytes()));
    }
    let path = dir.join("list.ply");
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(bits(&read_ply(&path).unwrap().gaussians), bits(&g));
    std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    assert_format_error(read_ply(&path), &path, "truncated");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 15: point clouds (`points3d.ply`) are read by the same reader as models: CR LF headers,
/// ASCII with 8-bit colours, lists before the vertices, and a header whose vertex count
/// overflows `count * stride` is an error naming the file, not a panic.
#[test]
fn point_clouds_share_the_model_reader() {
    use wgsplat::data::PointCloud;
    use wgsplat::data::ply::{read_points_ply, write_points_ply};
    let dir = temp_dir("points");

    let cloud = PointCloud {
        positions: vec![[1.0, -2.0, 3.5], [0.25, 0.5, -0.75]],
        colors: vec![[1.0, 0.0, 0.2], [0.0, 0.6, 1.0]],
    };
    let binary = dir.join("points3d.ply");
    write_points_ply(&binary, &cloud).unwrap();
    let back = read_points_ply(&binary).unwrap();
    assert_eq!(back.positions, cloud.positions);
    for (got, want) in back
        .colors
        .iter()
        .flatten()
        .zip(cloud.colors.iter().flatten())
    {
        assert!((got - want).abs() <= 0.5 / 255.0, "colour {got} vs {want}");
    }

    let crlf = dir.join("crlf.ply");
    std::fs::write(
        &crlf,
        "ply\r\nformat ascii 1.0\r\ncomment made on Windows\r\nelement face 1\r\n\
         property list uchar int vertex_indices\r\nelement vertex 2\r\nproperty double x\r\n\
         property double y\r\nproperty double z\r\nproperty uchar red\r\nproperty uchar green\r\n\
         property uchar blue\r\nend_header\r\n3 0 1 1\r\n1 2 3 255 0 51\r\n4 5 6 0 153 255\r\n",
    )
    .unwrap();
    let ascii = read_points_ply(&crlf).unwrap();
    assert_eq!(ascii.positions, vec![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    assert_eq!(ascii.colors[1], [0.0, 0.6, 1.0]);

    let crafted = dir.join("crafted.ply");
    std::fs::write(
        &crafted,
        "ply\nformat binary_little_endian 1.0\nelement vertex 4611686018427387904\n\
         property float x\nproperty float y\nproperty float z\nend_header\n\0\0\0\0",
    )
    .unwrap();
    match read_points_ply(&crafted) {
        Err(e @ Error::Format { .. }) => {
            let message = e.to_string();
            assert!(
                message.contains("crafted.ply") && message.contains("truncated"),
                "{message}"
            );
        }
        other => panic!("expected a format error, got {other:?}"),
    }
    let no_xyz = dir.join("no_xyz.ply");
    std::fs::write(
        &no_xyz,
        "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n1\n",
    )
    .unwrap();
    assert!(matches!(
        read_points_ply(&no_xyz),
        Err(Error::Format { .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

//! `render --depth --normals`: the depth and normal files of every rendered view, a median depth
//! that agrees with the ray tracer's exact depth of the built-in scene after a short training
//! run, and normals nearer its true surface normals than chance.

use super::*;
use wgsplat::data::builtin::{BuiltinOptions, cameras, scene};

/// Reads a `[H, W, 3]` float32 `.npy` file written by `render --depth`.
fn read_npy(path: &Path) -> (Vec<usize>, Vec<f32>) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..6], b"\x93NUMPY", "{}", path.display());
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    let shape = header
        .split("'shape': (")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap();
    let shape: Vec<usize> = shape
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let data = bytes[10 + header_len..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    (shape, data)
}

#[test]
fn render_writes_depth_and_normals_that_match_the_scenes_true_surfaces() {
    let dir = temp_dir("depth");
    let size = 48u32;
    let ply = shared_builtin_model_48();
    let out = dir.join("renders");
    expect_success(&wgsplat(&[
        "render",
        ply.to_str().unwrap(),
        "--builtin-resolution",
        &size.to_string(),
        "--depth",
        "--normals",
        "--out",
        out.to_str().unwrap(),
    ]));
    let (_, test_cameras) = cameras(&BuiltinOptions {
        resolution: size,
        ..BuiltinOptions::default()
    });
    let truth = scene();
    let mut errors = Vec::new();
    let mut angles = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".depth.npy"))
        .collect();
    names.sort();
    assert_eq!(
        names.len(),
        test_cameras.len(),
        "one depth file per test view: {names:?}"
    );
    for (name, camera) in names.iter().zip(&test_cameras) {
        let stem = name.trim_end_matches(".depth.npy");
        assert!(
            out.join(format!("{stem}.depth.png")).exists(),
            "{stem}.depth.png"
        );
        let (shape, data) = read_npy(&out.join(name));
        assert_eq!(shape, vec![size as usize, size as usize, 3], "{name}");
        assert!(
            out.join(format!("{stem}.normals.png")).exists(),
            "{stem}.normals.png"
        );
        let (shape, normals) = read_npy(&out.join(format!("{stem}.normals.npy")));
        assert_eq!(
            shape,
            vec![size as usize, size as usize, 3],
            "{stem}.normals.npy"
        );
        let origin = camera.position();
        let r = camera.rotation;
        for y in 0..size {
            for x in 0..size {
                let median = data[3 * (y * size + x) as usize + 1];
                let local = glam::Vec3::new(
                    (x as f32 + 0.5 - camera.cx) / camera.fx,
                    (y as f32 + 0.5 - camera.cy) / camera.fy,
                    1.0,
                );
                let world = glam::Mat3::from_cols_array_2d(&r) * local;
                let Some(hit) = truth.intersect(origin, world.normalize().to_array()) else {
                    continue;
                };
                // The ray tracer's distance along the unit ray, as camera z.
                let true_z = hit.t / world.length();
                if median > 0.0 {
                    errors.push((median - true_z).abs());
                }
                // The rendered normal, from camera to world space, against the true one turned
                // towards the camera.
                let i = 3 * (y * size + x) as usize;
                let camera_normal = glam::Vec3::from_slice(&normals[i..i + 3]);
                if camera_normal.length() > 0.5 {
                    let rendered = glam::Mat3::from_cols_array_2d(&r) * camera_normal;
                    let mut true_normal = glam::Vec3::from(hit.normal);
                    if true_normal.dot(world) > 0.0 {
                        true_normal = -true_normal;
                    }
                    angles.push(
                        rendered
                            .dot(true_normal)
                            .clamp(-1.0, 1.0)
                            .acos()
                            .to_degrees(),
                    );
                }
            }
        }
    }
    assert!(
        errors.len() > 1000,
        "too few pixels with depth: {}",
        errors.len()
    );
    errors.sort_by(f32::total_cmp);
    let median_error = errors[errors.len() / 2];
    eprintln!(
        "median depth error {median_error} over {} pixels",
        errors.len()
    );
    // The cameras stand 4 units from the scene; measured after 150 iterations: 0.01.
    assert!(
        median_error < 0.05,
        "median depth error {median_error} (scene units)"
    );
    assert!(
        angles.len() > 1000,
        "too few pixels with a normal: {}",
        angles.len()
    );
    angles.sort_by(f32::total_cmp);
    let median_angle = angles[angles.len() / 2];
    eprintln!(
        "median normal error {median_angle}° over {} pixels",
        angles.len()
    );
    // Normals with no relation to the surface (uniform over the facing hemisphere) would be
    // 60° off at the median. Measured after 150 iterations without a flattening term: 19.4°.
    assert!(median_angle < 40.0, "median normal error {median_angle}°");
    let refused = expect_failure(&["eval", ply.to_str().unwrap(), "--depth"]);
    assert!(refused.contains("--depth"), "{refused}");
    let refused = expect_failure(&["eval", ply.to_str().unwrap(), "--normals"]);
    assert!(refused.contains("--normals"), "{refused}");
    std::fs::remove_dir_all(&dir).unwrap();
}

//! The built-in ray-traced scene: determinism, hand-checked pixels, the NeRF-folder round trip.

use super::*;

#[test]
fn builtin_scene_is_deterministic_and_sensible() {
    let options = builtin::BuiltinOptions::default();
    let start = std::time::Instant::now();
    let first = builtin::generate(&options).unwrap();
    eprintln!(
        "built-in scene generated in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    let second = builtin::generate(&options).unwrap();
    assert_eq!(first, second, "two generations differ");
    assert_eq!((first.train.len(), first.test.len()), (48, 8));
    for view in first.views() {
        let alpha = view.alpha();
        let covered = alpha.iter().filter(|&&a| a > 0.0).count();
        assert!(
            covered > alpha.len() / 10 && covered < alpha.len(),
            "{}: {covered} covered pixels",
            view.name
        );
        assert!(alpha.contains(&0.0) && alpha.contains(&1.0));
        let d = view
            .camera
            .position()
            .iter()
            .zip(builtin::LOOK_AT)
            .map(|(p, t)| (p - t) * (p - t))
            .sum::<f32>()
            .sqrt();
        assert!((d - builtin::CAMERA_DISTANCE).abs() < 1e-4);
    }
    let points = first.points.as_ref().unwrap();
    assert_eq!(points.len(), options.points);
    for (p, c) in points.positions.iter().zip(&points.colors) {
        assert!(
            p[0].abs() <= 1.0 + 1e-5
                && p[1].abs() <= 1.0 + 1e-5
                && p[2] >= -0.1 - 1e-5
                && p[2] <= 1.0 + 1e-5,
            "{p:?}"
        );
        assert!(c.iter().all(|v| (0.0..=1.0).contains(v)));
    }
    // Every point projects onto a covered pixel of some training view.
    let on_object = points
        .positions
        .iter()
        .filter(|&&p| {
            first.train.iter().any(|v| {
                let q = v.camera.to_camera(p);
                let (u, w) = (
                    v.camera.fx * q[0] / q[2] + v.camera.cx,
                    v.camera.fy * q[1] / q[2] + v.camera.cy,
                );
                let (x, y) = (u.floor() as i64, w.floor() as i64);
                (0..v.camera.width as i64).contains(&x)
                    && (0..v.camera.height as i64).contains(&y)
                    && v.image.pixel(x as u32, y as u32)[3] > 0
            })
        })
        .count();
    assert_eq!(on_object, points.len());
    assert!(
        first.extent > builtin::CAMERA_DISTANCE * 0.5
            && first.extent < builtin::CAMERA_DISTANCE * 2.2
    );
}

#[test]
fn raytracer_hand_checked_pixels() {
    let scene = builtin::scene();
    // Straight down from (0, 0, 4), odd size so the centre pixel is centred on the axis.
    let size = 129;
    let fx = builtin::focal_length(size);
    let camera = builtin::look_at(
        [0.0, 0.0, 4.0],
        [0.0; 3],
        [0.0, 1.0, 0.0],
        size,
        size,
        fx,
        [0.0; 3],
    );
    let image = scene.render(&camera);
    let light = 0.3 + 0.7 * (1.0 / 1.34f32.sqrt()); // ambient + diffuse with n = +z, l = (0.5, 0.3, 1) / |.|
    let expect = |albedo: [f32; 3]| {
        [albedo[0] * light, albedo[1] * light, albedo[2] * light, 1.0]
            .map(|v| (v * 255.0).round() as i32)
    };
    let check = |x: u32, y: u32, expected: [i32; 4], what: &str| {
        let got = image.pixel(x, y).map(i32::from);
        assert!(
            got.iter().zip(&expected).all(|(g, e)| (g - e).abs() <= 2),
            "{what}: pixel ({x},{y}) {got:?} vs {expected:?}"
        );
    };
    // Centre: the top of the striped sphere, z = 1.0 -> band floor(1.0 / 0.18) = 5, odd: yellow.
    check(64, 64, expect([0.95, 0.85, 0.3]), "sphere top");
    // Platform at world (0.8, 0.8, 0): camera (0.8, -0.8, 4); checker cells floor(3.2 + 0.25) = 3 twice
    // and 0 in z: even sum -> light cell, lit (nothing towards the light).
    let (u, v) = (camera.cx + fx * 0.8 / 4.0, camera.cy - fx * 0.8 / 4.0);
    check(u as u32, v as u32, expect([0.9, 0.9, 0.85]), "platform");
    // The corner looks past the platform: transparent.
    assert_eq!(image.pixel(0, 0), [0, 0, 0, 0]);
    // A point of the platform in the shadow of the big sphere gets ambient light only.
    let shaded = scene.radiance(0, [-0.25, -0.15, 0.0], [0.0, 0.0, 1.0]);
    for (s, a) in shaded.iter().zip([0.9, 0.9, 0.85]) {
        assert!((s - 0.3 * a).abs() < 1e-6, "{shaded:?}");
    }
    // Half-covered pixels: the platform's edge seen from above gives alpha in between.
    // x = 1.0 at depth 4 lies at u = 109.3: one of the four samples (dx = 0.125) is left of it.
    let edge_u = camera.cx + fx * 1.0 / 4.0;
    assert!((edge_u.fract() - 0.3).abs() < 0.05, "edge at {edge_u}");
    let edge = image.pixel(edge_u.floor() as u32, 64)[3];
    let below = PIXEL_SAMPLES
        .iter()
        .filter(|s| s[0] < edge_u.fract())
        .count() as f32;
    assert_eq!(edge as f32, (255.0 * below / 4.0).round(), "edge alpha");
}

#[test]
fn builtin_round_trips_through_nerf_folder() {
    let options = builtin::BuiltinOptions {
        resolution: 32,
        train_views: 5,
        test_views: 2,
        points: 300,
        ..Default::default()
    };
    let dataset = builtin::generate(&options).unwrap();
    let dir = TempDir::new("builtin");
    builtin::write_nerf_synthetic(&dataset, &dir.0).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind");
    let loaded = Dataset::load(&dir.0, &LoadOptions::default()).unwrap();
    assert_eq!((loaded.train.len(), loaded.test.len()), (5, 2));
    for (a, b) in dataset.views().zip(loaded.views()) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.image, b.image, "{}", a.name);
        assert_cameras_close(&a.camera, &b.camera, 1e-5, &a.name);
    }
    let (p, q) = (
        dataset.points.as_ref().unwrap(),
        loaded.points.as_ref().unwrap(),
    );
    assert_eq!(p.positions, q.positions);
    assert!(
        p.colors
            .iter()
            .flatten()
            .zip(q.colors.iter().flatten())
            .all(|(a, b)| (a - b).abs() <= 0.5 / 255.0 + 1e-6)
    );
}

/// Writes the default built-in scene to /tmp/builtin_scene for a look (`-- --ignored dump`).
#[test]
#[ignore]
fn dump_builtin_for_inspection() {
    let dataset = builtin::generate(&builtin::BuiltinOptions::default()).unwrap();
    builtin::write_nerf_synthetic(&dataset, Path::new("/tmp/builtin_scene")).unwrap();
}

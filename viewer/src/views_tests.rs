//! Snapping to a dataset camera draws through its lens, so the render lines up with the
//! training image; the lens stays while the view moves, until another camera or reset.

use super::*;
use wgsplat::splat::CameraLens;

/// A fisheye dataset camera (`test:0`, off-centre principal point, its own distortion) and a
/// pinhole one (`train:0`).
fn views() -> DatasetViews {
    let mut fisheye = Camera::facing_origin(48, 32, 3.0, [0.0; 3]);
    fisheye.lens = CameraLens::fisheye([0.05, -0.01, 0.0, 0.0], [0.0; 2], [0.0; 2]);
    (fisheye.fx, fisheye.fy, fisheye.cx) = (14.0, 14.5, 23.0);
    let pinhole = Camera::facing_origin(48, 32, 4.0, [0.0; 3]);
    let view = |label: &str, camera: Camera| DatasetView {
        label: label.into(),
        image: RgbaImage {
            width: camera.width,
            height: camera.height,
            pixels: vec![128; (camera.width * camera.height * 4) as usize],
        },
        camera,
    };
    DatasetViews {
        views: vec![view("test:0", fisheye), view("train:0", pinhole)],
        ..DatasetViews::default()
    }
}

#[test]
fn a_snapped_fisheye_view_draws_through_its_lens_until_another_is_picked() {
    let views = views();
    let fisheye = &views.views[0].camera;
    let mut panel = ViewPanel::default();
    let mut camera = ViewCamera::looking_at([0.0; 3], 1.0);
    panel.snap(&views, 0, &mut camera, true);
    // 1:1: the dataset camera itself, lens and all, and the images compare.
    let drawn = camera.camera(48, 32, [0.0; 3]);
    assert_eq!(&drawn, fisheye);
    assert!(panel.comparison_view(&views, &camera).is_some());
    // At the panel's size, and after an orbit, still through the fisheye (at the view's field
    // of view: the dataset camera's fy at its height).
    let wide = camera.camera(96, 64, [0.0; 3]);
    assert_eq!(wide.lens, fisheye.lens);
    assert!((wide.fy - 2.0 * fisheye.fy).abs() < 1e-3, "{wide:?}");
    camera.orbit(egui::vec2(30.0, 10.0));
    assert_eq!(camera.camera(48, 32, [0.0; 3]).lens, fisheye.lens);
    assert!(panel.comparison_view(&views, &camera).is_none());
    // The toggle draws a pinhole of the same focal length.
    camera.through_lens = false;
    let plain = camera.camera(48, 32, [0.0; 3]);
    assert!(plain.lens.is_pinhole());
    assert!((plain.fy - fisheye.fy).abs() < 1e-3, "{plain:?}");
    // Another view brings its own lens (here none), and reset the first view's.
    panel.snap(&views, 1, &mut camera, true);
    assert!(camera.camera(48, 32, [0.0; 3]).lens.is_pinhole());
    camera = views.default_camera();
    assert_eq!(camera.camera(48, 32, [0.0; 3]).lens, fisheye.lens);
}

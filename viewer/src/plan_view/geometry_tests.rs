//! Tests of the plan overlay's geometry: cell outlines, extents, clipping and projection.

use super::geometry::*;
use eframe::egui::vec2;
use eframe::egui::{Pos2, Rect, pos2};
use wgsplat::plan::{Cell, GroundFrame};
use wgsplat::splat::Camera;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-4 + 1e-4 * b.abs()
}

/// A tilted ground frame away from the origin, so axis mix-ups show.
fn tilted_frame() -> GroundFrame {
    let s = std::f64::consts::FRAC_1_SQRT_2;
    GroundFrame {
        origin: [2.0, -1.0, 0.5],
        u: [s, s, 0.0],
        v: [-0.5, 0.5, -s],
        up: [-0.5, 0.5, s],
    }
}

#[test]
fn unbounded_sides_are_cut_at_the_extent_and_corners_lie_on_the_ground() {
    let frame = tilted_frame();
    let extent = GroundRect {
        u_min: -5.0,
        u_max: 5.0,
        v_min: -4.0,
        v_max: 6.0,
    };
    let cell = Cell {
        u_min: Some(1.0),
        u_max: None,
        v_min: None,
        v_max: Some(2.5),
    };
    let outline = cell_outline(&frame, &cell, &extent);
    assert_eq!(
        outline.rect,
        GroundRect {
            u_min: 1.0,
            u_max: 5.0,
            v_min: -4.0,
            v_max: 2.5
        }
    );
    let bounded: Vec<bool> = outline.edges.iter().map(|e| e.bounded).collect();
    assert_eq!(bounded, [false, false, true, true]);
    let expected_corners = [[1.0, -4.0], [5.0, -4.0], [5.0, 2.5], [1.0, 2.5]];
    for (k, edge) in outline.edges.iter().enumerate() {
        // Each side starts where the previous one ends: a closed loop.
        assert_eq!(edge.ends[0], outline.edges[(k + 3) % 4].ends[1]);
        let p = edge.ends[0];
        let d: Vec<f64> = (0..3).map(|i| f64::from(p[i]) - frame.origin[i]).collect();
        let height: f64 = (0..3).map(|i| d[i] * frame.up[i]).sum();
        assert!(
            height.abs() < 1e-5,
            "corner {p:?} is {height} off the ground"
        );
        let [u, v] = frame.ground(p);
        let [eu, ev] = expected_corners[k];
        assert!(close(u, eu) && close(v, ev), "corner {k}: ({u}, {v})");
    }

    // A cell wholly beyond the extent keeps its bounded side; the cut side never crosses it.
    let far = Cell {
        u_min: Some(7.0),
        ..Cell::default()
    };
    let rect = cell_outline(&frame, &far, &extent).rect;
    assert_eq!((rect.u_min, rect.u_max), (7.0, 7.0));
    assert_eq!((rect.v_min, rect.v_max), (-4.0, 6.0));

    // A fully bounded cell is drawn as it is, even where it reaches past the extent.
    let inner = Cell {
        u_min: Some(-6.0),
        u_max: Some(0.0),
        v_min: Some(0.0),
        v_max: Some(1.0),
    };
    let outline = cell_outline(&frame, &inner, &extent);
    assert_eq!(outline.rect.u_min, -6.0);
    assert!(outline.edges.iter().all(|e| e.bounded));
}

#[test]
fn the_extent_grows_around_the_points() {
    let frame = tilted_frame();
    let points = [[0.0, 0.0, 0.0], [3.0, 1.0, 0.0], [2.0, -2.0, 1.0]];
    let rect = GroundRect::around(&frame, points, 0.1).expect("points");
    let grounds: Vec<[f64; 2]> = points.iter().map(|p| frame.ground(*p)).collect();
    let (lo_u, hi_u) = grounds
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), g| (a.min(g[0]), b.max(g[0])));
    let (lo_v, hi_v) = grounds
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), g| (a.min(g[1]), b.max(g[1])));
    let grow = 0.1 * (hi_u - lo_u).max(hi_v - lo_v).max(1.0);
    assert!(close(rect.u_min, lo_u - grow) && close(rect.u_max, hi_u + grow));
    assert!(close(rect.v_min, lo_v - grow) && close(rect.v_max, hi_v + grow));
    assert!(GroundRect::around(&frame, [], 0.1).is_none());
}

#[test]
fn near_clipping_cuts_where_the_segment_crosses_the_plane() {
    let a = [1.0, 2.0, -1.0];
    let b = [3.0, -2.0, 3.0];
    // z = 0.5 is reached at t = 1.5 / 4 from a.
    let t = 1.5 / 4.0;
    let cut = [1.0 + 2.0 * t, 2.0 - 4.0 * t, 0.5];
    assert_eq!(clip_near(a, b, 0.5), Some([cut, b]));
    assert_eq!(clip_near(b, a, 0.5), Some([b, cut]));
    assert_eq!(clip_near(b, b, 0.5), Some([b, b]));
    assert_eq!(clip_near(a, [0.0, 0.0, 0.4], 0.5), None);
}

#[test]
fn screen_clipping_keeps_the_part_inside() {
    let rect = Rect::from_min_max(pos2(0.0, 0.0), pos2(100.0, 50.0));
    let [p, q] = clip_to_rect(pos2(-50.0, 25.0), pos2(150.0, 25.0), rect).expect("crosses");
    assert_eq!((p, q), (pos2(0.0, 25.0), pos2(100.0, 25.0)));
    let [p, q] = clip_to_rect(pos2(50.0, -50.0), pos2(50.0, 10.0), rect).expect("enters");
    assert_eq!((p, q), (pos2(50.0, 0.0), pos2(50.0, 10.0)));
    // A diagonal: from (-10, -10) to (110, 50) is inside for x in 0..100 and y in 0..50.
    let [p, q] = clip_to_rect(pos2(-10.0, -10.0), pos2(110.0, 50.0), rect).expect("crosses");
    assert!((p - pos2(10.0, 0.0)).length() < 1e-4, "{p:?}");
    assert!((q - pos2(100.0, 45.0)).length() < 1e-4, "{q:?}");
    assert_eq!(
        clip_to_rect(pos2(-5.0, -5.0), pos2(200.0, -1.0), rect),
        None
    );
    assert_eq!(clip_to_rect(pos2(10.0, 60.0), pos2(90.0, 60.0), rect), None);
}

/// Twice the signed area of a screen polygon (shoelace).
fn area2(polygon: &[Pos2]) -> f32 {
    (0..polygon.len())
        .map(|k| {
            let (a, b) = (polygon[k], polygon[(k + 1) % polygon.len()]);
            a.x * b.y - b.x * a.y
        })
        .sum()
}

#[test]
fn polygons_are_cut_at_the_near_plane_and_the_image() {
    let square = [
        pos2(-10.0, -10.0),
        pos2(60.0, -10.0),
        pos2(60.0, 30.0),
        pos2(-10.0, 30.0),
    ];
    // Keep x >= 0: the square loses its left 10 units.
    let cut = clip_polygon(&square, |p| p.x, |a, b, t| a + (b - a) * t);
    assert_eq!(cut.len(), 4, "{cut:?}");
    assert!(
        (area2(&cut).abs() - 2.0 * 60.0 * 40.0).abs() < 1e-2,
        "{cut:?}"
    );
    assert!(cut.iter().all(|p| p.x >= -1e-5));
    // A corner cut off: a pentagon.
    let cut = clip_polygon(&square, |p| 70.0 - p.x - p.y, |a, b, t| a + (b - a) * t);
    assert_eq!(cut.len(), 5, "{cut:?}");
    assert!(clip_polygon(&square, |p| p.x - 100.0, |a, b, t| a + (b - a) * t).is_empty());

    // A ground square around a camera standing on it: the part behind is cut away, what is
    // left lies in the image (grown by the clip margin) and below the horizon.
    let camera = crate::scene::ViewCamera {
        eye: [0.0, 0.0, 1.0],
        axes: [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]],
        distance: 1.0,
        up: [0.0, 0.0, 1.0],
        fov_y_degrees: 60.0,
        exact: None,
        lens: wgsplat::splat::CameraLens::PINHOLE,
        through_lens: true,
    }
    .camera(64, 48, [0.0; 3]);
    let rect = Rect::from_min_size(pos2(0.0, 0.0), vec2(64.0, 48.0));
    let projector = Projector::new(&camera, rect);
    let ground = [
        [-5.0, -5.0, 0.0],
        [5.0, -5.0, 0.0],
        [5.0, 5.0, 0.0],
        [-5.0, 5.0, 0.0],
    ];
    let shown = projector.polygon(&ground);
    assert!(shown.len() >= 3, "{shown:?}");
    for p in &shown {
        assert!(rect.expand(16.01).contains(*p), "{p:?}");
        assert!(p.y >= 24.0 - 1e-3, "{p:?} is above the horizon");
    }
    // The far edge (y = 5, seen at depth 5, 1 below the eye) is the top of what shows.
    let far = projector.point([0.0, 5.0, 0.0]).expect("in front");
    let top = shown.iter().map(|p| p.y).fold(f32::MAX, f32::min);
    assert!((top - far.y).abs() < 1e-3, "{top} vs {far:?}");
    assert!(
        projector
            .polygon(&ground.map(|p| [p[0], p[1] - 20.0, p[2]]))
            .is_empty()
    );
}

#[test]
fn projection_matches_the_pinhole_and_handles_points_behind() {
    // 64 x 48 pixels drawn at half size, at (100, 200) on screen; the camera sits at z = -4
    // looking along +z.
    let camera = Camera::facing_origin(64, 48, 4.0, [0.0; 3]);
    let rect = Rect::from_min_size(pos2(100.0, 200.0), vec2(32.0, 24.0));
    let projector = Projector::new(&camera, rect);
    let pixel = |p: [f32; 3]| {
        let z = p[2] + 4.0;
        let x = camera.fx * p[0] / z + camera.cx;
        let y = camera.fy * p[1] / z + camera.cy;
        pos2(100.0 + 0.5 * x, 200.0 + 0.5 * y)
    };
    let on = projector.point([0.0; 3]).expect("in front");
    assert!((on - rect.center()).length() < 1e-4, "{on:?}");
    let p = [0.3, -0.2, 1.0];
    let on = projector.point(p).expect("in front");
    assert!((on - pixel(p)).length() < 1e-3, "{on:?} vs {:?}", pixel(p));
    assert_eq!(projector.point([0.0, 0.0, -5.0]), None, "behind the camera");

    // A segment from in front to behind: it starts where its front end projects and runs
    // on (away from the centre) until the image's border, never flipping through the eye.
    let front = [0.2, 0.1, 0.0];
    let behind = [1.0, 0.5, -8.0];
    let [s, e] = projector.segment(front, behind).expect("visible");
    assert!((s - pixel(front)).length() < 1e-3, "{s:?}");
    let outward = pixel(front) - rect.center();
    assert!(
        (e - rect.center()).dot(outward) > outward.length_sq(),
        "the cut end {e:?} must lie beyond {:?}",
        pixel(front)
    );
    assert!(rect.expand(16.01).contains(e), "{e:?} is cut to the border");
    assert_eq!(
        projector.segment([0.0, 0.0, -5.0], [1.0, 1.0, -6.0]),
        None,
        "wholly behind"
    );
}

/// Overlays drawn over a view through a lens land where the lens puts the points: a fisheye's
/// edge sits nearer the centre than the pinhole's.
#[test]
fn projection_goes_through_the_cameras_lens() {
    let mut camera = Camera::facing_origin(64, 48, 4.0, [0.0; 3]);
    camera.lens = wgsplat::splat::CameraLens::fisheye([0.0; 4], [0.0; 2], [0.0; 2]);
    let rect = Rect::from_min_size(pos2(0.0, 0.0), vec2(64.0, 48.0));
    let projector = Projector::new(&camera, rect);
    let p = [2.0f32, -1.0, 0.0];
    let on = projector.point(p).expect("in front");
    let c = camera.to_camera(p).map(f64::from);
    let theta = c[0].hypot(c[1]).atan2(c[2]);
    let r = f64::from(camera.fx) * theta;
    let scale = r / c[0].hypot(c[1]);
    let want = pos2(
        (f64::from(camera.cx) + scale * c[0]) as f32,
        (f64::from(camera.cy) + scale * c[1]) as f32,
    );
    assert!((on - want).length() < 1e-3, "{on:?} vs {want:?}");
    let pinhole = camera.fx * 2.0 / 4.0 + camera.cx;
    assert!(
        on.x < pinhole - 1.0,
        "{on:?} against the pinhole's x {pinhole}"
    );
}

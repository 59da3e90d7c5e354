//! The maths of the plan overlay: a block cell's outline on the ground plane (unbounded sides cut
//! at the scene's extent), and projecting world points and segments into the scene image with the
//! viewer's camera (segments clipped at the near plane and at the image's borders).

use eframe::egui::{Pos2, Rect, pos2};
use wgsplat::plan::{Cell, GroundFrame};
use wgsplat::splat::Camera;

/// A rectangle on the ground, `[u_min, u_max] × [v_min, v_max]`, every side finite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroundRect {
    /// Lower bound on `u`.
    pub u_min: f64,
    /// Upper bound on `u`.
    pub u_max: f64,
    /// Lower bound on `v`.
    pub v_min: f64,
    /// Upper bound on `v`.
    pub v_max: f64,
}

impl GroundRect {
    /// The smallest rectangle holding the ground coordinates of `points`, grown by `pad` times
    /// its larger side on every side (and to at least `pad` wide); `None` without points.
    pub fn around(
        frame: &GroundFrame,
        points: impl IntoIterator<Item = [f32; 3]>,
        pad: f64,
    ) -> Option<GroundRect> {
        let mut rect: Option<GroundRect> = None;
        for p in points {
            let [u, v] = frame.ground(p);
            if !(u.is_finite() && v.is_finite()) {
                continue;
            }
            let r = rect.get_or_insert(GroundRect {
                u_min: u,
                u_max: u,
                v_min: v,
                v_max: v,
            });
            r.u_min = r.u_min.min(u);
            r.u_max = r.u_max.max(u);
            r.v_min = r.v_min.min(v);
            r.v_max = r.v_max.max(v);
        }
        rect.map(|r| {
            let grow = pad * (r.u_max - r.u_min).max(r.v_max - r.v_min).max(1.0);
            GroundRect {
                u_min: r.u_min - grow,
                u_max: r.u_max + grow,
                v_min: r.v_min - grow,
                v_max: r.v_max + grow,
            }
        })
    }

    /// The centre `(u, v)`.
    pub fn center(&self) -> [f64; 2] {
        [
            0.5 * (self.u_min + self.u_max),
            0.5 * (self.v_min + self.v_max),
        ]
    }
}

/// One side of a drawn cell outline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Edge {
    /// Its two corners, world space.
    pub ends: [[f32; 3]; 2],
    /// False when the side stands for an unbounded side of the cell, cut at the scene's extent.
    pub bounded: bool,
}

/// A cell's outline as drawn: the cell with each unbounded side replaced by the extent's side
/// (never crossing the cell's opposite, bounded side), its four corners on the ground plane.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outline {
    /// The finite rectangle drawn.
    pub rect: GroundRect,
    /// The sides, in order: `v = v_min`, `u = u_max`, `v = v_max`, `u = u_min`.
    pub edges: [Edge; 4],
}

/// The world point at ground coordinates `(u, v)` on the ground plane.
pub fn ground_point(frame: &GroundFrame, [u, v]: [f64; 2]) -> [f32; 3] {
    [0, 1, 2].map(|k| (frame.origin[k] + u * frame.u[k] + v * frame.v[k]) as f32)
}

/// The outline of `cell`, its unbounded sides cut at `extent`.
pub fn cell_outline(frame: &GroundFrame, cell: &Cell, extent: &GroundRect) -> Outline {
    let lower = |bound: Option<f64>, extent_side: f64, upper: Option<f64>| {
        bound.unwrap_or_else(|| upper.map_or(extent_side, |u| extent_side.min(u)))
    };
    let upper = |bound: Option<f64>, extent_side: f64, lower: Option<f64>| {
        bound.unwrap_or_else(|| lower.map_or(extent_side, |l| extent_side.max(l)))
    };
    let rect = GroundRect {
        u_min: lower(cell.u_min, extent.u_min, cell.u_max),
        u_max: upper(cell.u_max, extent.u_max, cell.u_min),
        v_min: lower(cell.v_min, extent.v_min, cell.v_max),
        v_max: upper(cell.v_max, extent.v_max, cell.v_min),
    };
    let corner = |u: f64, v: f64| ground_point(frame, [u, v]);
    let corners = [
        corner(rect.u_min, rect.v_min),
        corner(rect.u_max, rect.v_min),
        corner(rect.u_max, rect.v_max),
        corner(rect.u_min, rect.v_max),
    ];
    let bounded = [
        cell.v_min.is_some(),
        cell.u_max.is_some(),
        cell.v_max.is_some(),
        cell.u_min.is_some(),
    ];
    let edges = [0, 1, 2, 3].map(|k| Edge {
        ends: [corners[k], corners[(k + 1) % 4]],
        bounded: bounded[k],
    });
    Outline { rect, edges }
}

/// Projects world geometry into the scene image as egui draws it.
pub struct Projector<'a> {
    camera: &'a Camera,
    /// Where the camera's image is drawn on screen.
    rect: Rect,
    /// The near plane segments are cut at (camera space `z`).
    near: f32,
    /// Screen rectangle segments are cut to (the image grown by a margin).
    clip: Rect,
}

impl<'a> Projector<'a> {
    /// A projector for `camera`'s image drawn in `rect`.
    pub fn new(camera: &'a Camera, rect: Rect) -> Projector<'a> {
        Projector {
            camera,
            rect,
            near: camera.near.max(1e-4),
            clip: rect.expand(16.0),
        }
    }

    /// A camera-space point in front of the near plane, on screen.
    fn screen(&self, c: [f32; 3]) -> Pos2 {
        let cam = self.camera;
        let x = (cam.fx * c[0] / c[2] + cam.cx) / cam.width.max(1) as f32;
        let y = (cam.fy * c[1] / c[2] + cam.cy) / cam.height.max(1) as f32;
        pos2(
            self.rect.min.x + x * self.rect.width(),
            self.rect.min.y + y * self.rect.height(),
        )
    }

    /// Where world point `p` appears, or `None` behind the near plane.
    pub fn point(&self, p: [f32; 3]) -> Option<Pos2> {
        let c = self.camera.to_camera(p);
        (c[2] >= self.near).then(|| self.screen(c))
    }

    /// The visible part of the flat, convex world polygon `corners` on screen (convex too): cut
    /// at the near plane and at the image's borders; empty when nothing of it shows.
    pub fn polygon(&self, corners: &[[f32; 3]]) -> Vec<Pos2> {
        let in_camera: Vec<[f32; 3]> = corners.iter().map(|p| self.camera.to_camera(*p)).collect();
        let near = self.near;
        let in_front = clip_polygon(
            &in_camera,
            |c| c[2] - near,
            |a, b, t| [0, 1, 2].map(|k| a[k] + t * (b[k] - a[k])),
        );
        let mut on_screen: Vec<Pos2> = in_front.iter().map(|c| self.screen(*c)).collect();
        let r = self.clip;
        let sides: [&dyn Fn(Pos2) -> f32; 4] = [
            &|p| p.x - r.min.x,
            &|p| r.max.x - p.x,
            &|p| p.y - r.min.y,
            &|p| r.max.y - p.y,
        ];
        for inside in sides {
            on_screen = clip_polygon(&on_screen, inside, |a, b, t| a + (b - a) * t);
        }
        on_screen
    }

    /// The visible part of the world segment `a`–`b` on screen: cut where it passes behind the
    /// near plane and at the image's borders; `None` when nothing of it shows.
    pub fn segment(&self, a: [f32; 3], b: [f32; 3]) -> Option<[Pos2; 2]> {
        let [a, b] = clip_near(
            self.camera.to_camera(a),
            self.camera.to_camera(b),
            self.near,
        )?;
        clip_to_rect(self.screen(a), self.screen(b), self.clip)
    }
}

/// The part of the camera-space segment `a`–`b` with `z >= near`.
pub fn clip_near(a: [f32; 3], b: [f32; 3], near: f32) -> Option<[[f32; 3]; 2]> {
    let (a_in, b_in) = (a[2] >= near, b[2] >= near);
    let cut = |from: [f32; 3], to: [f32; 3]| {
        let t = (near - from[2]) / (to[2] - from[2]);
        [
            from[0] + t * (to[0] - from[0]),
            from[1] + t * (to[1] - from[1]),
            near,
        ]
    };
    match (a_in, b_in) {
        (true, true) => Some([a, b]),
        (false, false) => None,
        (true, false) => Some([a, cut(a, b)]),
        (false, true) => Some([cut(b, a), b]),
    }
}

/// The part of `polygon` where `inside` is not negative (Sutherland–Hodgman against one
/// half-space); `lerp(a, b, t)` is the point a fraction `t` of the way from `a` to `b`.
pub fn clip_polygon<T: Copy>(
    polygon: &[T],
    inside: impl Fn(T) -> f32,
    lerp: impl Fn(T, T, f32) -> T,
) -> Vec<T> {
    let mut kept = Vec::with_capacity(polygon.len() + 2);
    for (k, &b) in polygon.iter().enumerate() {
        let a = polygon[(k + polygon.len() - 1) % polygon.len()];
        let (da, db) = (inside(a), inside(b));
        if (da >= 0.0) != (db >= 0.0) {
            kept.push(lerp(a, b, da / (da - db)));
        }
        if db >= 0.0 {
            kept.push(b);
        }
    }
    kept
}

/// The part of the screen segment `a`–`b` inside `rect` (Liang–Barsky), or `None`.
pub fn clip_to_rect(a: Pos2, b: Pos2, rect: Rect) -> Option<[Pos2; 2]> {
    let d = b - a;
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    // Each side as (p, q): the segment stays inside where t * p <= q.
    let sides = [
        (-d.x, a.x - rect.min.x),
        (d.x, rect.max.x - a.x),
        (-d.y, a.y - rect.min.y),
        (d.y, rect.max.y - a.y),
    ];
    for (p, q) in sides {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    (t0 <= t1 && t0.is_finite() && t1.is_finite()).then(|| [a + d * t0, a + d * t1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use eframe::egui::vec2;

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
        assert!(projector.clip.contains(e), "{e:?} is cut to the border");
        assert_eq!(
            projector.segment([0.0, 0.0, -5.0], [1.0, 1.0, -6.0]),
            None,
            "wholly behind"
        );
    }
}

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

    /// A camera-space point in front of the near plane, on screen (through the camera's lens
    /// where it sees the point; a segment's ends are placed so, the line between them straight).
    fn screen(&self, c: [f32; 3]) -> Pos2 {
        let cam = self.camera;
        let through_lens = (!cam.lens.is_pinhole())
            .then(|| {
                let focal = [cam.fx, cam.fy].map(f64::from);
                let principal = [cam.cx, cam.cy].map(f64::from);
                cam.lens.project(focal, principal, c.map(f64::from))
            })
            .flatten()
            .map(|projected| projected.pixel.map(|v| v as f32));
        let [px, py] =
            through_lens.unwrap_or([cam.fx * c[0] / c[2] + cam.cx, cam.fy * c[1] / c[2] + cam.cy]);
        let x = px / cam.width.max(1) as f32;
        let y = py / cam.height.max(1) as f32;
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

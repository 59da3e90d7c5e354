//! The CPU twin of [`super::geometry::record_geometry_loss`], in f64, written from the
//! definitions in [`super::geometry`]: the two terms and their gradients with respect to the
//! moments and normals images. The tests compare the kernel with it, and it with central
//! differences of its own loss.

use super::geometry::GeometryLossOptions;

/// The two terms of one view and their gradients.
pub struct CpuGeometryLoss {
    /// λ_n / P · Σ A (1 − N·n) over the pixels with a normal term.
    pub normal: f64,
    /// λ_d / (P s²) · Σ (A S2 − S1²).
    pub distortion: f64,
    /// Gradient with respect to the moments image, `[H, W, 4]`.
    pub v_moments: Vec<f64>,
    /// Gradient with respect to the normals image, `[H, W, 4]`.
    pub v_normals: Vec<f64>,
}

type V3 = [f64; 3];

fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn scale(a: V3, s: f64) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}

/// One view's images: `[H, W, 4]` each, row-major.
pub struct GeometryImages<'a> {
    /// Image height.
    pub height: usize,
    /// Image width.
    pub width: usize,
    /// S1, S2, A and alpha per pixel.
    pub moments: &'a [f64],
    /// The alpha-weighted normal and alpha per pixel.
    pub normals: &'a [f64],
    /// The pixel rays and their validity (see `shaders/geometry_loss.wgsl`).
    pub rays: &'a [f64],
    /// The normal term's pixel weights; `None` takes each pixel's A.
    pub weights: Option<&'a [f64]>,
}

/// A pixel's normal term (see `normal_term` in `shaders/geometry_loss.wgsl`).
struct Term {
    loss: f64,
    v_normal: V3,
    v_dx: V3,
    v_dy: V3,
}

impl GeometryImages<'_> {
    fn point(&self, x: i64, y: i64, min_alpha: f64) -> Option<V3> {
        if x < 0 || y < 0 || x >= self.width as i64 || y >= self.height as i64 {
            return None;
        }
        let i = y as usize * self.width + x as usize;
        let a = self.moments[4 * i + 2];
        let ray = &self.rays[4 * i..4 * i + 4];
        if ray[3] == 0.0 || a < min_alpha {
            return None;
        }
        let d = self.moments[4 * i] / a;
        Some([d * ray[0], d * ray[1], d * ray[2]])
    }

    fn term(&self, x: i64, y: i64, min_alpha: f64) -> Option<Term> {
        let centre = self.point(x, y, min_alpha)?;
        let left = self.point(x - 1, y, min_alpha)?;
        let right = self.point(x + 1, y, min_alpha)?;
        let up = self.point(x, y - 1, min_alpha)?;
        let down = self.point(x, y + 1, min_alpha)?;
        let (dx, dy) = (sub(right, left), sub(down, up));
        let n = cross(dx, dy);
        let len = dot(n, n).sqrt();
        if len <= 0.0 {
            return None;
        }
        let unit = scale(n, 1.0 / len);
        let turn = if dot(unit, centre) > 0.0 { -1.0 } else { 1.0 };
        let i = y as usize * self.width + x as usize;
        let rendered = [
            self.normals[4 * i],
            self.normals[4 * i + 1],
            self.normals[4 * i + 2],
        ];
        let weight = match self.weights {
            Some(w) => w[i],
            None => self.moments[4 * i + 2],
        };
        let v_unit = scale(rendered, -weight * turn);
        let v_n = scale(sub(v_unit, scale(unit, dot(unit, v_unit))), 1.0 / len);
        Some(Term {
            loss: weight * (1.0 - turn * dot(rendered, unit)),
            v_normal: scale(unit, -weight * turn),
            v_dx: cross(dy, v_n),
            v_dy: cross(v_n, dx),
        })
    }
}

/// Both terms of one view and their gradients, by the definitions in [`super::geometry`].
pub fn reference_geometry_loss(
    images: &GeometryImages,
    options: &GeometryLossOptions,
) -> CpuGeometryLoss {
    let (h, w) = (images.height, images.width);
    let pixels = (h * w) as f64;
    let s = f64::from(options.scale);
    let lambda_n = f64::from(options.normal_weight) / pixels;
    let lambda_d = f64::from(options.distortion_weight) / (pixels * s * s);
    let min_alpha = f64::from(options.min_alpha);
    let mut out = CpuGeometryLoss {
        normal: 0.0,
        distortion: 0.0,
        v_moments: vec![0.0; h * w * 4],
        v_normals: vec![0.0; h * w * 4],
    };
    let mut v_points = vec![[0.0; 3]; h * w];
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            let Some(t) = images.term(x, y, min_alpha) else {
                continue;
            };
            let i = y as usize * w + x as usize;
            out.normal += lambda_n * t.loss;
            for k in 0..3 {
                out.v_normals[4 * i + k] = lambda_n * t.v_normal[k];
            }
            // dx = right − left, dy = down − up.
            let at = |xx: i64, yy: i64| yy as usize * w + xx as usize;
            for (neighbour, v, sign) in [
                (at(x + 1, y), t.v_dx, 1.0),
                (at(x - 1, y), t.v_dx, -1.0),
                (at(x, y + 1), t.v_dy, 1.0),
                (at(x, y - 1), t.v_dy, -1.0),
            ] {
                for (slot, g) in v_points[neighbour].iter_mut().zip(v) {
                    *slot += sign * lambda_n * g;
                }
            }
        }
    }
    for (i, v_point) in v_points.iter().enumerate() {
        let m = &images.moments[4 * i..4 * i + 4];
        let (s1, s2, a) = (m[0], m[1], m[2]);
        let ray = [
            images.rays[4 * i],
            images.rays[4 * i + 1],
            images.rays[4 * i + 2],
        ];
        let v_depth = dot(*v_point, ray);
        let (mut v_s1, mut v_a) = (0.0, 0.0);
        if v_depth != 0.0 {
            v_s1 = v_depth / a;
            v_a = -v_depth * s1 / (a * a);
        }
        out.distortion += lambda_d * (a * s2 - s1 * s1);
        out.v_moments[4 * i] = v_s1 - 2.0 * lambda_d * s1;
        out.v_moments[4 * i + 1] = lambda_d * a;
        out.v_moments[4 * i + 2] = v_a + lambda_d * s2;
    }
    out
}

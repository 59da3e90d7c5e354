//! Camera lens models: every COLMAP camera model with a closed-form projection (and nerfstudio's
//! `OPENCV` / `OPENCV_FISHEYE`), their projection of a camera-space direction to a pixel and its
//! inverse.
//!
//! Conventions are COLMAP's (`src/colmap/sensor/models.h`), which are OpenCV's where the two share
//! a model: a direction `(X, Y, Z)` becomes the normalised point `(x, y) = (X/Z, Y/Z)`, the model
//! distorts it to `(xd, yd)` and the pixel is `(fx·xd + cx, fy·yd + cy)`, with the top-left pixel's
//! centre at (0.5, 0.5).
//! - **Perspective** models (`SIMPLE_RADIAL`, `RADIAL`, `OPENCV`, `FULL_OPENCV`): with `r² = x² + y²`,
//!   `xd = x·q + 2p1·xy + p2·(r² + 2x²)`, `yd = y·q + p1·(r² + 2y²) + 2p2·xy`, where
//!   `q = (1 + k1 r² + k2 r⁴ + k3 r⁶) / (1 + k4 r² + k5 r⁴ + k6 r⁶)` (OpenCV's rational model;
//!   the smaller models set the missing coefficients to 0).
//! - **Fisheye** models (`OPENCV_FISHEYE`, `SIMPLE_RADIAL_FISHEYE`, `RADIAL_FISHEYE`,
//!   `THIN_PRISM_FISHEYE`): the equidistant angle `θ = atan(r)` first, `(u, v) = (θ/r)·(x, y)`,
//!   then with `ρ² = u² + v²`: `xd = u·(1 + k1ρ² + k2ρ⁴ + k3ρ⁶ + k4ρ⁸) + 2p1·uv + p2·(ρ² + 2u²) +
//!   sx1·ρ²` and `yd` likewise with `p1·(ρ² + 2v²) + 2p2·uv + sy1·ρ²` (only `THIN_PRISM_FISHEYE`
//!   has the p and s terms).
//! - **FOV** (Devernay–Faugeras): `rd = atan(2r·tan(ω/2)) / ω`.
//!
//! The inverse ([`Lens::undistort`]) is Newton's method on the 2-D map (on `(u, v)` for the
//! fisheyes, which is then turned back into `(x, y)` with `tan θ`), converged to 1e-12.
//! [`Lens::ray`] and [`Lens::project_ray`] map a pixel to its unit direction and back, with a
//! fisheye's directions beyond 90° from the axis, which have no normalised point.

pub use super::camera_model::CameraModel;
use crate::splat::{Camera, CameraLens, LensKind};

/// The distortion part of a [`Lens`] (module docs give the formulas).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distortion {
    /// An ideal pinhole.
    None,
    /// Radial (rational, k1..k6) and tangential (p1, p2) distortion of the normalised point.
    Perspective {
        /// k1..k6 (k4..k6 divide).
        k: [f64; 6],
        /// p1, p2.
        p: [f64; 2],
    },
    /// Equidistant fisheye with radial k1..k4, tangential p1, p2 and thin-prism sx1, sy1 terms.
    Fisheye {
        /// k1..k4.
        k: [f64; 4],
        /// p1, p2.
        p: [f64; 2],
        /// sx1, sy1.
        s: [f64; 2],
    },
    /// The FOV model with field-of-view parameter ω (radians).
    Fov {
        /// ω.
        omega: f64,
    },
}

/// Intrinsics of one camera: its model, focal lengths, principal point and distortion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lens {
    /// The model the parameters came from.
    pub model: CameraModel,
    /// Focal length x in pixels.
    pub fx: f64,
    /// Focal length y in pixels.
    pub fy: f64,
    /// Principal point x (top-left pixel centre at 0.5).
    pub cx: f64,
    /// Principal point y.
    pub cy: f64,
    /// The distortion.
    pub distortion: Distortion,
}

/// Newton iterations allowed by [`Lens::undistort`].
const NEWTON_ITERATIONS: usize = 100;
/// Residual (normalised units) at which [`Lens::undistort`] stops, and the largest it accepts.
const NEWTON_TOLERANCE: f64 = 1e-12;
const NEWTON_ACCEPT: f64 = 1e-9;

impl Lens {
    /// An ideal pinhole.
    pub fn pinhole(fx: f64, fy: f64, cx: f64, cy: f64) -> Lens {
        Lens {
            model: CameraModel::Pinhole,
            fx,
            fy,
            cx,
            cy,
            distortion: Distortion::None,
        }
    }

    /// The lens of `model` with COLMAP's parameter list. The error says which parameter is wrong
    /// (count, non-finite value, non-positive focal length) or that the model is unsupported.
    pub fn from_params(model: CameraModel, params: &[f64]) -> Result<Lens, String> {
        let names = model.param_names();
        if params.len() != names.len() {
            return Err(format!(
                "the {} model has {} parameters ({}), but {} were given",
                model.name(),
                names.len(),
                names.join(", "),
                params.len()
            ));
        }
        if let Some(i) = params.iter().position(|v| !v.is_finite()) {
            return Err(format!(
                "parameter {} of the {} model is {}, not a finite number",
                names[i],
                model.name(),
                params[i]
            ));
        }
        let p = params;
        let (fx, fy, rest) = match names[1] {
            "fy" => (p[0], p[1], &p[2..]),
            _ => (p[0], p[0], &p[1..]),
        };
        for (name, f) in [(names[0], fx), (names[1], fy)] {
            if f <= 0.0 && name.starts_with('f') {
                return Err(format!(
                    "focal length {name} of the {} model is {}; it must be > 0",
                    model.name(),
                    super::compact_number(f)
                ));
            }
        }
        let (cx, cy, d) = (rest[0], rest[1], &rest[2..]);
        let distortion = match model {
            CameraModel::SimplePinhole | CameraModel::Pinhole => Distortion::None,
            CameraModel::SimpleRadial => perspective([d[0], 0.0, 0.0, 0.0, 0.0, 0.0], [0.0; 2]),
            CameraModel::Radial => perspective([d[0], d[1], 0.0, 0.0, 0.0, 0.0], [0.0; 2]),
            CameraModel::OpenCv => perspective([d[0], d[1], 0.0, 0.0, 0.0, 0.0], [d[2], d[3]]),
            CameraModel::FullOpenCv => {
                perspective([d[0], d[1], d[4], d[5], d[6], d[7]], [d[2], d[3]])
            }
            CameraModel::OpenCvFisheye => fisheye([d[0], d[1], d[2], d[3]], [0.0; 2], [0.0; 2]),
            CameraModel::SimpleRadialFisheye => fisheye([d[0], 0.0, 0.0, 0.0], [0.0; 2], [0.0; 2]),
            CameraModel::RadialFisheye => fisheye([d[0], d[1], 0.0, 0.0], [0.0; 2], [0.0; 2]),
            CameraModel::ThinPrismFisheye => {
                fisheye([d[0], d[1], d[4], d[5]], [d[2], d[3]], [d[6], d[7]])
            }
            CameraModel::Fov => {
                let omega = d[0];
                if !(0.0..std::f64::consts::PI).contains(&omega) {
                    return Err(format!(
                        "parameter omega of the FOV model is {}; it must be in [0, pi)",
                        super::compact_number(omega)
                    ));
                }
                if omega == 0.0 {
                    Distortion::None
                } else {
                    Distortion::Fov { omega }
                }
            }
            CameraModel::RadTanThinPrismFisheye => {
                return Err(
                    "the RAD_TAN_THIN_PRISM_FISHEYE model (Project Aria) is not supported; undistort these images \
                     with Aria's tools or `colmap image_undistorter` first"
                        .into(),
                );
            }
        };
        Ok(Lens {
            model,
            fx,
            fy,
            cx,
            cy,
            distortion,
        })
    }

    /// The lens of a nerfstudio camera: `camera_model` (absent: `OPENCV` when any coefficient
    /// is set, else `PINHOLE`) with `k1 k2 k3 k4 p1 p2` in `d` (absent keys 0). `OPENCV` takes
    /// k1..k3 radial and p1 p2, `OPENCV_FISHEYE` k1..k4; a coefficient the model lacks, a
    /// non-finite one, or another model is an error naming it.
    pub fn from_nerfstudio(
        model: Option<CameraModel>,
        pinhole: [f64; 4],
        d: [f64; 6],
    ) -> Result<Lens, String> {
        const KEYS: [&str; 6] = ["k1", "k2", "k3", "k4", "p1", "p2"];
        if let Some(i) = d.iter().position(|v| !v.is_finite()) {
            return Err(format!(
                "distortion coefficient {} is {}, not a finite number",
                KEYS[i], d[i]
            ));
        }
        let model = model.unwrap_or(if d == [0.0; 6] {
            CameraModel::Pinhole
        } else {
            CameraModel::OpenCv
        });
        let lacks = |allowed: &[usize]| (0..6).find(|i| d[*i] != 0.0 && !allowed.contains(i));
        let (allowed, distortion): (&[usize], Distortion) = match model {
            CameraModel::Pinhole | CameraModel::SimplePinhole => (&[], Distortion::None),
            CameraModel::OpenCv => (
                &[0, 1, 2, 4, 5],
                perspective([d[0], d[1], d[2], 0.0, 0.0, 0.0], [d[4], d[5]]),
            ),
            CameraModel::OpenCvFisheye => (
                &[0, 1, 2, 3],
                fisheye([d[0], d[1], d[2], d[3]], [0.0; 2], [0.0; 2]),
            ),
            other => {
                return Err(format!(
                    "camera_model {} is not one nerfstudio writes; use PINHOLE, OPENCV or OPENCV_FISHEYE",
                    other.name()
                ));
            }
        };
        if let Some(i) = lacks(allowed) {
            return Err(format!(
                "camera_model {} has no {} (= {}); use {}",
                model.name(),
                KEYS[i],
                super::compact_number(d[i]),
                if i == 3 { "OPENCV_FISHEYE" } else { "OPENCV" }
            ));
        }
        let [fx, fy, cx, cy] = pinhole;
        Ok(Lens {
            model,
            fx,
            fy,
            cx,
            cy,
            distortion,
        })
    }

    /// The parameters in COLMAP's order for [`Lens::model`] (the inverse of
    /// [`Lens::from_params`]; coefficients the model lacks are dropped).
    pub fn colmap_params(&self) -> Vec<f64> {
        let (k, p, s, omega) = match self.distortion {
            Distortion::None => ([0.0; 6], [0.0; 2], [0.0; 2], 0.0),
            Distortion::Perspective { k, p } => (k, p, [0.0; 2], 0.0),
            Distortion::Fisheye { k, p, s } => ([k[0], k[1], k[2], k[3], 0.0, 0.0], p, s, 0.0),
            Distortion::Fov { omega } => ([0.0; 6], [0.0; 2], [0.0; 2], omega),
        };
        let (f2, f1) = (
            [self.fx, self.fy, self.cx, self.cy],
            [self.fx, self.cx, self.cy],
        );
        let tail: Vec<f64> = match self.model {
            CameraModel::SimplePinhole | CameraModel::Pinhole => vec![],
            CameraModel::SimpleRadial | CameraModel::SimpleRadialFisheye => vec![k[0]],
            CameraModel::Radial | CameraModel::RadialFisheye => vec![k[0], k[1]],
            CameraModel::OpenCv => vec![k[0], k[1], p[0], p[1]],
            CameraModel::FullOpenCv => vec![k[0], k[1], p[0], p[1], k[2], k[3], k[4], k[5]],
            CameraModel::OpenCvFisheye => vec![k[0], k[1], k[2], k[3]],
            CameraModel::ThinPrismFisheye => vec![k[0], k[1], p[0], p[1], k[2], k[3], s[0], s[1]],
            CameraModel::Fov => vec![omega],
            CameraModel::RadTanThinPrismFisheye => vec![0.0; 12],
        };
        let head: &[f64] = if self.model.param_names()[1] == "fy" {
            &f2
        } else {
            &f1
        };
        head.iter().copied().chain(tail).collect()
    }

    /// True when the lens has no distortion (images are used as they are).
    pub fn is_pinhole(&self) -> bool {
        self.distortion == Distortion::None
    }

    /// True for the fisheye (equidistant) models.
    pub fn is_fisheye(&self) -> bool {
        matches!(self.distortion, Distortion::Fisheye { .. })
    }

    /// This lens for an image scaled by `sx` × `sy` (distortion is in normalised units and stays).
    pub fn scaled(&self, sx: f64, sy: f64) -> Lens {
        Lens {
            fx: self.fx * sx,
            fy: self.fy * sy,
            cx: self.cx * sx,
            cy: self.cy * sy,
            ..*self
        }
    }

    /// The distorted normalised point of the undistorted normalised point `(x, y)` = (X/Z, Y/Z).
    pub fn distort(&self, [x, y]: [f64; 2]) -> [f64; 2] {
        match self.distortion {
            Distortion::None => [x, y],
            Distortion::Perspective { k, p } => {
                let r2 = x * x + y * y;
                let q = (1.0 + r2 * (k[0] + r2 * (k[1] + r2 * k[2])))
                    / (1.0 + r2 * (k[3] + r2 * (k[4] + r2 * k[5])));
                [
                    x * q + 2.0 * p[0] * x * y + p[1] * (r2 + 2.0 * x * x),
                    y * q + p[0] * (r2 + 2.0 * y * y) + 2.0 * p[1] * x * y,
                ]
            }
            Distortion::Fisheye { .. } => {
                let r = (x * x + y * y).sqrt();
                let scale = if r > 1e-12 { r.atan() / r } else { 1.0 };
                self.distort_angle([x * scale, y * scale])
            }
            Distortion::Fov { omega } => {
                let r = (x * x + y * y).sqrt();
                let t = 2.0 * (0.5 * omega).tan();
                let factor = if r > 1e-12 {
                    (r * t).atan() / (r * omega)
                } else {
                    t / omega
                };
                [x * factor, y * factor]
            }
        }
    }

    /// The fisheye polynomial on the angle-scaled point `(u, v)` (|(u, v)| = θ).
    fn distort_angle(&self, [u, v]: [f64; 2]) -> [f64; 2] {
        let Distortion::Fisheye { k, p, s } = self.distortion else {
            return [u, v];
        };
        let r2 = u * u + v * v;
        let radial = 1.0 + r2 * (k[0] + r2 * (k[1] + r2 * (k[2] + r2 * k[3])));
        [
            u * radial + 2.0 * p[0] * u * v + p[1] * (r2 + 2.0 * u * u) + s[0] * r2,
            v * radial + p[0] * (r2 + 2.0 * v * v) + 2.0 * p[1] * u * v + s[1] * r2,
        ]
    }

    /// The undistorted normalised point `(X/Z, Y/Z)` of a distorted normalised point, or `None`
    /// where the model has no such point in front of the camera (a fisheye ray at 90° or more)
    /// or Newton's method does not converge (outside the model's valid region).
    pub fn undistort(&self, target: [f64; 2]) -> Option<[f64; 2]> {
        match self.distortion {
            Distortion::None => Some(target),
            Distortion::Perspective { .. } => newton(|q| self.distort(q), target),
            Distortion::Fisheye { .. } => {
                let [u, v] = self.undistort_angle(target)?;
                let theta = (u * u + v * v).sqrt();
                if theta >= std::f64::consts::FRAC_PI_2 - 1e-9 {
                    return None;
                }
                let scale = if theta > 1e-12 {
                    theta.tan() / theta
                } else {
                    1.0
                };
                Some([u * scale, v * scale])
            }
            Distortion::Fov { omega } => {
                let [x, y] = target;
                let rd = (x * x + y * y).sqrt();
                let t = 2.0 * (0.5 * omega).tan();
                if rd * omega >= std::f64::consts::FRAC_PI_2 {
                    return None;
                }
                let factor = if rd > 1e-12 {
                    (rd * omega).tan() / (rd * t)
                } else {
                    omega / t
                };
                Some([x * factor, y * factor])
            }
        }
    }

    /// For the fisheye models: the angle-scaled point `(u, v)` (|(u, v)| = θ, the ray's angle from
    /// the axis, which may exceed 90°) of a distorted normalised point. Other models: `None`.
    pub fn undistort_angle(&self, target: [f64; 2]) -> Option<[f64; 2]> {
        match self.distortion {
            Distortion::Fisheye { .. } => newton(|q| self.distort_angle(q), target),
            _ => None,
        }
    }

    /// The rasterizer's lens of this one ([`CameraLens`]; the focal lengths and principal point
    /// stay on the camera).
    pub fn camera_lens(&self) -> CameraLens {
        match self.distortion {
            Distortion::None => CameraLens::PINHOLE,
            Distortion::Perspective { k, p } => CameraLens::perspective(k, p),
            Distortion::Fisheye { k, p, s } => CameraLens::fisheye(k, p, s),
            Distortion::Fov { omega } => CameraLens::fov(omega),
        }
    }

    /// The COLMAP lens of a rasterizer camera (the inverse of [`Lens::camera_lens`]): `PINHOLE`,
    /// `FULL_OPENCV`, `OPENCV_FISHEYE` (or `THIN_PRISM_FISHEYE` when it has tangential or prism
    /// terms) or `FOV`, with the camera's focal lengths and principal point.
    pub fn of_camera(camera: &Camera) -> Lens {
        let l = &camera.lens;
        let wide = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
        let (model, distortion) = match l.kind {
            LensKind::Pinhole => (CameraModel::Pinhole, Distortion::None),
            LensKind::Perspective => {
                let k = wide(&[
                    l.radial[0],
                    l.radial[1],
                    l.radial[2],
                    l.rational[0],
                    l.rational[1],
                    l.rational[2],
                ]);
                let p = wide(&l.tangential);
                (
                    CameraModel::FullOpenCv,
                    Distortion::Perspective {
                        k: [k[0], k[1], k[2], k[3], k[4], k[5]],
                        p: [p[0], p[1]],
                    },
                )
            }
            LensKind::Fisheye => {
                let (k, p, s) = (wide(&l.radial), wide(&l.tangential), wide(&l.prism));
                let model = if p.iter().chain(&s).all(|&v| v == 0.0) {
                    CameraModel::OpenCvFisheye
                } else {
                    CameraModel::ThinPrismFisheye
                };
                let distortion = Distortion::Fisheye {
                    k: [k[0], k[1], k[2], k[3]],
                    p: [p[0], p[1]],
                    s: [s[0], s[1]],
                };
                (model, distortion)
            }
            LensKind::Fov => (
                CameraModel::Fov,
                Distortion::Fov {
                    omega: f64::from(l.omega),
                },
            ),
        };
        Lens {
            model,
            distortion,
            ..Lens::pinhole(
                f64::from(camera.fx),
                f64::from(camera.fy),
                f64::from(camera.cx),
                f64::from(camera.cy),
            )
        }
    }

    /// The distorted normalised radius (along x) where [`Lens::camera_lens`] stops being one to
    /// one ([`CameraLens::limit`]): pixels farther from the principal point see nothing.
    /// `None` for the lenses that never fold.
    pub fn fold_radius(&self) -> Option<f64> {
        let limit = f64::from(self.camera_lens().limit);
        match self.distortion {
            Distortion::Perspective { .. } if limit < 1e5 => Some(self.distort([limit, 0.0])[0]),
            Distortion::Fisheye { .. } => Some(self.distort_angle([limit, 0.0])[0]),
            _ => None,
        }
    }

    /// The pixel of an undistorted normalised point.
    pub fn project(&self, point: [f64; 2]) -> [f64; 2] {
        let [x, y] = self.distort(point);
        [self.fx * x + self.cx, self.fy * y + self.cy]
    }

    /// The undistorted normalised point of a pixel (see [`Lens::undistort`]).
    pub fn unproject(&self, [px, py]: [f64; 2]) -> Option<[f64; 2]> {
        self.undistort([(px - self.cx) / self.fx, (py - self.cy) / self.fy])
    }

    /// The unit camera-space direction (OpenCV axes: x right, y down, z forward) seen at pixel
    /// position `pixel`, or `None` where the model has no ray there: outside its valid region
    /// (Newton's method does not converge), at 180° or more from the axis for a fisheye, at 90°
    /// or more for the other models. Unlike [`Lens::unproject`], a fisheye's ray may lie beyond
    /// 90° from the axis: with `(u, v)` from [`Lens::undistort_angle`] and `θ = |(u, v)|`, it is
    /// `(sin θ · u/θ, sin θ · v/θ, cos θ)`.
    pub fn ray(&self, [px, py]: [f64; 2]) -> Option<[f64; 3]> {
        let target = [(px - self.cx) / self.fx, (py - self.cy) / self.fy];
        if self.is_fisheye() {
            let [u, v] = self.undistort_angle(target)?;
            let theta = u.hypot(v);
            if theta >= std::f64::consts::PI {
                return None;
            }
            let scale = if theta > 1e-12 {
                theta.sin() / theta
            } else {
                1.0
            };
            return Some([u * scale, v * scale, theta.cos()]);
        }
        let [x, y] = self.undistort(target)?;
        let length = (x * x + y * y + 1.0).sqrt();
        Some([x / length, y / length, 1.0 / length])
    }

    /// The pixel position of camera-space direction `direction` (any length; the inverse of
    /// [`Lens::ray`]), or `None` where the model sees no such direction: 180° or more from the
    /// axis for a fisheye, 90° or more for the other models.
    pub fn project_ray(&self, [x, y, z]: [f64; 3]) -> Option<[f64; 2]> {
        if !self.is_fisheye() {
            return (z > 0.0).then(|| self.project([x / z, y / z]));
        }
        let r = x.hypot(y);
        let scale = if r > 1e-12 * z.abs() {
            r.atan2(z) / r
        } else if z > 0.0 {
            1.0 / z
        } else {
            return None;
        };
        let [xd, yd] = self.distort_angle([x * scale, y * scale]);
        Some([self.fx * xd + self.cx, self.fy * yd + self.cy])
    }
}

fn perspective(k: [f64; 6], p: [f64; 2]) -> Distortion {
    if k == [0.0; 6] && p == [0.0; 2] {
        Distortion::None
    } else {
        Distortion::Perspective { k, p }
    }
}

fn fisheye(k: [f64; 4], p: [f64; 2], s: [f64; 2]) -> Distortion {
    Distortion::Fisheye { k, p, s }
}

/// Solves `f(q) = target` by Newton's method from `q = target`, with a central-difference
/// Jacobian and step halving while the residual grows.
fn newton(f: impl Fn([f64; 2]) -> [f64; 2], target: [f64; 2]) -> Option<[f64; 2]> {
    let residual = |q: [f64; 2]| {
        let v = f(q);
        [v[0] - target[0], v[1] - target[1]]
    };
    let norm = |r: [f64; 2]| r[0].hypot(r[1]);
    let mut q = target;
    let mut r = residual(q);
    for _ in 0..NEWTON_ITERATIONS {
        if norm(r) <= NEWTON_TOLERANCE {
            break;
        }
        let h = 1e-6 * q[0].abs().max(q[1].abs()).max(1.0);
        let column = |axis: usize| {
            let (mut a, mut b) = (q, q);
            a[axis] += h;
            b[axis] -= h;
            let (fa, fb) = (f(a), f(b));
            [(fa[0] - fb[0]) / (2.0 * h), (fa[1] - fb[1]) / (2.0 * h)]
        };
        let (jx, jy) = (column(0), column(1));
        let det = jx[0] * jy[1] - jy[0] * jx[1];
        if !det.is_finite() || det.abs() < 1e-15 {
            return None;
        }
        let step = [
            (jy[1] * r[0] - jy[0] * r[1]) / det,
            (jx[0] * r[1] - jx[1] * r[0]) / det,
        ];
        let mut scale = 1.0;
        loop {
            let next = [q[0] - scale * step[0], q[1] - scale * step[1]];
            let next_r = residual(next);
            if norm(next_r) < norm(r) || scale < 1e-4 {
                q = next;
                r = next_r;
                break;
            }
            scale *= 0.5;
        }
        if !(q[0].is_finite() && q[1].is_finite()) {
            return None;
        }
    }
    (norm(r) <= NEWTON_ACCEPT).then_some(q)
}

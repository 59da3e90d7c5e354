//! The camera's lens as the rasterizer sees it ([`CameraLens`]): which projection, its
//! coefficients in single precision, and the radius or angle up to which it is one to one.
//!
//! A camera-space point `p` becomes a pixel in three steps (`shaders/shared/lens.wgsl` has the
//! kernels' copy of every formula, and [`CameraLens::project`] is its CPU mirror, in `f64`):
//! 1. `q = g(p)`: the normalised point `(x/z, y/z)`, or for a fisheye the angle-scaled point
//!    `θ (x, y) / |(x, y)|` with `θ = atan2(|(x, y)|, z)`, which exists past 90° from the axis;
//! 2. `d = D(q) = q Q(|q|²) + T(q)`: the radial factor `Q` (OpenCV's rational polynomial, or the
//!    FOV model's `atan(t r) / (ω r)`) and the tangential and thin-prism terms `T`;
//! 3. `pixel = f d + c`.
//!
//! The models of `data::lens` map onto these kinds: `SIMPLE_RADIAL`, `RADIAL`, `OPENCV` and
//! `FULL_OPENCV` are [`LensKind::Perspective`], the four fisheyes [`LensKind::Fisheye`], `FOV`
//! [`LensKind::Fov`].

use serde::{Deserialize, Serialize};

mod maths;
pub use maths::LensProjection;

/// How a lens maps a camera-space point to its normalised image point (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LensKind {
    /// The ideal pinhole: the rasterizer's own projection, untouched.
    #[default]
    Pinhole,
    /// Radial (rational) and tangential distortion of `(x/z, y/z)`.
    Perspective,
    /// Equidistant fisheye: radial, tangential and thin-prism distortion of the angle-scaled
    /// point; it sees beyond 90° from its axis.
    Fisheye,
    /// Devernay and Faugeras's field-of-view model.
    Fov,
}

/// A camera's lens in the rasterizer's terms (module docs give the formulas).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CameraLens {
    /// The projection.
    pub kind: LensKind,
    /// The radial factor's numerator `1 + k1 s + k2 s² + k3 s³ + k4 s⁴`: `[k1, k2, k3, k4]`.
    pub radial: [f32; 4],
    /// Its denominator `1 + d1 s + d2 s² + d3 s³`: `[d1, d2, d3]`.
    pub rational: [f32; 3],
    /// Tangential `[p1, p2]`.
    pub tangential: [f32; 2],
    /// Thin prism `[s1, s2]`.
    pub prism: [f32; 2],
    /// The FOV model's ω in radians (0 for the other kinds).
    pub omega: f32,
    /// The largest radius of the normalised point (perspective, FOV) or angle from the axis in
    /// radians (fisheye) up to which the radial map rises: points beyond it are culled, and
    /// pixels beyond its image are masked from the loss.
    pub limit: f32,
}

/// Radius assumed for a lens that never folds (perspective kinds): past any image.
const NO_FOLD: f64 = 1e6;
/// The widest angle a fisheye may see from its axis (the back axis itself has no direction).
const FISHEYE_MAX_ANGLE: f64 = std::f64::consts::PI * 0.995;

impl CameraLens {
    /// The ideal pinhole.
    pub const PINHOLE: CameraLens = CameraLens {
        kind: LensKind::Pinhole,
        radial: [0.0; 4],
        rational: [0.0; 3],
        tangential: [0.0; 2],
        prism: [0.0; 2],
        omega: 0.0,
        limit: 0.0,
    };

    /// OpenCV's rational model on the normalised point: radial `k = [k1..k6]` (k4..k6 divide)
    /// and tangential `p = [p1, p2]`.
    pub fn perspective(k: [f64; 6], p: [f64; 2]) -> CameraLens {
        let mut lens = CameraLens {
            kind: LensKind::Perspective,
            radial: [k[0], k[1], k[2], 0.0].map(|v| v as f32),
            rational: [k[3], k[4], k[5]].map(|v| v as f32),
            tangential: p.map(|v| v as f32),
            ..CameraLens::PINHOLE
        };
        lens.limit = lens.fold(NO_FOLD) as f32;
        lens
    }

    /// The equidistant fisheye: radial `k = [k1..k4]` on the angle, tangential `p` and thin
    /// prism `s`.
    pub fn fisheye(k: [f64; 4], p: [f64; 2], s: [f64; 2]) -> CameraLens {
        let mut lens = CameraLens {
            kind: LensKind::Fisheye,
            radial: k.map(|v| v as f32),
            tangential: p.map(|v| v as f32),
            prism: s.map(|v| v as f32),
            ..CameraLens::PINHOLE
        };
        lens.limit = lens.fold(FISHEYE_MAX_ANGLE) as f32;
        lens
    }

    /// The FOV model with parameter ω (radians, in (0, π)); it never folds.
    pub fn fov(omega: f64) -> CameraLens {
        CameraLens {
            kind: LensKind::Fov,
            omega: omega as f32,
            limit: NO_FOLD as f32,
            ..CameraLens::PINHOLE
        }
    }

    /// True for the ideal pinhole (the rasterizer's own projection).
    pub fn is_pinhole(&self) -> bool {
        self.kind == LensKind::Pinhole
    }

    /// True for the fisheye kind (depth by ray length, sight past 90°).
    pub fn is_fisheye(&self) -> bool {
        self.kind == LensKind::Fisheye
    }

    /// The smallest radius (angle for a fisheye) up to `cap` where the radial map
    /// `ρ(r) = r Q(r²)` stops rising (its denominator, for the rational model, stays positive
    /// before it), else `cap`: scanned in steps of 0.1% of the cap, then bisected.
    fn fold(&self, cap: f64) -> f64 {
        let rising = |r: f64| {
            let [q, q1, _] = maths::radial_factor(self, r * r);
            let denominator_positive = maths::rational_denominator(self, r * r) > 0.0;
            denominator_positive && q + 2.0 * r * r * q1 > 0.0
        };
        let steps = 4000;
        let step = cap.min(20.0) / steps as f64;
        let mut last = 0.0;
        for i in 1..=steps {
            let r = i as f64 * step;
            if !rising(r) {
                let (mut lo, mut hi) = (last, r);
                for _ in 0..60 {
                    let mid = 0.5 * (lo + hi);
                    if rising(mid) {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                return lo;
            }
            last = r;
        }
        cap
    }

    /// The pixel, Jacobian and depth of camera-space point `p` for focal lengths `focal` and
    /// principal point `principal`, or `None` where the lens does not see it one to one (behind
    /// the camera for the perspective kinds, past [`CameraLens::limit`]). The pinhole gives
    /// the plain perspective projection.
    pub fn project(
        &self,
        focal: [f64; 2],
        principal: [f64; 2],
        p: [f64; 3],
    ) -> Option<LensProjection> {
        maths::project(self, focal, principal, p)
    }

    /// The gradient of `p` from the gradients of [`CameraLens::project`]'s pixel and Jacobian
    /// (`v_jacobian[row][column]`, rows the pixel's x and y): `Jᵀ v_pixel + ∂⟨v_jacobian, J⟩/∂p`.
    pub fn vjp(
        &self,
        focal: [f64; 2],
        p: [f64; 3],
        v_pixel: [f64; 2],
        v_jacobian: [[f64; 3]; 2],
    ) -> [f64; 3] {
        maths::vjp(self, focal, p, v_pixel, v_jacobian)
    }
}

#[cfg(test)]
mod tests;

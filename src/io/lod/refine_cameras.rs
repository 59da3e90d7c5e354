//! The random cameras a level of detail is refined and scored from ([`super::refine`]): looking
//! into the box of the model's leaves from a tenth of its span to 1.3 times it.

use super::tree::LodTree;
use crate::linalg::{look_at_rows, unit};
use crate::rng::SplitMix64;
use crate::splat::Camera;
use glam::DVec3;

/// The cameras' vertical field of view.
const FOV_Y_DEGREES: f64 = 60.0;
/// Their near and far planes.
const NEAR: f32 = 0.01;
const FAR: f32 = 1.0e4;

/// The box of the leaves' centres and its largest side.
pub(super) struct Frame {
    lo: [f64; 3],
    hi: [f64; 3],
    span: f64,
}

pub(super) fn frame_of(tree: &LodTree) -> Frame {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for (n, m) in tree.gaussians.means.iter().enumerate() {
        if tree.skeleton.child_count[n] == 0 {
            for k in 0..3 {
                lo[k] = lo[k].min(f64::from(m[k]));
                hi[k] = hi[k].max(f64::from(m[k]));
            }
        }
    }
    let span = (0..3).map(|k| hi[k] - lo[k]).fold(1e-6, f64::max);
    Frame { lo, hi, span }
}

/// A random camera looking into the scene from 0.1–1.3 of its span (log-uniform).
pub(super) fn random_camera(
    rng: &mut SplitMix64,
    frame: &Frame,
    up: Option<[f64; 3]>,
    size: u32,
) -> Camera {
    let mut random = || f64::from(rng.unit());
    let target =
        [0, 1, 2].map(|k| frame.lo[k] + (0.1 + 0.8 * random()) * (frame.hi[k] - frame.lo[k]));
    let distance = frame.span * 0.1 * 13f64.powf(random());
    let azimuth = std::f64::consts::TAU * random();
    let (direction, world_up) = match up {
        Some(up) => {
            let up = unit(DVec3::from(up)).unwrap_or(DVec3::Z);
            let helper = if up.x.abs() < 0.9 { DVec3::X } else { DVec3::Y };
            let a = unit(up.cross(helper)).unwrap_or(helper);
            let b = up.cross(a);
            let elevation = (15.0 + 60.0 * random()).to_radians();
            let (s, c) = (elevation.sin(), elevation.cos());
            let d =
                [0, 1, 2].map(|k| c * (azimuth.cos() * a[k] + azimuth.sin() * b[k]) + s * up[k]);
            (d, up.to_array())
        }
        None => {
            let z = 2.0 * random() - 1.0;
            let r = (1.0 - z * z).sqrt();
            let d = [r * azimuth.cos(), r * azimuth.sin(), z];
            let least = (0..3)
                .min_by(|&i, &j| d[i].abs().total_cmp(&d[j].abs()))
                .unwrap_or(0);
            let mut world_up = [0.0; 3];
            world_up[least] = 1.0;
            (d, world_up)
        }
    };
    let eye = [0, 1, 2].map(|k| target[k] + distance * direction[k]);
    // The direction is never along `world_up` (elevation ≤ 75°, or the least axis), so there is
    // a rotation; the identity stands in should rounding say otherwise.
    let rows = look_at_rows(eye, target, world_up).unwrap_or([
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
    ]);
    let f = 0.5 * f64::from(size) / (0.5 * FOV_Y_DEGREES.to_radians()).tan();
    Camera::centred(rows, eye, f, [size, size], [NEAR, FAR])
}

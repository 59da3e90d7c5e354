//! Initial Gaussians on the CPU, as 3DGS makes them: one per point, colour in the DC spherical
//! harmonic, identity rotation, opacity 0.1, and isotropic scales from the mean squared distance
//! to the nearest neighbours (computed elsewhere, e.g. by the GPU k-NN).

use super::{Dataset, PointCloud};
use crate::error::{Error, Result};
use crate::splat::Camera;
use crate::splat::reference::CpuGaussians;

/// The zeroth-order real spherical harmonic, `1 / (2 √π)`.
pub const SH_C0: f32 = 0.282_094_8;
/// Opacity every initial Gaussian starts with.
pub const INITIAL_OPACITY: f32 = 0.1;
/// Smallest mean squared neighbour distance used for a scale (3DGS's clamp).
pub const MIN_MEAN_SQUARED_DISTANCE: f32 = 1e-7;

/// The DC SH coefficient that renders as `rgb` (`(rgb - 0.5) / C0`).
pub fn rgb_to_sh_dc(rgb: [f32; 3]) -> [f32; 3] {
    rgb.map(|c| (c - 0.5) / SH_C0)
}

/// The logit of `p` (`ln(p / (1 - p))`).
pub fn logit(p: f32) -> f32 {
    (p / (1.0 - p)).ln()
}

/// One Gaussian per point: mean = position, DC SH from the colour, other SH zero, identity
/// rotation `[1, 0, 0, 0]`, opacity logit of 0.1, log-scales 0 until [`fill_log_scales`].
pub fn gaussians_from_points(points: &PointCloud) -> CpuGaussians {
    let n = points.len();
    let mut sh = vec![[[0.0f32; 3]; 16]; n];
    for (coefficients, colour) in sh.iter_mut().zip(&points.colors) {
        coefficients[0] = rgb_to_sh_dc(*colour);
    }
    CpuGaussians {
        means: points.positions.clone(),
        log_scales: vec![[0.0; 3]; n],
        quats: vec![[1.0, 0.0, 0.0, 0.0]; n],
        opacity_logits: vec![logit(INITIAL_OPACITY); n],
        sh,
    }
}

/// Isotropic log-scales from mean squared neighbour distances: `ln(sqrt(max(d², 1e-7)))` on
/// every axis.
pub fn log_scales_from_mean_squared_distances(mean_squared_distances: &[f32]) -> Vec<[f32; 3]> {
    mean_squared_distances
        .iter()
        .map(|&d2| {
            let d2 = if d2.is_finite() {
                d2.max(MIN_MEAN_SQUARED_DISTANCE)
            } else {
                MIN_MEAN_SQUARED_DISTANCE
            };
            [0.5 * d2.ln(); 3]
        })
        .collect()
}

/// Sets the log-scales of `gaussians` from one mean squared neighbour distance per Gaussian.
pub fn fill_log_scales(gaussians: &mut CpuGaussians, mean_squared_distances: &[f32]) -> Result<()> {
    if mean_squared_distances.len() != gaussians.means.len() {
        return Err(Error::Shape {
            op: "fill_log_scales",
            detail: format!(
                "{} distances for {} Gaussians; give one mean squared neighbour distance per Gaussian",
                mean_squared_distances.len(),
                gaussians.means.len()
            ),
        });
    }
    gaussians.log_scales = log_scales_from_mean_squared_distances(mean_squared_distances);
    Ok(())
}

/// An axis-aligned box to scatter random points in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomBox {
    /// Centre of the box.
    pub center: [f32; 3],
    /// Half the side length along each axis.
    pub half_size: [f32; 3],
}

impl Default for RandomBox {
    /// 3DGS's box for NeRF-synthetic scenes: a cube of side 2.6 centred at the origin.
    fn default() -> Self {
        RandomBox {
            center: [0.0; 3],
            half_size: [1.3; 3],
        }
    }
}

impl RandomBox {
    /// The region every training camera looks at, for random initialisation without SfM points.
    ///
    /// The centre is the least-squares intersection of the cameras' optical axes; the half size is
    /// the median camera distance to it times the tangent of the wider half field of view, so the
    /// cube just fills a typical view. On NeRF-synthetic scenes (cameras at radius 4, 40° FOV)
    /// this gives about ±1.4 around the origin, close to 3DGS's fixed ±1.3. When the axes are
    /// nearly parallel (forward-facing captures) it falls back to `fallback_center` ±
    /// `fallback_half`.
    pub fn viewed_by(cameras: &[&Camera], fallback_center: [f32; 3], fallback_half: f32) -> Self {
        let fallback = RandomBox {
            center: fallback_center,
            half_size: [fallback_half; 3],
        };
        if cameras.len() < 2 {
            return fallback;
        }
        let mut a = [[0f64; 3]; 3];
        let mut b = [0f64; 3];
        for cam in cameras {
            let o = cam.position().map(f64::from);
            let d = cam.rotation[2].map(f64::from);
            for i in 0..3 {
                for j in 0..3 {
                    let m = f64::from(u8::from(i == j)) - d[i] * d[j];
                    a[i][j] += m;
                    b[i] += m * o[j];
                }
            }
        }
        let Some(center) = solve3(a, b) else {
            return fallback;
        };
        let mut sizes: Vec<f64> = cameras
            .iter()
            .map(|cam| {
                let o = cam.position().map(f64::from);
                let dist = (0..3)
                    .map(|k| (o[k] - center[k]).powi(2))
                    .sum::<f64>()
                    .sqrt();
                let tan_x = 0.5 * f64::from(cam.width) / f64::from(cam.fx);
                let tan_y = 0.5 * f64::from(cam.height) / f64::from(cam.fy);
                dist * tan_x.max(tan_y)
            })
            .collect();
        sizes.sort_by(f64::total_cmp);
        let half = sizes[sizes.len() / 2];
        if !half.is_finite() || half <= 0.0 || center.iter().any(|c| !c.is_finite()) {
            return fallback;
        }
        RandomBox {
            center: center.map(|c| c as f32),
            half_size: [half as f32; 3],
        }
    }
}

/// Solves a symmetric 3×3 system by Cramer's rule; `None` when it is close to singular.
fn solve3(a: [[f64; 3]; 3], b: [f64; 3]) -> Option<[f64; 3]> {
    let det = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(a);
    let scale: f64 = a.iter().flatten().map(|v| v.abs()).sum::<f64>().max(1e-30);
    if d.abs() < 1e-6 * scale.powi(3) {
        return None;
    }
    let mut x = [0f64; 3];
    for (k, slot) in x.iter_mut().enumerate() {
        let mut m = a;
        for row in 0..3 {
            m[row][k] = b[row];
        }
        *slot = det(m) / d;
    }
    Some(x)
}

/// 3DGS's number of random points for scenes without a point cloud.
pub const DEFAULT_RANDOM_POINTS: usize = 100_000;

/// `count` points uniformly in `bounds`, grey as 3DGS starts them: INRIA draws each point's DC
/// coefficients uniformly in [0, 1/255], so every colour is within 0.0012 of mid-grey (random
/// colours add a fog of noise the first thousand iterations must undo). Deterministic in `seed`.
pub fn random_points(count: usize, bounds: RandomBox, seed: u64) -> PointCloud {
    let mut rng = SplitMix64::new(seed);
    let mut cloud = PointCloud {
        positions: Vec::with_capacity(count),
        colors: Vec::with_capacity(count),
    };
    for _ in 0..count {
        let position = [0, 1, 2]
            .map(|k| bounds.center[k] + bounds.half_size[k] * (2.0 * rng.next_f32() - 1.0));
        cloud.positions.push(position);
        let grey = |u: f32| 0.5 + SH_C0 * u / 255.0;
        cloud.colors.push([
            grey(rng.next_f32()),
            grey(rng.next_f32()),
            grey(rng.next_f32()),
        ]);
    }
    cloud
}

/// The points to initialise from: the dataset's sparse cloud when it has a non-empty one, else
/// `random_count` random points in `bounds` (3DGS: [`DEFAULT_RANDOM_POINTS`] in [`RandomBox::default`]).
pub fn initial_points(
    dataset: &Dataset,
    random_count: usize,
    bounds: RandomBox,
    seed: u64,
) -> PointCloud {
    match &dataset.points {
        Some(points) if !points.is_empty() => points.clone(),
        _ => random_points(random_count, bounds, seed),
    }
}

/// A small, fast, reproducible generator (SplitMix64); the same seed gives the same numbers on
/// every platform and crate version.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform float in [0, 1).
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

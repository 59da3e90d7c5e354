//! Initial Gaussians on the CPU, as 3DGS makes them: one per point, colour in the DC spherical
//! harmonic, identity rotation, opacity 0.1, and isotropic scales from the mean squared distance
//! to the nearest neighbours (computed elsewhere, e.g. by the GPU k-NN).

use super::{Dataset, PointCloud};
use crate::error::{Error, Result};
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

/// 3DGS's number of random points for scenes without a point cloud.
pub const DEFAULT_RANDOM_POINTS: usize = 100_000;

/// `count` points uniformly in `bounds` with uniformly random colours, deterministic in `seed`.
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
        cloud
            .colors
            .push([rng.next_f32(), rng.next_f32(), rng.next_f32()]);
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

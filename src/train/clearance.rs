//! Keeping the capture's own path clear of Gaussians. A Gaussian grown between two training
//! cameras, so large that a camera moving from one to the other would sit inside it, is seen by
//! no training view as more than a faint wash over the whole image, so nothing trains it away;
//! a view from between them (a test view, a flythrough along the cameras) looks through it as
//! through a veil. At every refinement the Gaussians whose ellipsoid of `sigmas` standard
//! deviations holds a point of that path are pruned, with their optimizer state.
//!
//! The path is a set of segments: each training camera to each other camera within
//! [`NEIGHBOUR_REACH`] times its nearest neighbour's distance (at most
//! [`MAX_NEIGHBOURS`] of them), and each camera alone, so a capture taken in any order is
//! covered where it was walked, and a gap left by a held-out view is bridged.

use super::state::ModelState;
use super::strategy::StepInfo;
use crate::error::Result;
use crate::gpu::GpuContext;
use crate::splat::reference::quat_to_matrix;
use std::collections::HashMap;

/// How far past its nearest neighbour a camera's path segments reach, as a multiple of that
/// distance: 2.1 bridges the gap one held-out view leaves in a regular walk, and on a ring of
/// cameras round an object stops short of the chords that would cut through it.
pub const NEIGHBOUR_REACH: f32 = 2.1;
/// The most segments one camera starts.
pub const MAX_NEIGHBOURS: usize = 4;
/// A Gaussian's box covering more grid cells than this is tested against every segment.
const MAX_CELLS_PER_QUERY: i64 = 4096;

/// The camera path: segments between neighbouring training cameras, with a grid over them.
#[derive(Debug, Clone)]
pub struct CameraPath {
    segments: Vec<[[f32; 3]; 2]>,
    cell: f32,
    grid: HashMap<[i32; 3], Vec<u32>>,
    /// Segments spanning too many cells to be listed in each: tested against every Gaussian.
    long: Vec<u32>,
}

impl CameraPath {
    /// The path through the camera centres `centres` (see the module's note).
    pub fn through(centres: &[[f32; 3]]) -> Self {
        let mut segments: Vec<[[f32; 3]; 2]> = centres.iter().map(|&c| [c, c]).collect();
        let mut spacing = Vec::new();
        let mut pairs = std::collections::BTreeSet::new();
        for (i, &a) in centres.iter().enumerate() {
            let mut others: Vec<(f32, usize)> = centres
                .iter()
                .enumerate()
                .map(|(j, &b)| (distance(a, b), j))
                .filter(|&(d, j)| j != i && d > 0.0 && d.is_finite())
                .collect();
            others.sort_by(|x, y| x.0.total_cmp(&y.0));
            let Some(&(nearest, _)) = others.first() else {
                continue;
            };
            spacing.push(nearest);
            for &(_, j) in others
                .iter()
                .take(MAX_NEIGHBOURS)
                .filter(|&&(d, _)| d <= NEIGHBOUR_REACH * nearest)
            {
                pairs.insert((i.min(j), i.max(j)));
            }
        }
        segments.extend(pairs.into_iter().map(|(i, j)| [centres[i], centres[j]]));
        spacing.sort_by(f32::total_cmp);
        let cell = spacing
            .get(spacing.len() / 2)
            .copied()
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(1.0);
        let mut grid: HashMap<[i32; 3], Vec<u32>> = HashMap::new();
        let mut long = Vec::new();
        for (index, &[a, b]) in segments.iter().enumerate() {
            let lo = cell_of(min3(a, b), cell);
            let hi = cell_of(max3(a, b), cell);
            match cell_count(lo, hi) > MAX_CELLS_PER_QUERY {
                true => long.push(index as u32),
                false => for_cells(lo, hi, |key| {
                    grid.entry(key).or_default().push(index as u32)
                }),
            }
        }
        Self {
            segments,
            cell,
            grid,
            long,
        }
    }

    /// How many segments the path has (each camera alone counts as one).
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// True when the ellipsoid of `sigmas` standard deviations of the Gaussian at `mean`, with
    /// scales `scales` and rotation `rotation` (row-major, columns the axes), holds a point of
    /// the path.
    pub fn passes_through(
        &self,
        mean: [f32; 3],
        scales: [f32; 3],
        rotation: [[f32; 3]; 3],
        sigmas: f32,
    ) -> bool {
        let reach = sigmas * scales.iter().copied().fold(0.0, f32::max);
        if !(reach.is_finite() && reach > 0.0) {
            return false;
        }
        let lo = cell_of(mean.map(|m| m - reach), self.cell);
        let hi = cell_of(mean.map(|m| m + reach), self.cell);
        let hits = |index: usize| {
            let [a, b] = self.segments[index];
            segment_distance(mean, a, b) <= reach
                && whitened_distance(mean, scales, rotation, a, b) <= sigmas
        };
        if cell_count(lo, hi) > MAX_CELLS_PER_QUERY {
            return (0..self.segments.len()).any(hits);
        }
        let mut found = self.long.iter().any(|&index| hits(index as usize));
        for_cells(lo, hi, |key| {
            if !found && let Some(list) = self.grid.get(&key) {
                found = list.iter().any(|&index| hits(index as usize));
            }
        });
        found
    }
}

/// Prunes the Gaussians `path` passes through within `sigmas` standard deviations; returns how
/// many. A model the path does not touch is left untouched (no row changes).
pub(crate) async fn prune_on_path(
    ctx: &GpuContext,
    state: &mut ModelState,
    step: &StepInfo<'_>,
    path: &CameraPath,
    sigmas: f32,
) -> Result<u64> {
    use rayon::prelude::*;
    let params = &state.params;
    let means = params.means.fetch::<f32>(ctx).await?;
    let log_scales = params.log_scales.fetch::<f32>(ctx).await?;
    let quats = params.quats.fetch::<f32>(ctx).await?;
    let keep: Vec<u32> = (0..means.len() / 3)
        .into_par_iter()
        .filter(|&i| {
            let mean = [means[3 * i], means[3 * i + 1], means[3 * i + 2]];
            let scales = [0, 1, 2].map(|k| log_scales[3 * i + k].exp());
            let q = [0, 1, 2, 3].map(|k| quats[4 * i + k]);
            !path.passes_through(mean, scales, quat_to_matrix(q), sigmas)
        })
        .map(|i| i as u32)
        .collect();
    super::bounds::keep_only(ctx, state, step, &keep)
}

/// The Mahalanobis distance from `mean` to the segment `a`–`b` under the Gaussian's covariance:
/// the segment mapped into the Gaussian's whitened frame, where its distance to the origin is a
/// plain point-to-segment distance (a linear map keeps a segment a segment).
pub fn whitened_distance(
    mean: [f32; 3],
    scales: [f32; 3],
    rotation: [[f32; 3]; 3],
    a: [f32; 3],
    b: [f32; 3],
) -> f32 {
    let whiten = |p: [f32; 3]| {
        let d = sub(p, mean);
        // Rᵀ d, divided axis by axis by the scale.
        [0, 1, 2].map(|k| {
            (rotation[0][k] * d[0] + rotation[1][k] * d[1] + rotation[2][k] * d[2])
                / scales[k].max(f32::MIN_POSITIVE)
        })
    };
    segment_distance([0.0; 3], whiten(a), whiten(b))
}

/// The Euclidean distance from `p` to the segment `a`–`b`.
pub fn segment_distance(p: [f32; 3], a: [f32; 3], b: [f32; 3]) -> f32 {
    let ab = sub(b, a);
    let length2 = dot(ab, ab);
    let t = match length2 > 0.0 {
        true => (dot(sub(p, a), ab) / length2).clamp(0.0, 1.0),
        false => 0.0,
    };
    distance(p, [0, 1, 2].map(|k| a[k] + t * ab[k]))
}

fn cell_count(lo: [i32; 3], hi: [i32; 3]) -> i64 {
    (0..3).fold(1i64, |n, k| {
        n.saturating_mul(hi[k] as i64 - lo[k] as i64 + 1)
    })
}

fn for_cells(lo: [i32; 3], hi: [i32; 3], mut visit: impl FnMut([i32; 3])) {
    for x in lo[0]..=hi[0] {
        for y in lo[1]..=hi[1] {
            for z in lo[2]..=hi[2] {
                visit([x, y, z]);
            }
        }
    }
}

fn cell_of(p: [f32; 3], cell: f32) -> [i32; 3] {
    p.map(|v| {
        (v / cell)
            .floor()
            .clamp(i32::MIN as f32 / 2.0, i32::MAX as f32 / 2.0) as i32
    })
}

fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn distance(a: [f32; 3], b: [f32; 3]) -> f32 {
    dot(sub(a, b), sub(a, b)).sqrt()
}

fn min3(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [0, 1, 2].map(|k| a[k].min(b[k]))
}

fn max3(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [0, 1, 2].map(|k| a[k].max(b[k]))
}

#[cfg(test)]
#[path = "clearance_tests.rs"]
mod tests;

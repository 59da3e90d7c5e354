//! Keeping the capture's own path clear of Gaussians. A Gaussian grown between two training
//! cameras, so large that a camera moving from one to the other would sit inside it, is seen by
//! no training view as more than a faint wash over the whole image, so nothing trains it away;
//! a view from between them (a test view, a flythrough along the cameras) looks through it as
//! through a veil. At every refinement the Gaussians whose ellipsoid of `sigmas` standard
//! deviations comes within the path's tube are pruned, with their optimizer state.
//!
//! The path is a set of segments: each training camera to each other camera within
//! [`NEIGHBOUR_REACH`] times its nearest neighbour's distance (at most
//! [`MAX_NEIGHBOURS`] of them), and each camera alone, so a capture taken in any order is
//! covered where it was walked, and a gap left by a held-out view is bridged. A view between two
//! cameras is never exactly on their segment, so each segment is thickened into a tube of
//! [`TUBE_RADIUS`] times the nearer-neighbour spacing of its two cameras: a thin Gaussian beside
//! the segment, round a view a little off it, is caught too.

use super::state::ModelState;
use super::strategy::StepInfo;
use crate::error::Result;
pub use crate::geometry::{segment_distance, segment_ellipsoid_distance, whitened_distance};
use crate::gpu::GpuContext;
use crate::splat::reference::quat_to_matrix;
use std::collections::HashMap;

/// How far past its nearest neighbour a camera's path segments reach, as a multiple of that
/// distance: 2.1 bridges the gap one held-out view leaves in a regular walk, and on a ring of
/// cameras round an object stops short of the chords that would cut through it.
pub const NEIGHBOUR_REACH: f32 = 2.1;
/// The most segments one camera starts.
pub const MAX_NEIGHBOURS: usize = 4;
/// The radius of the tube round a segment between two cameras, times the smaller of the two
/// cameras' nearest-neighbour distances: 0.12 catches the veil round a held-out view 0.1 of the
/// spacing off its neighbours' chord, and on a ring of eight cameras round an object leaves the
/// object out to 60% of the ring's radius (`clearance_tests.rs`). A camera alone has no tube.
pub const TUBE_RADIUS: f32 = 0.12;
/// A Gaussian's box covering more grid cells than this is tested against every segment.
const MAX_CELLS_PER_QUERY: i64 = 4096;

/// The camera path: segments between neighbouring training cameras, each with its tube's
/// radius, with a grid over them.
#[derive(Debug, Clone)]
pub struct CameraPath {
    segments: Vec<[[f32; 3]; 2]>,
    radii: Vec<f32>,
    cell: f32,
    grid: HashMap<[i32; 3], Vec<u32>>,
    /// Segments spanning too many cells to be listed in each: tested against every Gaussian.
    long: Vec<u32>,
}

impl CameraPath {
    /// The path through the camera centres `centres`, with tubes of [`TUBE_RADIUS`] (see the
    /// module's note).
    pub fn through(centres: &[[f32; 3]]) -> Self {
        Self::with_tube(centres, TUBE_RADIUS)
    }

    /// The path through `centres` with tubes of `tube` times the cameras' spacing (0: the
    /// segments alone).
    pub fn with_tube(centres: &[[f32; 3]], tube: f32) -> Self {
        let neighbours = crate::geometry::nearest_others(centres, MAX_NEIGHBOURS);
        let spacing = neighbours.spacings();
        let mut segments: Vec<[[f32; 3]; 2]> = centres.iter().map(|&c| [c, c]).collect();
        let mut radii = vec![0.0; segments.len()];
        let mut pairs = std::collections::BTreeSet::new();
        for (i, list) in neighbours.lists.iter().enumerate() {
            let Some(&(nearest, _)) = list.first() else {
                continue;
            };
            for &(_, j) in list
                .iter()
                .filter(|&&(d, _)| d <= NEIGHBOUR_REACH * nearest)
            {
                let j = j as usize;
                pairs.insert((i.min(j), i.max(j)));
            }
        }
        for (i, j) in pairs {
            segments.push([centres[i], centres[j]]);
            let nearer = spacing[i].unwrap_or(0.0).min(spacing[j].unwrap_or(0.0));
            radii.push((tube * nearer).max(0.0));
        }
        let cell = neighbours
            .median_spacing()
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(1.0);
        let mut grid: HashMap<[i32; 3], Vec<u32>> = HashMap::new();
        let mut long = Vec::new();
        for (index, (&[a, b], &radius)) in segments.iter().zip(&radii).enumerate() {
            let lo = cell_of(min3(a, b).map(|v| v - radius), cell);
            let hi = cell_of(max3(a, b).map(|v| v + radius), cell);
            match cell_count(lo, hi) > MAX_CELLS_PER_QUERY {
                true => long.push(index as u32),
                false => for_cells(lo, hi, |key| {
                    grid.entry(key).or_default().push(index as u32)
                }),
            }
        }
        Self {
            segments,
            radii,
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
    /// scales `scales` and rotation `rotation` (row-major, columns the axes), comes within a
    /// segment's tube (holds a point of a segment, for a camera alone).
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
        let thinnest = scales.iter().copied().fold(f32::INFINITY, f32::min);
        let lo = cell_of(mean.map(|m| m - reach), self.cell);
        let hi = cell_of(mean.map(|m| m + reach), self.cell);
        let hits = |index: usize| {
            let ([a, b], radius) = (self.segments[index], self.radii[index]);
            if segment_distance(mean, a, b) > reach + radius {
                return false;
            }
            let whitened = whitened_distance(mean, scales, rotation, a, b);
            if whitened <= sigmas {
                return true;
            }
            // The ellipsoid grown by the radius lies within the ellipsoid of
            // `sigmas + radius / thinnest` standard deviations.
            radius > 0.0
                && whitened <= sigmas + radius / thinnest.max(f32::MIN_POSITIVE)
                && segment_ellipsoid_distance(mean, scales, rotation, sigmas, a, b) <= radius
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

fn min3(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [0, 1, 2].map(|k| a[k].min(b[k]))
}

fn max3(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [0, 1, 2].map(|k| a[k].max(b[k]))
}

#[cfg(test)]
#[path = "clearance_tests.rs"]
mod tests;

//! Splitting the ground into blocks, and choosing each block's views (CityGaussian's and
//! VastGaussian's recipe):
//!
//! - **Cores**: `R` slabs along `u` holding equal numbers of camera centres (or sparse points,
//!   [`Balance`]), then `C` cells along `v` in each slab, again by quantiles. The outer cells are
//!   unbounded, so the cores tile the whole plane: every point of the world lies in exactly one.
//! - **Bounds**: each core widened by `margin` × its size on each bounded side (an unbounded side
//!   stays unbounded; the size of an outer cell is measured to the data's extent).
//! - **Views**: a view trains a block when its camera centre lies in the block's bounds, or when at
//!   least `visibility` of the core's sparse points project into its image (in front of the
//!   camera, inside the frame; occlusion is ignored). Test views are assigned by the same rule,
//!   for the block's own metrics.

use super::manifest::{Cell, GroundFrame};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::splat::Camera;
use serde::{Deserialize, Serialize};

/// What the quantile splits balance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Balance {
    /// Equal numbers of training cameras per core.
    #[default]
    Views,
    /// Equal numbers of sparse points per core (cameras when the dataset has no points).
    Points,
}

/// An `R×C` grid of blocks: `rows` slabs along `u`, `cols` cells along `v` in each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grid {
    /// Slabs along `u`.
    pub rows: usize,
    /// Cells along `v` per slab.
    pub cols: usize,
}

impl Grid {
    /// The number of blocks.
    pub fn blocks(self) -> usize {
        self.rows * self.cols
    }
}

impl std::str::FromStr for Grid {
    type Err = Error;

    fn from_str(text: &str) -> Result<Grid> {
        let bad = || Error::InvalidSetting {
            name: "blocks".into(),
            value: text.into(),
            expected: "RxC with R and C at least 1, e.g. 2x2 or 4x3".into(),
        };
        let (r, c) = text.split_once(['x', 'X', '×']).ok_or_else(bad)?;
        let rows: usize = r.trim().parse().map_err(|_| bad())?;
        let cols: usize = c.trim().parse().map_err(|_| bad())?;
        if rows == 0 || cols == 0 || rows * cols > MAX_BLOCKS {
            return Err(bad());
        }
        Ok(Grid { rows, cols })
    }
}

impl std::fmt::Display for Grid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}

/// The most blocks a plan may have.
pub const MAX_BLOCKS: usize = 4096;

/// How cells are widened and views chosen.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartitionSettings {
    /// Fraction of a cell's size added on each bounded side for its training bounds.
    pub margin: f64,
    /// Fraction of a core's sparse points a view must see to train the block from outside it.
    pub visibility: f64,
    /// What the splits balance.
    pub balance: Balance,
}

/// `--margin`'s default: a fifth of the cell's size on each bounded side.
pub const DEFAULT_MARGIN: f64 = 0.2;

/// `--visibility`'s default: a quarter of the core's sparse points.
pub const DEFAULT_VISIBILITY: f64 = 0.25;

impl Default for PartitionSettings {
    /// `partition`'s defaults: [`DEFAULT_MARGIN`], [`DEFAULT_VISIBILITY`], balanced view counts.
    fn default() -> Self {
        PartitionSettings {
            margin: DEFAULT_MARGIN,
            visibility: DEFAULT_VISIBILITY,
            balance: Balance::Views,
        }
    }
}

/// A block before its memory is estimated: indices into the dataset's train and test views.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockDraft {
    /// The owned cell.
    pub core: Cell,
    /// The training bounds.
    pub bounds: Cell,
    /// Training views (indices into `dataset.train`).
    pub views: Vec<usize>,
    /// Test views (indices into `dataset.test`).
    pub test_views: Vec<usize>,
    /// Sparse points inside the bounds.
    pub points: u64,
}

/// The axis-aligned extent (in ground coordinates) of a set of ground points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroundBox {
    /// Smallest `(u, v)`.
    pub min: [f64; 2],
    /// Largest `(u, v)`.
    pub max: [f64; 2],
}

impl GroundBox {
    /// The box around `coords` (a zero box at the origin when empty).
    pub fn around(coords: impl IntoIterator<Item = [f64; 2]>) -> GroundBox {
        let mut b = GroundBox {
            min: [f64::INFINITY; 2],
            max: [f64::NEG_INFINITY; 2],
        };
        for g in coords {
            b.min = [b.min[0].min(g[0]), b.min[1].min(g[1])];
            b.max = [b.max[0].max(g[0]), b.max[1].max(g[1])];
        }
        if b.min[0] > b.max[0] {
            b = GroundBox {
                min: [0.0; 2],
                max: [0.0; 2],
            };
        }
        b
    }
}

/// `parts - 1` split values that cut `values` into `parts` groups of (nearly) equal size: each the
/// midpoint between the last value of one group and the first of the next.
fn quantile_splits(values: &mut [f64], parts: usize) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    (1..parts)
        .map(|i| {
            let j = (i * n / parts).clamp(1, n.max(1));
            match (values.get(j - 1), values.get(j)) {
                (Some(a), Some(b)) => 0.5 * (a + b),
                (Some(a), None) => *a,
                _ => 0.0,
            }
        })
        .collect()
}

/// The cores of `grid` over `coords` (the ground positions being balanced), in slab-major order.
/// They tile the plane: every ground point lies in exactly one.
pub fn grid_cores(coords: &[[f64; 2]], grid: Grid) -> Vec<Cell> {
    let mut us: Vec<f64> = coords.iter().map(|g| g[0]).collect();
    let u_splits = quantile_splits(&mut us, grid.rows);
    let mut cells = Vec::with_capacity(grid.blocks());
    for r in 0..grid.rows {
        let u_min = r.checked_sub(1).map(|i| u_splits[i]);
        let u_max = u_splits.get(r).copied();
        let slab = Cell {
            u_min,
            u_max,
            ..Cell::default()
        };
        let mut vs: Vec<f64> = coords
            .iter()
            .filter(|g| slab.contains(**g))
            .map(|g| g[1])
            .collect();
        if vs.is_empty() {
            vs = coords.iter().map(|g| g[1]).collect();
        }
        let v_splits = quantile_splits(&mut vs, grid.cols);
        for c in 0..grid.cols {
            cells.push(Cell {
                u_min,
                u_max,
                v_min: c.checked_sub(1).map(|i| v_splits[i]),
                v_max: v_splits.get(c).copied(),
            });
        }
    }
    cells
}

/// `core` widened by `margin` × its size on each bounded side; the size of an unbounded side is
/// measured to `extent`.
pub fn expand(core: &Cell, margin: f64, extent: &GroundBox) -> Cell {
    let size_u = core.u_max.unwrap_or(extent.max[0]) - core.u_min.unwrap_or(extent.min[0]);
    let size_v = core.v_max.unwrap_or(extent.max[1]) - core.v_min.unwrap_or(extent.min[1]);
    let (du, dv) = (margin * size_u.max(0.0), margin * size_v.max(0.0));
    Cell {
        u_min: core.u_min.map(|b| b - du),
        u_max: core.u_max.map(|b| b + du),
        v_min: core.v_min.map(|b| b - dv),
        v_max: core.v_max.map(|b| b + dv),
    }
}

/// The fraction of `points` that project inside `camera`'s image, in front of it (0 for none).
pub fn visible_fraction(camera: &Camera, points: &[[f32; 3]]) -> f64 {
    if points.is_empty() {
        return 0.0;
    }
    let seen = points
        .iter()
        .filter(|&&p| {
            let [x, y, z] = camera.to_camera(p);
            if z <= camera.near.max(1e-6) {
                return false;
            }
            let px = camera.fx * x / z + camera.cx;
            let py = camera.fy * y / z + camera.cy;
            (0.0..camera.width as f32).contains(&px) && (0.0..camera.height as f32).contains(&py)
        })
        .count();
    seen as f64 / points.len() as f64
}

/// At most this many of a core's points are projected to test a view's visibility.
const VISIBILITY_SAMPLE: usize = 2048;

/// Every `len / VISIBILITY_SAMPLE`-th point (all when fewer).
fn sample(points: Vec<[f32; 3]>) -> Vec<[f32; 3]> {
    let stride = points.len().div_ceil(VISIBILITY_SAMPLE).max(1);
    points.into_iter().step_by(stride).collect()
}

/// Partitions `dataset` on `frame` into `grid` blocks.
pub fn partition_blocks(
    dataset: &Dataset,
    frame: &GroundFrame,
    grid: Grid,
    settings: &PartitionSettings,
) -> Vec<BlockDraft> {
    let ground = |c: &Camera| frame.ground(c.position());
    let cameras: Vec<[f64; 2]> = dataset.train.iter().map(|v| ground(&v.camera)).collect();
    let tests: Vec<[f64; 2]> = dataset.test.iter().map(|v| ground(&v.camera)).collect();
    let positions: &[[f32; 3]] = dataset.points.as_ref().map_or(&[], |p| &p.positions);
    let points: Vec<[f64; 2]> = positions.iter().map(|&p| frame.ground(p)).collect();
    let balanced = match settings.balance {
        Balance::Points if !points.is_empty() => &points,
        _ => &cameras,
    };
    let extent = GroundBox::around(cameras.iter().chain(&points).copied());
    grid_cores(balanced, grid)
        .into_iter()
        .map(|core| {
            let bounds = expand(&core, settings.margin, &extent);
            let core_points = sample(
                positions
                    .iter()
                    .zip(&points)
                    .filter(|(_, g)| core.contains(**g))
                    .map(|(p, _)| *p)
                    .collect(),
            );
            let belongs = |g: [f64; 2], camera: &Camera| {
                bounds.contains(g)
                    || (settings.visibility <= 1.0
                        && !core_points.is_empty()
                        && visible_fraction(camera, &core_points) >= settings.visibility)
            };
            let views = (0..cameras.len())
                .filter(|&i| belongs(cameras[i], &dataset.train[i].camera))
                .collect();
            let test_views = (0..tests.len())
                .filter(|&i| belongs(tests[i], &dataset.test[i].camera))
                .collect();
            BlockDraft {
                core,
                bounds,
                views,
                test_views,
                points: points.iter().filter(|g| bounds.contains(**g)).count() as u64,
            }
        })
        .collect()
}

/// The grids to try, fewest blocks first: for each count, the factorisation whose cells are
/// closest to square on `extent` (counts whose best cells are more than 3:1 are skipped).
pub fn candidate_grids(extent: &GroundBox) -> Vec<Grid> {
    let size = [
        (extent.max[0] - extent.min[0]).max(1e-9),
        (extent.max[1] - extent.min[1]).max(1e-9),
    ];
    (1..=MAX_BLOCKS)
        .filter_map(|count| {
            (1..=count)
                .filter(|r| count % r == 0)
                .map(|rows| Grid {
                    rows,
                    cols: count / rows,
                })
                .map(|g| {
                    let aspect = (size[0] / g.rows as f64) / (size[1] / g.cols as f64);
                    (g, aspect.ln().abs())
                })
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .filter(|&(g, skew)| g.blocks() <= 3 || skew <= 3f64.ln())
                .map(|(g, _)| g)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_parse_and_refuse_nonsense() {
        assert_eq!("2x3".parse::<Grid>().unwrap(), Grid { rows: 2, cols: 3 });
        for bad in ["", "2", "0x2", "2x", "ax2", "100x100"] {
            assert!(bad.parse::<Grid>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn quantile_splits_balance_counts() {
        let mut values: Vec<f64> = (0..10).map(f64::from).collect();
        assert_eq!(quantile_splits(&mut values, 2), vec![4.5]);
        assert_eq!(quantile_splits(&mut values, 1), Vec::<f64>::new());
    }

    #[test]
    fn candidate_grids_follow_the_extent() {
        let wide = GroundBox {
            min: [0.0, 0.0],
            max: [4.0, 1.0],
        };
        let grids = candidate_grids(&wide);
        assert_eq!(grids[0], Grid { rows: 1, cols: 1 });
        assert_eq!(grids[1], Grid { rows: 2, cols: 1 });
        assert!(grids.contains(&Grid { rows: 4, cols: 1 }));
    }
}

//! `PLAN/plan.json`: the manifest `wgsplat partition` writes and every other scale-out command
//! reads (training one block, merging, the engine files, the viewer's overlay).
//!
//! The manifest is versioned ([`PLAN_VERSION`]): a file of another version is refused with a
//! message that says which version it is and what to do, never half-read.

use crate::error::{Error, Result};
use crate::train::TrainConfig;
use crate::train::setup::BuiltinScene;
use glam::DVec3;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The manifest version this build writes and reads.
pub const PLAN_VERSION: u32 = 1;

/// The file name of the manifest inside a plan folder.
pub const PLAN_FILE: &str = "plan.json";

/// How the dataset is read, as `wgsplat partition` was told: every block reads it the same way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanData {
    /// The dataset folder (absolute), or `None` for a built-in scene.
    pub path: Option<PathBuf>,
    /// The built-in scene when `path` is `None`.
    pub builtin: BuiltinScene,
    /// The built-in scene's image side.
    pub builtin_resolution: u32,
    /// Image downscale factor (`-r`); `None` (not given) for the default, which loads images
    /// wider than 1600 px at 1600 px wide.
    #[serde(default)]
    pub resolution: Option<u32>,
    /// Whether test views are held out (`--eval`, or implied by the two below).
    pub eval: bool,
    /// `--test-every N`.
    pub test_every: Option<u64>,
    /// `--test-list FILE` (absolute).
    pub test_list: Option<PathBuf>,
    /// `--alpha-as-mask`.
    pub alpha_as_mask: bool,
    /// `--undistort`.
    #[serde(default)]
    pub undistort: bool,
}

/// The ground frame the partition is drawn in: world point `p` has ground coordinates
/// `((p - origin)·u, (p - origin)·v)` and height `(p - origin)·up`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroundFrame {
    /// A point on the ground plane (world).
    pub origin: [f64; 3],
    /// Unit vector along the ground's first axis.
    pub u: [f64; 3],
    /// Unit vector along the ground's second axis.
    pub v: [f64; 3],
    /// Unit up vector (`u × v`).
    pub up: [f64; 3],
}

impl GroundFrame {
    /// The ground coordinates `(u, v)` of a world point.
    pub fn ground(&self, p: [f32; 3]) -> [f64; 2] {
        let d = DVec3::from(p.map(f64::from)) - DVec3::from(self.origin);
        [d.dot(DVec3::from(self.u)), d.dot(DVec3::from(self.v))]
    }
}

/// A rectangle on the ground, `[u_min, u_max) × [v_min, v_max)`. A missing bound is unbounded
/// (the outer cells of a partition extend to infinity, so every point lies in exactly one core).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Lower bound on `u` (inclusive), or unbounded.
    pub u_min: Option<f64>,
    /// Upper bound on `u` (exclusive), or unbounded.
    pub u_max: Option<f64>,
    /// Lower bound on `v` (inclusive), or unbounded.
    pub v_min: Option<f64>,
    /// Upper bound on `v` (exclusive), or unbounded.
    pub v_max: Option<f64>,
}

impl Cell {
    /// Whether ground point `g` lies in the cell (lower bounds inclusive, upper exclusive).
    pub fn contains(&self, g: [f64; 2]) -> bool {
        self.u_min.is_none_or(|b| g[0] >= b)
            && self.u_max.is_none_or(|b| g[0] < b)
            && self.v_min.is_none_or(|b| g[1] >= b)
            && self.v_max.is_none_or(|b| g[1] < b)
    }
}

/// One block of a plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockPlan {
    /// The block's index (its task index in the job array).
    pub index: usize,
    /// The cell the block owns: the merge keeps the block's Gaussians whose centres lie in it.
    pub core: Cell,
    /// The core expanded by the margin: the block trains on, and keeps its Gaussians inside,
    /// these bounds.
    pub bounds: Cell,
    /// The training views' image names.
    pub views: Vec<String>,
    /// The test views scored in the block's own metrics (the same rule as the training views).
    pub test_views: Vec<String>,
    /// Sparse points inside `bounds`.
    pub points: u64,
    /// The block's cap on Gaussians (0: none), from `--memory-budget` or `--max-gaussians`.
    pub max_gaussians: u64,
    /// Estimated peak GPU memory of training the block (bytes), from the memory plan: at
    /// `max_gaussians` when capped, otherwise at [`super::create::DENSIFY_HEADROOM`] × `points`.
    pub estimated_peak_bytes: u64,
}

/// How the partition was drawn (recorded so a plan can be read back and drawn again).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartitionRecord {
    /// The grid of blocks.
    pub grid: super::partition::Grid,
    /// Margin, visibility threshold and balance.
    pub settings: super::partition::PartitionSettings,
    /// `--max-views-per-block`, when given.
    pub max_views_per_block: Option<usize>,
    /// `--memory-budget` in bytes, when given.
    pub memory_budget_bytes: Option<u64>,
}

impl PartitionRecord {
    /// The record of a fixed `grid` drawn with the default settings, no view limit and no budget.
    pub fn of_grid(grid: super::partition::Grid) -> Self {
        PartitionRecord {
            grid,
            settings: super::partition::PartitionSettings::default(),
            max_views_per_block: None,
            memory_budget_bytes: None,
        }
    }
}

/// `PLAN/plan.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanManifest {
    /// Always [`PLAN_VERSION`].
    pub version: u32,
    /// How the dataset is read.
    pub data: PlanData,
    /// The training configuration every block uses.
    pub config: TrainConfig,
    /// How the partition was drawn.
    pub partition: PartitionRecord,
    /// The ground frame the cells are drawn in.
    pub ground: GroundFrame,
    /// The blocks, in index order.
    pub blocks: Vec<BlockPlan>,
}

fn plan_error(path: &Path, detail: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        kind: "wgsplat plan".into(),
        message: detail.into(),
    }
}

impl PlanManifest {
    /// Reads `path` (a `plan.json`, or a plan folder holding one), refusing other versions.
    pub fn load(path: &Path) -> Result<PlanManifest> {
        let file = if path.is_dir() {
            path.join(PLAN_FILE)
        } else {
            path.to_path_buf()
        };
        let text =
            std::fs::read_to_string(&file).map_err(|e| crate::io::io_error(&file, "read", e))?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| plan_error(&file, format!("not JSON: {e}")))?;
        match value.get("version").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(PLAN_VERSION) => {}
            Some(v) => {
                return Err(plan_error(
                    &file,
                    format!(
                        "plan version {v}; this wgsplat reads version {PLAN_VERSION}: partition \
                         the scene again with this wgsplat"
                    ),
                ));
            }
            None => {
                return Err(plan_error(
                    &file,
                    "no \"version\" field: not a wgsplat plan",
                ));
            }
        }
        let plan: PlanManifest = serde_json::from_value(value)
            .map_err(|e| plan_error(&file, format!("unreadable: {e}")))?;
        for (i, block) in plan.blocks.iter().enumerate() {
            if block.index != i {
                return Err(plan_error(
                    &file,
                    format!("block {i} is recorded with index {}", block.index),
                ));
            }
        }
        Ok(plan)
    }

    /// Writes the manifest into `dir` as `plan.json`, atomically.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let file = dir.join(PLAN_FILE);
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| plan_error(&file, format!("does not serialise: {e}")))?;
        crate::io::write_atomically(&file, |w| {
            std::io::Write::write_all(w, &text).map_err(|e| crate::io::io_error(&file, "write", e))
        })
    }

    /// The block at `index`, or an error naming the valid range.
    pub fn block(&self, index: usize) -> Result<&BlockPlan> {
        self.blocks.get(index).ok_or_else(|| Error::InvalidSetting {
            name: "block".into(),
            value: index.to_string(),
            expected: format!("a block index in 0..{} of this plan", self.blocks.len()),
        })
    }
}

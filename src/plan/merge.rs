//! Merging a plan's blocks into one model: every block's outputs are verified first (a missing,
//! unfinished or damaged block is an error naming it, and nothing is written), then each block
//! contributes the Gaussians whose centres lie in its core cell. The cores tile the ground, so
//! every region of the world comes from exactly one block.

use super::manifest::PlanManifest;
use super::outputs::{MODEL_FILE, block_dir, verify_block};
use crate::error::{Error, Result};
use crate::io::formats::{ModelFormat, write_model};
use crate::io::{PlyModel, read_ply};
use crate::splat::reference::CpuGaussians;
use std::path::Path;

/// What one block contributed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockContribution {
    /// Gaussians in the block's model.
    pub trained: u64,
    /// Of those, the ones in its core, kept in the merged model.
    pub kept: u64,
}

/// What [`merge_plan`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct MergeReport {
    /// One entry per block, in index order.
    pub blocks: Vec<BlockContribution>,
    /// Gaussians in the merged model.
    pub total: u64,
    /// What the output format dropped (see [`write_model`]).
    pub dropped: Vec<String>,
}

fn append_row(to: &mut CpuGaussians, from: &CpuGaussians, i: usize) {
    to.means.push(from.means[i]);
    to.log_scales.push(from.log_scales[i]);
    to.quats.push(from.quats[i]);
    to.opacity_logits.push(from.opacity_logits[i]);
    to.sh.push(from.sh[i]);
}

/// Reads every block of the plan in `plan_dir` and keeps each block's core.
pub fn merged_model(plan_dir: &Path, plan: &PlanManifest) -> Result<(PlyModel, MergeReport)> {
    // Verify every block before reading any, so that a bad block fails fast and by name.
    for block in &plan.blocks {
        verify_block(&block_dir(plan_dir, block.index), block.index)?;
    }
    let mut merged = PlyModel {
        gaussians: CpuGaussians::default(),
        sh_degree: 0,
    };
    let mut blocks = Vec::with_capacity(plan.blocks.len());
    for block in &plan.blocks {
        let path = block_dir(plan_dir, block.index).join(MODEL_FILE);
        let model = read_ply(&path).map_err(|e| Error::PlanBlock {
            block: block.index,
            path: path.clone(),
            message: format!(
                "its model does not read ({e}); train it again with `wgsplat train --plan PLAN \
                 --block {}`",
                block.index
            ),
        })?;
        merged.sh_degree = merged.sh_degree.max(model.sh_degree);
        let g = &model.gaussians;
        let before = merged.gaussians.means.len();
        for (i, &mean) in g.means.iter().enumerate() {
            if block.core.contains(plan.ground.ground(mean)) {
                append_row(&mut merged.gaussians, g, i);
            }
        }
        blocks.push(BlockContribution {
            trained: g.means.len() as u64,
            kept: (merged.gaussians.means.len() - before) as u64,
        });
    }
    let total = merged.gaussians.means.len() as u64;
    Ok((
        merged,
        MergeReport {
            blocks,
            total,
            dropped: Vec::new(),
        },
    ))
}

/// Merges the plan in `plan_dir` into `out`, in `format` (default: by `out`'s extension).
/// Nothing is written unless every block is present, finished and intact.
pub fn merge_plan(
    plan_dir: &Path,
    plan: &PlanManifest,
    out: &Path,
    format: Option<ModelFormat>,
) -> Result<MergeReport> {
    let format = match format {
        Some(f) => f,
        None => ModelFormat::from_path(out)?,
    };
    let (model, mut report) = merged_model(plan_dir, plan)?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| crate::io::io_error(parent, "create", e))?;
    }
    report.dropped = write_model(out, format, &model)?;
    Ok(report)
}

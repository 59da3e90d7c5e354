//! Drawing a plan: the ground frame, the grid (given, or the fewest blocks that satisfy
//! `--max-views-per-block` and `--memory-budget`), each block's views, and its memory estimate
//! from the trainer's own memory plan ([`crate::train::budget`]).

use super::ground::fit_ground_frame;
use super::manifest::{BlockPlan, PLAN_VERSION, PartitionRecord, PlanData, PlanManifest};
use super::partition::{
    BlockDraft, Grid, GroundBox, PartitionSettings, candidate_grids, partition_blocks,
};
use crate::data::{Dataset, View};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::train::TrainConfig;
use crate::train::budget::{largest_count_within, planned_total_bytes};
use crate::train::image_cache::ImageCachePlan;

/// A block fits a memory budget when its cap holds at least this many times its initial points
/// (room to densify); an uncapped block's peak is estimated at this many times its points.
pub const DENSIFY_HEADROOM: u64 = 4;

/// How many blocks to make.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PartitionRequest {
    /// A fixed grid (`--blocks RxC`).
    pub grid: Option<Grid>,
    /// The most training views a block may have (`--max-views-per-block`).
    pub max_views_per_block: Option<usize>,
    /// The bytes each block may use (`--memory-budget`).
    pub memory_budget: Option<u64>,
    /// Margin, visibility and balance.
    pub settings: PartitionSettings,
}

/// The memory a block's training is planned to take: its cap and estimated peak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BlockMemory {
    max_gaussians: u64,
    peak: u64,
}

/// Plans one block's memory: the GPU cache of its training images (sized by the rule the trainer
/// uses, [`crate::train::budget::image_cache_slots`], under `budget`), plus the trainer's planned
/// bytes at its cap (the budget's largest count, or the configured cap) or, uncapped, at
/// [`DENSIFY_HEADROOM`] × its points.
fn block_memory(
    ctx: &GpuContext,
    views: &[&View],
    points: u64,
    config: &TrainConfig,
    budget: Option<u64>,
) -> BlockMemory {
    let sizes = views.iter().map(|v| (v.image.width, v.image.height));
    let cache = ImageCachePlan::for_views(ctx, sizes, budget, config.image_cache);
    let view_size = cache.slot_size;
    let degree = config.sh_degree;
    let moments = config.optimizer_state;
    let total = |n: u64| planned_total_bytes(ctx, n, degree, moments, &cache, view_size);
    let budget_cap = budget.map(|bytes| largest_count_within(bytes, total));
    let max_gaussians = match (budget_cap, config.max_gaussians) {
        (Some(b), 0) => b,
        (Some(b), c) => b.min(c),
        (None, c) => c,
    };
    let peak = if max_gaussians > 0 {
        total(max_gaussians)
    } else {
        total(DENSIFY_HEADROOM * points.max(1))
    };
    BlockMemory {
        max_gaussians,
        peak,
    }
}

/// Why `drafts` do not satisfy `request` (`None` when they do).
fn shortfall(drafts: &[(BlockDraft, BlockMemory)], request: &PartitionRequest) -> Option<String> {
    for (i, (draft, memory)) in drafts.iter().enumerate() {
        if draft.views.is_empty() {
            return Some(format!("block {i} has no training views"));
        }
        if let Some(max) = request.max_views_per_block
            && draft.views.len() > max
        {
            return Some(format!(
                "block {i} has {} training views (at most {max} asked)",
                draft.views.len()
            ));
        }
        if let Some(budget) = request.memory_budget
            && memory.max_gaussians < DENSIFY_HEADROOM * draft.points.max(1)
        {
            return Some(format!(
                "block {i} holds {} Gaussians in {budget} bytes, under {DENSIFY_HEADROOM} × its {} points",
                memory.max_gaussians, draft.points
            ));
        }
    }
    None
}

/// Partitions `dataset` (loaded as `data` says) into the blocks `request` asks for, each to be
/// trained with `config`.
pub fn plan_partition(
    ctx: &GpuContext,
    dataset: &Dataset,
    data: PlanData,
    mut config: TrainConfig,
    request: &PartitionRequest,
) -> Result<PlanManifest> {
    let positions: &[[f32; 3]] = dataset.points.as_ref().map_or(&[], |p| &p.positions);
    let cameras: Vec<_> = dataset.train.iter().map(|v| &v.camera).collect();
    let ground = fit_ground_frame(&cameras, positions)?;
    let draw = |grid: Grid| -> Vec<(BlockDraft, BlockMemory)> {
        partition_blocks(dataset, &ground, grid, &request.settings)
            .into_iter()
            .map(|draft| {
                let views: Vec<&View> = draft.views.iter().map(|&i| &dataset.train[i]).collect();
                let memory =
                    block_memory(ctx, &views, draft.points, &config, request.memory_budget);
                (draft, memory)
            })
            .collect()
    };
    let (grid, drafts) = match request.grid {
        Some(grid) => {
            let drafts = draw(grid);
            if let Some(why) = shortfall(&drafts, request) {
                return Err(Error::InvalidSetting {
                    name: "blocks".into(),
                    value: grid.to_string(),
                    expected: format!(
                        "a grid every block of which trains: {why}; choose fewer blocks (or \
                         more, for the budget), a larger --margin or a lower --visibility"
                    ),
                });
            }
            (grid, drafts)
        }
        None => {
            if request.max_views_per_block.is_none() && request.memory_budget.is_none() {
                return Err(Error::InvalidArgument {
                    op: "partition",
                    detail: "give --blocks RxC, --max-views-per-block N or --memory-budget \
                             BYTES to say how large a block may be"
                        .into(),
                });
            }
            let extent = GroundBox::around(
                dataset
                    .train
                    .iter()
                    .map(|v| ground.ground(v.camera.position()))
                    .chain(positions.iter().map(|&p| ground.ground(p))),
            );
            let mut last_why = String::new();
            let mut found = None;
            for grid in candidate_grids(&extent)
                .into_iter()
                .take_while(|g| g.blocks() <= dataset.train.len())
            {
                let drafts = draw(grid);
                match shortfall(&drafts, request) {
                    None => {
                        found = Some((grid, drafts));
                        break;
                    }
                    Some(why) => last_why = format!("with {grid} blocks, {why}"),
                }
            }
            found.ok_or_else(|| Error::InvalidArgument {
                op: "partition",
                detail: format!(
                    "no grid of blocks satisfies --max-views-per-block and --memory-budget ({last_why}); \
                     raise them, or give --blocks RxC"
                ),
            })?
        }
    };
    if config.save_every == 0 {
        // A requeued block resumes from its checkpoint: keep one every ~10% of the run.
        config.save_every = config.iterations.div_ceil(10).max(1);
    }
    let blocks = drafts
        .into_iter()
        .enumerate()
        .map(|(index, (draft, memory))| BlockPlan {
            index,
            core: draft.core,
            bounds: draft.bounds,
            views: draft
                .views
                .iter()
                .map(|&i| dataset.train[i].name.clone())
                .collect(),
            test_views: draft
                .test_views
                .iter()
                .map(|&i| dataset.test[i].name.clone())
                .collect(),
            points: draft.points,
            max_gaussians: memory.max_gaussians,
            estimated_peak_bytes: memory.peak,
        })
        .collect();
    Ok(PlanManifest {
        version: PLAN_VERSION,
        data,
        config,
        partition: PartitionRecord {
            grid,
            settings: request.settings,
            max_views_per_block: request.max_views_per_block,
            memory_budget_bytes: request.memory_budget,
        },
        ground,
        blocks,
    })
}

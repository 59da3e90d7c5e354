//! Training one block of a plan: its views, the sparse points inside its bounds, the plan's
//! settings, its Gaussians kept inside its bounds; a checkpoint every `save_every` iterations
//! and whenever it is asked to stop (a requeued task resumes from it, bit-exactly), and the
//! outputs written atomically with `done.json` last. A block already done is left as it is.

use super::manifest::{BlockPlan, PlanManifest};
use super::outputs::{
    CHECKPOINT_FILE, DONE_FILE, METRICS_FILE, MODEL_FILE, block_dir, verify_block, write_done,
};
use crate::data::{Dataset, PointCloud, View};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::io::checkpoint::load_checkpoint;
use crate::io::model::save_gpu_model_as_ply;
use crate::train::events::TrainEvent;
use crate::train::image_cache::ImageCachePlan;
use crate::train::init::initial_gaussians;
use crate::train::run::next_checkpoint_pause;
use crate::train::setup::{self, DataOptions, background_color};
use crate::train::{ScoredViews, Trainer};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// Loads the plan's dataset as `partition` read it.
pub fn load_plan_dataset(plan: &PlanManifest) -> Result<Dataset> {
    let d = &plan.data;
    let options = DataOptions {
        resolution: d.resolution,
        eval: d.eval,
        test_every: d.test_every.map(|n| n as usize),
        test_list: d.test_list.clone(),
        builtin: d.builtin,
        builtin_resolution: d.builtin_resolution,
        background: background_color(plan.config.background),
        alpha_as_mask: d.alpha_as_mask,
        undistort: d.undistort,
        host_image_budget: setup::default_host_image_budget(),
        progress: crate::data::LoadProgress::default(),
    };
    setup::load_dataset(d.path.as_deref(), &options)
}

/// The views of `dataset` named in `names`, in that order; a name the dataset lacks is an error
/// (the dataset changed since the plan was drawn).
fn pick_views(views: &[View], names: &[String], block: usize) -> Result<Vec<View>> {
    let by_name: std::collections::HashMap<&str, &View> =
        views.iter().map(|v| (v.name.as_str(), v)).collect();
    names
        .iter()
        .map(|name| {
            by_name
                .get(name.as_str())
                .map(|v| (*v).clone())
                .ok_or_else(|| Error::InvalidArgument {
                    op: "train --plan",
                    detail: format!(
                        "block {block} trains view {name:?}, which the dataset no longer has; \
                         partition the dataset again"
                    ),
                })
        })
        .collect()
}

/// Block `block`'s dataset: its training and test views, and the sparse points inside its
/// bounds.
pub fn block_dataset(dataset: &Dataset, plan: &PlanManifest, block: &BlockPlan) -> Result<Dataset> {
    let train = pick_views(&dataset.train, &block.views, block.index)?;
    let test = pick_views(&dataset.test, &block.test_views, block.index)?;
    let points = dataset.points.as_ref().map(|cloud| {
        let mut inside = PointCloud::default();
        for (p, c) in cloud.positions.iter().zip(&cloud.colors) {
            if block.bounds.contains(plan.ground.ground(*p)) {
                inside.positions.push(*p);
                inside.colors.push(*c);
            }
        }
        inside
    });
    let mut out = Dataset::new(train, test, points);
    out.notes.clone_from(&dataset.notes);
    Ok(out)
}

/// What [`train_block`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum BlockOutcome {
    /// The block was already done (its outputs verified); nothing ran.
    AlreadyDone,
    /// Training stopped at `iteration` ([`BlockStop::at`]), with a checkpoint to resume from.
    Stopped {
        /// The last iteration taken.
        iteration: u64,
    },
    /// Training was asked to stop ([`BlockStop::requested`], e.g. on a signal) and stopped after
    /// `iteration`, with a checkpoint to resume from (at the last iteration when the request came
    /// during the final evaluation: the resumed task only scores the block).
    Interrupted {
        /// The last iteration taken.
        iteration: u64,
    },
    /// The block finished: its outputs and `done.json` are written.
    Finished {
        /// Whether it continued from a checkpoint.
        resumed_from: Option<u64>,
        /// Gaussians in its model.
        gaussians: u64,
        /// Its metrics, as written to `metrics.json`.
        metrics: serde_json::Value,
    },
}

/// When [`train_block`] stops before its block is done, leaving a checkpoint to resume from.
#[derive(Clone, Copy, Default)]
pub struct BlockStop<'a> {
    /// Stop after this iteration (as a preempted task does).
    pub at: Option<u64>,
    /// Asked between steps: once it says `true`, training stops after the current step.
    pub requested: Option<&'a dyn Fn() -> bool>,
}

impl<'a> BlockStop<'a> {
    /// Runs to the end.
    pub fn never() -> Self {
        Self::default()
    }

    /// Stops after iteration `iteration`.
    pub fn at(iteration: u64) -> Self {
        Self {
            at: Some(iteration),
            requested: None,
        }
    }
}

/// Trains block `index` of the plan in `plan_dir` on `dataset` (the plan's dataset, see
/// [`load_plan_dataset`]), reporting through `sink`. `stop` says when to stop early: then the
/// block's checkpoint is written and training ends there. Returns what it did.
pub fn train_block(
    ctx: &GpuContext,
    plan_dir: &Path,
    plan: &PlanManifest,
    index: usize,
    dataset: &Dataset,
    stop: BlockStop<'_>,
    sink: &mut dyn FnMut(TrainEvent),
) -> Result<BlockOutcome> {
    let block = plan.block(index)?;
    let dir = block_dir(plan_dir, index);
    if dir.join(DONE_FILE).exists() {
        if verify_block(&dir, index).is_ok() {
            return Ok(BlockOutcome::AlreadyDone);
        }
        // Damaged outputs: train them again (from the checkpoint when there is one).
        let done = dir.join(DONE_FILE);
        std::fs::remove_file(&done).map_err(|e| crate::io::io_error(&done, "remove", e))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| crate::io::io_error(&dir, "create", e))?;
    let mut config = plan.config.clone();
    if block.max_gaussians > 0 {
        config.max_gaussians = block.max_gaussians;
    }
    let data = block_dataset(dataset, plan, block)?;
    // A block keeps only the Gaussians over its own ground (`keep_inside` below), so far-field
    // points would be dropped at its first refinement: it starts without them.
    config.sky_points = 0;
    // The image cache `partition` planned for the block: the budget's share (or --image-cache).
    if let Some(budget) = plan.partition.memory_budget_bytes {
        let sizes = data.train.iter().map(|v| (v.image.width, v.image.height));
        let cache = ImageCachePlan::for_views(ctx, sizes, Some(budget), config.image_cache);
        config.image_cache = Some(cache.bytes());
    }
    let checkpoint_path = dir.join(CHECKPOINT_FILE);
    let (mut trainer, resumed_from) = if checkpoint_path.is_file() {
        let checkpoint = load_checkpoint(ctx, &checkpoint_path)?;
        let from = checkpoint.iteration;
        (
            Trainer::resume(ctx, data, checkpoint, config.clone())?,
            Some(from),
        )
    } else {
        let params = initial_gaussians(ctx, &data, &config)?;
        (Trainer::new(ctx, data, params, config.clone())?, None)
    };
    let (ground, bounds) = (plan.ground, block.bounds);
    trainer.keep_inside(Arc::new(move |p| bounds.contains(ground.ground(p))));
    sink(TrainEvent::Log {
        message: trainer.image_cache().summary(),
    });
    if let Some(from) = resumed_from {
        sink(TrainEvent::Log {
            message: format!("block {index}: resuming from its checkpoint at iteration {from}"),
        });
    }
    let started = std::time::Instant::now();
    let first = trainer.iteration();
    let last = stop.at.unwrap_or(config.iterations).min(config.iterations);
    let save_every = config.save_every;
    let requested = stop.requested.unwrap_or(&|| false);
    while trainer.iteration() < last {
        let pause = next_checkpoint_pause(trainer.iteration(), last, save_every);
        trainer.run_until(pause, sink, requested)?;
        // Chunks end at multiples of save_every, at the stop, or where a stop was requested.
        if trainer.iteration() < config.iterations {
            trainer.save_checkpoint(&checkpoint_path, &json!({ "block": index }))?;
        }
        if trainer.iteration() < last && requested() {
            return Ok(BlockOutcome::Interrupted {
                iteration: trainer.iteration(),
            });
        }
    }
    if trainer.iteration() < config.iterations {
        return Ok(BlockOutcome::Stopped {
            iteration: trainer.iteration(),
        });
    }
    let seconds = started.elapsed().as_secs_f64();
    save_gpu_model_as_ply(
        ctx,
        trainer.params(),
        &dir.join(MODEL_FILE),
        Some(trainer.near_plane()),
    )?;
    let Some(scores) = trainer.evaluate_unless_stopped(requested)? else {
        // Asked to stop during the final evaluation (minutes on a large block): a checkpoint at
        // the last iteration lets the requeued task score the block without training it again.
        trainer.save_checkpoint(&checkpoint_path, &json!({ "block": index }))?;
        return Ok(BlockOutcome::Interrupted {
            iteration: trainer.iteration(),
        });
    };
    let test = scores.views == ScoredViews::Test;
    let report = ctx.memory_report();
    let metrics = json!({
        "block": index,
        "iterations": trainer.iteration(),
        "resumed_from": resumed_from,
        "seconds": seconds,
        "iterations_per_second": (trainer.iteration() - first) as f64 / seconds.max(1e-9),
        "gaussians": trainer.params().len(),
        "train_views": trainer.dataset().train.len(),
        "test_views": trainer.dataset().test.len(),
        "scored_views": scores.views.name(),
        "psnr": scores.psnr, "ssim": scores.ssim, "lpips": scores.lpips,
        "test_psnr": test.then_some(scores.psnr),
        "peak_gpu_total_bytes": report.total.peak_bytes,
        "estimated_peak_bytes": block.estimated_peak_bytes,
        "max_gaussians": config.max_gaussians,
        "image_cache": trainer.image_cache().metrics(),
    });
    let metrics_path = dir.join(METRICS_FILE);
    let text = serde_json::to_vec_pretty(&metrics).map_err(|e| Error::InvalidArgument {
        op: "train --plan",
        detail: format!("the metrics do not serialise: {e}"),
    })?;
    crate::io::write_atomically(&metrics_path, |w| {
        std::io::Write::write_all(w, &text)
            .map_err(|e| crate::io::io_error(&metrics_path, "write", e))
    })?;
    let gaussians = trainer.params().len();
    write_done(
        &dir,
        index,
        trainer.iteration(),
        gaussians,
        &[MODEL_FILE, METRICS_FILE],
    )?;
    // The checkpoint has served its purpose once the block is done.
    let _ = std::fs::remove_file(&checkpoint_path);
    Ok(BlockOutcome::Finished {
        resumed_from,
        gaussians,
        metrics,
    })
}

/// The block a task trains: `--block`, else `SLURM_ARRAY_TASK_ID`, else `JOB_COMPLETION_INDEX`
/// (Kubernetes Indexed Jobs), from `lookup` (the environment).
pub fn block_from_env(
    explicit: Option<usize>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<usize> {
    if let Some(k) = explicit {
        return Ok(k);
    }
    for name in ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"] {
        if let Some(value) = lookup(name) {
            return value.trim().parse().map_err(|_| Error::InvalidSetting {
                name: name.into(),
                value,
                expected: "a block index (a non-negative integer)".into(),
            });
        }
    }
    Err(Error::InvalidArgument {
        op: "train --plan",
        detail: "which block? give --block K, or run it as a Slurm array task \
                 (SLURM_ARRAY_TASK_ID) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX)"
            .into(),
    })
}

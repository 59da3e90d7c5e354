//! Checkpoints of a trainer and resuming from them. A checkpoint records the full
//! [`TrainConfig`] (with its seed) next to the model, the optimizer state, the densification
//! statistics, the iteration and the RNG. A resume whose configuration differs from the recorded
//! one in anything but [`RESUME_MAY_CHANGE`] is refused with the list of differences, because the
//! continued run would silently be neither the old run nor a new one.

use super::budget::MemoryPlan;
use super::config::TrainConfig;
use super::trainer::Trainer;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::io::checkpoint::{Checkpoint, TrainerState, save_trainer_checkpoint};

/// The key under which a checkpoint's `extra` JSON holds the [`TrainConfig`].
pub const CONFIG_KEY: &str = "train_config";

/// The key under which a checkpoint's `extra` JSON holds the iteration whose refinement has run
/// (see [`Trainer::last_refinement`]). A checkpoint without it was written by a build that
/// refined before saving, so its refinement has run through its own iteration.
pub const REFINED_THROUGH_KEY: &str = "refined_through";

/// The key under which a checkpoint's `extra` JSON holds the exposure transforms, their Adam
/// moments and step counts (training with `exposure`). JSON numbers written from f32 read back
/// to the same f32, so a resume continues bit for bit.
pub const EXPOSURE_KEY: &str = "exposure";

/// Settings a resume may change: the length of the run (its schedules stretch to the new
/// `iterations`, as `--stop-at` relies on), what is evaluated, saved or read back when, and how
/// many training images stay on the GPU, none of which changes a parameter, and the far-field
/// points, which only the start adds.
pub const RESUME_MAY_CHANGE: [&str; 9] = [
    "iterations",
    "eval_every",
    "save_every",
    "lpips",
    "loss_readback_every",
    "image_cache",
    "sky_points",
    "sky_radius",
    // The moments are converted (a packed state to f32 exactly, f32 to a packed state rounding to
    // nearest).
    "optimizer_state",
];

/// The settings in which `now` differs from `saved`, outside [`RESUME_MAY_CHANGE`], as
/// `name: saved → now` lines.
pub fn resume_conflicts(saved: &TrainConfig, now: &TrainConfig) -> Vec<String> {
    let as_map = |c: &TrainConfig| match serde_json::to_value(c) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let (saved, now) = (as_map(saved), as_map(now));
    saved
        .iter()
        .filter(|(name, _)| !RESUME_MAY_CHANGE.contains(&name.as_str()))
        .filter_map(|(name, old)| {
            let new = now.get(name).unwrap_or(&serde_json::Value::Null);
            (old != new).then(|| format!("{name}: {old} → {new}"))
        })
        .collect()
}

/// The configuration `checkpoint` was trained with (under [`CONFIG_KEY`]), or `None` for a
/// checkpoint written before checkpoints recorded it.
pub fn saved_config(checkpoint: &Checkpoint) -> Result<Option<TrainConfig>> {
    checkpoint
        .extra
        .get(CONFIG_KEY)
        .map(|saved| {
            serde_json::from_value(saved.clone()).map_err(|e| Error::InvalidArgument {
                op: "resume",
                detail: format!(
                    "the checkpoint's configuration is unreadable: {e}; the file is damaged or \
                     from another program, so resume from another checkpoint or train afresh"
                ),
            })
        })
        .transpose()
}

/// The Gaussian cap of a run resumed under a memory budget whose `plan` was made for the resume's
/// settings (its image cache and optimizer state may differ from the checkpoint's): the cap the
/// checkpoint `saved` was trained with, because the cap shapes densification and MCMC's growth,
/// so a new one would make the result neither run. `explicit` is the cap the options ask for
/// themselves (`--max-gaussians`, 0 for none).
///
/// Where the checkpoint had no cap, or `explicit` asks for a smaller one, this returns what the
/// budget gives a fresh run, and [`Trainer::resume`] refuses the difference. A plan that holds
/// fewer Gaussians than the saved cap is refused here, naming the smallest budget that holds it
/// with these settings ([`MemoryPlan::smallest_budget`]).
pub fn resumed_cap(
    ctx: &GpuContext,
    plan: &MemoryPlan,
    explicit: u64,
    saved: &TrainConfig,
) -> Result<u64> {
    let fresh = match explicit {
        0 => plan.max_gaussians,
        explicit => explicit.min(plan.max_gaussians),
    };
    let cap = saved.max_gaussians;
    if cap == 0 || (explicit != 0 && explicit < cap) {
        return Ok(fresh);
    }
    if plan.max_gaussians < cap {
        let smallest = plan.smallest_budget(ctx, cap);
        return Err(Error::InvalidArgument {
            op: "memory budget",
            detail: format!(
                "{} bytes hold at most {} Gaussians with this resume's settings (a GPU image \
                 cache of {} bytes, {} optimizer state), fewer than the {cap} Gaussians the \
                 checkpoint's run is capped at, which a resume keeps; raise --memory-budget to \
                 at least {smallest} bytes, or resume with the --image-cache and \
                 --optimizer-state the checkpoint was trained with",
                plan.budget,
                plan.max_gaussians,
                plan.images,
                plan.moments.name(),
            ),
        });
    }
    Ok(cap)
}

impl Trainer {
    /// Writes a checkpoint of everything a resume needs (parameters, Adam state, densification
    /// statistics, iteration, RNG, and the configuration under [`CONFIG_KEY`] in `extra`, next
    /// to the caller's fields), atomically; non-finite parameters are refused, leaving the
    /// previous file in place.
    pub fn save_checkpoint(&self, path: &std::path::Path, extra: &serde_json::Value) -> Result<()> {
        let mut fields = match extra {
            serde_json::Value::Object(map) => map.clone(),
            serde_json::Value::Null => serde_json::Map::new(),
            other => serde_json::Map::from_iter([("extra".to_owned(), other.clone())]),
        };
        let config = serde_json::to_value(&self.config).map_err(|e| Error::InvalidArgument {
            op: "save_checkpoint",
            detail: format!("the configuration does not serialise: {e}"),
        })?;
        fields.insert(CONFIG_KEY.to_owned(), config);
        fields.insert(REFINED_THROUGH_KEY.to_owned(), self.refined_through.into());
        if let Some(exposure) = &self.exposure {
            let (transforms, moments) = exposure.read(&self.ctx)?;
            fields.insert(
                EXPOSURE_KEY.to_owned(),
                serde_json::json!({
                    "transforms": transforms,
                    "moments": moments,
                    "steps": exposure.steps,
                }),
            );
        }
        if let Some(poses) = &self.poses {
            fields.insert(super::pose::POSE_KEY.to_owned(), poses.to_json());
        }
        save_trainer_checkpoint(
            &self.ctx,
            path,
            &self.state.params,
            &self.state.optimizer,
            TrainerState {
                iteration: self.iteration,
                rng_state: self.rng_state,
                densify_stats: Some(&self.state.stats),
                extra: &serde_json::Value::Object(fields),
                require_finite: true,
            },
        )
    }

    /// A trainer continuing from a checkpoint. With the densification statistics in the
    /// checkpoint (as [`Trainer::save_checkpoint`] writes them) it continues exactly as the
    /// uninterrupted run would, wherever the kernels themselves are deterministic. A checkpoint
    /// that records its configuration is refused when `config` differs from it outside
    /// [`RESUME_MAY_CHANGE`]; the error lists every difference.
    pub fn resume(
        ctx: &GpuContext,
        dataset: Dataset,
        checkpoint: Checkpoint,
        mut config: TrainConfig,
    ) -> Result<Self> {
        if let Some(saved) = saved_config(&checkpoint)? {
            // The near plane the run used, unless the options name one (a different one is
            // refused below).
            config.near_plane = config.near_plane.or(saved.near_plane);
            let conflicts = resume_conflicts(&saved, &config);
            if !conflicts.is_empty() {
                return Err(Error::InvalidSetting {
                    name: "resume".into(),
                    value: conflicts.join(", "),
                    expected: format!(
                        "the settings the checkpoint was trained with (only {} may change); \
                         give the same options, or train afresh without --resume",
                        RESUME_MAY_CHANGE.join(", ")
                    ),
                });
            }
        }
        let refined_through = match checkpoint.extra.get(REFINED_THROUGH_KEY) {
            None => checkpoint.iteration,
            Some(value) => value
                .as_u64()
                .filter(|&k| k <= checkpoint.iteration)
                .ok_or_else(|| Error::InvalidArgument {
                    op: "resume",
                    detail: format!(
                        "the checkpoint's {REFINED_THROUGH_KEY} is {value}, not an iteration at \
                         most its own ({}); the file is damaged, so resume from another \
                         checkpoint or train afresh",
                        checkpoint.iteration
                    ),
                })?,
        };
        let Checkpoint {
            params,
            optimizer,
            iteration,
            rng_state,
            densify_stats,
            extra,
            ..
        } = checkpoint;
        let storage = config.optimizer_state;
        let mut trainer = Trainer::new(ctx, dataset, params, config)?;
        trainer.state.optimizer = optimizer.converted(ctx, storage)?;
        if let Some(stats) = densify_stats {
            trainer.state.stats = stats;
        }
        trainer.iteration = iteration;
        trainer.rng_state = rng_state;
        trainer.refined_through = refined_through;
        if trainer.exposure.is_some() {
            trainer.exposure = Some(restore_exposure(ctx, &extra, trainer.dataset.train.len())?);
        }
        if trainer.poses.is_some() {
            let views = trainer.dataset.train.len();
            trainer.poses = Some(super::pose::PoseState::from_checkpoint(&extra, views)?);
        }
        Ok(trainer)
    }
}

/// The exposure state a checkpoint's `extra` holds under [`EXPOSURE_KEY`].
fn restore_exposure(
    ctx: &GpuContext,
    extra: &serde_json::Value,
    views: usize,
) -> Result<crate::loss::exposure::ExposureState> {
    let damaged = |what: &str| Error::InvalidArgument {
        op: "resume",
        detail: format!(
            "the checkpoint was trained with exposure compensation but its {EXPOSURE_KEY}.{what} is missing or \
             damaged; resume from another checkpoint or train afresh"
        ),
    };
    let section = extra.get(EXPOSURE_KEY).ok_or_else(|| damaged("section"))?;
    let floats = |name: &str| -> Result<Vec<f32>> {
        section
            .get(name)
            .and_then(|v| serde_json::from_value::<Vec<f32>>(v.clone()).ok())
            .ok_or_else(|| damaged(name))
    };
    let steps: Vec<u64> = section
        .get("steps")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .ok_or_else(|| damaged("steps"))?;
    if steps.len() != views {
        return Err(Error::InvalidArgument {
            op: "resume",
            detail: format!(
                "the checkpoint has exposure transforms for {} training views, the dataset has {views}; \
                 resume with the dataset and split it was trained on",
                steps.len()
            ),
        });
    }
    let mut enc = ctx.encoder("resume exposure");
    let state = crate::loss::exposure::ExposureState::from_host(
        &mut enc,
        &floats("transforms")?,
        &floats("moments")?,
        steps,
    )?;
    ctx.submit(enc)?;
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_damaged_exposure_section_is_refused_with_what_is_wrong() {
        let ctx = crate::testing::both_paths()[1];
        let ok = |views: usize| {
            json!({"exposure": {
                "transforms": vec![0.5f32; 12 * views],
                "moments": vec![0.0f32; 24 * views],
                "steps": vec![3u64; views],
            }})
        };
        let cases = [
            (json!({}), "exposure.section"),
            (
                json!({"exposure": {"transforms": "NaN", "moments": [], "steps": [1, 2]}}),
                "exposure.transforms",
            ),
            (
                json!({"exposure": {"transforms": [1.0], "moments": [0.0], "steps": [-1]}}),
                "exposure.steps",
            ),
            (ok(3), "3 training views, the dataset has 2"),
            (
                json!({"exposure": {"transforms": [1.0], "moments": [0.0], "steps": [1, 2]}}),
                "2 views need 24",
            ),
        ];
        for (extra, expected) in cases {
            let err = restore_exposure(ctx, &extra, 2)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(expected), "{extra}: {err}");
        }
        let state = restore_exposure(ctx, &ok(2), 2).unwrap();
        assert_eq!(state.steps, [3, 3]);
        assert_eq!(state.read(ctx).unwrap().0, vec![0.5f32; 24]);
    }
}

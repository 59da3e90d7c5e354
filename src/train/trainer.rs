//! The trainer: one object holding the model, its gradients, the optimizer and the dataset's
//! training images (in host memory, streamed to the GPU through a bounded [`ImageCache`]),
//! advancing one iteration at a time.
//!
//! Per iteration: pick a training view (a fresh shuffled order each epoch), render, compute the
//! fused L1 + D-SSIM loss and its image gradient, run the rasterizer's backward pass (which also
//! accumulates the densification statistics), and take one fused Adam step per parameter group.
//! The only CPU round trips are the forward pass's 8-byte size readback and, every
//! `loss_readback_every` iterations, the loss.

mod refine;
mod step;
mod views;

use refine::step_info;
use views::check_views_fit_one_binding;
pub use views::view_loss_options;

use super::config::TrainConfig;
use super::events::Evaluation;
use super::image_cache::{ImageCache, ImageCachePlan};
use super::profile::{Stage, StageProfile};
use super::state::ModelState;
use super::strategy::{self, RefinementReport, Strategy};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::gpu::Encoder;
use crate::gpu::{GpuContext, MemoryCategory};
use crate::loss::lpips::Lpips;
use crate::loss::{LossOptions, loss_and_grad};
use crate::optim::schedule::{ExponentialDecay, LearningRateSchedule};
use crate::optim::{AdamConfig, GaussianOptimizer};
use crate::splat::forward::{RenderOptions, record_binning, record_projection, record_raster};
use crate::splat::{Camera, GaussianTensors};
use crate::tensor::{DType, Tensor, TensorReadback};

/// A model being trained.
pub struct Trainer {
    pub(crate) ctx: GpuContext,
    pub(crate) config: TrainConfig,
    pub(crate) dataset: Dataset,
    /// The training images on the GPU: a bounded cache, filled on first use.
    pub(crate) image_cache: ImageCache,
    /// Parameters, gradients, moments and statistics.
    pub(crate) state: ModelState,
    /// How the Gaussian set changes (from `config.strategy`).
    strategy: Box<dyn Strategy>,
    /// What the strategy did at the start of the latest step (the refinement due after the
    /// iteration before it).
    last_refinement: RefinementReport,
    /// The iteration whose refinement has been run (or found not due): refinement after
    /// iteration `k` runs at the start of step `k + 1`, when `refined_through < k`.
    pub(crate) refined_through: u64,
    schedule: LearningRateSchedule,
    pub(crate) iteration: u64,
    pub(crate) rng_state: u64,
    profile: Option<StageProfile>,
    /// The evaluation due at the iteration just taken (`eval_every`), made before that
    /// iteration's densification or opacity reset, as INRIA reports; `run_until` emits it.
    pub(crate) due_evaluation: Option<Evaluation>,
    /// The LPIPS network, uploaded at the first evaluation that scores LPIPS.
    pub(crate) lpips: std::cell::OnceCell<Lpips>,
    /// The region the Gaussians are kept in (see [`Trainer::keep_inside`]).
    keep_inside: Option<super::bounds::KeepInside>,
    /// The path between the training cameras kept clear (`config.path_clearance`).
    pub(crate) camera_path: Option<super::clearance::CameraPath>,
    /// The training views' learned colour transforms (`config.exposure`).
    pub(crate) exposure: Option<crate::loss::exposure::ExposureState>,
    /// The training views' learned pose corrections (`config.pose_opt`).
    pub(crate) poses: Option<super::pose::PoseState>,
    /// The pixel rays of the depth–normal regulariser (`config.depth_normal`).
    geometry_rays: super::geometry::RayCache,
}

/// The training loss of one iteration, read back a few iterations later (see [`Trainer::step`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossReport {
    /// The iteration the loss belongs to.
    pub iteration: u64,
    /// Its image loss, `(1 - λ)·L1 + λ·(1 - SSIM)` (the MCMC regularisers add to the gradients
    /// only).
    pub loss: f32,
    /// PSNR of that iteration's render against its training view.
    pub train_psnr: f32,
}

impl Trainer {
    /// A trainer over `dataset`, starting from `params` (see [`super::init::initial_gaussians`]).
    /// Every view is drawn with the near plane `config.near_plane` (the dataset's default when
    /// `None`), which [`Trainer::config`] then records.
    pub fn new(
        ctx: &GpuContext,
        mut dataset: Dataset,
        params: GaussianTensors,
        mut config: TrainConfig,
    ) -> Result<Self> {
        config.validate_for_training()?;
        let near = config
            .near_plane
            .unwrap_or_else(|| dataset.default_near_plane());
        dataset.set_near_plane(near);
        config.near_plane = Some(near);
        if dataset.train.is_empty() {
            return Err(Error::InvalidArgument {
                op: "train",
                detail: "the dataset has no training views".into(),
            });
        }
        if config.prune_min_views as usize > dataset.train.len() {
            return Err(Error::InvalidArgument {
                op: "train",
                detail: format!(
                    "--prune-min-views {} is more than the {} training cameras: no Gaussian could stay; \
                     give at most {} (2 or 3 removes floaters)",
                    config.prune_min_views,
                    dataset.train.len(),
                    dataset.train.len()
                ),
            });
        }
        check_views_fit_one_binding(ctx, &dataset)?;
        let sizes = dataset
            .train
            .iter()
            .map(|v| (v.image.width, v.image.height));
        let image_cache = ImageCache::new(ImageCachePlan::for_views(
            ctx,
            sizes,
            None,
            config.image_cache,
        ));
        let mut enc = ctx.encoder("trainer setup");
        let state = ModelState::new(
            &mut enc,
            params,
            AdamConfig {
                eps: config.adam_eps,
                moments: config.optimizer_state,
                ..AdamConfig::default()
            },
        )?;
        let exposure = match config.exposure {
            true => Some(crate::loss::exposure::ExposureState::identity(
                &mut enc,
                dataset.train.len(),
            )?),
            false => None,
        };
        ctx.submit(enc)?;
        let poses = config
            .pose_opt
            .then(|| super::pose::PoseState::identity(dataset.train.len()));
        let extent = f64::from(dataset.extent);
        let mut schedule = LearningRateSchedule::three_dgs(extent, config.iterations);
        schedule.means = ExponentialDecay {
            lr_init: config.position_lr_init * extent,
            lr_final: config.position_lr_final * extent,
            delay_steps: 0,
            delay_mult: 0.01,
            max_steps: config.iterations,
        };
        schedule.log_scales = config.scale_lr;
        schedule.quats = config.rotation_lr;
        schedule.opacity_logits = config.opacity_lr;
        schedule.sh_dc = config.sh_dc_lr;
        schedule.sh_rest = config.sh_rest_lr;
        let keep_inside = super::bounds::configured_region(&config, &dataset);
        let camera_path = (config.path_clearance > 0.0).then(|| {
            let centres: Vec<[f32; 3]> =
                dataset.train.iter().map(|v| v.camera.position()).collect();
            super::clearance::CameraPath::through(&centres)
        });
        Ok(Trainer {
            ctx: ctx.clone(),
            rng_state: config.seed,
            strategy: strategy::for_kind(config.strategy),
            last_refinement: RefinementReport::default(),
            refined_through: 0,
            config,
            dataset,
            image_cache,
            state,
            schedule,
            iteration: 0,
            profile: None,
            due_evaluation: None,
            lpips: std::cell::OnceCell::new(),
            keep_inside,
            camera_path,
            exposure,
            poses,
            geometry_rays: Default::default(),
        })
    }

    /// Keeps the model inside a region: after every refinement that changes the Gaussian set,
    /// the Gaussians whose centre `inside` rejects are dropped (a scale-out block keeps to its
    /// bounds). Deterministic, so a resumed run drops exactly what the uninterrupted one does.
    /// A region already kept (the configuration's crop box or visibility) is kept as well.
    pub fn keep_inside(&mut self, inside: super::bounds::KeepInside) {
        self.keep_inside = Some(match self.keep_inside.take() {
            Some(earlier) => std::sync::Arc::new(move |p| earlier(p) && inside(p)),
            None => inside,
        });
    }

    /// The learned pose corrections (`None` without pose refinement).
    pub fn poses(&self) -> Option<&super::pose::PoseState> {
        self.poses.as_ref()
    }

    /// The current parameters.
    pub fn params(&self) -> &GaussianTensors {
        &self.state.params
    }

    /// What the training strategy did at the start of the latest step: the refinement
    /// (densification, opacity reset, MCMC relocation and growth) due after the iteration before
    /// it. It waits for that step so that the model between steps is always the optimizer's.
    pub fn last_refinement(&self) -> RefinementReport {
        self.last_refinement
    }

    /// The parameters with their gradients, moments and statistics.
    pub fn state(&self) -> &ModelState {
        &self.state
    }

    /// Iterations completed.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// The configuration.
    pub fn config(&self) -> &TrainConfig {
        &self.config
    }

    /// The near plane every view is drawn with (`config().near_plane`, resolved).
    pub fn near_plane(&self) -> f32 {
        self.config.near_plane.unwrap_or(crate::data::DEFAULT_NEAR)
    }

    /// The dataset.
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }

    /// The GPU cache of training images: its size and what it did.
    pub fn image_cache(&self) -> &ImageCache {
        &self.image_cache
    }

    /// The GPU context.
    pub fn ctx(&self) -> &GpuContext {
        &self.ctx
    }

    /// The SH degree in use at the current iteration.
    pub fn active_sh_degree(&self) -> u32 {
        ((self.iteration / self.config.sh_degree_interval) as u32)
            .min(self.config.sh_degree)
            .min(self.state.params.max_sh_degree())
    }

    /// The densification statistics accumulated since the last densification step, `[N, 4]`:
    /// screen-space gradient-norm sum, absgrad-norm sum, views seen, largest screen radius (px).
    /// Tests write them to drive [`Trainer::densify_now`].
    pub fn densification_stats(&self) -> &Tensor {
        &self.state.stats
    }

    /// The optimizer.
    pub fn optimizer(&self) -> &GaussianOptimizer {
        &self.state.optimizer
    }

    /// The RNG state of the last iteration (stored in checkpoints).
    pub fn rng_state(&self) -> u64 {
        self.rng_state
    }
}

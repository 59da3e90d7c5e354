//! Training configuration: the 3DGS defaults, overridable from a JSON config file and the CLI.

use crate::error::{Error, Result};
use crate::splat::RasterMode;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Far-field directions on the sky sphere (about 2 degrees apart) that `wgsplat train` and the
/// viewer ask for on a dataset read from disk ([`TrainConfig::sky_points`] itself defaults to 0).
pub const DEFAULT_SKY_POINTS: usize = 10_000;
/// Most far-field directions a configuration may ask for.
pub const MAX_SKY_POINTS: usize = 1_000_000;
/// The opacity below which `wgsplat train` and the viewer prune Gaussians of a dataset read from
/// disk with the default strategy: 3DGS's 0.005, as [`TrainConfig::prune_opacity`]. Splatfacto's
/// and OpenSplat's 0.1 led on Sceaux at 1,000 iterations (+0.44 dB over five seeds) but not past
/// them: at 2,000 iterations 0.005 leads on duck_colmap (+0.62 dB), Sceaux (+0.31 dB) and
/// monstree (+0.05 dB), two seeds each, and in SSIM and LPIPS on all three; at 7,000 on
/// duck_colmap (+0.26 dB, two seeds) (docs/measurements.md). `--prune-opacity 0.1` is
/// splatfacto's.
pub const CAPTURE_PRUNE_OPACITY: f32 = 0.005;

/// [`TrainConfig::path_clearance`] of a capture trained with the default strategy: the
/// Gaussians whose ellipsoid of 3 standard deviations comes within the tube round the path
/// between neighbouring training cameras ([`super::clearance::TUBE_RADIUS`]) are pruned. On Sceaux and monstree it prunes nothing and scores the same
/// (docs/measurements.md); on a veil grown round a held-out view it lifts that view from 6.4 to
/// 21.0 dB (`tests/suite/train/clearance.rs`).
pub const CAPTURE_PATH_CLEARANCE: f32 = 3.0;
/// The opacity learning rate `wgsplat train` and the viewer use for a dataset read from disk with
/// the default strategy: INRIA's 0.025 ([`TrainConfig::opacity_lr`] itself keeps gsplat's 0.05).
/// With splatfacto's pruning (0.1) it raised Sceaux's mean test PSNR over five seeds at 1,000
/// iterations from 14.65 to 14.80 dB and kept monstree level; at 2,000 iterations on duck_colmap
/// it leads with 3DGS's pruning (39.47 against 39.33 dB) and with splatfacto's (38.85 against
/// 38.50). At 2,000 iterations with 3DGS's pruning, over two seeds, monstree favours it by
/// 0.16 dB and Sceaux favours 0.05 by 1.05 dB (docs/measurements.md).
pub const CAPTURE_OPACITY_LR: f64 = 0.025;

/// Background behind the splats (and behind RGBA ground truth).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Background {
    /// Black.
    Black,
    /// White.
    White,
    /// A new random colour every iteration (evaluation uses black).
    Random,
    /// A fixed colour.
    Color([f32; 3]),
}

/// How the Gaussian set changes during training.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StrategyKind {
    /// 3DGS's adaptive density control: clone, split, prune and opacity resets.
    #[default]
    Default,
    /// 3DGS-MCMC: dead Gaussians are relocated onto live ones, the set grows by `mcmc_growth` per
    /// refinement up to `max_gaussians` (required), the means get opacity-gated noise, and the
    /// opacity and scale regularisers are added to the loss.
    Mcmc,
}

impl std::str::FromStr for StrategyKind {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "default" | "3dgs" => Ok(StrategyKind::Default),
            "mcmc" => Ok(StrategyKind::Mcmc),
            other => Err(Error::InvalidArgument {
                op: "strategy",
                detail: format!("unknown strategy {other:?}: use default or mcmc"),
            }),
        }
    }
}

/// Every training setting. Field defaults are the 3DGS reference recipe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Iterations to run.
    pub iterations: u64,
    /// Position learning rate at the start, times the scene extent.
    pub position_lr_init: f64,
    /// Position learning rate at the end, times the scene extent.
    pub position_lr_final: f64,
    /// SH DC learning rate.
    pub sh_dc_lr: f64,
    /// SH rest learning rate.
    pub sh_rest_lr: f64,
    /// Opacity learning rate (on the logits). 0.05 as gsplat and OpenSplat; INRIA now uses 0.025.
    /// Measured with 3DGS's pruning opacity, 0.05 against 0.025: duck_colmap, NeRF split, 2,000
    /// iterations at 256², test PSNR 35.10 against 32.38 dB (13,348 against 16,531 Gaussians);
    /// the built-in scene's recipe, 28.51 against 28.14 dB. On captures 0.025 is better (at
    /// 2,000 iterations on duck_colmap by 0.14 dB at 3DGS's pruning opacity and 0.35 dB at
    /// splatfacto's), and `wgsplat train` uses it for them ([`CAPTURE_OPACITY_LR`]).
    pub opacity_lr: f64,
    /// Scale learning rate.
    pub scale_lr: f64,
    /// Rotation learning rate.
    pub rotation_lr: f64,
    /// Adam epsilon.
    pub adam_eps: f64,
    /// How Adam's moments are stored: packed into one word (4 B per parameter, the default) or f32
    /// (8 B), `--optimizer-state`.
    pub optimizer_state: crate::optim::MomentStorage,
    /// Largest SH degree.
    pub sh_degree: u32,
    /// Raise the active SH degree by one every this many iterations.
    pub sh_degree_interval: u64,
    /// λ of the D-SSIM term.
    pub ssim_weight: f32,
    /// Background.
    pub background: Background,
    /// Densify every this many iterations...
    pub densify_every: u64,
    /// ...from this iteration...
    pub densify_from: u64,
    /// ...until this one.
    pub densify_until: u64,
    /// Screen-space gradient threshold (gsplat's units).
    pub densify_grad_threshold: f32,
    /// Select Gaussians for densification by the mean norm of their per-pixel absolute
    /// gradients ("absgrad", gsplat's `absgrad=True`, from AbsGS) instead of the norm of the
    /// summed gradient; the threshold is then `absgrad_threshold`.
    pub absgrad: bool,
    /// The densification threshold with `absgrad` (gsplat's units; gsplat uses 0.0008).
    pub absgrad_threshold: f32,
    /// Gaussians larger than this fraction of the extent are split, smaller ones cloned.
    pub percent_dense: f32,
    /// Prune below this opacity (MCMC: relocate Gaussians at or below it). An opacity reset
    /// clamps opacities to twice this, gsplat's rule: 3DGS's 0.01 at its 0.005, splatfacto's 0.2 at
    /// its 0.1, so a reset never leaves the model under the pruning threshold.
    pub prune_opacity: f32,
    /// After the first opacity reset, prune Gaussians whose screen radius (largest over the views
    /// since the last densification, pixels) exceeds this; 0 disables the test, the default. As
    /// gsplat (`refine_scale2d_stop_iter = 0`, citing INRIA issue #123): in INRIA's code the test
    /// never fires (the radii are zeroed before the prune), so 3DGS trains without it; 20 is the
    /// value INRIA's code names.
    pub prune_screen_radius: f32,
    /// Reset opacities every this many iterations.
    pub opacity_reset_every: u64,
    /// Upper bound on the number of Gaussians (0 = none; MCMC needs one).
    pub max_gaussians: u64,
    /// Densification strategy.
    pub strategy: StrategyKind,
    /// MCMC: refinements (relocation and growth) run every `densify_every` iterations from
    /// `densify_from` until this iteration.
    pub mcmc_refine_until: u64,
    /// MCMC: growth per refinement, as a fraction of the current count.
    pub mcmc_growth: f64,
    /// MCMC: position noise, times the position learning rate.
    pub mcmc_noise_lr: f64,
    /// MCMC: weight of the mean-opacity regulariser.
    pub mcmc_opacity_reg: f32,
    /// MCMC: weight of the mean-scale regulariser.
    pub mcmc_scale_reg: f32,
    /// Weight of the flattening regulariser, λ · mean shortest scale (0 = off; `--geometry`
    /// turns it on, see [`super::geometry`]).
    pub flatten: f32,
    /// Weight of the depth–normal consistency regulariser (0 = off; see
    /// [`crate::loss::geometry`]).
    pub depth_normal: f32,
    /// Weight of the depth distortion regulariser (0 = off; see [`crate::loss::geometry`]).
    pub distortion: f32,
    /// The iteration from which the depth–normal and distortion regularisers apply (the model
    /// needs a rough surface before its depths say anything); `None`: a fifth of `iterations`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geometry_from: Option<u64>,
    /// Read the loss back every this many iterations (the only per-iteration CPU round trip).
    pub loss_readback_every: u64,
    /// Evaluate on the test views every this many iterations (0 = only at the end).
    pub eval_every: u64,
    /// Score LPIPS (AlexNet) at evaluations, besides PSNR and SSIM.
    pub lpips: bool,
    /// Classic 3DGS splats or gsplat's antialiased mode, in training and evaluation.
    pub raster_mode: RasterMode,
    /// Save a checkpoint every this many iterations (0 = never).
    pub save_every: u64,
    /// Exposure compensation: a learned affine colour transform per training image, applied to
    /// the render before the loss; evaluation then fits each test view's transform on its left
    /// half and scores the right half (INRIA's `--train_test_exp` protocol).
    pub exposure: bool,
    /// The transforms' learning rate at the start (decaying exponentially to
    /// `exposure_lr_final` at the last iteration, as INRIA's).
    pub exposure_lr_init: f64,
    /// The transforms' learning rate at the last iteration.
    pub exposure_lr_final: f64,
    /// Camera pose refinement: a learned rigid correction per training view (a shift and a
    /// rotation in camera coordinates), stepped by Adam from the projection's gradients, as
    /// gsplat's `pose_opt`. Test views keep their given poses.
    pub pose_opt: bool,
    /// The corrections' learning rate at the start (radians for the rotation; the shift's is
    /// this times the scene extent), decaying exponentially to `pose_lr_final`.
    pub pose_lr_init: f64,
    /// The corrections' learning rate at the last iteration.
    pub pose_lr_final: f64,
    /// The first iteration whose gradients step the corrections (the model takes shape first).
    pub pose_opt_from: u64,
    /// Bytes of the GPU cache of training images (`--image-cache`; see
    /// [`crate::train::budget::image_cache_slots`]): `None` takes all images up to 2 GiB, at least
    /// one. `--memory-budget` sets it to its share (a quarter) when not given, so the trainer's
    /// cache is the one the budget planned. The cache never changes results, so a resume may
    /// change it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_cache: Option<u64>,
    /// Random points when the dataset has no point cloud.
    pub random_init_points: usize,
    /// Far-field points for the sky and distant background (see [`crate::data::sky`]): this many
    /// directions on a sphere around the scene, kept where a training view sees something other
    /// than the background; 0 adds none (the default here; `wgsplat train` and the viewer use
    /// [`DEFAULT_SKY_POINTS`] for a dataset read from disk). Only for datasets with a sparse point
    /// cloud (captures reconstructed by structure from motion).
    pub sky_points: usize,
    /// The far-field sphere's radius, times the scene extent (at least twice the sparse points'
    /// 99th-percentile distance from the centre).
    pub sky_radius: f32,
    /// Seed of every random choice.
    pub seed: u64,
    /// Keep the model inside this box, `[min x, min y, min z, max x, max y, max z]`
    /// (`--crop-box`): at every refinement the Gaussians whose centre left it are pruned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crop_box: Option<[f32; 6]>,
    /// Prune, at every refinement, the Gaussians whose centre fewer than this many training
    /// cameras see (`--prune-min-views`; 0: off, the default). The count is
    /// [`crate::show::edit::views_seeing`]'s, which `convert --min-views` applies after training.
    #[serde(skip_serializing_if = "is_zero")]
    pub prune_min_views: u32,
    /// Prune, at every refinement, the Gaussians whose ellipsoid of this many standard
    /// deviations comes within the tube round the path between neighbouring training cameras
    /// (`--path-clearance`; 0: off, the library's default; see [`super::clearance`]).
    pub path_clearance: f32,
    /// Gaussians whose centre lies nearer a camera than this depth are not drawn
    /// (`--near-plane`, in the scene's units). `None`: the dataset's default,
    /// [`crate::data::near_plane::NEAR_PLANE_FRACTION`] of the median spacing of the training
    /// cameras ([`crate::data::near_plane`]); the trainer records the value it used here, so
    /// checkpoints and `metrics.json` hold it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near_plane: Option<f32>,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

/// The largest learning rate the pose corrections and the exposure transforms take: Adam moves
/// each value by about its rate per step, so above 1 one step would turn a camera by more than a
/// radian or move a transform's entries by more than the whole colour range.
pub const MAX_SIDE_LEARNING_RATE: f64 = 1.0;

/// Checks the pair of learning rates `{name}_lr_init` and `{name}_lr_final` (`rates`): finite,
/// zero or above (zero freezes what they learn) and at most [`MAX_SIDE_LEARNING_RATE`]; the
/// message names the fields, their values and the `default` pair.
fn check_learning_rates(
    name: &str,
    (init, last): (f64, f64),
    (default_init, default_last): (f64, f64),
) -> std::result::Result<(), String> {
    let fine = |lr: f64| (0.0..=MAX_SIDE_LEARNING_RATE).contains(&lr);
    if fine(init) && fine(last) {
        return Ok(());
    }
    Err(format!(
        "{name} learning rates {name}_lr_init {init:?} and {name}_lr_final {last:?} must each be \
         finite, zero or above and at most {MAX_SIDE_LEARNING_RATE:?} (Adam moves each value by \
         about its rate per step); the defaults are {default_init:?} and {default_last:?}"
    ))
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            iterations: 30_000,
            position_lr_init: 1.6e-4,
            position_lr_final: 1.6e-6,
            sh_dc_lr: 2.5e-3,
            sh_rest_lr: 2.5e-3 / 20.0,
            opacity_lr: 0.05,
            scale_lr: 5e-3,
            rotation_lr: 1e-3,
            adam_eps: 1e-15,
            optimizer_state: crate::optim::MomentStorage::default(),
            sh_degree: 3,
            sh_degree_interval: 1000,
            ssim_weight: 0.2,
            background: Background::Black,
            densify_every: 100,
            densify_from: 500,
            densify_until: 15_000,
            densify_grad_threshold: 2e-4,
            absgrad: false,
            absgrad_threshold: 8e-4,
            percent_dense: 0.01,
            prune_opacity: 0.005,
            prune_screen_radius: 0.0,
            opacity_reset_every: 3000,
            max_gaussians: 0,
            strategy: StrategyKind::Default,
            mcmc_refine_until: 25_000,
            mcmc_growth: 0.05,
            mcmc_noise_lr: 5e5,
            mcmc_opacity_reg: 0.01,
            mcmc_scale_reg: 0.01,
            flatten: 0.0,
            depth_normal: 0.0,
            distortion: 0.0,
            geometry_from: None,
            loss_readback_every: 10,
            eval_every: 0,
            lpips: true,
            raster_mode: RasterMode::Classic,
            save_every: 0,
            exposure: false,
            exposure_lr_init: 0.01,
            exposure_lr_final: 0.001,
            pose_opt: false,
            pose_lr_init: 1e-3,
            pose_lr_final: 1e-5,
            pose_opt_from: 100,
            image_cache: None,
            random_init_points: 100_000,
            sky_points: 0,
            sky_radius: 10.0,
            seed: 0,
            crop_box: None,
            prune_min_views: 0,
            path_clearance: 0.0,
            near_plane: None,
        }
    }
}

impl TrainConfig {
    /// The opacity logit an opacity reset clamps to: that of twice `prune_opacity` (gsplat's
    /// rule; 3DGS's logit(0.01) at the default).
    pub fn reset_opacity_logit(&self) -> f32 {
        crate::data::init::logit(2.0 * self.prune_opacity)
    }

    /// Whether the refinement due after iteration `it` is on the schedule's cadence (past
    /// `densify_from`, every `densify_every` iterations) and before `until` (the strategy's own
    /// end: `densify_until`, or `mcmc_refine_until`).
    pub fn refines_after(&self, it: u64, until: u64) -> bool {
        it > self.densify_from && it.is_multiple_of(self.densify_every) && it < until
    }

    /// Reads a JSON config file; fields it leaves out keep their defaults.
    pub fn from_json_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            action: "read".into(),
            message: format!("{e}; check the --config path"),
        })?;
        serde_json::from_str(&text).map_err(|e| Error::Format {
            path: path.display().to_string(),
            kind: "wgsplat training config (JSON)".into(),
            message: format!("{e}; the field names are those of `TrainConfig` (see the README)"),
        })
    }

    /// This configuration with scheduled densification and opacity resets switched off while the
    /// densification statistics keep accumulating (benchmarks run explicit densify steps).
    pub fn with_statistics_only(self) -> Self {
        TrainConfig {
            densify_every: u64::MAX / 4,
            densify_until: u64::MAX / 2,
            opacity_reset_every: u64::MAX / 4,
            ..self
        }
    }

    /// [`TrainConfig::validate`], plus what only a trainer needs: MCMC needs a cap (front ends
    /// may derive it from a memory budget after validating the rest).
    pub fn validate_for_training(&self) -> Result<()> {
        self.validate()?;
        if self.strategy == StrategyKind::Mcmc && self.max_gaussians == 0 {
            return Err(Error::InvalidArgument {
                op: "train config",
                detail: "the mcmc strategy needs a cap: pass --max-gaussians N or --memory-budget"
                    .into(),
            });
        }
        Ok(())
    }

    /// Checks the values that would make training meaningless.
    pub fn validate(&self) -> Result<()> {
        let bad = |detail: String| {
            Err(Error::InvalidArgument {
                op: "train config",
                detail,
            })
        };
        if self.sh_degree > 3 {
            return bad(format!("sh_degree {} is above 3", self.sh_degree));
        }
        for (name, weight) in [
            ("flatten", self.flatten),
            ("depth_normal", self.depth_normal),
            ("distortion", self.distortion),
        ] {
            if !(weight >= 0.0 && weight.is_finite()) {
                return bad(format!(
                    "{name} {weight} must be a finite weight of 0 or more"
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.ssim_weight) {
            return bad(format!(
                "ssim_weight {} is outside [0, 1]",
                self.ssim_weight
            ));
        }
        if let Some(b) = self.crop_box {
            crate::show::edit::CropBox::from_corners(b).map_err(|why| Error::InvalidArgument {
                op: "train config",
                detail: format!("crop_box {b:?}: {why}"),
            })?;
        }
        if self.loss_readback_every == 0 || self.densify_every == 0 || self.sh_degree_interval == 0
        {
            return bad(
                "loss_readback_every, densify_every and sh_degree_interval must be at least 1"
                    .into(),
            );
        }
        let defaults = TrainConfig::default();
        for (name, rates, default) in [
            (
                "pose",
                (self.pose_lr_init, self.pose_lr_final),
                (defaults.pose_lr_init, defaults.pose_lr_final),
            ),
            (
                "exposure",
                (self.exposure_lr_init, self.exposure_lr_final),
                (defaults.exposure_lr_init, defaults.exposure_lr_final),
            ),
        ] {
            if let Err(detail) = check_learning_rates(name, rates, default) {
                return bad(detail);
            }
        }
        if !(self.sky_radius.is_finite() && self.sky_radius >= 1.0) {
            return bad(format!(
                "sky_radius {} must be at least 1 (times the scene extent)",
                self.sky_radius
            ));
        }
        if self.sky_points > MAX_SKY_POINTS {
            return bad(format!(
                "sky_points {} is above {MAX_SKY_POINTS}",
                self.sky_points
            ));
        }
        // Twice it is the opacity a reset clamps to, which must lie strictly between 0 and 1.
        if !(self.prune_opacity > 0.0 && self.prune_opacity < 0.5) {
            return bad(format!(
                "prune_opacity {} is outside (0, 0.5): an opacity reset clamps to twice it",
                self.prune_opacity
            ));
        }
        if !(self.opacity_lr.is_finite() && self.opacity_lr > 0.0) {
            return bad(format!("opacity_lr {} must be above zero", self.opacity_lr));
        }
        if !(self.path_clearance.is_finite() && (0.0..=10.0).contains(&self.path_clearance)) {
            return bad(format!(
                "path_clearance {} is outside [0, 10] standard deviations (0 turns it off; 3 \
                 holds 99% of a Gaussian)",
                self.path_clearance
            ));
        }
        if let Some(near) = self.near_plane {
            crate::data::near_plane::check_near_plane(near, "near_plane")?;
        }
        if !(0.0..=1.0).contains(&self.mcmc_growth) {
            return bad(format!(
                "mcmc_growth {} is outside [0, 1]",
                self.mcmc_growth
            ));
        }
        Ok(())
    }
}

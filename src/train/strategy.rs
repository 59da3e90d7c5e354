//! [`Strategy`]: how the Gaussian set changes during training, as hooks around the iteration the
//! trainer runs (render, loss, backward, Adam). [`super::densify::DefaultStrategy`] is 3DGS's
//! adaptive density control, [`super::mcmc::McmcStrategy`] is 3DGS-MCMC; [`for_kind`] picks one
//! by [`StrategyKind`].

use super::config::{StrategyKind, TrainConfig};
use super::state::ModelState;
use crate::error::Result;
use crate::gpu::kernels::RowChunk;
use crate::gpu::{Encoder, GpuContext};
use crate::optim::LearningRates;
use crate::splat::GaussianTensors;

/// What a hook knows about the iteration.
#[derive(Clone, Copy, Debug)]
pub struct StepInfo<'a> {
    /// The training configuration.
    pub config: &'a TrainConfig,
    /// Iterations completed: the one being taken in the recording hooks, the one just taken in
    /// [`Strategy::after_step`].
    pub iteration: u64,
    /// The scene's extent (world units), which scales the thresholds in world space.
    pub extent: f32,
    /// The scene's centre (the mean training camera centre), from which a Gaussian's reach is
    /// measured.
    pub center: [f32; 3],
    /// The iteration's RNG state (seeds any sampling a hook does).
    pub rng_state: u64,
    /// The learning rates at `iteration`.
    pub learning_rates: &'a LearningRates,
}

/// How many Gaussians one densification step kept, cloned and split.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DensifyReport {
    /// Rows kept (not pruned).
    pub kept: u64,
    /// Rows cloned.
    pub cloned: u64,
    /// Rows split into two children each.
    pub split: u64,
}

/// What a strategy did after an iteration; all empty when nothing was due.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefinementReport {
    /// A densify-and-prune step (default strategy).
    pub densified: Option<DensifyReport>,
    /// Whether the opacities were reset (default strategy).
    pub opacity_reset: bool,
    /// Dead Gaussians relocated onto live ones (MCMC).
    pub relocated: u64,
    /// Gaussians added (MCMC).
    pub grown: u64,
    /// Gaussians dropped because their centre left the trainer's region (see
    /// [`super::Trainer::keep_inside`]).
    pub out_of_bounds: u64,
    /// Gaussians dropped because the capture's camera path runs through them (see
    /// [`super::TrainConfig::path_clearance`]).
    pub on_camera_path: u64,
}

/// Hooks a training strategy adds to the iteration. The recording hooks add work to the
/// iteration's encoder; [`Strategy::after_step`] runs once it is submitted and may change the
/// Gaussian set.
pub trait Strategy: Send {
    /// Which strategy this is.
    fn kind(&self) -> StrategyKind;

    /// Whether the backward pass accumulates densification statistics this iteration.
    fn wants_statistics(&self, step: &StepInfo) -> bool;

    /// Records work between the backward pass and the optimizer step of one chunk of rows (e.g.
    /// regularisers' gradients): `grads` holds the gradients of rows `chunk` of `params` at rows
    /// `grad_rows`.
    fn before_optimizer(
        &self,
        enc: &mut Encoder,
        params: &GaussianTensors,
        grads: &GaussianTensors,
        chunks: ChunkRows,
        step: &StepInfo,
    ) -> Result<()>;

    /// Records work right after the optimizer step (e.g. noise on the parameters).
    fn after_optimizer(&self, enc: &mut Encoder, state: &ModelState, step: &StepInfo)
    -> Result<()>;

    /// Runs the refinement due after the iteration just taken. A future, because a refinement
    /// reads counts back and a browser page must await them (natively it is ready when first
    /// polled; see [`crate::gpu::Readback::fetch`]).
    fn after_step<'a>(
        &'a mut self,
        ctx: &'a GpuContext,
        state: &'a mut ModelState,
        step: &'a StepInfo<'a>,
    ) -> RefinementFuture<'a>;
}

/// What [`Strategy::after_step`] returns.
pub type RefinementFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<RefinementReport>> + 'a>>;

/// One chunk of a step: its rows in the model and where its gradients are.
#[derive(Clone, Copy, Debug)]
pub struct ChunkRows {
    /// Rows of the model.
    pub model: RowChunk,
    /// Rows of the gradient tensors holding their gradients.
    pub grads: RowChunk,
}

/// The strategy of `kind`.
pub fn for_kind(kind: StrategyKind) -> Box<dyn Strategy> {
    match kind {
        StrategyKind::Default => Box::new(super::densify::DefaultStrategy),
        StrategyKind::Mcmc => Box::new(super::mcmc::McmcStrategy),
    }
}

//! Refinement on demand: the strategy's densification and MCMC steps run now (benchmarks, tests
//! and front ends), and the one place the hooks' view of an iteration is built.

use super::Trainer;
use crate::data::Dataset;
use crate::error::Result;
use crate::gpu::GpuContext;
use crate::optim::LearningRates;
use crate::tensor::Tensor;
use crate::train::config::TrainConfig;
use crate::train::state::ModelState;
use crate::train::strategy::{self, StepInfo, Strategy};
use crate::train::{densify, mcmc};

impl Trainer {
    /// Runs one densify-and-prune step now, from the statistics accumulated so far (benchmarks
    /// and front ends; training runs it on the configured schedule).
    pub fn densify_now(&mut self) -> Result<strategy::DensifyReport> {
        let prune_big = self.iteration > self.config.opacity_reset_every;
        self.with_step(|_, ctx, state, step| {
            crate::gpu::readback::blocking("densify", densify::densify(ctx, state, step, prune_big))
        })
    }

    /// Applies a densification decision now (see [`densify::apply_row_changes`]): benchmarks
    /// and tests of the row operations.
    pub fn apply_row_changes(
        &mut self,
        keep: &Tensor,
        clone: &Tensor,
        split: &Tensor,
    ) -> Result<()> {
        self.with_step(|_, ctx, state, step| {
            densify::apply_row_changes(ctx, state, step, keep, clone, split)
        })
    }

    /// Relocates dead Gaussians now, as an MCMC refinement does (see
    /// [`mcmc::relocate_dead`]); returns how many moved.
    pub fn relocate_dead(&mut self) -> Result<u64> {
        self.with_step(|_, ctx, state, step| {
            crate::gpu::readback::blocking("relocation", mcmc::relocate_dead(ctx, state, step))
        })
    }

    /// Grows the model now, as an MCMC refinement does (see [`mcmc::grow`]); returns how many
    /// Gaussians were added.
    pub fn grow(&mut self) -> Result<u64> {
        self.with_step(|_, ctx, state, step| mcmc::grow(ctx, state, step))
    }

    /// Runs `f` on the strategy and the model state with the current iteration's [`StepInfo`]
    /// (its learning rates from the schedule): the one place the hooks' view is built.
    pub(super) fn with_step<R>(
        &mut self,
        f: impl FnOnce(&mut dyn Strategy, &GpuContext, &mut ModelState, &StepInfo) -> Result<R>,
    ) -> Result<R> {
        let lrs = self.schedule.at(self.iteration);
        let step = step_info(
            &self.config,
            &self.dataset,
            self.iteration,
            self.rng_state,
            &lrs,
        );
        f(self.strategy.as_mut(), &self.ctx, &mut self.state, &step)
    }
}

/// The hooks' view of iteration `iteration` (see [`Trainer::with_step`]); a function of the
/// fields it reads, so callers can borrow the strategy and the state beside it.
pub(super) fn step_info<'a>(
    config: &'a TrainConfig,
    dataset: &Dataset,
    iteration: u64,
    rng_state: u64,
    learning_rates: &'a LearningRates,
) -> StepInfo<'a> {
    StepInfo {
        config,
        iteration,
        extent: dataset.extent,
        center: dataset.center,
        rng_state,
        learning_rates,
    }
}

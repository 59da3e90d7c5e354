//! The per-iteration half of 3DGS-MCMC ([`super::mcmc`] has the refinement): the
//! [`McmcStrategy`] hooks, the regularisers' gradients added before Adam and the opacity-gated
//! position noise added after it.

use super::config::StrategyKind;
use super::mcmc::{grow, relocate_dead};
use super::state::ModelState;
use super::strategy::{ChunkRows, RefinementFuture, RefinementReport, StepInfo, Strategy};
use crate::error::Result;
use crate::gpu::kernels::shared_mcmc_noise::NoiseParams;
use crate::gpu::kernels::{PageRows, mcmc_perturb, mcmc_regularize};
use crate::gpu::{Encoder, GpuContext};
use crate::splat::GaussianTensors;

/// `base` with one page's row count and first row.
fn paged(base: NoiseParams, page: PageRows) -> NoiseParams {
    NoiseParams {
        count: page.rows as u32,
        page_offset: page.first_row as u32,
        ..base
    }
}

/// 3DGS-MCMC (see [`super::mcmc`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct McmcStrategy;

impl Strategy for McmcStrategy {
    fn kind(&self) -> StrategyKind {
        StrategyKind::Mcmc
    }

    /// MCMC never reads the densification statistics.
    fn wants_statistics(&self, _: &StepInfo) -> bool {
        false
    }

    /// The opacity and scale regularisers' gradients.
    fn before_optimizer(
        &self,
        enc: &mut Encoder,
        params: &GaussianTensors,
        grads: &GaussianTensors,
        chunks: ChunkRows,
        step: &StepInfo,
    ) -> Result<()> {
        record_regularizers(
            enc,
            params,
            grads,
            chunks,
            step.config.mcmc_opacity_reg,
            step.config.mcmc_scale_reg,
        )
    }

    /// The opacity-gated noise on the means, scaled by the position learning rate.
    fn after_optimizer(
        &self,
        enc: &mut Encoder,
        state: &ModelState,
        step: &StepInfo,
    ) -> Result<()> {
        let noise_scale = (step.config.mcmc_noise_lr * f64::from(step.learning_rates.means)) as f32;
        let seed = (step.rng_state >> 32) as u32;
        record_noise(enc, &state.params, noise_scale, seed)
    }

    /// Relocation, then growth, when due after the iteration just taken.
    fn after_step<'a>(
        &'a mut self,
        ctx: &'a GpuContext,
        state: &'a mut ModelState,
        step: &'a StepInfo<'a>,
    ) -> RefinementFuture<'a> {
        Box::pin(async move {
            let c = step.config;
            let it = step.iteration;
            let mut report = RefinementReport::default();
            if c.refines_after(it, c.mcmc_refine_until) {
                report.relocated = relocate_dead(ctx, state, step).await?;
                report.grown = grow(ctx, state, step)?;
            }
            Ok(report)
        })
    }
}

/// Records the regularisers' gradients of the rows `chunks.model` of `g`: `opacity_reg` ·
/// mean(opacity) and `scale_reg` · mean(scale) over all N opacities and 3N scales, added to
/// rows `chunks.grads` of `grads`.
pub fn record_regularizers(
    enc: &mut Encoder,
    g: &GaussianTensors,
    grads: &GaussianTensors,
    chunks: ChunkRows,
    opacity_reg: f32,
    scale_reg: f32,
) -> Result<()> {
    let n = g.len().max(1) as f32;
    let (rows, at) = (&chunks.model, &chunks.grads);
    let params = NoiseParams {
        opacity_reg: opacity_reg / n,
        scale_reg: scale_reg / (3.0 * n),
        count: rows.rows as u32,
        page_offset: rows.first_row as u32,
        ..Default::default()
    };
    let kernel = enc.ctx().typed::<mcmc_regularize::Regularize>()?;
    let grid = crate::ops::grid(enc, rows.rows, kernel.threads())?;
    let bindings = mcmc_regularize::RegularizeBindings {
        opacity_logits: g.opacity_logits.rows_arg(rows)?,
        log_scales: g.log_scales.rows_arg(rows)?,
        grad_opacity_logits: grads.opacity_logits.rows_arg(at)?,
        grad_log_scales: grads.log_scales.rows_arg(at)?,
    };
    enc.run(&kernel, &params, bindings, grid)
}

/// Records MCMC's position noise: each mean moves by Σ ε · gate(opacity) · `noise_scale`
/// (`mcmc_noise_lr` × the position learning rate), with ε from `seed` and the Gaussian's index.
pub fn record_noise(
    enc: &mut Encoder,
    g: &GaussianTensors,
    noise_scale: f32,
    seed: u32,
) -> Result<()> {
    let base = NoiseParams {
        seed,
        noise_scale,
        ..Default::default()
    };
    let kernel = enc.ctx().typed::<mcmc_perturb::Perturb>()?;
    enc.run_pages(&kernel, g.len(), g.rows_per_page, |page| {
        let p = page.page;
        (
            paged(base, page),
            mcmc_perturb::PerturbBindings {
                opacity_logits: g.opacity_logits.page_arg(p),
                log_scales: g.log_scales.page_arg(p),
                quats: g.quats.page_arg(p),
                means: g.means.page_arg(p),
            },
        )
    })
}

//! The 3DGS-MCMC strategy (Kheradmand et al., 2024) on the GPU.
//!
//! Every `densify_every` iterations between `densify_from` and `mcmc_refine_until`:
//! 1. **Relocation.** Dead Gaussians (opacity ≤ `prune_opacity`) are overwritten by copies of live
//!    ones drawn in proportion to opacity. Each drawn source, drawn d times, and its d copies get
//!    the paper's correction (opacity 1 - (1 - o)^(1/(d+1)) and scales from the binomial table), so
//!    together they render like the source alone. Moments restart on every touched row.
//! 2. **Growth.** min(cap, ⌊(1 + `mcmc_growth`) N⌋) - N new Gaussians are drawn the same way from
//!    all Gaussians and appended (zero moments); their sources are corrected.
//!
//! Every iteration, the opacity and scale regularisers are added to the gradients before Adam,
//! and after Adam the means get noise shaped by each Gaussian's covariance and gated by its
//! opacity ([`record_noise`]).
//!
//! Draws use systematic resampling over an integer CDF of quantised opacities (see
//! `shaders/shared/mcmc.wgsl`): the multiplicities sum to exactly K by construction, and nothing
//! larger than a counter is read back (the dead count, once per relocation).

pub use super::mcmc_step::{McmcStrategy, record_noise, record_regularizers};
use super::state::ModelState;
use super::strategy::StepInfo;
use crate::error::{Error, Result};
use crate::gpu::kernels::shared_mcmc::{MODE_RELOCATE, McmcParams};
use crate::gpu::kernels::{
    PageRows, mcmc_clear_rows, mcmc_correct, mcmc_draws, mcmc_expand, mcmc_weigh,
};
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::ops;
use crate::ops::scan::ScanKind;
use crate::optim::GaussianOptimizer;
use crate::optim::rows::{scatter_gaussian_rows, select_gaussian_rows};
use crate::splat::GaussianTensors;
use crate::tensor::{DType, Tensor};

/// Draws for growth: every finite Gaussian is eligible.
const MODE_GROW: u32 = 1;

/// Integer levels that opacity 1 is quantised to for `n` Gaussians: as many as keep the total
/// weight below 2^31 (so the u32 CDF cannot overflow), at most 2^20.
pub fn weight_scale(n: u64) -> f32 {
    ((1u64 << 31) / n.max(1)).clamp(1, 1 << 20) as f32
}

/// A `[N]` u32 scratch tensor paged like the model's rows.
fn per_gaussian(enc: &mut Encoder, g: &GaussianTensors, label: &str) -> Result<Tensor> {
    Tensor::uninit_rows(
        enc,
        DType::U32,
        &[g.len() as usize],
        g.rows_per_page,
        MemoryCategory::FrameScratch,
        label,
    )
}

/// `base` with one page's row count and first row (every MCMC stage works row by row on
/// tensors paged like the model).
fn paged(base: McmcParams, page: PageRows) -> McmcParams {
    McmcParams {
        count: page.rows as u32,
        page_offset: page.first_row as u32,
        ..base
    }
}

/// Quantised opacity weights and dead flags of every Gaussian.
fn weigh(enc: &mut Encoder, g: &GaussianTensors, base: McmcParams) -> Result<(Tensor, Tensor)> {
    let weights = per_gaussian(enc, g, "mcmc/weights")?;
    let dead = per_gaussian(enc, g, "mcmc/dead")?;
    let kernel = enc.ctx().typed::<mcmc_weigh::Weigh>()?;
    enc.run_pages(&kernel, g.len(), g.rows_per_page, |page| {
        let p = page.page;
        (
            paged(base, page),
            mcmc_weigh::WeighBindings {
                opacity_logits: g.opacity_logits.page_arg(p),
                weights: weights.page_arg(p),
                dead: dead.page_arg(p),
            },
        )
    })?;
    Ok((weights, dead))
}

/// K draws in proportion to `weights`: the draws per Gaussian `[N]` and the drawn Gaussians'
/// indices `[K]` (each repeated as often as drawn, in index order).
fn draw(
    enc: &mut Encoder,
    g: &GaussianTensors,
    weights: &Tensor,
    base: McmcParams,
) -> Result<(Tensor, Tensor)> {
    let k = u64::from(base.samples);
    if k * 4 > enc.ctx().page_bytes() {
        return Err(Error::Overflow {
            what: "MCMC draws in one binding".into(),
            needed: k * 4,
            max: enc.ctx().page_bytes(),
            hint: "lower mcmc_growth or max_gaussians".into(),
        });
    }
    let cdf = per_gaussian(enc, g, "mcmc/cdf")?;
    let total = Tensor::uninit(
        enc,
        DType::U32,
        &[1],
        MemoryCategory::FrameScratch,
        "mcmc/total",
    )?;
    ops::scan::scan_with_total(enc, weights, &cdf, ScanKind::Inclusive, &total)?;
    let draws = per_gaussian(enc, g, "mcmc/draws")?;
    let kernel = enc.ctx().typed::<mcmc_draws::Multiplicity>()?;
    enc.run_pages(&kernel, g.len(), g.rows_per_page, |page| {
        let p = page.page;
        (
            paged(base, page),
            mcmc_draws::MultiplicityBindings {
                weights: weights.page_arg(p),
                cdf: cdf.page_arg(p),
                total: total.page_arg(0),
                draws: draws.page_arg(p),
            },
        )
    })?;
    drop((cdf, total));
    let first_slot = per_gaussian(enc, g, "mcmc/first_slot")?;
    ops::scan::exclusive_scan_u32(enc, &draws, &first_slot)?;
    let source_from_draw = Tensor::uninit(
        enc,
        DType::U32,
        &[k as usize],
        MemoryCategory::FrameScratch,
        "mcmc/source_from_draw",
    )?;
    let kernel = enc.ctx().typed::<mcmc_expand::Expand>()?;
    enc.run_pages(&kernel, g.len(), g.rows_per_page, |page| {
        let p = page.page;
        (
            paged(base, page),
            mcmc_expand::ExpandBindings {
                draws: draws.page_arg(p),
                first_slot: first_slot.page_arg(p),
                source_from_draw: source_from_draw.page_arg(0),
            },
        )
    })?;
    Ok((draws, source_from_draw))
}

/// Corrects every drawn source in place and returns the rows whose moments restart.
fn correct(
    enc: &mut Encoder,
    g: &GaussianTensors,
    draws: &Tensor,
    base: McmcParams,
) -> Result<Tensor> {
    let reset = per_gaussian(enc, g, "mcmc/reset")?;
    let kernel = enc.ctx().typed::<mcmc_correct::Correct>()?;
    enc.run_pages(&kernel, g.len(), g.rows_per_page, |page| {
        let p = page.page;
        (
            paged(base, page),
            mcmc_correct::CorrectBindings {
                draws: draws.page_arg(p),
                opacity_logits: g.opacity_logits.page_arg(p),
                log_scales: g.log_scales.page_arg(p),
                reset: reset.page_arg(p),
            },
        )
    })?;
    Ok(reset)
}

/// Zeroes both Adam moments on the rows flagged in `reset`.
fn clear_moments(enc: &mut Encoder, optimizer: &GaussianOptimizer, reset: &Tensor) -> Result<()> {
    let kernel = enc.ctx().typed::<mcmc_clear_rows::ClearRows>()?;
    for moments in optimizer.moments().sets() {
        for attribute in moments.attributes() {
            let width = attribute.row_elems() as u32;
            if width == 0 {
                continue;
            }
            let base = McmcParams {
                width,
                ..Default::default()
            };
            enc.run_pages(&kernel, moments.len(), moments.rows_per_page, |page| {
                let p = page.page;
                (
                    paged(base, page),
                    mcmc_clear_rows::ClearRowsBindings {
                        reset: reset.page_arg(p),
                        // f32 moments or packed words: zero words either way.
                        rows: attribute.page_raw(p),
                    },
                )
            })?;
        }
    }
    Ok(())
}

/// The sampling uniform shared by a relocation or growth step.
fn base_params(
    state: &ModelState,
    step: &StepInfo,
    mode: u32,
    samples: u64,
    salt: u64,
) -> McmcParams {
    let bits = (step.rng_state ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)) >> 40;
    McmcParams {
        samples: samples as u32,
        mode,
        weight_scale: weight_scale(state.params.len()),
        min_opacity: step.config.prune_opacity,
        offset: bits as f32 / (1u64 << 24) as f32,
        ..Default::default()
    }
}

/// Relocates every dead Gaussian onto a live one drawn in proportion to opacity; returns how
/// many were relocated (0 when none is dead, or none is alive).
pub async fn relocate_dead(
    ctx: &GpuContext,
    state: &mut ModelState,
    step: &StepInfo<'_>,
) -> Result<u64> {
    let n = state.params.len();
    if n == 0 {
        return Ok(0);
    }
    let mut enc = ctx.encoder("mcmc: find dead");
    let (weights, dead) = weigh(
        &mut enc,
        &state.params,
        base_params(state, step, MODE_RELOCATE, 0, 1),
    )?;
    let dead_ids = ops::compact::compact_indices(&mut enc, &dead)?;
    drop(dead);
    let pending = dead_ids.count.record_read(&mut enc)?;
    ctx.submit(enc)?;
    let k = u64::from(pending.fetch::<u32>(ctx).await?[0]);
    if k == 0 || k >= n {
        return Ok(0);
    }
    let mut enc = ctx.encoder("mcmc: relocate");
    let base = base_params(state, step, MODE_RELOCATE, k, 1);
    let (draws, source_from_draw) = draw(&mut enc, &state.params, &weights, base)?;
    drop(weights);
    let reset = correct(&mut enc, &state.params, &draws, base)?;
    drop(draws);
    let copies = select_gaussian_rows(&mut enc, &state.params, &source_from_draw, "mcmc/copies")?;
    drop(source_from_draw);
    let dead_from_copy = dead_ids.values.prefix(k)?;
    scatter_gaussian_rows(&mut enc, &copies, &dead_from_copy, &state.params)?;
    clear_moments(&mut enc, &state.optimizer, &reset)?;
    ctx.submit(enc)?;
    Ok(k)
}

/// Grows the set by `mcmc_growth` (up to `max_gaussians`) with copies of Gaussians drawn in
/// proportion to opacity; returns how many were added.
pub fn grow(ctx: &GpuContext, state: &mut ModelState, step: &StepInfo) -> Result<u64> {
    let n = state.params.len();
    let target = ((n as f64 * (1.0 + step.config.mcmc_growth)).floor() as u64)
        .min(step.config.max_gaussians.max(n));
    let k = target.saturating_sub(n);
    if n == 0 || k == 0 {
        return Ok(0);
    }
    let mut enc = ctx.encoder("mcmc: grow");
    let base = base_params(state, step, MODE_GROW, k, 2);
    let (weights, _) = weigh(&mut enc, &state.params, base)?;
    let (draws, source_from_draw) = draw(&mut enc, &state.params, &weights, base)?;
    drop(weights);
    let reset = correct(&mut enc, &state.params, &draws, base)?;
    drop(draws);
    clear_moments(&mut enc, &state.optimizer, &reset)?;
    drop(reset);
    let new_rows = select_gaussian_rows(&mut enc, &state.params, &source_from_draw, "mcmc/new")?;
    drop(source_from_draw);
    state.release_statistics(&mut enc)?;
    state
        .optimizer
        .append_rows(&mut enc, &mut state.params, &new_rows)?;
    drop(new_rows);
    state.rebuild_statistics(&mut enc)?;
    ctx.submit(enc)?;
    Ok(k)
}

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

use super::mcmc_step::NoiseParams;
pub use super::mcmc_step::{McmcStrategy, record_noise, record_regularizers};
use super::state::ModelState;
use super::strategy::StepInfo;
use crate::error::{Error, Result};
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::mirror;
use crate::ops;
use crate::ops::scan::ScanKind;
use crate::optim::GaussianOptimizer;
use crate::optim::rows::{row_width, scatter_gaussian_rows, select_gaussian_rows};
use crate::splat::GaussianTensors;
use crate::tensor::{DType, Tensor};

/// Uniform of the `mcmc_*.wgsl` sampling stages (`shaders/shared/mcmc.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct McmcParams {
    count: u32,
    page_offset: u32,
    samples: u32,
    mode: u32,
    weight_scale: f32,
    min_opacity: f32,
    offset: f32,
    width: u32,
}

pub(crate) fn mirrors() -> Vec<crate::gpu::mirror::Mirror> {
    let sampling = [
        "mcmc_weigh.wgsl",
        "mcmc_draws.wgsl",
        "mcmc_expand.wgsl",
        "mcmc_correct.wgsl",
        "mcmc_clear_rows.wgsl",
    ];
    let mut all: Vec<_> = sampling
        .into_iter()
        .map(|file| {
            mirror!(
                McmcParams,
                file,
                "McmcParams",
                [
                    count,
                    page_offset,
                    samples,
                    mode,
                    weight_scale,
                    min_opacity,
                    offset,
                    width
                ]
            )
        })
        .collect();
    for file in ["mcmc_regularize.wgsl", "mcmc_perturb.wgsl"] {
        all.push(mirror!(
            NoiseParams,
            file,
            "NoiseParams",
            [
                count,
                page_offset,
                seed,
                _pad0,
                noise_scale,
                opacity_reg,
                scale_reg,
                _pad1
            ]
        ));
    }
    all
}

/// Draws for relocation: dead Gaussians are not eligible sources.
const MODE_RELOCATE: u32 = 0;
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

/// Dispatches `entry` of `file` once per page of `g` (every MCMC stage works row by row on
/// tensors paged like the model): `params(count, page_offset)` gives the page's uniform and
/// `bindings(page)` its storage buffers.
pub(super) fn dispatch_pages<'a, P: bytemuck::Pod>(
    enc: &mut Encoder,
    g: &GaussianTensors,
    file: &str,
    entry: &str,
    params: impl Fn(u32, u32) -> P,
    bindings: impl Fn(usize) -> Vec<wgpu::BufferBinding<'a>>,
) -> Result<()> {
    let kernel = enc.ctx().kernel(file, entry)?;
    for page in 0..g.num_pages() {
        let count = g.page_rows(page);
        let uniform = params(count as u32, (page as u64 * g.rows_per_page) as u32);
        let grid = ops::grid(enc, count, kernel.threads())?;
        enc.dispatch(&kernel, &uniform, &bindings(page), grid)?;
    }
    Ok(())
}

/// `base` with the page's count and offset filled in.
fn paged(base: McmcParams) -> impl Fn(u32, u32) -> McmcParams {
    move |count, page_offset| McmcParams {
        count,
        page_offset,
        ..base
    }
}

/// Quantised opacity weights and dead flags of every Gaussian.
fn weigh(enc: &mut Encoder, g: &GaussianTensors, base: McmcParams) -> Result<(Tensor, Tensor)> {
    let weights = per_gaussian(enc, g, "mcmc/weights")?;
    let dead = per_gaussian(enc, g, "mcmc/dead")?;
    dispatch_pages(enc, g, "mcmc_weigh.wgsl", "weigh", paged(base), |p| {
        vec![
            g.opacity_logits.page_binding(p),
            weights.page_binding(p),
            dead.page_binding(p),
        ]
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
    dispatch_pages(
        enc,
        g,
        "mcmc_draws.wgsl",
        "multiplicity",
        paged(base),
        |p| {
            vec![
                weights.page_binding(p),
                cdf.page_binding(p),
                total.page_binding(0),
                draws.page_binding(p),
            ]
        },
    )?;
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
    dispatch_pages(enc, g, "mcmc_expand.wgsl", "expand", paged(base), |p| {
        vec![
            draws.page_binding(p),
            first_slot.page_binding(p),
            source_from_draw.page_binding(0),
        ]
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
    dispatch_pages(enc, g, "mcmc_correct.wgsl", "correct", paged(base), |p| {
        vec![
            draws.page_binding(p),
            g.opacity_logits.page_binding(p),
            g.log_scales.page_binding(p),
            reset.page_binding(p),
        ]
    })?;
    Ok(reset)
}

/// Zeroes both Adam moments on the rows flagged in `reset`.
fn clear_moments(enc: &mut Encoder, optimizer: &GaussianOptimizer, reset: &Tensor) -> Result<()> {
    for moments in [optimizer.moment1(), optimizer.moment2()] {
        for attribute in moments.attributes() {
            let width = row_width(attribute) as u32;
            if width == 0 {
                continue;
            }
            let base = McmcParams {
                width,
                ..Default::default()
            };
            dispatch_pages(
                enc,
                moments,
                "mcmc_clear_rows.wgsl",
                "clear_rows",
                paged(base),
                |p| vec![reset.page_binding(p), attribute.page_binding(p)],
            )?;
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
pub fn relocate_dead(ctx: &GpuContext, state: &mut ModelState, step: &StepInfo) -> Result<u64> {
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
    let k = u64::from(pending.wait::<u32>(ctx)?[0]);
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
    state.release_gradients(&mut enc)?;
    state
        .optimizer
        .append_rows(&mut enc, &mut state.params, &new_rows)?;
    drop(new_rows);
    state.rebuild_gradients(&mut enc)?;
    ctx.submit(enc)?;
    Ok(k)
}

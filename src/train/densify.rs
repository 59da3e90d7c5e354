//! 3DGS's default densification, on the GPU: every `densify_every` iterations between
//! `densify_from` and `densify_until`, Gaussians whose average screen-space gradient exceeds the
//! threshold (or, with `absgrad`, whose average per-pixel absolute gradient exceeds
//! `absgrad_threshold`) are cloned (if small) or split into two sampled children with scales / 1.6 (if
//! large). Then, as INRIA and gsplat do, the pruning applies to the grown model: transparent
//! Gaussians are pruned, and after the first opacity reset so are ones too big in the world
//! (0.1 × their reach: the larger of the extent and their distance from the scene centre, so a
//! far-field Gaussian may look as large as a near one); before that reset only Gaussians grown to
//! envelop the scene (a third of their reach) are; clones and split children of a parent that is pruned for its opacity die in
//! the same step (they inherit it), as do children still too big in the world. Pruning by screen
//! size (`prune_screen_radius`) is off by default, as in gsplat; when enabled it applies to the
//! parents only (new Gaussians have not been seen yet). Opacities are reset (clamped to twice
//! `prune_opacity`, gsplat's rule) every `opacity_reset_every`, and once at `densify_from` when the
//! background is white (INRIA).
//!
//! The decisions are flags from `densify_classify.wgsl`; the kept, cloned and split rows are
//! compacted index lists; the optimizer moves its moments with the rows (kept rows keep theirs,
//! new rows start at zero). The three counts are read back once per densification step.
//! `max_gaussians` caps growth by truncating the clone and split lists.

use super::config::{Background, StrategyKind};
use super::state::ModelState;
use super::strategy::{
    ChunkRows, DensifyReport, RefinementFuture, RefinementReport, StepInfo, Strategy,
};
use crate::error::Result;
use crate::gpu::kernels::{densify_classify, densify_split};
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::ops;
use crate::splat::GaussianTensors;
use crate::splat::gaussians::Attribute;
use crate::tensor::{DType, Tensor};

/// 3DGS's split scale divisor.
const SPLIT_SCALE_DIVISOR: f32 = 1.6;
/// After the first opacity reset, Gaussians whose largest scale exceeds this fraction of their
/// reach (the larger of the extent and their distance from the scene centre) are pruned: 3DGS's
/// 0.1 × extent for Gaussians among the cameras, and the same angular size for far ones.
const BIG_FRACTION: f32 = 0.1;
/// Before it, only Gaussians whose largest scale exceeds a third of their reach, grown to envelop
/// the scene's centre within three standard deviations (a sky Gaussian grown this large veils
/// every view from inside it).
const ENVELOPING_FRACTION: f32 = 1.0 / 3.0;

/// 3DGS's adaptive density control (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultStrategy;

impl Strategy for DefaultStrategy {
    fn kind(&self) -> StrategyKind {
        StrategyKind::Default
    }

    fn wants_statistics(&self, step: &StepInfo) -> bool {
        step.iteration < step.config.densify_until
    }

    fn before_optimizer(
        &self,
        _: &mut Encoder,
        _: &GaussianTensors,
        _: &GaussianTensors,
        _: ChunkRows,
        _: &StepInfo,
    ) -> Result<()> {
        Ok(())
    }

    fn after_optimizer(&self, _: &mut Encoder, _: &ModelState, _: &StepInfo) -> Result<()> {
        Ok(())
    }

    /// Densifies and prunes, and resets opacities, when due after the iteration just taken.
    fn after_step<'a>(
        &'a mut self,
        ctx: &'a GpuContext,
        state: &'a mut ModelState,
        step: &'a StepInfo<'a>,
    ) -> RefinementFuture<'a> {
        Box::pin(refine(ctx, state, step))
    }
}

/// [`DefaultStrategy`]'s refinement.
async fn refine(
    ctx: &GpuContext,
    state: &mut ModelState,
    step: &StepInfo<'_>,
) -> Result<RefinementReport> {
    let c = step.config;
    let it = step.iteration;
    let mut report = RefinementReport::default();
    if c.refines_after(it, c.densify_until) {
        report.densified = Some(densify(ctx, state, step, it > c.opacity_reset_every).await?);
    }
    // INRIA also resets once at `densify_from` on a white background: the initial Gaussians'
    // grey (or any colour) over white must be made transparent before densification starts.
    let periodic = c.opacity_reset_every > 0 && it.is_multiple_of(c.opacity_reset_every);
    let white_start = c.background == Background::White && it == c.densify_from;
    if it < c.densify_until && (periodic || white_start) {
        let mut enc = ctx.encoder("opacity reset");
        ops::clamp_inplace(
            &mut enc,
            &state.params.opacity_logits,
            f32::NEG_INFINITY,
            c.reset_opacity_logit(),
        )?;
        state
            .optimizer
            .clear_group_moments(&mut enc, Attribute::OpacityLogits)?;
        ctx.submit(enc)?;
        report.opacity_reset = true;
    }
    Ok(report)
}

fn flags(enc: &mut Encoder, n: usize, rows: u64, label: &str) -> Result<Tensor> {
    Tensor::uninit_rows(
        enc,
        DType::U32,
        &[n],
        rows,
        crate::gpu::MemoryCategory::FrameScratch,
        label,
    )
}

/// One densify-and-prune step.
pub(crate) async fn densify(
    ctx: &GpuContext,
    state: &mut ModelState,
    step: &StepInfo<'_>,
    prune_big: bool,
) -> Result<DensifyReport> {
    let config = step.config;
    let n = state.params.len() as usize;
    let rows = state.params.rows_per_page;
    let extent = step.extent;
    let mut enc = ctx.encoder("densify: classify");
    let keep = flags(&mut enc, n, rows, "densify/keep")?;
    let clone = flags(&mut enc, n, rows, "densify/clone")?;
    let split = flags(&mut enc, n, rows, "densify/split")?;
    let classify = ctx.typed::<densify_classify::Classify>()?;
    let params = densify_classify::DensifyParams {
        prune_big: u32::from(prune_big),
        grad_threshold: if config.absgrad {
            config.absgrad_threshold
        } else {
            config.densify_grad_threshold
        },
        scale_threshold: config.percent_dense * extent,
        prune_opacity: config.prune_opacity,
        max_screen_radius: config.prune_screen_radius,
        world_scale_fraction: if prune_big {
            BIG_FRACTION
        } else {
            ENVELOPING_FRACTION
        },
        split_scale_divisor: SPLIT_SCALE_DIVISOR,
        grad_column: u32::from(config.absgrad),
        extent,
        center_x: step.center[0],
        center_y: step.center[1],
        center_z: step.center[2],
        ..Default::default()
    };
    enc.run_pages(&classify, n as u64, rows, |page| {
        let p = page.page;
        (
            densify_classify::DensifyParams {
                count: page.rows as u32,
                ..params
            },
            densify_classify::ClassifyBindings {
                stats: state.stats.page_arg(p),
                log_scales: state.params.log_scales.page_arg(p),
                opacity_logits: state.params.opacity_logits.page_arg(p),
                keep_flags: keep.page_arg(p),
                clone_flags: clone.page_arg(p),
                split_flags: split.page_arg(p),
                means: state.params.means.page_arg(p),
            },
        )
    })?;
    let kept = ops::compact::compact_indices(&mut enc, &keep)?;
    let cloned = ops::compact::compact_indices(&mut enc, &clone)?;
    let split_ids = ops::compact::compact_indices(&mut enc, &split)?;
    let reads = [
        kept.count.record_read(&mut enc)?,
        cloned.count.record_read(&mut enc)?,
        split_ids.count.record_read(&mut enc)?,
    ];
    ctx.submit(enc)?;
    let mut counts = [0u64; 3];
    for (slot, pending) in counts.iter_mut().zip(reads) {
        *slot = u64::from(pending.fetch::<u32>(ctx).await?[0]);
    }
    let [mut k, mut c, mut s] = counts;
    // Cap the growth: drop splits first, then clones, so the model never exceeds the cap.
    if config.max_gaussians > 0 {
        let cap = config.max_gaussians.max(k);
        let room = cap - k;
        if c + 2 * s > room {
            s = s.min(room / 2);
            c = c.min(room - 2 * s);
        }
        k = k.min(cap);
    }
    let keep = kept.values.prefix(k)?;
    let clone = cloned.values.prefix(c)?;
    let split = split_ids.values.prefix(s)?;
    drop((kept.count, cloned.count, split_ids.count));
    apply_row_changes(ctx, state, step, &keep, &clone, &split)?;
    Ok(DensifyReport {
        kept: k,
        cloned: c,
        split: s,
    })
}

/// Applies one densification step's row changes: the model becomes the split Gaussians' children
/// (two per split parent, each pair on adjacent rows, first), the kept rows, then the clones.
/// The children's positions are sampled from their parent and their scales divided by 1.6;
/// new rows start with zero moments.
///
/// Memory: the statistics are released first, and every parameter and moment tensor is gathered
/// straight into its new size, one attribute tensor at a time, widest first, so no copy of the new
/// rows is ever made and the transient peak above the larger of the before and after models is
/// one attribute tensor (at most the SH-rest one of the new model).
pub fn apply_row_changes(
    ctx: &GpuContext,
    state: &mut ModelState,
    step: &StepInfo,
    keep: &Tensor,
    clone: &Tensor,
    split: &Tensor,
) -> Result<()> {
    let (c, s) = (clone.len(), split.len());
    let mut enc = ctx.encoder("densify: apply");
    state.release_statistics(&mut enc)?;
    let u32s = |enc: &mut Encoder, len: u64, label: &str| {
        Tensor::uninit(
            enc,
            DType::U32,
            &[len as usize],
            MemoryCategory::Other,
            label,
        )
    };
    // Each split parent twice, on adjacent rows: children[2i] = children[2i + 1] = split[i].
    let children = u32s(&mut enc, 2 * s, "densify/children")?;
    if s > 0 {
        let slots = u32s(&mut enc, s, "densify/child_slots")?;
        for first in [0u32, 1] {
            ops::fill::arange(&mut enc, &slots, first, 2)?;
            ops::gather::scatter(&mut enc, split, &slots, &children)?;
        }
    }
    let (fresh_children, fresh_clones) = (
        u32s(&mut enc, 2 * s, "densify/fresh")?,
        u32s(&mut enc, c, "densify/fresh")?,
    );
    ops::fill::fill(&mut enc, &fresh_children, u32::MAX)?;
    ops::fill::fill(&mut enc, &fresh_clones, u32::MAX)?;
    let params_index = ops::gather::concat(&mut enc, &[&children, keep, clone])?;
    let moments_index = ops::gather::concat(&mut enc, &[&fresh_children, keep, &fresh_clones])?;
    drop((children, fresh_children, fresh_clones));
    state
        .optimizer
        .gather_rows(&mut enc, &mut state.params, &params_index, &moments_index)?;
    drop((params_index, moments_index));
    if s > 0 {
        let g = &state.params;
        let kernel = ctx.typed::<densify_split::SplitPairs>()?;
        let seed = (step.rng_state as u32) ^ (step.iteration as u32).wrapping_mul(2_654_435_761);
        enc.run_pages(&kernel, 2 * s, g.rows_per_page, |page| {
            let p = page.page;
            (
                densify_split::SplitParams {
                    pairs: (page.rows / 2) as u32,
                    first_pair: (page.first_row / 2) as u32,
                    seed,
                    scale_divisor_log: SPLIT_SCALE_DIVISOR.ln(),
                },
                densify_split::SplitPairsBindings {
                    means: g.means.page_arg(p),
                    log_scales: g.log_scales.page_arg(p),
                    quats: g.quats.page_arg(p),
                },
            )
        })?;
    }
    state.rebuild_statistics(&mut enc)?;
    ctx.submit(enc)?;
    Ok(())
}

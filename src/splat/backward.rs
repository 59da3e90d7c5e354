//! The backward pass: from the gradient of the rendered image to the gradient of every Gaussian
//! parameter, plus the densification statistics.
//!
//! 1. `rasterize_backward.wgsl` sums, per visible splat, the gradients of its pixel mean, conic,
//!    opacity and colour over the pixels it touched (rows of [`V_STRIDE`] floats in depth order,
//!    paged like the splats and computed chunk by chunk, back to front: see [`super::raster`]).
//!    No atomics: one row per intersection, summed per splat in a fixed order (see
//!    [`super::raster::record_raster_backward`]), so the result never depends on scheduling.
//! 2. Those rows are scattered back into Gaussian order (zero rows for culled Gaussians).
//! 3. Per page of Gaussians, `project_backward.wgsl` (means, log scales, quaternions),
//!    `sh_backward.wgsl` (SH coefficients and the view-direction path of the means) and
//!    `opacity_backward.wgsl` (logit opacities and statistics) write the gradients.
//!
//! Gradients are written, not accumulated: each parameter has exactly one gradient buffer.

use super::forward::ForwardOutput;
use super::gaussians::GaussianTensors;
use crate::error::{Error, Result};
use crate::gpu::kernels::{
    Arg, opacity_backward, page_rows, project_backward, sh_backward, shared_splat,
};
use crate::gpu::{Encoder, MemoryCategory};
use crate::ops;
use crate::tensor::{DType, Tensor};

/// Floats per gradient row: x, y, conic a, b, c, opacity, r, g, b, |x|, |y|, padding
/// (`V_STRIDE` in `shaders/shared/splat.wgsl`).
pub const V_STRIDE: u64 = shared_splat::V_STRIDE as u64;
/// Floats per Gaussian in the densification statistics: grad-norm sum, absgrad-norm sum, visible
/// count, largest screen radius in pixels (`STATS_STRIDE` in `shaders/opacity_backward.wgsl`).
pub const STATS_STRIDE: u64 = opacity_backward::STATS_STRIDE as u64;

/// Options of the backward pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct BackwardOptions {
    /// Do not propagate through the SH view direction into the means (gsplat's tests detach it).
    pub detach_view_dir: bool,
}

/// Per-splat and per-Gaussian intermediates, kept for inspection and tests.
pub struct BackwardOutput {
    /// Gradient rows in depth order, `[V, 12]`, paged like `ForwardOutput::splats`.
    pub v_splats: Tensor,
    /// Gradient rows in Gaussian order, `[N, 12]` (zero for culled Gaussians).
    pub v_projected: Tensor,
}

/// Records the backward pass. `v_image` is dLoss/d(image) with the image's `[H, W, 4]` layout;
/// `grads` receives the parameter gradients (same shapes as `g`); `stats`, when given, is an
/// `[N, 4]` row tensor (same rows per page as `g`) that the statistics are accumulated into.
pub fn record_backward(
    enc: &mut Encoder,
    g: &GaussianTensors,
    fwd: &ForwardOutput,
    v_image: &Tensor,
    grads: &GaussianTensors,
    stats: Option<&Tensor>,
    options: BackwardOptions,
) -> Result<BackwardOutput> {
    v_image.expect_same_len("record_backward (v_image vs image)", &fwd.image)?;
    v_image.expect_dtype("record_backward", DType::F32)?;
    if grads.len() != g.len()
        || grads.sh_rest_count() != g.sh_rest_count()
        || grads.rows_per_page != g.rows_per_page
    {
        return Err(Error::Shape {
            op: "record_backward",
            detail:
                "gradient tensors must be shaped like the parameters (GaussianTensors::zeros_like)"
                    .into(),
        });
    }
    if let Some(s) = stats
        && (s.len() != g.len() * STATS_STRIDE || s.page_elems() != g.rows_per_page * STATS_STRIDE)
    {
        return Err(Error::Shape {
            op: "record_backward",
            detail: format!(
                "stats must be an [N, {STATS_STRIDE}] row tensor with the model's rows per page"
            ),
        });
    }
    let ctx = enc.ctx().clone();
    let v = fwd.num_visible;
    let n = g.len() as usize;
    let u = fwd.uniform;
    let v_splats = super::raster::record_raster_backward(enc, fwd, v_image)?;
    let v_projected = Tensor::uninit_rows(
        enc,
        DType::F32,
        &[n, V_STRIDE as usize],
        g.rows_per_page,
        MemoryCategory::FrameScratch,
        "splat/v_projected",
    )?;
    for page in 0..v_projected.num_pages() {
        enc.clear(
            v_projected.page(page).raw(),
            0,
            v_projected.page_len(page) * 4,
        );
    }
    if v > 0 {
        ops::gather::scatter_rows(
            enc,
            &v_splats,
            &fwd.global_from_splat,
            V_STRIDE,
            &v_projected,
        )?;
    }
    let project = ctx.typed::<project_backward::ProjectBackward>()?;
    let sh = ctx.typed::<sh_backward::ShBackward>()?;
    let opacity = ctx.typed::<opacity_backward::OpacityBackward>()?;
    let flags = u64::from(options.detach_view_dir) | if stats.is_some() { 2 } else { 0 };
    // The three kernels of a page run before the next page's, on the projection's grid.
    for span in page_rows(g.len(), g.rows_per_page) {
        let page = span.page;
        let pu = u.with_count(span.rows, span.first_row, flags);
        let grid = ops::grid(enc, span.rows, project.threads())?;
        let bindings = project_backward::ProjectBackwardBindings {
            means: g.means.page_arg(page),
            log_scales: g.log_scales.page_arg(page),
            quats: g.quats.page_arg(page),
            v_projected: v_projected.page_arg(page),
            v_means: grads.means.page_arg(page),
            v_log_scales: grads.log_scales.page_arg(page),
            v_quats: grads.quats.page_arg(page),
            opacity_logits: g.opacity_logits.page_arg(page),
        };
        enc.run(&project, &pu, bindings, grid)?;
        // SH degree 0 models have no rest coefficients: each absent binding gets its own
        // placeholder (one buffer bound read-only and read-write is a validation error).
        let (sh_rest, v_sh_rest) = if g.sh_rest.is_empty() {
            (Arg::Absent, Arg::Absent)
        } else {
            (g.sh_rest.page_arg(page), grads.sh_rest.page_arg(page))
        };
        let bindings = sh_backward::ShBackwardBindings {
            means: g.means.page_arg(page),
            sh_dc: g.sh_dc.page_arg(page),
            sh_rest,
            v_projected: v_projected.page_arg(page),
            v_sh_dc: grads.sh_dc.page_arg(page),
            v_sh_rest,
            v_means: grads.means.page_arg(page),
        };
        enc.run(&sh, &pu, bindings, grid)?;
        let bindings = opacity_backward::OpacityBackwardBindings {
            opacity_logits: g.opacity_logits.page_arg(page),
            projected: fwd.projected.page_arg(page),
            v_projected: v_projected.page_arg(page),
            v_opacity_logits: grads.opacity_logits.page_arg(page),
            stats: stats.map_or(Arg::Absent, |s| s.page_arg(page)),
        };
        enc.run(&opacity, &pu, bindings, grid)?;
    }
    Ok(BackwardOutput {
        v_splats,
        v_projected,
    })
}

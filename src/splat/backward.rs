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

use super::forward::{ForwardOutput, placeholder};
use super::gaussians::GaussianTensors;
use crate::error::{Error, Result};
use crate::gpu::{Encoder, MemoryCategory};
use crate::ops;
use crate::tensor::{DType, Tensor};

/// Floats per gradient row: x, y, conic a, b, c, opacity, r, g, b, |x|, |y|, padding.
pub const V_STRIDE: u64 = 12;
/// Floats per Gaussian in the densification statistics: grad-norm sum, absgrad-norm sum, visible
/// count, largest screen radius in pixels.
pub const STATS_STRIDE: u64 = 4;

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
    let project = ctx.kernel("project_backward.wgsl", "project_backward")?;
    let sh = ctx.kernel("sh_backward.wgsl", "sh_backward")?;
    let opacity = ctx.kernel("opacity_backward.wgsl", "opacity_backward")?;
    let f32_placeholder = placeholder(enc, DType::F32)?;
    let rest_grad_placeholder = placeholder(enc, DType::F32)?;
    let flags = u64::from(options.detach_view_dir) | if stats.is_some() { 2 } else { 0 };
    for page in 0..g.num_pages() {
        let count = g.page_rows(page);
        let pu = u.with_count(count, page as u64 * g.rows_per_page, flags);
        let grid = ops::grid(enc, count, project.threads())?;
        let bindings = [
            g.means.page_binding(page),
            g.log_scales.page_binding(page),
            g.quats.page_binding(page),
            v_projected.page_binding(page),
            grads.means.page_binding(page),
            grads.log_scales.page_binding(page),
            grads.quats.page_binding(page),
            g.opacity_logits.page_binding(page),
        ];
        enc.dispatch(&project, &pu, &bindings, grid)?;
        let (rest, v_rest) = if g.sh_rest.is_empty() {
            // Two placeholders: one buffer bound read-only and read-write in one dispatch is a
            // validation error (SH degree 0 models).
            (
                f32_placeholder.page_binding(0),
                rest_grad_placeholder.page_binding(0),
            )
        } else {
            (
                g.sh_rest.page_binding(page),
                grads.sh_rest.page_binding(page),
            )
        };
        let bindings = [
            g.means.page_binding(page),
            g.sh_dc.page_binding(page),
            rest,
            v_projected.page_binding(page),
            grads.sh_dc.page_binding(page),
            v_rest,
            grads.means.page_binding(page),
        ];
        enc.dispatch(&sh, &pu, &bindings, grid)?;
        let stats_binding =
            stats.map_or_else(|| f32_placeholder.page_binding(0), |s| s.page_binding(page));
        let bindings = [
            g.opacity_logits.page_binding(page),
            fwd.projected.page_binding(page),
            v_projected.page_binding(page),
            grads.opacity_logits.page_binding(page),
            stats_binding,
        ];
        enc.dispatch(&opacity, &pu, &bindings, grid)?;
    }
    Ok(BackwardOutput {
        v_splats,
        v_projected,
    })
}

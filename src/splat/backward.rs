//! The backward pass: from the gradient of the rendered image to the gradient of every Gaussian
//! parameter, plus the densification statistics.
//!
//! 1. `rasterize_backward.wgsl` sums, per visible splat, the gradients of its pixel mean, conic,
//!    opacity and colour over the pixels it touched (rows of [`V_STRIDE`] floats in depth order,
//!    paged like the splats and computed chunk by chunk, back to front: see [`super::raster`]).
//!    No atomics: one row per intersection, summed per splat in a fixed order (see
//!    [`super::raster::record_raster_backward`]), so the result never depends on scheduling.
//! 2. Per chunk of Gaussians ([`BackwardPass::record_chunk`]), their rows and their splats' rows
//!    are gathered into Gaussian order through `splat_from_global` (zero rows for culled
//!    Gaussians), and `project_backward.wgsl` (means, log scales, quaternions), `sh_backward.wgsl`
//!    (SH coefficients and the view-direction path of the means) and `opacity_backward.wgsl`
//!    (logit opacities and statistics) write the chunk's gradients.
//!
//! Gradients are written, not accumulated, so a chunk's gradients may live in a chunk-sized
//! scratch that Adam consumes at once (see `train::gradient_step`); no per-Gaussian row of the
//! whole model is ever needed beyond one u32 index.

use super::forward::{ColourSource, ForwardOutput, SPLAT_STRIDE};
use super::gaussians::GaussianTensors;
use super::uniform::RenderUniform;
use crate::error::{Error, Result};
use crate::gpu::kernels::{
    Arg, RowChunk, TypedKernel, geometry_colour_backward, opacity_backward, project_backward,
    row_chunks, sh_backward, shared_lens, shared_splat,
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
    /// What the forward pass composited as colour
    /// ([`RenderOptions::colour`](super::forward::RenderOptions::colour)): for the depth, the red
    /// channel's gradient reaches the means through it; for the normal, the colour's reaches the
    /// quaternions; either way the SH coefficients get zero gradients.
    pub colour: ColourSource,
    /// Add the gradients to those already in the gradient rows rather than write them: a second
    /// backward pass of the same step (a geometry regulariser's render) after the colour's. The
    /// SH coefficients' gradients are then left as they are.
    pub accumulate: bool,
}

/// Per-splat and per-Gaussian intermediates, kept for inspection and tests.
pub struct BackwardOutput {
    /// Gradient rows in depth order, `[V, 12]`, paged like `ForwardOutput::splats`.
    pub v_splats: Tensor,
    /// Gradient rows in Gaussian order, `[N, 12]` (zero for culled Gaussians).
    pub v_projected: Tensor,
}

/// The backward pass up to the per-Gaussian kernels: the per-splat gradient rows and their
/// scatter into Gaussian order. [`BackwardPass::record_chunk`] then writes the parameter gradients
/// of one chunk of Gaussians at a time, so a training step can apply Adam to a chunk while its
/// gradients are in a chunk-sized scratch.
pub struct BackwardPass<'a> {
    g: &'a GaussianTensors,
    uniform: RenderUniform,
    /// The forward pass's splat rows (a handle: the caller may drop the rest of the forward
    /// output, its intersection lists and images, once the pass is prepared).
    splats: Tensor,
    stats: Option<&'a Tensor>,
    flags: u64,
    v_splats: Tensor,
    /// `[N]`: the splat row of each Gaussian, `u32::MAX` for a culled one; paged like the model.
    splat_from_global: Tensor,
    kernels: Kernels,
    /// A chunk's rows in Gaussian order, allocated at the first chunk and reused by the others.
    scratch: Option<ChunkRowsScratch>,
}

/// The three per-Gaussian backward kernels.
struct Kernels {
    project: TypedKernel<project_backward::ProjectBackward>,
    colour: ColourKernel,
    opacity: TypedKernel<opacity_backward::OpacityBackward>,
}

/// Where the colour's gradient goes: the SH coefficients, or the depth a render of depth as
/// colour composited.
enum ColourKernel {
    Sh(TypedKernel<sh_backward::ShBackward>),
    Geometry(TypedKernel<geometry_colour_backward::GeometryColourBackward>),
}

/// One chunk's splat indices (`[R]`), gradient rows (`[R, V_STRIDE]`) and splat rows
/// (`[R, SPLAT_STRIDE]`) in Gaussian order; a chunk of fewer rows uses their start.
#[derive(Clone)]
struct ChunkRowsScratch {
    index: Tensor,
    v_rows: Tensor,
    splat_rows: Tensor,
}

/// Checks `grads` against the model: same SH size, and (when full-size) same count and paging.
fn check_grads(g: &GaussianTensors, grads: &GaussianTensors, full: bool) -> Result<()> {
    let aligned = !full || (grads.len() == g.len() && grads.rows_per_page == g.rows_per_page);
    if !aligned || grads.sh_rest_count() != g.sh_rest_count() {
        return Err(Error::Shape {
            op: "record_backward",
            detail:
                "gradient tensors must be shaped like the parameters (GaussianTensors::zeros_like)"
                    .into(),
        });
    }
    Ok(())
}

/// Records the rasterizer's backward pass and the scatter of its rows into Gaussian order.
/// `v_image` is dLoss/d(image) with the image's `[H, W, 4]` layout; `stats`, when given, is an
/// `[N, 4]` row tensor (same rows per page as `g`) that the statistics are accumulated into.
pub fn prepare_backward<'a>(
    enc: &mut Encoder,
    g: &'a GaussianTensors,
    fwd: &ForwardOutput,
    v_image: &Tensor,
    stats: Option<&'a Tensor>,
    options: BackwardOptions,
) -> Result<BackwardPass<'a>> {
    v_image.expect_same_len("record_backward (v_image vs image)", &fwd.image)?;
    v_image.expect_dtype("record_backward", DType::F32)?;
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
    if options.accumulate && options.colour == ColourSource::Sh {
        return Err(Error::InvalidArgument {
            op: "record_backward",
            detail: "only a geometry render's backward pass adds to gradients already written; \
                     record the colour render's first, without accumulate"
                .into(),
        });
    }
    let v = fwd.num_visible;
    let n = g.len() as usize;
    let v_splats = super::raster::record_raster_backward(enc, fwd, v_image)?;
    let splat_from_global = Tensor::uninit_rows(
        enc,
        DType::U32,
        &[n],
        g.rows_per_page,
        MemoryCategory::FrameScratch,
        "splat/splat_from_global",
    )?;
    ops::fill::fill(enc, &splat_from_global, u32::MAX)?;
    if v > 0 {
        let splat_ids = Tensor::uninit(
            enc,
            DType::U32,
            &[v as usize],
            MemoryCategory::FrameScratch,
            "splat/splat_ids",
        )?;
        ops::fill::arange(enc, &splat_ids, 0u32, 1)?;
        ops::gather::scatter(enc, &splat_ids, &fwd.global_from_splat, &splat_from_global)?;
    }
    let flag = |on: bool, bit: u32| if on { u64::from(bit) } else { 0 };
    let flags = flag(options.detach_view_dir, shared_splat::AUX_DETACH_VIEW_DIR)
        | flag(stats.is_some(), shared_splat::AUX_STATISTICS)
        | flag(options.accumulate, shared_splat::AUX_ACCUMULATE);
    let ctx = enc.ctx().clone();
    let kernels = Kernels {
        project: ctx.typed_with(&project_backward::Overrides {
            lens: fwd.uniform.lens_kind != shared_lens::LENS_PINHOLE,
        })?,
        colour: match options.colour {
            ColourSource::Sh => ColourKernel::Sh(ctx.typed()?),
            geometry => {
                ColourKernel::Geometry(ctx.typed_with(&geometry_colour_backward::Overrides {
                    normal: geometry == ColourSource::Normal,
                    moments: geometry == ColourSource::DepthMoments,
                })?)
            }
        },
        opacity: ctx.typed()?,
    };
    Ok(BackwardPass {
        g,
        uniform: fwd.uniform,
        splats: fwd.splats.clone(),
        stats,
        flags,
        v_splats,
        splat_from_global,
        kernels,
        scratch: None,
    })
}

impl BackwardPass<'_> {
    /// Records the gradients of the Gaussians in rows `chunk` of the model into rows `grad_rows`
    /// of `grads` (the same rows of a full-size set, or the start of a chunk-sized scratch), and
    /// their statistics. The three kernels read the parameters before any of them changes, so
    /// Adam may update the chunk right after.
    pub fn record_chunk(
        &mut self,
        enc: &mut Encoder,
        chunk: &RowChunk,
        grads: &GaussianTensors,
        grad_rows: &RowChunk,
    ) -> Result<()> {
        check_grads(self.g, grads, false)?;
        // This chunk's gradient rows and splat rows in Gaussian order (zero rows when culled).
        let scratch = self.scratch_for(enc, chunk.rows)?;
        let index = scratch.index.prefix(chunk.rows)?;
        ops::copy_range(
            enc,
            &self.splat_from_global,
            chunk.first_row,
            &index,
            0,
            chunk.rows,
        )?;
        gather_rows(enc, &self.v_splats, &index, V_STRIDE, &scratch.v_rows)?;
        gather_rows(enc, &self.splats, &index, SPLAT_STRIDE, &scratch.splat_rows)?;
        let (v_rows, splat_rows) = (&scratch.v_rows, &scratch.splat_rows);
        let (
            g,
            Kernels {
                project,
                colour,
                opacity,
            },
        ) = (self.g, &self.kernels);
        let at_start = chunk.at_start();
        let pu = self
            .uniform
            .with_count(chunk.rows, chunk.first_row, self.flags);
        let grid = ops::grid(enc, chunk.rows, project.threads())?;
        let v_projected = v_rows.rows_arg(&at_start)?;
        let bindings = project_backward::ProjectBackwardBindings {
            means: g.means.rows_arg(chunk)?,
            log_scales: g.log_scales.rows_arg(chunk)?,
            quats: g.quats.rows_arg(chunk)?,
            v_projected: v_projected.clone(),
            v_means: grads.means.rows_arg(grad_rows)?,
            v_log_scales: grads.log_scales.rows_arg(grad_rows)?,
            v_quats: grads.quats.rows_arg(grad_rows)?,
            opacity_logits: g.opacity_logits.rows_arg(chunk)?,
        };
        enc.run(project, &pu, bindings, grid)?;
        // SH degree 0 models have no rest coefficients: each absent binding gets its own
        // placeholder (one buffer bound read-only and read-write is a validation error).
        let (sh_rest, v_sh_rest) = if g.sh_rest.is_empty() {
            (Arg::Absent, Arg::Absent)
        } else {
            (
                g.sh_rest.rows_arg(chunk)?,
                grads.sh_rest.rows_arg(grad_rows)?,
            )
        };
        match colour {
            ColourKernel::Sh(sh) => {
                let bindings = sh_backward::ShBackwardBindings {
                    means: g.means.rows_arg(chunk)?,
                    sh_dc: g.sh_dc.rows_arg(chunk)?,
                    sh_rest,
                    v_projected: v_projected.clone(),
                    v_sh_dc: grads.sh_dc.rows_arg(grad_rows)?,
                    v_sh_rest,
                    v_means: grads.means.rows_arg(grad_rows)?,
                };
                enc.run(sh, &pu, bindings, grid)?;
            }
            ColourKernel::Geometry(geometry) => {
                let bindings = geometry_colour_backward::GeometryColourBackwardBindings {
                    means: g.means.rows_arg(chunk)?,
                    log_scales: g.log_scales.rows_arg(chunk)?,
                    quats: g.quats.rows_arg(chunk)?,
                    v_projected: v_projected.clone(),
                    v_sh_dc: grads.sh_dc.rows_arg(grad_rows)?,
                    v_sh_rest,
                    v_means: grads.means.rows_arg(grad_rows)?,
                    v_quats: grads.quats.rows_arg(grad_rows)?,
                };
                enc.run(geometry, &pu, bindings, grid)?;
            }
        }
        let bindings = opacity_backward::OpacityBackwardBindings {
            opacity_logits: g.opacity_logits.rows_arg(chunk)?,
            projected: splat_rows.rows_arg(&at_start)?,
            v_projected,
            v_opacity_logits: grads.opacity_logits.rows_arg(grad_rows)?,
            stats: match self.stats {
                Some(s) => s.rows_arg(chunk)?,
                None => Arg::Absent,
            },
        };
        enc.run(opacity, &pu, bindings, grid)
    }

    /// The chunk scratch, for chunks of up to `rows` rows (allocated at the first chunk, which is
    /// the largest: only a page's last chunk is shorter).
    fn scratch_for(&mut self, enc: &mut Encoder, rows: u64) -> Result<ChunkRowsScratch> {
        if let Some(s) = self.scratch.as_ref().filter(|s| s.index.len() >= rows) {
            return Ok(s.clone());
        }
        let rows_per_page = self.g.rows_per_page;
        let mut make = |dtype, shape: &[usize], label: &str| {
            let category = MemoryCategory::FrameScratch;
            Tensor::uninit_rows(enc, dtype, shape, rows_per_page, category, label)
        };
        let r = rows as usize;
        let scratch = ChunkRowsScratch {
            index: make(DType::U32, &[r], "splat/chunk_index")?,
            v_rows: make(DType::F32, &[r, V_STRIDE as usize], "splat/v_projected")?,
            splat_rows: make(DType::F32, &[r, SPLAT_STRIDE as usize], "splat/projected")?,
        };
        self.scratch = Some(scratch.clone());
        Ok(scratch)
    }

    /// The intermediates, for inspection and tests: the per-splat gradient rows and the same rows
    /// in Gaussian order (`[N, 12]`, zero for culled Gaussians).
    pub fn into_output(self, enc: &mut Encoder) -> Result<BackwardOutput> {
        let n = self.g.len();
        let v_projected = Tensor::uninit_rows(
            enc,
            DType::F32,
            &[n as usize, V_STRIDE as usize],
            self.g.rows_per_page,
            MemoryCategory::FrameScratch,
            "splat/v_projected",
        )?;
        gather_rows(
            enc,
            &self.v_splats,
            &self.splat_from_global,
            V_STRIDE,
            &v_projected,
        )?;
        Ok(BackwardOutput {
            v_splats: self.v_splats,
            v_projected,
        })
    }
}

/// Writes rows `index[i]` of the per-splat tensor `rows` (zero rows for `u32::MAX`) into the
/// first `index.len()` rows of `out`.
fn gather_rows(
    enc: &mut Encoder,
    rows: &Tensor,
    index: &Tensor,
    width: u64,
    out: &Tensor,
) -> Result<()> {
    let n = index.len();
    if n == 0 {
        return Ok(());
    }
    let out = out.prefix(n * width)?;
    match rows.is_empty() {
        true => ops::fill::fill(enc, &out, 0f32),
        false => ops::gather::gather_rows_into(enc, rows, index, width, &out),
    }
}

/// Records the whole backward pass. `v_image` is dLoss/d(image) with the image's `[H, W, 4]`
/// layout; `grads` receives the parameter gradients (same shapes as `g`); `stats`, when given,
/// is an `[N, 4]` row tensor (same rows per page as `g`) that the statistics are accumulated into.
pub fn record_backward(
    enc: &mut Encoder,
    g: &GaussianTensors,
    fwd: &ForwardOutput,
    v_image: &Tensor,
    grads: &GaussianTensors,
    stats: Option<&Tensor>,
    options: BackwardOptions,
) -> Result<BackwardOutput> {
    check_grads(g, grads, true)?;
    let mut pass = prepare_backward(enc, g, fwd, v_image, stats, options)?;
    // The three kernels of a page run before the next page's.
    for chunk in row_chunks(g.len(), g.rows_per_page, g.rows_per_page) {
        pass.record_chunk(enc, &chunk, grads, &chunk)?;
    }
    pass.into_output(enc)
}

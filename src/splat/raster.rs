//! The tile rasterizer and its backward, run in chunks of splats.
//!
//! The visible splats (`[V, 12]` in depth order) are paged by whole rows, and each page is one
//! chunk: one dispatch of `rasterize.wgsl` per chunk, front to back, and one of
//! `rasterize_backward.wgsl` per chunk, back to front. Within a tile's depth-ordered run of
//! intersections, a chunk's intersections are a contiguous sub-run (found on the GPU by binary
//! search, `shaders/shared/chunk.wgsl`). Between chunks each pixel's state lives in memory: the
//! forward keeps it in its own outputs (colour and transmittance in the image, depth, and the
//! consumed count with a "terminated" bit), the backward in a carry buffer of (transmittance,
//! colour behind). With one chunk (V up to ~2.8M splats on a 128 MiB binding) each kernel runs
//! once and never reads state, as a single pass would; the results are the same per pixel either
//! way, since every pixel composites the same splats in the same order.

use super::backward::V_STRIDE;
use super::forward::{Binned, ForwardOutput, SPLAT_STRIDE};
use crate::error::{Error, Result};
use crate::gpu::kernels::shared_isect_window::{BackwardUniform, IsectWindow};
use crate::gpu::kernels::{
    Arg, rasterize, rasterize_backward, rasterize_backward_sum, shared_isect_window,
};
use crate::gpu::{Encoder, GpuContext, MemoryCategory, WorkgroupGrid};
use crate::tensor::{DType, Tensor};

/// Splats per chunk (rows per page of the splat and splat-gradient tensors): as many rows of
/// [`SPLAT_STRIDE`] floats as one page holds.
pub fn splat_rows_per_page(ctx: &GpuContext) -> u64 {
    (ctx.page_bytes() / 4 / SPLAT_STRIDE.max(V_STRIDE)).max(1)
}

/// Splats in chunk `page` of a row tensor paged like [`ForwardOutput::splats`]: (first, count).
fn chunk_span(splats: &Tensor, page: usize, width: u64) -> (u64, u64) {
    (
        splats.page_start(page) / width,
        splats.page_len(page) / width,
    )
}

fn raster_grid(ctx: &GpuContext, num_tiles: u64) -> Result<WorkgroupGrid> {
    WorkgroupGrid::for_workgroups(num_tiles, ctx.max_workgroups_per_dimension())
}

/// Records the tile rasterizer over binned splats, one dispatch per chunk in depth order.
pub fn record_raster(enc: &mut Encoder, binned: Binned) -> Result<ForwardOutput> {
    let Binned {
        uniform: u,
        camera,
        splats,
        global_from_splat,
        splat_from_isect,
        isect_offsets,
        isect_from_orig,
        tile_ranges,
        num_visible: v,
        num_intersections: isects,
    } = binned;
    let ctx = enc.ctx().clone();
    let (w, h) = (camera.width as usize, camera.height as usize);
    let num_tiles = u64::from(u.tile_counts()[0]) * u64::from(u.tile_counts()[1]);
    let frame = |enc: &mut Encoder, dtype, shape: &[usize], label| {
        Tensor::uninit(enc, dtype, shape, MemoryCategory::FrameScratch, label)
    };
    let image = frame(enc, DType::F32, &[h, w, 4], "splat/image")?;
    let depth = frame(enc, DType::F32, &[h, w], "splat/depth")?;
    let consumed = frame(enc, DType::U32, &[h * w], "splat/consumed")?;
    let raster = ctx.typed::<rasterize::Rasterize>()?;
    let grid = raster_grid(&ctx, num_tiles)?;
    // With no visible splats, one dispatch over an empty chunk still writes the background.
    let chunks = splats.num_pages().max(1);
    for chunk in 0..chunks {
        let (first, count) = if v > 0 {
            chunk_span(&splats, chunk, SPLAT_STRIDE)
        } else {
            (0, 0)
        };
        let bindings = rasterize::RasterizeBindings {
            splats: if v > 0 {
                splats.page_arg(chunk)
            } else {
                Arg::Absent
            },
            splat_from_isect: if isects > 0 {
                splat_from_isect.page_arg(0)
            } else {
                Arg::Absent
            },
            ranges: tile_ranges.page_arg(0),
            rgba: image.page_arg(0),
            depth: depth.page_arg(0),
            consumed: consumed.page_arg(0),
        };
        enc.run(&raster, &u.with_count(count, first, v), bindings, grid)?;
    }
    Ok(ForwardOutput {
        image,
        depth,
        consumed,
        splats,
        global_from_splat,
        splat_from_isect,
        isect_offsets,
        isect_from_orig,
        tile_ranges,
        num_visible: v,
        num_intersections: isects,
        uniform: u,
    })
}

/// Floats per intersection row of the backward (`ROW_GRADS` in `shaders/shared/isect_window.wgsl`).
pub const ROW_GRADS: u64 = shared_isect_window::ROW_GRADS as u64;

/// Fewest intersections per backward window: frames up to this many take one window.
const MIN_WINDOW_ROWS: u64 = 1 << 18;

/// A larger frame's intersections are split into at least this many windows, so that their rows
/// (44 bytes per intersection) stay a fraction of the frame's memory.
const MIN_WINDOWS: u64 = 4;

/// Intersections per backward window of a frame with `isects` intersections: a quarter of them
/// (at least 262,144, and all of them below that), and never more than one page of rows of
/// [`ROW_GRADS`] floats.
pub fn isect_rows_per_window(ctx: &GpuContext, isects: u64) -> u64 {
    let page_rows = (ctx.page_bytes() / 4 / ROW_GRADS).max(1);
    isects
        .div_ceil(MIN_WINDOWS)
        .max(MIN_WINDOW_ROWS)
        .min(isects)
        .min(page_rows)
        .max(1)
}

/// Records the rasterizer's backward and returns the per-splat gradient rows `[V, V_STRIDE]` in
/// depth order, paged like `fwd.splats`.
///
/// The intersections are processed in windows of [`isect_rows_per_window`] tile-sorted
/// intersections, back to front, and within a window chunk by chunk, back to front (a tile's run
/// restricted to a window and a chunk is contiguous, and these pieces come in depth order).
/// `rasterize_backward.wgsl` writes one row of gradient sums per intersection of the window; then
/// `rasterize_backward_sum.wgsl` adds each splat's rows in emission order into its row of
/// `v_splats`. No atomics: the result has the same bits on every run.
pub(crate) fn record_raster_backward(
    enc: &mut Encoder,
    fwd: &ForwardOutput,
    v_image: &Tensor,
) -> Result<Tensor> {
    let ctx = enc.ctx().clone();
    let v = fwd.num_visible;
    let isects = fwd.num_intersections;
    let rows = (fwd.splats.page_elems() / SPLAT_STRIDE).max(1);
    let v_splats = Tensor::uninit_rows(
        enc,
        DType::F32,
        &[v as usize, V_STRIDE as usize],
        rows,
        MemoryCategory::FrameScratch,
        "splat/v_splats",
    )?;
    for page in 0..v_splats.num_pages() {
        enc.clear(v_splats.page(page).raw(), 0, v_splats.page_len(page) * 4);
    }
    if v == 0 || isects == 0 {
        return Ok(v_splats);
    }
    let u = fwd.uniform;
    let [tx, ty] = u.tile_counts();
    let chunks = fwd.splats.num_pages();
    let window_len = isect_rows_per_window(&ctx, isects);
    let windows = isects.div_ceil(window_len);
    // (transmittance, colour behind) per pixel, passed from each dispatch to the one in front.
    let carry_len = if chunks > 1 || windows > 1 {
        let [w, h] = u.image_size();
        h as usize * w as usize * 4
    } else {
        4 // never touched with one dispatch, but bound as an array of vec4 (16 bytes at least)
    };
    let carry = Tensor::uninit(
        enc,
        DType::F32,
        &[carry_len],
        MemoryCategory::FrameScratch,
        "splat/raster_carry",
    )?;
    let isect_rows = Tensor::uninit(
        enc,
        DType::F32,
        &[(window_len * ROW_GRADS) as usize],
        MemoryCategory::FrameScratch,
        "splat/isect_rows",
    )?;
    let kernel = ctx.typed::<rasterize_backward::RasterizeBackward>()?;
    let sum = ctx.typed::<rasterize_backward_sum::SumIsectRows>()?;
    let grid = raster_grid(&ctx, u64::from(tx) * u64::from(ty))?;
    let total = u32::try_from(isects).map_err(|_| Error::Shape {
        op: "record_raster_backward",
        detail: format!("{isects} intersections do not fit a u32 index"),
    })?;
    for window in (0..windows).rev() {
        let begin = window * window_len;
        let end = (begin + window_len).min(isects);
        let window = IsectWindow {
            begin: begin as u32,
            end: end as u32,
            total,
            pad: 0,
        };
        // Rows of intersections the kernel skips (behind every pixel's last contributor) stay 0.
        enc.clear(isect_rows.page(0).raw(), 0, (end - begin) * ROW_GRADS * 4);
        for chunk in (0..chunks).rev() {
            let (first, count) = chunk_span(&fwd.splats, chunk, SPLAT_STRIDE);
            let params = BackwardUniform {
                render: u.with_count(count, first, v),
                window,
            };
            let bindings = rasterize_backward::RasterizeBackwardBindings {
                splats: fwd.splats.page_arg(chunk),
                splat_from_isect: fwd.splat_from_isect.page_arg(0),
                ranges: fwd.tile_ranges.page_arg(0),
                rgba: fwd.image.page_arg(0),
                consumed: fwd.consumed.page_arg(0),
                v_rgba: v_image.page_arg(0),
                rows: isect_rows.page_arg(0),
                carry: carry.page_arg(0),
            };
            enc.run(&kernel, &params, bindings, grid)?;
        }
        enc.run_pages(&sum, v, rows, |page| {
            (
                BackwardUniform {
                    render: u.with_count(page.rows, page.first_row, v),
                    window,
                },
                rasterize_backward_sum::SumIsectRowsBindings {
                    isect_offsets: fwd.isect_offsets.page_arg(0),
                    isect_from_orig: fwd.isect_from_orig.page_arg(0),
                    rows: isect_rows.page_arg(0),
                    v_splats: v_splats.page_arg(page.page),
                },
            )
        })?;
    }
    Ok(v_splats)
}

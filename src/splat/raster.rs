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
//!
//! On CPU adapters each chunk's dispatch is further cut into slices: a dispatch walks at most
//! [`forward_slice_len`] (forward) or [`backward_slice_len`] (backward) intersections of each
//! tile's sub-run, and the next slice carries on from the state the previous one left, as chunks
//! do. llvmpipe (lavapipe) runs at most [`CPU_LOOP_ITERATIONS`] loop iterations per invocation,
//! all of its loops together, and then silently leaves every loop at its next test: one dispatch
//! over a tile of tens of thousands of intersections lost its back splats (the forward's NaN or
//! missing colour) and its front splats' gradients. A tile whose sub-run fits one slice takes it
//! whole in the first and leaves the others at once, and the later slices run over as many
//! workgroups as the frame's longest tile run needs (`raster_slices.wgsl` writes their indirect
//! arguments): none in a frame without long runs, which pays one small dispatch.

use super::backward::V_STRIDE;
use super::forward::{Binned, ForwardOutput, NORMAL_STRIDE, SPLAT_STRIDE};
use crate::error::{Error, Result};
use crate::gpu::kernels::shared_isect_window::{BackwardUniform, IsectWindow};
use crate::gpu::kernels::{
    Arg, raster_slices, rasterize, rasterize_backward, rasterize_backward_sum, shared_isect_window,
};
use crate::gpu::{Encoder, GpuContext, Launch, MemoryCategory, WorkgroupGrid};
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

/// Loop iterations one shader invocation may run on llvmpipe, all loops together (Mesa's
/// `LP_MAX_TGSI_LOOP_ITERATIONS`): past it, each loop exits at its next test.
pub const CPU_LOOP_ITERATIONS: u64 = 65_535;

/// Intersections per forward slice on a CPU adapter. `rasterize.wgsl` runs about 1.4 loop
/// iterations per intersection of a tile's run (fast path; measured, 47,662 intersections
/// exhausted [`CPU_LOOP_ITERATIONS`]; 1.1 on the portable path), so a slice of 16,384 takes about
/// a third of the budget.
const CPU_FORWARD_SLICE: u64 = 1 << 14;

/// Intersections per backward slice on a CPU adapter. `rasterize_backward.wgsl` runs up to about
/// 14 loop iterations per intersection that touches every subgroup's pixels (fast path: the
/// butterfly sums loop over the subgroup size; measured, 4,753 such intersections exhausted
/// [`CPU_LOOP_ITERATIONS`]; the portable path runs under 4), so a slice of 2,048 takes at most
/// about 45% of the budget.
const CPU_BACKWARD_SLICE: u64 = 1 << 11;

/// Whether kernels on `ctx` must keep each invocation's loop iterations within
/// [`CPU_LOOP_ITERATIONS`]: CPU adapters (llvmpipe; the others are treated alike).
fn loop_budgeted(ctx: &GpuContext) -> bool {
    ctx.adapter().get_info().device_type == wgpu::DeviceType::Cpu
}

/// Most intersections of a tile's run that one dispatch of the forward rasterizer walks on `ctx`:
/// `None` where a dispatch walks whole runs (see the [module](self) documentation).
pub fn forward_slice_len(ctx: &GpuContext) -> Option<u64> {
    loop_budgeted(ctx).then_some(CPU_FORWARD_SLICE)
}

/// Most intersections of a tile's run that one dispatch of the rasterizer's backward walks on
/// `ctx`: `None` where a dispatch walks whole runs (see the [module](self) documentation).
pub fn backward_slice_len(ctx: &GpuContext) -> Option<u64> {
    loop_budgeted(ctx).then_some(CPU_BACKWARD_SLICE)
}

/// The slices of a dispatch over `run_bound` intersections at most per tile: (slice length for
/// the uniform, 0 for whole runs; number of slices, at least 1).
fn slices(slice_len: Option<u64>, run_bound: u64) -> (u32, u64) {
    match slice_len {
        Some(len) if run_bound > len => (len as u32, run_bound.div_ceil(len)),
        _ => (0, 1),
    }
}

/// The slices' workgroup counts: slice 0 runs over `grid` as recorded; the others read theirs from
/// arguments that `raster_slices.wgsl` writes from the frame's longest tile run, so slices that no
/// tile needs run over no workgroups.
struct SliceLaunches {
    args: Option<Tensor>,
}

impl SliceLaunches {
    /// Records the arguments of `slices` slices of `slice_len` intersections over `grid` (nothing
    /// with one slice).
    fn record(
        enc: &mut Encoder,
        tile_ranges: &Tensor,
        num_tiles: u64,
        (slice_len, slices): (u32, u64),
        grid: WorkgroupGrid,
    ) -> Result<Self> {
        if slices <= 1 {
            return Ok(SliceLaunches { args: None });
        }
        let kernel = enc.ctx().typed::<raster_slices::SliceArgs>()?;
        let args = Tensor::uninit(
            enc,
            DType::U32,
            &[3 * slices as usize],
            MemoryCategory::FrameScratch,
            "splat/slice_args",
        )?;
        let params = raster_slices::SliceParams {
            num_tiles: num_tiles as u32,
            slice_len,
            slices: slices as u32,
            grid: [grid.x, grid.y],
            ..Default::default()
        };
        let bindings = raster_slices::SliceArgsBindings {
            ranges: tile_ranges.page_arg(0),
            args: args.page_arg(0),
        };
        enc.run(&kernel, &params, bindings, WorkgroupGrid { x: 1, y: 1 })?;
        Ok(SliceLaunches { args: Some(args) })
    }

    /// How slice `slice` launches.
    fn launch(&self, slice: u64, grid: WorkgroupGrid) -> Launch<'_> {
        match &self.args {
            Some(args) if slice > 0 => Launch::Indirect(args.page(0).raw(), 12 * slice),
            _ => Launch::Grid(grid),
        }
    }
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
        splat_normals,
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
    let depth = frame(enc, DType::F32, &[h, w, 2], "splat/depth")?;
    let consumed = frame(enc, DType::U32, &[h * w], "splat/consumed")?;
    let normals = match splat_normals {
        Some(_) => Some(frame(
            enc,
            DType::F32,
            &[h, w, NORMAL_STRIDE as usize],
            "splat/normals",
        )?),
        None => None,
    };
    let overrides = rasterize::Overrides {
        normals: normals.is_some(),
    };
    let raster = ctx.typed_with::<rasterize::Rasterize>(&overrides)?;
    let grid = raster_grid(&ctx, num_tiles)?;
    // With no visible splats, one dispatch over an empty chunk still writes the background.
    let chunks = splats.num_pages().max(1);
    let span = |chunk| {
        if v > 0 {
            chunk_span(&splats, chunk, SPLAT_STRIDE)
        } else {
            (0, 0)
        }
    };
    // A tile's sub-run in a chunk holds at most one intersection per splat of the chunk.
    let slice_len = forward_slice_len(&ctx);
    let most = (0..chunks)
        .map(|chunk| slices(slice_len, span(chunk).1.min(isects)))
        .max_by_key(|&(_, n)| n)
        .unwrap_or((0, 1));
    let launches = SliceLaunches::record(enc, &tile_ranges, num_tiles, most, grid)?;
    for chunk in 0..chunks {
        let (first, count) = span(chunk);
        let (len, slices) = slices(slice_len, count.min(isects));
        for slice in 0..slices {
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
                splat_normals: match &splat_normals {
                    Some(n) if v > 0 => n.page_arg(0),
                    _ => Arg::Absent,
                },
                normals: normals.as_ref().map_or(Arg::Absent, |n| n.page_arg(0)),
            };
            let params = u.with_count(count, first, v).with_slice(slice, len);
            enc.run_launch(&raster, &params, bindings, launches.launch(slice, grid))?;
        }
    }
    drop(splat_normals);
    Ok(ForwardOutput {
        image,
        depth,
        normals,
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
    // A tile's sub-run in a chunk and window holds at most one intersection per splat of the
    // chunk, and at most the window's intersections.
    let slice_len = backward_slice_len(&ctx);
    let most = (0..chunks)
        .map(|chunk| {
            slices(
                slice_len,
                chunk_span(&fwd.splats, chunk, SPLAT_STRIDE)
                    .1
                    .min(window_len),
            )
        })
        .max_by_key(|&(_, n)| n)
        .unwrap_or((0, 1));
    let sliced = most.1 > 1;
    // (transmittance, colour behind) per pixel, passed from each dispatch to the one in front.
    let carry_len = if chunks > 1 || windows > 1 || sliced {
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
    let launches = SliceLaunches::record(
        enc,
        &fwd.tile_ranges,
        u64::from(tx) * u64::from(ty),
        most,
        grid,
    )?;
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
            let (len, slices) = slices(slice_len, count.min(end - begin));
            for slice in 0..slices {
                let params = BackwardUniform {
                    render: u.with_count(count, first, v).with_slice(slice, len),
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
                enc.run_launch(&kernel, &params, bindings, launches.launch(slice, grid))?;
            }
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

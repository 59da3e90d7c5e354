//! `--memory-budget`: the largest Gaussian count whose training fits a byte budget, and the
//! size of the GPU cache of training images (`--image-cache`; [`image_cache_slots`] is the rule).
//!
//! The plan is computed by the functions that size the real allocations, never by byte counts
//! kept here:
//! - persistent bytes: [`ModelState::planned_bytes`] (parameters, Adam's moments in their storage
//!   and the densification statistics, each paged and rounded to the allocator's size classes);
//! - per-frame scratch: [`frame_scratch_bytes`] (the gradient chunk included), planned with every
//!   Gaussian visible (V = N) and [`planned_intersections`] tile intersections, at the largest
//!   view;
//! - the training images' GPU cache ([`crate::train::image_cache`]): its slots, each
//!   [`Tensor::planned_bytes`] of the largest training view's packed pixels, and the staging of
//!   one image's upload ([`crate::gpu::encoder::upload_staging_bytes`]).
//!
//! - the evaluation and exposure compensation ([`evaluation`]): LPIPS's weights (resident from
//!   the first evaluation on) and the peak of scoring the largest scored view (render, ground
//!   truth, metrics, LPIPS's feature maps of both images), exposure's transforms and its per-step
//!   images. Where LPIPS's bytes would leave no room for the initial Gaussians, it is skipped
//!   ([`LpipsPlan::Skipped`], with a note) rather than run past the budget.
//!
//! The cap is the largest count whose total fits (found by bisection, since paging and size
//! classes make the total a step function). The figures a user reads split the total the way it
//! grows: the image cache and one frame's buffers at the largest view ([`MemoryPlan::frame`]:
//! render target, loss gradient, per-pixel and per-tile buffers, an image's upload) are paid
//! once, and each Gaussian adds [`MemoryPlan::per_gaussian`]. `tests/suite/memory/mod.rs`
//! (module `plan`) holds the persistent part to the allocator's live bytes and the frame part to
//! a measured training step; `tests/suite/memory/budget.rs` holds the whole plan to a measured
//! run at 1024².

mod check;
mod evaluation;
mod plan;

pub use check::check_plan;
pub use evaluation::{
    EvaluationPlan, LpipsPlan, lpips_fits_views, plan_evaluation, scored_views, scored_width,
};
pub use plan::{plan_budget, plan_budget_with, plan_for_cache, plan_for_cache_with};

use crate::data::Dataset;
use crate::error::Result;
use crate::gpu::{GpuContext, MemoryCategory};
use crate::optim::MomentStorage;
use crate::splat::gaussians::Attribute;
use crate::splat::gaussians::MAX_ROW_WIDTH;
use crate::splat::uniform::TILE_SIZE;
use crate::tensor::{DType, Tensor};
use crate::train::image_cache::ImageCachePlan;
use crate::train::state::ModelState;

pub use super::byte_size::{
    ByteBudget, adapter_memory_bytes, parse_byte_budget, parse_image_cache_size, resolve_budget,
};

/// Intersections per Gaussian the plan reserves scratch for (a trained scene averages 3 to 6).
pub const PLANNED_TILES_PER_GAUSSIAN: u64 = 8;

/// Intersections per tile the plan reserves scratch for, whatever the count: a few thousand
/// Gaussians of an initial cloud are large enough to cover a 1024² view about 20 deep
/// (`tests/suite/memory/budget.rs` measures 80,774 intersections for 4,000 Gaussians, 20 a
/// Gaussian), past [`PLANNED_TILES_PER_GAUSSIAN`].
pub const PLANNED_DEPTH_PER_TILE: u64 = 32;

/// The tile intersections a frame of `n` Gaussians at `width` × `height` is planned for:
/// [`PLANNED_TILES_PER_GAUSSIAN`] a Gaussian, and at least [`PLANNED_DEPTH_PER_TILE`] a tile.
pub fn planned_intersections(n: u64, width: u32, height: u32) -> u64 {
    let tiles = u64::from(width.div_ceil(TILE_SIZE)) * u64::from(height.div_ceil(TILE_SIZE));
    (n * PLANNED_TILES_PER_GAUSSIAN).max(tiles * PLANNED_DEPTH_PER_TILE)
}

/// Applies `--memory-budget` to `config`: the cap becomes the plan's count (or the smaller of it
/// and an explicit `max_gaussians`), and `image_cache` the bytes of the cache the plan holds (its
/// share of the budget, or `--image-cache`). The evaluation is planned too; where LPIPS would
/// leave no room for the `initial` Gaussians, `config.lpips` is turned off and the plan says so
/// ([`MemoryPlan::lpips_note`]). Fails, with the numbers, when one training image and one frame,
/// or the `initial` Gaussians, do not fit.
pub fn apply_memory_budget(
    text: &str,
    ctx: &GpuContext,
    dataset: &Dataset,
    initial: u64,
    config: &mut crate::train::TrainConfig,
) -> Result<MemoryPlan> {
    let bytes = resolve_budget(parse_byte_budget(text)?, adapter_memory_bytes(ctx.info()))?;
    let plan_with = |lpips: bool| {
        let evaluation = EvaluationPlan {
            geometry: config.depth_normal > 0.0 || config.distortion > 0.0,
            ..plan_evaluation(ctx, dataset, config.exposure, lpips)
        };
        plan_budget_with(
            ctx,
            bytes,
            config.sh_degree,
            config.optimizer_state,
            dataset,
            config.image_cache,
            evaluation,
        )
    };
    let mut plan = plan_with(config.lpips);
    if let LpipsPlan::Planned { bytes } = plan.evaluation.lpips
        && plan.max_gaussians < initial
    {
        let without = plan_with(false);
        if without.max_gaussians >= initial {
            let smallest_budget = plan.smallest_budget(ctx, initial);
            plan = without;
            plan.evaluation.lpips = LpipsPlan::Skipped {
                bytes,
                smallest_budget,
            };
            config.lpips = false;
        } else {
            plan = without;
        }
    }
    check_plan(ctx, &plan, initial)?;
    config.max_gaussians = match config.max_gaussians {
        0 => plan.max_gaussians,
        explicit => explicit.min(plan.max_gaussians),
    };
    // The trainer sizes its cache from this, so it is the cache the budget planned.
    config.image_cache = Some(plan.images);
    Ok(plan)
}

/// Floats per Gaussian at SH degree `degree`: the widths of the [`Attribute`]s.
pub fn floats_per_gaussian(degree: u32) -> u64 {
    Attribute::ALL.iter().map(|a| a.width(degree)).sum()
}

/// Bytes of the upload arena's first chunk and the readback buffers of a step (staging).
const STAGING_BYTES: u64 = 64 << 10;

/// Per-frame scratch bytes of one training step with `n` Gaussians, `v` visible, `i` tile
/// intersections and a `width` × `height` image: the largest of the step's three high-water
/// marks, each the sum of the tensors alive there, sized as the stages size them (their row
/// widths, their paging and the allocator's size classes):
/// - binning: the projection, the visible splats and the intersection sort with its scratch;
/// - the rasterizer's backward: the forward's outputs, the loss gradient, the per-splat gradient
///   rows, the raster carry and one window of per-intersection rows;
/// - the projection's backward: the forward's outputs, the loss gradient, the per-splat rows and
///   the per-Gaussian rows they are scattered into.
///
/// `tests/suite/memory/mod.rs` (module `plan`) holds it to a measured training step.
pub fn frame_scratch_bytes(
    ctx: &GpuContext,
    n: u64,
    v: u64,
    i: u64,
    width: u32,
    height: u32,
    max_sh_degree: u32,
) -> u64 {
    use crate::splat::backward::V_STRIDE;
    use crate::splat::forward::SPLAT_STRIDE;
    use crate::splat::raster::{ROW_GRADS, isect_rows_per_window, splat_rows_per_page};
    let words = |len: u64| Tensor::planned_bytes(ctx, DType::U32, len);
    let model_rows = ctx.rows_per_page(MAX_ROW_WIDTH);
    let frame = MemoryCategory::FrameScratch;
    let per_gaussian =
        |width: u64| Tensor::planned_rows_bytes(frame, DType::F32, n, width, model_rows);
    let per_splat = |width: u64| {
        Tensor::planned_rows_bytes(frame, DType::F32, v, width, splat_rows_per_page(ctx))
    };
    let pixels = u64::from(width) * u64::from(height);
    let tiles = u64::from(width.div_ceil(TILE_SIZE)) * u64::from(height.div_ceil(TILE_SIZE));
    // Projection: rows, tile counts, depth keys.
    let projection = per_gaussian(SPLAT_STRIDE) + 2 * per_gaussian(1);
    // What the forward pass hands to the backward pass.
    let forward_output = per_gaussian(SPLAT_STRIDE)
        + per_gaussian(1)
        + per_splat(SPLAT_STRIDE)
        + 2 * words(v)
        + 2 * words(i)
        + words(2 * tiles)
        + words(4 * pixels)
        + words(2 * pixels)
        + words(pixels);
    let loss_gradient = words(4 * pixels);
    let splat_gradients = per_splat(V_STRIDE);
    // Binning: visible ids, their depth keys and sort (two outputs, two scratch), the splat rows,
    // tile counts and offsets, then the intersection keys, ids and splats, their sort (two
    // outputs, two scratch) and the two index maps.
    let binning = projection
        + words(n)
        + 5 * words(v)
        + per_splat(SPLAT_STRIDE)
        + 2 * words(v)
        + 9 * words(i);
    let raster_backward = forward_output
        + loss_gradient
        + splat_gradients
        + words(4 * pixels)
        + words(isect_rows_per_window(ctx, i) * ROW_GRADS);
    let project_backward = forward_output
        + loss_gradient
        + splat_gradients
        + per_gaussian(V_STRIDE)
        + ModelState::planned_gradient_bytes(ctx, n, max_sh_degree);
    binning.max(raster_backward).max(project_backward) + STAGING_BYTES
}

/// How a budget splits, and the count it allows. The split is what a user reads: the training
/// images and one frame's buffers are paid once, each Gaussian adds [`MemoryPlan::per_gaussian`];
/// [`MemoryPlan::planned_bytes`] gives the exact total of any count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// The budget in bytes.
    pub budget: u64,
    /// The GPU cache of training images: its slots' bytes ([`ImageCachePlan::bytes`]).
    pub images: u64,
    /// One frame's buffers at the largest view, paid once whatever the count: the render target,
    /// the loss gradient, the per-pixel and per-tile buffers of the rasterizer, and staging, one
    /// image's upload included (the planned bytes of zero Gaussians, the cache excluded).
    pub frame: u64,
    /// Bytes each Gaussian adds, persistent state and per-frame scratch together, averaged over
    /// the cap (over [`REFERENCE_GAUSSIANS`] when none fit).
    pub per_gaussian: u64,
    /// The largest count that fits.
    pub max_gaussians: u64,
    /// The SH degree planned for.
    pub degree: u32,
    /// The storage of Adam's moments planned for.
    pub moments: MomentStorage,
    /// The largest view's size, `(width, height)`, whose frame buffers are planned.
    pub view_size: (u32, u32),
    /// The GPU cache of training images this budget holds.
    pub cache: ImageCachePlan,
    /// The evaluation and exposure compensation's bytes (none in a plan of training alone).
    pub evaluation: EvaluationPlan,
}

/// The count the per-Gaussian figure is averaged over when no Gaussian fits the budget.
pub const REFERENCE_GAUSSIANS: u64 = 100_000;

impl MemoryPlan {
    /// The planned bytes of training `n` Gaussians, the image cache included: what the budget
    /// must hold.
    pub fn planned_bytes(&self, ctx: &GpuContext, n: u64) -> u64 {
        planned_total_with_evaluation(
            ctx,
            n,
            self.degree,
            self.moments,
            &self.cache,
            self.view_size,
            &self.evaluation,
        )
    }

    /// The note a run prints and records when this plan skipped LPIPS, `None` when it did not.
    pub fn lpips_note(&self) -> Option<String> {
        let LpipsPlan::Skipped {
            bytes,
            smallest_budget,
        } = self.evaluation.lpips
        else {
            return None;
        };
        Some(format!(
            "LPIPS is not scored: its network and feature maps take {bytes} bytes, which a \
             --memory-budget of {} bytes cannot hold beside the initial Gaussians; give \
             --memory-budget {smallest_budget} or more to score it (PSNR and SSIM are scored)",
            self.budget
        ))
    }

    /// The smallest budget whose plan holds `n` Gaussians. A larger budget may buy the cache more
    /// slots, so this is the fixed point of `B = cache(B) + the rest`, reached from below: every
    /// budget under it lacks room for its own cache.
    pub fn smallest_budget(&self, ctx: &GpuContext, n: u64) -> u64 {
        let rest = self.planned_bytes(ctx, n) - self.images;
        let mut budget = self.cache.at_budget(Some(0)).bytes() + rest;
        loop {
            let needed = self.cache.at_budget(Some(budget)).bytes() + rest;
            if needed <= budget {
                return budget;
            }
            budget = needed;
        }
    }

    /// Bytes per Gaussian averaged over `n` Gaussians: what `n` of them add to the images and
    /// one frame's buffers, divided by `n` (rounded up).
    pub fn per_gaussian_at(&self, ctx: &GpuContext, n: u64) -> u64 {
        let n = n.max(1);
        let added = self
            .planned_bytes(ctx, n)
            .saturating_sub(self.images + self.frame);
        added.div_ceil(n)
    }
}

/// Planned bytes of training `n` Gaussians at SH degree `degree`, images excluded, with the
/// frame scratch of a `width` × `height` view.
pub fn planned_training_bytes(
    ctx: &GpuContext,
    n: u64,
    degree: u32,
    moments: MomentStorage,
    width: u32,
    height: u32,
) -> u64 {
    let intersections = planned_intersections(n, width, height);
    ModelState::planned_bytes(ctx, n, degree, moments)
        + frame_scratch_bytes(ctx, n, n, intersections, width, height, degree)
}

/// Planned bytes of training `n` Gaussians with the image cache `cache` and frames of a
/// `view_size` view: the cache, one image's upload staging and [`planned_training_bytes`].
pub fn planned_total_bytes(
    ctx: &GpuContext,
    n: u64,
    degree: u32,
    moments: MomentStorage,
    cache: &ImageCachePlan,
    view_size: (u32, u32),
) -> u64 {
    let (width, height) = view_size;
    cache.bytes()
        + cache.upload_bytes()
        + planned_training_bytes(ctx, n, degree, moments, width, height)
}

/// [`planned_total_bytes`] with the evaluation and exposure compensation's bytes: the model, the
/// cache and `evaluation`'s resident bytes, then the larger of a training step (its frame and
/// exposure's per-step images) and the evaluation's peak (whose render is a frame at most).
pub fn planned_total_with_evaluation(
    ctx: &GpuContext,
    n: u64,
    degree: u32,
    moments: MomentStorage,
    cache: &ImageCachePlan,
    view_size: (u32, u32),
    evaluation: &EvaluationPlan,
) -> u64 {
    let (width, height) = view_size;
    let frame = frame_scratch_bytes(
        ctx,
        n,
        n,
        planned_intersections(n, width, height),
        width,
        height,
        degree,
    );
    let geometry = match evaluation.geometry {
        true => geometry_frame_bytes(ctx, n, width, height),
        false => 0,
    };
    cache.bytes()
        + cache.upload_bytes()
        + ModelState::planned_bytes(ctx, n, degree, moments)
        + evaluation.resident
        + (frame + evaluation.step + geometry).max(evaluation.scoring)
}

/// The bytes a training step with the depth–normal or distortion regulariser adds to its frame,
/// `n` Gaussians all visible at `width` × `height`, counted as if all were alive at once (an upper
/// bound): each Gaussian's normal and the splats' ([`crate::splat::forward::NORMAL_STRIDE`]), the
/// two geometry renders (splat rows, image, depth, consumed counts), the pixel rays of as many
/// cameras as the trainer keeps, the loss's gradients and per-pixel losses, and the two backward passes' per-splat gradient rows and
/// splat indices.
pub fn geometry_frame_bytes(ctx: &GpuContext, n: u64, width: u32, height: u32) -> u64 {
    use crate::splat::backward::V_STRIDE;
    use crate::splat::forward::{NORMAL_STRIDE, SPLAT_STRIDE};
    use crate::splat::raster::splat_rows_per_page;
    let words = |len: u64| Tensor::planned_bytes(ctx, DType::U32, len);
    let frame = MemoryCategory::FrameScratch;
    let model_rows = ctx.rows_per_page(MAX_ROW_WIDTH);
    let per_gaussian =
        |width: u64| Tensor::planned_rows_bytes(frame, DType::F32, n, width, model_rows);
    let per_splat = |width: u64| {
        Tensor::planned_rows_bytes(frame, DType::F32, n, width, splat_rows_per_page(ctx))
    };
    let pixels = u64::from(width) * u64::from(height);
    let normals = per_gaussian(NORMAL_STRIDE) + words(NORMAL_STRIDE * n);
    let render = per_splat(SPLAT_STRIDE) + words(4 * pixels) + words(2 * pixels) + words(pixels);
    let rays = crate::train::geometry::RAY_CACHE_CAMERAS as u64 * words(4 * pixels);
    let loss = rays + 2 * words(4 * pixels) + words(2 * pixels);
    let backward = per_splat(V_STRIDE) + per_gaussian(1);
    normals + 2 * render + loss + 2 * backward
}

/// The largest count whose `total` fits `budget` (0 when none does), found by bisection:
/// `total` must grow with the count, which paging and size classes make a step function.
pub fn largest_count_within(budget: u64, total: impl Fn(u64) -> u64) -> u64 {
    let fits = |n: u64| total(n) <= budget;
    let (mut lo, mut hi) = (0u64, 1u64);
    while fits(hi) && hi < (1 << 40) {
        lo = hi;
        hi *= 2;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) { lo = mid } else { hi = mid }
    }
    if fits(lo) { lo } else { 0 }
}

/// The GPU image cache takes at most `1 / IMAGE_CACHE_BUDGET_DIVISOR` of a memory budget: a
/// quarter, leaving the rest to the model and its frames.
pub const IMAGE_CACHE_BUDGET_DIVISOR: u64 = 4;

/// Without a memory budget or `--image-cache`, the cache holds the training images up to this
/// many bytes (2 GiB).
pub const DEFAULT_IMAGE_CACHE_BYTES: u64 = 2 << 30;

/// The rule that sizes the GPU cache of training images (the trainer, `--memory-budget` and
/// `partition`'s estimates all come here): it may take `explicit` bytes (`--image-cache`), else a
/// [`IMAGE_CACHE_BUDGET_DIVISOR`]th of `budget`, else [`DEFAULT_IMAGE_CACHE_BYTES`]; it holds all
/// `views` when they fit in that, else as many slots of `slot_bytes` as fit, and never fewer than
/// one.
pub fn image_cache_slots(
    views: usize,
    slot_bytes: u64,
    budget: Option<u64>,
    explicit: Option<u64>,
) -> usize {
    let share = budget.map_or(DEFAULT_IMAGE_CACHE_BYTES, |b| {
        b / IMAGE_CACHE_BUDGET_DIVISOR
    });
    let bytes = explicit.unwrap_or(share);
    let fit = usize::try_from(bytes / slot_bytes.max(1)).unwrap_or(usize::MAX);
    fit.clamp(1.min(views), views)
}

/// The size of `dataset`'s largest view (train or test), whose frame buffers training and
/// evaluation allocate.
pub fn largest_view(dataset: &Dataset) -> (u32, u32) {
    dataset
        .train
        .iter()
        .chain(&dataset.test)
        .map(|v| (v.image.width, v.image.height))
        .max_by_key(|&(w, h)| u64::from(w) * u64::from(h))
        .unwrap_or((0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_per_gaussian_are_the_attribute_widths() {
        // 59 floats (236 B) at degree 3, 14 at degree 0.
        assert_eq!(floats_per_gaussian(3), 59);
        assert_eq!(floats_per_gaussian(0), 14);
    }
}

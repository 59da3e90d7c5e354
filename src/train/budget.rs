//! `--memory-budget`: the largest Gaussian count whose training fits a byte budget.
//!
//! The plan is computed by the functions that size the real allocations, never by byte counts
//! kept here:
//! - persistent bytes: [`ModelState::planned_bytes`] (parameters, Adam's moments in their storage
//!   and the densification statistics, each paged and rounded to the allocator's size classes);
//! - per-frame scratch: [`frame_scratch_bytes`] (the gradient chunk included), planned with every
//!   Gaussian visible (V = N) and [`PLANNED_TILES_PER_GAUSSIAN`] intersections each, at the
//!   largest view;
//! - the dataset's training images on the GPU ([`Tensor::planned_bytes`] of each packed image).
//!
//! The cap is the largest count whose total fits (found by bisection, since paging and size
//! classes make the total a step function). The figures a user reads split the total the way it
//! grows: the images and one frame's buffers at the largest view ([`MemoryPlan::frame`]: render
//! target, loss gradient, per-pixel and per-tile buffers) are paid once, and each Gaussian adds
//! [`MemoryPlan::per_gaussian`]. `tests/memory.rs` (module `plan`) holds the persistent part to
//! the allocator's live bytes and the frame part to a measured training step; `tests/memory/
//! budget.rs` holds the whole plan to a measured run at 1024².

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::gpu::{GpuContext, MemoryCategory};
use crate::optim::MomentStorage;
use crate::splat::gaussians::Attribute;
use crate::splat::gaussians::MAX_ROW_WIDTH;
use crate::splat::uniform::TILE_SIZE;
use crate::tensor::{DType, Tensor};
use crate::train::state::ModelState;

/// Intersections per Gaussian the plan reserves scratch for (a trained scene averages 3 to 6).
pub const PLANNED_TILES_PER_GAUSSIAN: u64 = 8;

/// A budget as the user wrote it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ByteBudget {
    /// An absolute number of bytes.
    Bytes(u64),
    /// A fraction in (0, 1] of the adapter's memory.
    Fraction(f64),
}

/// Parses `8GiB`, `512MiB`, `1.5GB`, `2000000000` or a fraction such as `0.5`.
pub fn parse_byte_budget(text: &str) -> Result<ByteBudget> {
    let bad = |why: &str| Error::InvalidArgument {
        op: "memory budget",
        detail: format!(
            "{text:?}: {why}; write bytes with a unit (8GiB, 512MiB, 6GB) or a fraction of the adapter's memory (0.5)"
        ),
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad("not a number"))?;
    if !value.is_finite() || value <= 0.0 {
        return Err(bad("must be above zero"));
    }
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" if value <= 1.0 => return Ok(ByteBudget::Fraction(value)),
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        "t" | "tb" => 1_000_000_000_000,
        "tib" => 1 << 40,
        _ => return Err(bad("unknown unit")),
    };
    Ok(ByteBudget::Bytes((value * scale as f64) as u64))
}

/// Bytes a budget stands for: a fraction needs the adapter's memory size (`adapter_bytes`).
pub fn resolve_budget(budget: ByteBudget, adapter_bytes: Option<u64>) -> Result<u64> {
    match (budget, adapter_bytes) {
        (ByteBudget::Bytes(bytes), _) => Ok(bytes),
        (ByteBudget::Fraction(f), Some(total)) => Ok((total as f64 * f) as u64),
        (ByteBudget::Fraction(f), None) => Err(Error::InvalidArgument {
            op: "memory budget",
            detail: format!(
                "a fraction ({f}) needs the adapter's memory size, which this backend does not report; give bytes instead (e.g. 8GiB)"
            ),
        }),
    }
}

/// The adapter's memory, where it can be known: a CPU adapter (lavapipe) uses host memory, so
/// its size is the machine's (`/proc/meminfo`); wgpu reports no size for discrete GPUs.
pub fn adapter_memory_bytes(info: &crate::gpu::ContextInfo) -> Option<u64> {
    if !info.adapter.device_type.eq_ignore_ascii_case("cpu") {
        return None;
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Applies `--memory-budget` to `config`: the cap becomes the plan's count (or the smaller of it
/// and an explicit `max_gaussians`). Fails, with the numbers, when `initial` Gaussians do not fit.
pub fn apply_memory_budget(
    text: &str,
    ctx: &GpuContext,
    dataset: &Dataset,
    initial: u64,
    config: &mut crate::train::TrainConfig,
) -> Result<MemoryPlan> {
    let bytes = resolve_budget(parse_byte_budget(text)?, adapter_memory_bytes(ctx.info()))?;
    let plan = plan_budget(
        ctx,
        bytes,
        config.sh_degree,
        config.optimizer_state,
        dataset,
    );
    check_plan(ctx, &plan, initial)?;
    config.max_gaussians = match config.max_gaussians {
        0 => plan.max_gaussians,
        explicit => explicit.min(plan.max_gaussians),
    };
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
/// `tests/memory.rs` (module `plan`) holds it to a measured training step.
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
        + 2 * words(pixels);
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
    /// The dataset's training images on the GPU.
    pub images: u64,
    /// One frame's buffers at the largest view, paid once whatever the count: the render target,
    /// the loss gradient, the per-pixel and per-tile buffers of the rasterizer, and staging (the
    /// planned training bytes of zero Gaussians).
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
}

/// The count the per-Gaussian figure is averaged over when no Gaussian fits the budget.
pub const REFERENCE_GAUSSIANS: u64 = 100_000;

impl MemoryPlan {
    /// The planned bytes of training `n` Gaussians, images included: what the budget must hold.
    pub fn planned_bytes(&self, ctx: &GpuContext, n: u64) -> u64 {
        let (width, height) = self.view_size;
        self.images + planned_training_bytes(ctx, n, self.degree, self.moments, width, height)
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
    let intersections = n * PLANNED_TILES_PER_GAUSSIAN;
    ModelState::planned_bytes(ctx, n, degree, moments)
        + frame_scratch_bytes(ctx, n, n, intersections, width, height, degree)
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

/// Device bytes of the packed RGBA8 training images of `dataset`, and the size of its largest
/// view (train or test), whose frame buffers training and evaluation allocate.
pub fn dataset_image_bytes(ctx: &GpuContext, dataset: &Dataset) -> (u64, (u32, u32)) {
    let images: u64 = dataset
        .train
        .iter()
        .map(|v| {
            let pixels = u64::from(v.image.width) * u64::from(v.image.height);
            Tensor::planned_bytes(ctx, DType::U32, pixels)
        })
        .sum();
    let size = dataset
        .train
        .iter()
        .chain(&dataset.test)
        .map(|v| (v.image.width, v.image.height))
        .max_by_key(|&(w, h)| u64::from(w) * u64::from(h))
        .unwrap_or((0, 0));
    (images, size)
}

/// Plans `budget` bytes for training `dataset` at SH degree `degree` in `ctx`.
pub fn plan_budget(
    ctx: &GpuContext,
    budget: u64,
    degree: u32,
    moments: MomentStorage,
    dataset: &Dataset,
) -> MemoryPlan {
    let (images, view_size) = dataset_image_bytes(ctx, dataset);
    plan_for_images(ctx, budget, degree, moments, images, view_size)
}

/// Plans `budget` bytes for training with `images` bytes of training images whose largest view
/// is `view_size` (`(width, height)`).
pub fn plan_for_images(
    ctx: &GpuContext,
    budget: u64,
    degree: u32,
    moments: MomentStorage,
    images: u64,
    view_size: (u32, u32),
) -> MemoryPlan {
    let (width, height) = view_size;
    let total = |n: u64| images + planned_training_bytes(ctx, n, degree, moments, width, height);
    let max_gaussians = largest_count_within(budget, total);
    let mut plan = MemoryPlan {
        budget,
        images,
        frame: total(0).saturating_sub(images),
        per_gaussian: 0,
        max_gaussians,
        degree,
        moments,
        view_size,
    };
    let averaged_over = match max_gaussians {
        0 => REFERENCE_GAUSSIANS,
        n => n,
    };
    plan.per_gaussian = plan.per_gaussian_at(ctx, averaged_over);
    plan
}

/// Checks that a plan holds `initial` Gaussians, with the numbers in the error when not: the
/// images, one frame's buffers and the per-Gaussian bytes averaged over `initial`, and the
/// smallest budget that holds them (the plan's exact total, so that budget is enough).
pub fn check_plan(ctx: &GpuContext, plan: &MemoryPlan, initial: u64) -> Result<()> {
    if initial <= plan.max_gaussians {
        return Ok(());
    }
    let (width, height) = plan.view_size;
    Err(Error::InvalidArgument {
        op: "memory budget",
        detail: format!(
            "{} bytes cannot hold the initial {initial} Gaussians: the training images take {} bytes, one {width}x{height} frame's buffers {} bytes and each Gaussian about {} bytes, so at most {} fit; raise --memory-budget to at least {} bytes or start from fewer points",
            plan.budget,
            plan.images,
            plan.frame,
            plan.per_gaussian_at(ctx, initial),
            plan.max_gaussians,
            plan.planned_bytes(ctx, initial)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse_with_units_and_fractions() {
        assert_eq!(
            parse_byte_budget("8GiB").unwrap(),
            ByteBudget::Bytes(8 << 30)
        );
        assert_eq!(
            parse_byte_budget("1.5 GB").unwrap(),
            ByteBudget::Bytes(1_500_000_000)
        );
        assert_eq!(
            parse_byte_budget("512mib").unwrap(),
            ByteBudget::Bytes(512 << 20)
        );
        assert_eq!(parse_byte_budget("0.5").unwrap(), ByteBudget::Fraction(0.5));
        assert_eq!(parse_byte_budget("4096").unwrap(), ByteBudget::Bytes(4096));
        for bad in ["", "-1GiB", "0", "8 parsecs", "GiB"] {
            assert!(parse_byte_budget(bad).is_err(), "{bad:?} parsed");
        }
        assert!(resolve_budget(ByteBudget::Fraction(0.5), None).is_err());
        assert_eq!(
            resolve_budget(ByteBudget::Fraction(0.5), Some(1000)).unwrap(),
            500
        );
    }

    #[test]
    fn floats_per_gaussian_are_the_attribute_widths() {
        // 59 floats (236 B) at degree 3, 14 at degree 0.
        assert_eq!(floats_per_gaussian(3), 59);
        assert_eq!(floats_per_gaussian(0), 14);
    }
}

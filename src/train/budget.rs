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
//! classes make the total a step function). `tests/memory.rs` (module `plan`) holds the persistent part to
//! the allocator's live bytes and the frame part to a measured training step.

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
    check_plan(&plan, initial)?;
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

/// How a budget splits, and the count it allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// The budget in bytes.
    pub budget: u64,
    /// Bytes that do not scale with the count: the training images.
    pub fixed: u64,
    /// Bytes per Gaussian at the cap: persistent plus per-frame scratch, averaged.
    pub per_gaussian: u64,
    /// The largest count that fits.
    pub max_gaussians: u64,
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

/// Plans `budget` bytes for training `dataset` at SH degree `degree` in `ctx`.
pub fn plan_budget(
    ctx: &GpuContext,
    budget: u64,
    degree: u32,
    moments: MomentStorage,
    dataset: &Dataset,
) -> MemoryPlan {
    let images: u64 = dataset
        .train
        .iter()
        .map(|v| {
            let pixels = u64::from(v.image.width) * u64::from(v.image.height);
            Tensor::planned_bytes(ctx, DType::U32, pixels)
        })
        .sum();
    let (width, height) = dataset
        .train
        .iter()
        .chain(&dataset.test)
        .map(|v| (v.image.width, v.image.height))
        .max_by_key(|&(w, h)| u64::from(w) * u64::from(h))
        .unwrap_or((0, 0));
    let total = |n: u64| planned_training_bytes(ctx, n, degree, moments, width, height);
    let fits = |n: u64| images + total(n) <= budget;
    // Bisection over [0, hi): the total grows with n.
    let (mut lo, mut hi) = (0u64, 1u64);
    while fits(hi) && hi < (1 << 40) {
        lo = hi;
        hi *= 2;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) { lo = mid } else { hi = mid }
    }
    let max_gaussians = if fits(lo) { lo } else { 0 };
    let per_gaussian = total(max_gaussians.max(1)) / max_gaussians.max(1);
    MemoryPlan {
        budget,
        fixed: images,
        per_gaussian,
        max_gaussians,
    }
}

/// Checks that a plan holds `initial` Gaussians, with the numbers in the error when not.
pub fn check_plan(plan: &MemoryPlan, initial: u64) -> Result<()> {
    if initial <= plan.max_gaussians {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        op: "memory budget",
        detail: format!(
            "{} bytes cannot hold the initial {initial} Gaussians: the training images take {} bytes and each Gaussian about {} bytes, so at most {} fit; raise --memory-budget to at least {} bytes or start from fewer points",
            plan.budget,
            plan.fixed,
            plan.per_gaussian,
            plan.max_gaussians,
            plan.fixed + initial * plan.per_gaussian
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

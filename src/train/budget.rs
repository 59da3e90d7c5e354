//! `--memory-budget`: the largest Gaussian count whose training fits a byte budget.
//!
//! The model is the one documented in the README (Memory):
//! - persistent bytes per Gaussian: parameters, one gradient buffer, two Adam moments (4 × 4 B ×
//!   the floats per Gaussian) and 16 B of densification statistics, times 1.05 for the allocator's
//!   size-class rounding (measured by `wgsplat bench memory`);
//! - per-frame scratch: `N × 56 B + V × 64 B + I × 52 B + W × H × 40 B`, planned with every
//!   Gaussian visible (V = N) and [`PLANNED_TILES_PER_GAUSSIAN`] intersections each;
//! - the dataset's training images on the GPU (4 B per pixel).
//!
//! The cap is `(budget - images - W × H × 40 B) / (persistent + scratch per Gaussian)`.

use crate::data::Dataset;
use crate::error::{Error, Result};

/// Intersections per Gaussian the plan reserves scratch for (a trained scene averages 3 to 6).
pub const PLANNED_TILES_PER_GAUSSIAN: u64 = 8;
/// Per-frame scratch bytes per pixel: image, depth, consumed counts and the loss buffers.
pub const SCRATCH_BYTES_PER_PIXEL: u64 = 40;

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
    info: &crate::gpu::ContextInfo,
    dataset: &Dataset,
    initial: u64,
    config: &mut crate::train::TrainConfig,
) -> Result<MemoryPlan> {
    let bytes = resolve_budget(parse_byte_budget(text)?, adapter_memory_bytes(info))?;
    let plan = plan_budget(bytes, config.sh_degree, dataset);
    check_plan(&plan, initial)?;
    config.max_gaussians = match config.max_gaussians {
        0 => plan.max_gaussians,
        explicit => explicit.min(plan.max_gaussians),
    };
    Ok(plan)
}

/// Floats per Gaussian at SH degree `degree`: mean 3, log scale 3, quaternion 4, opacity 1 and
/// 3 per SH coefficient.
pub fn floats_per_gaussian(degree: u32) -> u64 {
    11 + 3 * u64::from((degree + 1) * (degree + 1))
}

/// Persistent bytes per Gaussian (parameters, gradients, moments, statistics, rounding).
pub fn persistent_bytes_per_gaussian(degree: u32) -> u64 {
    (floats_per_gaussian(degree) * 16 + 16) * 105 / 100
}

/// Per-frame scratch bytes per Gaussian, with every Gaussian visible.
pub fn scratch_bytes_per_gaussian() -> u64 {
    56 + 64 + PLANNED_TILES_PER_GAUSSIAN * 52
}

/// How a budget splits, and the count it allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// The budget in bytes.
    pub budget: u64,
    /// Bytes that do not scale with the count: training images and per-pixel scratch.
    pub fixed: u64,
    /// Bytes per Gaussian: persistent plus per-frame scratch.
    pub per_gaussian: u64,
    /// The largest count that fits.
    pub max_gaussians: u64,
}

/// Plans `budget` bytes for training `dataset` at SH degree `degree`.
pub fn plan_budget(budget: u64, degree: u32, dataset: &Dataset) -> MemoryPlan {
    let pixels = |v: &crate::data::View| u64::from(v.image.width) * u64::from(v.image.height);
    let images: u64 = dataset.train.iter().map(|v| pixels(v) * 4).sum();
    let largest = dataset
        .train
        .iter()
        .chain(&dataset.test)
        .map(pixels)
        .max()
        .unwrap_or(0);
    let fixed = images + largest * SCRATCH_BYTES_PER_PIXEL;
    let per_gaussian = persistent_bytes_per_gaussian(degree) + scratch_bytes_per_gaussian();
    MemoryPlan {
        budget,
        fixed,
        per_gaussian,
        max_gaussians: budget.saturating_sub(fixed) / per_gaussian,
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
            "{} bytes cannot hold the initial {initial} Gaussians: images and per-pixel scratch take {} bytes and each Gaussian {} bytes, so at most {} fit; raise --memory-budget to at least {} bytes or start from fewer points",
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
    fn persistent_bytes_match_the_fp32_floor() {
        // 236 B of parameters at degree 3; four copies plus 16 B of statistics is 960 B.
        assert_eq!(floats_per_gaussian(3) * 4, 236);
        assert_eq!(persistent_bytes_per_gaussian(3), 960 * 105 / 100);
    }
}

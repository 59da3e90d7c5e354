//! The refusal of a budget that cannot hold the initial Gaussians, with its numbers.

use super::MemoryPlan;
use crate::error::{Error, Result};
use crate::gpu::GpuContext;

/// Checks that a plan holds `initial` Gaussians, with the numbers in the error when not: a
/// budget without room for one cache slot and one frame is told so with the slot's and the
/// frame's bytes; otherwise the error gives the image cache, one frame's buffers and the
/// per-Gaussian bytes averaged over `initial`. Both name the smallest budget that holds the
/// initial Gaussians ([`MemoryPlan::smallest_budget`], exact: one byte less does not).
pub fn check_plan(ctx: &GpuContext, plan: &MemoryPlan, initial: u64) -> Result<()> {
    if initial <= plan.max_gaussians {
        return Ok(());
    }
    let (width, height) = plan.view_size;
    let (slot_width, slot_height) = plan.cache.slot_size;
    let slot = plan.cache.slot_bytes;
    let smallest = plan.smallest_budget(ctx, initial);
    let detail = if plan.budget < slot + plan.frame {
        format!(
            "{} bytes cannot hold one training image and one frame: a GPU image cache slot for the largest training view ({slot_width}x{slot_height} as RGBA8) takes {slot} bytes and one {width}x{height} frame's buffers {} bytes, {} in all; raise --memory-budget to at least {smallest} bytes (one slot, one frame and the initial {initial} Gaussians), or train on smaller images (-r 2)",
            plan.budget,
            plan.frame,
            slot + plan.frame,
        )
    } else {
        let smaller_cache = match plan.cache.explicit {
            Some(_) => ", give a smaller --image-cache",
            None => "",
        };
        format!(
            "{} bytes cannot hold the initial {initial} Gaussians: the GPU image cache takes {} bytes ({} slots of {slot} bytes for {slot_width}x{slot_height} views), one {width}x{height} frame's buffers {} bytes and each Gaussian about {} bytes, so at most {} fit; raise --memory-budget to at least {smallest} bytes{smaller_cache} or start from fewer points",
            plan.budget,
            plan.images,
            plan.cache.slots,
            plan.frame,
            plan.per_gaussian_at(ctx, initial),
            plan.max_gaussians,
        )
    };
    Err(Error::InvalidArgument {
        op: "memory budget",
        detail,
    })
}

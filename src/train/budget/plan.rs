//! The plan for a budget: the Gaussian cap that fits it, with the image cache, one frame's buffers
//! and the evaluation's bytes, for a dataset or for a known cache and view size.

use super::{
    EvaluationPlan, MemoryPlan, REFERENCE_GAUSSIANS, largest_count_within, largest_view,
    planned_total_with_evaluation,
};
use crate::data::Dataset;
use crate::gpu::GpuContext;
use crate::optim::MomentStorage;
use crate::train::image_cache::ImageCachePlan;

/// Plans `budget` bytes for training `dataset` at SH degree `degree` in `ctx`, with the image
/// cache the rule gives (`image_cache`: `--image-cache`).
pub fn plan_budget(
    ctx: &GpuContext,
    budget: u64,
    degree: u32,
    moments: MomentStorage,
    dataset: &Dataset,
    image_cache: Option<u64>,
) -> MemoryPlan {
    let training = EvaluationPlan::default();
    plan_budget_with(ctx, budget, degree, moments, dataset, image_cache, training)
}

/// [`plan_budget`] with the evaluation and exposure compensation's bytes ([`plan_evaluation`]).
pub fn plan_budget_with(
    ctx: &GpuContext,
    budget: u64,
    degree: u32,
    moments: MomentStorage,
    dataset: &Dataset,
    image_cache: Option<u64>,
    evaluation: EvaluationPlan,
) -> MemoryPlan {
    let sizes = dataset
        .train
        .iter()
        .map(|v| (v.image.width, v.image.height));
    let cache = ImageCachePlan::for_views(ctx, sizes, Some(budget), image_cache);
    let view_size = largest_view(dataset);
    plan_for_cache_with(ctx, budget, degree, moments, cache, view_size, evaluation)
}

/// Plans `budget` bytes for training with the image cache `cache` (resized for `budget` by
/// [`ImageCachePlan::at_budget`]) and frames of a `view_size` view (`(width, height)`).
pub fn plan_for_cache(
    ctx: &GpuContext,
    budget: u64,
    degree: u32,
    moments: MomentStorage,
    cache: ImageCachePlan,
    view_size: (u32, u32),
) -> MemoryPlan {
    let training = EvaluationPlan::default();
    plan_for_cache_with(ctx, budget, degree, moments, cache, view_size, training)
}

/// [`plan_for_cache`] with the evaluation and exposure compensation's bytes.
pub fn plan_for_cache_with(
    ctx: &GpuContext,
    budget: u64,
    degree: u32,
    moments: MomentStorage,
    cache: ImageCachePlan,
    view_size: (u32, u32),
    evaluation: EvaluationPlan,
) -> MemoryPlan {
    let cache = cache.at_budget(Some(budget));
    let total = |n: u64| {
        planned_total_with_evaluation(ctx, n, degree, moments, &cache, view_size, &evaluation)
    };
    let max_gaussians = largest_count_within(budget, total);
    let images = cache.bytes();
    let mut plan = MemoryPlan {
        budget,
        images,
        frame: total(0).saturating_sub(images),
        per_gaussian: 0,
        max_gaussians,
        degree,
        moments,
        view_size,
        cache,
        evaluation,
    };
    let averaged_over = match max_gaussians {
        0 => REFERENCE_GAUSSIANS,
        n => n,
    };
    plan.per_gaussian = plan.per_gaussian_at(ctx, averaged_over);
    plan
}

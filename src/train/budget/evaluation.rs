//! What a budget plans beside the training step: the evaluation (its render, metrics and LPIPS)
//! and exposure compensation's buffers, each sized by the functions that size the allocations
//! ([`crate::loss::lpips::planned_bytes`], [`Tensor::planned_bytes`], the upload's staging).

use super::STAGING_BYTES;
use crate::data::{Dataset, View};
use crate::gpu::encoder::upload_staging_bytes;
use crate::gpu::{GpuContext, MemoryCategory};
use crate::loss::lpips::{self, MIN_IMAGE_SIDE};
use crate::tensor::{DType, Tensor};

/// Pixels per workgroup record of exposure's backward (`WORKGROUP` in `loss::exposure`).
const EXPOSURE_PIXELS_PER_RECORD: u64 = 256 * 8;
/// Floats per exposure transform, and Adam's two moments of each.
const EXPOSURE_TERMS: u64 = 12;

/// Whether the evaluation scores LPIPS, and what it takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LpipsPlan {
    /// LPIPS is off (`--no-lpips`), or the scored views are too small for it: nothing planned.
    #[default]
    NotScored,
    /// Planned: its weights are resident and its feature maps fit beside the model.
    Planned {
        /// Its weights and the peak of scoring the largest view, in bytes.
        bytes: u64,
    },
    /// Skipped: with its bytes planned the budget would not hold the initial Gaussians.
    Skipped {
        /// Its weights and the peak of scoring the largest view, in bytes.
        bytes: u64,
        /// The smallest budget that holds the initial Gaussians with LPIPS scored.
        smallest_budget: u64,
    },
}

/// The bytes a budget holds beside the model, the image cache and one training step's frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvaluationPlan {
    /// Resident from the first evaluation on, through training and evaluation: exposure's
    /// transforms and moments, and LPIPS's weights when it is planned.
    pub resident: u64,
    /// Added to each training step's frame scratch: exposure's transformed render, the render's
    /// gradient through it and the per-workgroup records of the transform's gradient.
    pub step: u64,
    /// The peak of the evaluation beyond the model, the cache and [`EvaluationPlan::resident`],
    /// with the render's own scratch counted as a training step's frame: the largest of scoring
    /// one view (render, ground truth and their uploads, metrics, LPIPS's feature maps, and with
    /// exposure the render's readback and the two right halves) and creating LPIPS's network.
    pub scoring: u64,
    /// LPIPS's part.
    pub lpips: LpipsPlan,
    /// Whether each training step also renders and differentiates the geometry regularisers'
    /// two views of its splats (`depth_normal` or `distortion`): see
    /// [`super::geometry_frame_bytes`].
    pub geometry: bool,
}

/// The views an evaluation scores: the test views, or the training views when there are none.
pub fn scored_views(dataset: &Dataset) -> &[View] {
    match dataset.test.is_empty() {
        true => &dataset.train,
        false => &dataset.test,
    }
}

/// The width an evaluation scores of a `width`-wide view: the right half with exposure
/// compensation (INRIA's protocol), else all of it.
pub fn scored_width(width: u32, exposure: bool) -> u32 {
    if exposure { width - width / 2 } else { width }
}

/// Whether an evaluation of `views` can score LPIPS: there are views, and each is at least
/// [`MIN_IMAGE_SIDE`] on each side of what is scored.
pub fn lpips_fits_views(views: &[View], exposure: bool) -> bool {
    !views.is_empty()
        && views
            .iter()
            .all(|v| scored_width(v.image.width, exposure).min(v.image.height) >= MIN_IMAGE_SIDE)
}

/// Plans the evaluation of `dataset`, with exposure compensation when `exposure`, and LPIPS when
/// `lpips` and the scored views are large enough for it.
pub fn plan_evaluation(
    ctx: &GpuContext,
    dataset: &Dataset,
    exposure: bool,
    lpips: bool,
) -> EvaluationPlan {
    let words = |len: u64| Tensor::planned_bytes(ctx, DType::U32, len);
    let views = scored_views(dataset);
    let lpips = lpips && lpips_fits_views(views, exposure);
    let mut sizes: Vec<(u32, u32)> = views
        .iter()
        .map(|v| (v.image.width, v.image.height))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut plan = EvaluationPlan::default();
    let mut lpips_bytes = lpips::LpipsBytes::default();
    for &(width, height) in &sizes {
        let pixels = u64::from(width) * u64::from(height);
        let right = u64::from(scored_width(width, true)) * u64::from(height);
        // The render's image, kept while the view is scored.
        let image = words(4 * pixels);
        let inputs = match exposure {
            // The render read back, then the two right halves uploaded.
            true => {
                let readback =
                    crate::gpu::memory::size_class_in(16 * pixels, MemoryCategory::Staging);
                let halves = words(4 * right)
                    + upload_staging_bytes(16 * right)
                    + words(right)
                    + upload_staging_bytes(4 * right);
                readback.max(halves)
            }
            false => words(pixels) + upload_staging_bytes(4 * pixels),
        };
        // The metrics' tiled records take less than one image of floats.
        let metrics = words(4 * pixels);
        let mut view = image + inputs + metrics + STAGING_BYTES;
        if lpips {
            let w = scored_width(width, exposure);
            if let Some(bytes) = lpips::planned_bytes(ctx, w, height) {
                view += bytes.scoring;
                lpips_bytes.weights = bytes.weights;
                lpips_bytes.loading = bytes.loading;
                lpips_bytes.scoring = lpips_bytes.scoring.max(bytes.scoring);
            }
        }
        plan.scoring = plan.scoring.max(view);
    }
    if lpips {
        plan.resident += lpips_bytes.weights;
        plan.scoring = plan.scoring.max(lpips_bytes.loading - lpips_bytes.weights);
        plan.lpips = LpipsPlan::Planned {
            bytes: lpips_bytes.weights + lpips_bytes.scoring,
        };
    }
    if exposure {
        let state = |floats: u64| {
            Tensor::planned_rows_bytes(
                MemoryCategory::OptimizerState,
                DType::F32,
                floats,
                1,
                ctx.page_bytes() / 4,
            )
        };
        let train = dataset.train.len() as u64;
        plan.resident += state(train * EXPOSURE_TERMS) + state(train * 2 * EXPOSURE_TERMS);
        let (width, height) = super::largest_view(dataset);
        let pixels = u64::from(width) * u64::from(height);
        let records = pixels.div_ceil(EXPOSURE_PIXELS_PER_RECORD).max(1) * EXPOSURE_TERMS;
        plan.step = 2 * words(4 * pixels) + words(records) + words(EXPOSURE_TERMS);
    }
    plan
}

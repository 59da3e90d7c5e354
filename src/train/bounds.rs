//! Keeping a model inside a region while it trains (the scale-out blocks: a block spends no
//! memory on the rest of the world). After every refinement that changed the Gaussian set, the
//! means are read back and the Gaussians whose centre left the region are dropped, with their
//! optimizer state, through [`super::densify::apply_row_changes`].

use super::state::ModelState;
use super::strategy::StepInfo;
use crate::error::Result;
use crate::gpu::{GpuContext, MemoryCategory};
use crate::tensor::Tensor;
use std::sync::Arc;

/// Whether a world point lies in the region a trainer keeps its Gaussians in.
pub type KeepInside = Arc<dyn Fn([f32; 3]) -> bool + Send + Sync>;

/// Drops the Gaussians whose centre `inside` rejects; returns how many were dropped. A model
/// entirely inside is left untouched (no row changes, so an unbounded run is unchanged).
pub(crate) async fn prune_outside(
    ctx: &GpuContext,
    state: &mut ModelState,
    step: &StepInfo<'_>,
    inside: &KeepInside,
) -> Result<u64> {
    let means = state.params.means.fetch::<f32>(ctx).await?;
    let keep: Vec<u32> = means
        .chunks_exact(3)
        .enumerate()
        .filter(|(_, m)| inside([m[0], m[1], m[2]]))
        .map(|(i, _)| i as u32)
        .collect();
    keep_only(ctx, state, step, &keep)
}

/// The configuration's crop box (`--crop-box`), if it has a valid one.
pub(crate) fn configured_crop(config: &super::TrainConfig) -> Option<crate::show::edit::CropBox> {
    config
        .crop_box
        .and_then(|corners| crate::show::edit::CropBox::from_corners(corners).ok())
}

/// Drops the Gaussians whose centre is outside the configuration's crop box (none without one);
/// returns how many were dropped. The model a run ends with is cropped so: between two
/// densifications (and after the last) Gaussians drift out.
pub(crate) async fn crop_to_box(
    ctx: &GpuContext,
    state: &mut ModelState,
    step: &StepInfo<'_>,
) -> Result<u64> {
    let Some(crop) = configured_crop(step.config) else {
        return Ok(0);
    };
    let inside: KeepInside = Arc::new(move |p| crop.contains(p));
    prune_outside(ctx, state, step, &inside).await
}

/// How many of `params`' Gaussians lie inside the crop box of `config` (all of them without
/// one); an error naming the box when none does, since training would prune every Gaussian at
/// its first densification and end with an empty model. Run before training starts.
pub fn check_crop_box(
    ctx: &GpuContext,
    params: &crate::splat::GaussianTensors,
    config: &super::TrainConfig,
) -> Result<usize> {
    let Some(crop) = configured_crop(config) else {
        return Ok(params.len() as usize);
    };
    let means = params.means.read::<f32>(ctx)?;
    let inside = means
        .chunks_exact(3)
        .filter(|m| crop.contains([m[0], m[1], m[2]]))
        .count();
    if inside == 0 {
        let (lo, hi) = (crop.min, crop.max);
        return Err(crate::error::Error::InvalidArgument {
            op: "--crop-box",
            detail: format!(
                "the box from ({}, {}, {}) to ({}, {}, {}) holds none of the {} initial Gaussians \
                 (the scene's points), so training would keep nothing; give a box round the part \
                 of the scene to keep (`wgsplat view` shows the scene's coordinates)",
                lo[0],
                lo[1],
                lo[2],
                hi[0],
                hi[1],
                hi[2],
                means.len() / 3
            ),
        });
    }
    Ok(inside)
}

/// Keeps the rows `keep` (ascending) of the model, with their optimizer state, and drops the
/// rest; returns how many were dropped. Keeping every row changes nothing.
pub(crate) fn keep_only(
    ctx: &GpuContext,
    state: &mut ModelState,
    step: &StepInfo<'_>,
    keep: &[u32],
) -> Result<u64> {
    let dropped = state.len() - keep.len() as u64;
    if dropped == 0 {
        return Ok(0);
    }
    let mut enc = ctx.encoder("keep list");
    let kept = Tensor::from_slice(
        &mut enc,
        keep,
        &[keep.len()],
        MemoryCategory::FrameScratch,
        "keep-list",
    )?;
    ctx.submit(enc)?;
    let none = kept.prefix(0)?;
    super::densify::apply_row_changes(ctx, state, step, &kept, &none, &none)?;
    Ok(dropped)
}

/// The region a configuration keeps the model in: inside its crop box, and where at least
/// `prune_min_views` of `dataset`'s training cameras see ([`crate::show::edit::camera_sees`],
/// the count `convert --min-views` uses); `None` when neither is set.
pub fn configured_region(
    config: &super::TrainConfig,
    dataset: &crate::data::Dataset,
) -> Option<KeepInside> {
    use crate::show::edit::camera_sees;
    let crop = configured_crop(config);
    let needed = config.prune_min_views as usize;
    if crop.is_none() && needed == 0 {
        return None;
    }
    let cameras: Vec<crate::splat::Camera> =
        dataset.train.iter().map(|v| v.camera.clone()).collect();
    Some(Arc::new(move |p| {
        crop.is_none_or(|b| b.contains(p))
            && (needed == 0
                || cameras
                    .iter()
                    .filter(|c| camera_sees(c, p))
                    .take(needed)
                    .count()
                    >= needed)
    }))
}

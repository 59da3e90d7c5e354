//! Initial Gaussians: from the dataset's sparse points, or random points in the scene bounds when
//! it has none (3DGS's synthetic-scene recipe), with k-NN scales computed on the GPU.

use super::config::TrainConfig;
use crate::data::Dataset;
use crate::data::init::{RandomBox, fill_log_scales, gaussians_from_points, random_points};
use crate::error::{Error, Result};
use crate::gpu::{GpuContext, MemoryCategory};
use crate::splat::GaussianTensors;

/// Builds and uploads the initial model.
pub fn initial_gaussians(
    ctx: &GpuContext,
    dataset: &Dataset,
    config: &TrainConfig,
) -> Result<GaussianTensors> {
    crate::gpu::readback::blocking(
        "the initial k-NN scales",
        initial_gaussians_async(ctx, dataset, config),
    )
}

/// [`initial_gaussians`] in the form that also runs in a browser, where the k-NN result is
/// awaited (see [`crate::gpu::Readback::fetch`]).
pub async fn initial_gaussians_async(
    ctx: &GpuContext,
    dataset: &Dataset,
    config: &TrainConfig,
) -> Result<GaussianTensors> {
    let points = match &dataset.points {
        Some(points) if !points.is_empty() => points.clone(),
        _ => {
            let cameras: Vec<_> = dataset.train.iter().map(|v| &v.camera).collect();
            let bounds =
                RandomBox::viewed_by(&cameras, dataset.center, dataset.extent.max(1e-3) / 1.1);
            random_points(config.random_init_points, bounds, config.seed)
        }
    };
    if points.is_empty() {
        return Err(Error::InvalidArgument {
            op: "initial_gaussians",
            detail: "no points to start from; set random_init_points above 0".into(),
        });
    }
    let mut cpu = gaussians_from_points(&points);
    let mean_sq = crate::knn::mean_sq_dist_3nn_fetch(ctx, &points.positions).await?;
    fill_log_scales(&mut cpu, &mean_sq)?;
    let mut enc = ctx.encoder("initial upload");
    let params = GaussianTensors::upload(
        &mut enc,
        &cpu,
        config.sh_degree,
        MemoryCategory::Parameters,
        "params",
    )?;
    ctx.submit(enc)?;
    Ok(params)
}

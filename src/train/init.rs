//! Initial Gaussians: from the dataset's sparse points, or random points in the scene bounds when
//! it has none (3DGS's synthetic-scene recipe), with k-NN scales computed on the GPU. A dataset
//! with sparse points (a reconstructed capture) also gets far-field points for its sky
//! ([`crate::data::sky`], `sky_points`).

use super::config::{Background, TrainConfig};
use crate::data::init::{RandomBox, fill_log_scales, gaussians_from_points, random_points};
use crate::data::sky::{SkyPoints, sky_points};
use crate::data::{Dataset, PointCloud};
use crate::error::{Error, Result};
use crate::gpu::{GpuContext, MemoryCategory};
use crate::splat::GaussianTensors;

/// The initial model, and the far-field points it includes.
pub struct InitialModel {
    /// The Gaussians, on the GPU.
    pub params: GaussianTensors,
    /// The far-field points added for the sky (their rows follow the sparse points'), when any
    /// were asked for.
    pub sky: Option<SkyPoints>,
}

/// Builds and uploads the initial model.
pub fn initial_gaussians(
    ctx: &GpuContext,
    dataset: &Dataset,
    config: &TrainConfig,
) -> Result<GaussianTensors> {
    Ok(initial_model(ctx, dataset, config)?.params)
}

/// [`initial_gaussians`], with what the sky added.
pub fn initial_model(
    ctx: &GpuContext,
    dataset: &Dataset,
    config: &TrainConfig,
) -> Result<InitialModel> {
    crate::gpu::readback::blocking(
        "the initial k-NN scales",
        initial_model_async(ctx, dataset, config),
    )
}

/// [`initial_gaussians`] in the form that also runs in a browser, where the k-NN result is
/// awaited (see [`crate::gpu::Readback::fetch`]).
pub async fn initial_gaussians_async(
    ctx: &GpuContext,
    dataset: &Dataset,
    config: &TrainConfig,
) -> Result<GaussianTensors> {
    Ok(initial_model_async(ctx, dataset, config).await?.params)
}

/// The far-field points `config` asks for on `dataset`: only for a dataset with sparse points,
/// and none that show the training background when it is a fixed colour.
pub fn initial_sky(dataset: &Dataset, config: &TrainConfig) -> Result<Option<SkyPoints>> {
    let has_points = dataset.points.as_ref().is_some_and(|p| !p.is_empty());
    if config.sky_points == 0 || !has_points {
        return Ok(None);
    }
    let background = match config.background {
        Background::Random => None,
        fixed => Some(super::setup::background_color(fixed)),
    };
    sky_points(dataset, config.sky_points, config.sky_radius, background).map(Some)
}

/// [`initial_model`] in the form that also runs in a browser.
pub async fn initial_model_async(
    ctx: &GpuContext,
    dataset: &Dataset,
    config: &TrainConfig,
) -> Result<InitialModel> {
    let sky = initial_sky(dataset, config)?;
    let mut points = match &dataset.points {
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
    if let Some(sky) = &sky {
        append(&mut points, &sky.points);
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
    Ok(InitialModel { params, sky })
}

fn append(points: &mut PointCloud, more: &PointCloud) {
    points.positions.extend_from_slice(&more.positions);
    points.colors.extend_from_slice(&more.colors);
}

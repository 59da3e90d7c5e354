//! Model files to and from GPU models: the read-upload and download-write pairs every front end
//! needs. Reading takes every format [`super::formats`] reads, by extension.

use super::formats::{ModelFormat, read_model};
use super::ply::PlyModel;
use crate::error::Result;
use crate::gpu::{GpuContext, MemoryCategory};
use crate::splat::GaussianTensors;
use std::path::Path;

/// Reads the model at `path` (any format [`super::formats`] reads, by extension) and uploads it
/// as model parameters labelled `label`. The CPU copy is returned too, for callers that need the
/// means (bounds, statistics); drop it otherwise.
pub fn load_model_to_gpu(
    ctx: &GpuContext,
    path: &Path,
    label: &str,
) -> Result<(GaussianTensors, PlyModel)> {
    let model = read_model(path, ModelFormat::from_path(path)?)?;
    let params = upload_model(ctx, &model, label)?;
    Ok((params, model))
}

/// Uploads `model` as model parameters labelled `label` (the upload is submitted, not awaited).
pub fn upload_model(ctx: &GpuContext, model: &PlyModel, label: &str) -> Result<GaussianTensors> {
    let mut enc = ctx.encoder("upload model");
    let params = GaussianTensors::upload(
        &mut enc,
        &model.gaussians,
        model.sh_degree,
        MemoryCategory::Parameters,
        label,
    )?;
    ctx.submit(enc)?;
    Ok(params)
}

/// Downloads `params` and writes them to `path` as a 3DGS PLY, atomically, recording
/// `near_plane` (the one it was trained with) when given.
#[cfg(not(target_arch = "wasm32"))]
pub fn save_gpu_model_as_ply(
    ctx: &GpuContext,
    params: &GaussianTensors,
    path: &Path,
    near_plane: Option<f32>,
) -> Result<()> {
    let cpu = params.download(ctx)?;
    super::ply::write_ply_with_near_plane(path, &cpu, params.max_sh_degree(), near_plane)
}

/// The near plane the model at `path` records: a 3DGS PLY's header comment
/// ([`super::ply::read_near_plane`]); `None` for a PLY without one and for the formats that hold
/// no such note.
pub fn recorded_near_plane(path: &Path) -> Result<Option<f32>> {
    match ModelFormat::from_path(path) {
        Ok(ModelFormat::Ply) if path.is_file() => super::ply::read_near_plane(path),
        _ => Ok(None),
    }
}

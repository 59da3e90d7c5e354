//! Layer 4, beside rendering: what a user makes of a trained model to show it. Camera paths in
//! nerfstudio's `camera_path.json` ([`camera_path`]), paths made from a dataset's cameras (an
//! orbit, a smooth path through them: [`paths`]), and videos of a path streamed to ffmpeg
//! ([`video`]). The CLI (`wgsplat render --video`) and the viewer drive the same code.

pub mod camera_path;
pub mod camera_type;
pub mod depth;
pub mod drawn;
pub mod edit;
pub mod keyframes;
pub mod normals;
pub mod npy;
pub mod paths;
pub mod selection;
#[cfg(test)]
mod selection_tests;
#[cfg(not(target_arch = "wasm32"))]
pub mod video;

use crate::GpuContext;
use crate::data::image::RgbaImage;
use crate::error::Result;
use crate::splat::forward::{RenderOptions, render};
use crate::splat::{Camera, GaussianTensors, RasterMode};

pub use camera_path::{CameraPath, PathFrame};
pub use camera_type::CameraType;
pub use drawn::{Drawn, Shortfall};

/// Renders `params` from `camera` at its full SH degree and reads the image back as 8-bit RGBA
/// (clamped to [0, 1], rounded); pixels outside the lens's image circle (where it has no rays:
/// [`camera_type::image_circle`]) are the camera's background.
pub fn render_rgba8(
    ctx: &GpuContext,
    params: &GaussianTensors,
    camera: &Camera,
    raster_mode: RasterMode,
) -> Result<RgbaImage> {
    let forward = render(
        ctx,
        params,
        camera,
        RenderOptions {
            sh_degree: params.max_sh_degree(),
            raster_mode,
            ..Default::default()
        },
    )?;
    Ok(rgba8_of(&forward.image.read::<f32>(ctx)?, camera))
}

/// A rendered `[H, W, 4]` f32 image of `camera` as 8-bit RGBA, as [`render_rgba8`] gives it.
pub fn rgba8_of(rgba: &[f32], camera: &Camera) -> RgbaImage {
    let pixels = rgba
        .iter()
        .map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8)
        .collect();
    let mut image = RgbaImage {
        width: camera.width,
        height: camera.height,
        pixels,
    };
    camera_type::mask_outside_circle(&mut image, camera);
    image
}

/// Renders every frame of `path` in order, one at a time (the next frame is rendered only when
/// `sink` has taken the last, so memory does not grow with the path's length), at the path's
/// size on `background`. `stop` is asked before each frame; returns the frames given to `sink`.
pub fn render_path(
    ctx: &GpuContext,
    params: &GaussianTensors,
    path: &CameraPath,
    background: [f32; 3],
    raster_mode: RasterMode,
    sink: &mut dyn FnMut(usize, &RgbaImage) -> Result<()>,
    stop: &dyn Fn() -> bool,
) -> Result<usize> {
    let mut drawn = Drawn::Model(Box::new(params.clone()));
    render_path_of(ctx, &mut drawn, path, background, raster_mode, sink, stop)
}

/// [`render_path`] of any [`Drawn`] model: a level of detail draws each frame's own cut. The
/// frames' cameras have the path's near plane and lens ([`CameraPath::camera`]).
pub fn render_path_of(
    ctx: &GpuContext,
    drawn: &mut Drawn,
    path: &CameraPath,
    background: [f32; 3],
    raster_mode: RasterMode,
    sink: &mut dyn FnMut(usize, &RgbaImage) -> Result<()>,
    stop: &dyn Fn() -> bool,
) -> Result<usize> {
    for index in 0..path.frames.len() {
        if stop() {
            return Ok(index);
        }
        let Some(camera) = path.camera(index, background) else {
            break;
        };
        let params = drawn.gaussians_for(ctx, &camera)?;
        let image = render_rgba8(ctx, &params, &camera, raster_mode)?;
        sink(index, &image)?;
    }
    Ok(path.frames.len())
}

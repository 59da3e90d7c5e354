//! Drawing the model into the scene texture each frame: splat-scale and SH-degree options, the
//! rasterizer's forward pass, then the present pass (render or difference to a reference view).

use crate::present::{PresentTarget, upload_reference};
use eframe::egui::TextureId;
use std::sync::Arc;
use web_time::Instant;
use wgsplat::gpu::GpuBuffer;
use wgsplat::ops::elementwise::{UnaryOp, unary};
use wgsplat::splat::forward::{ForwardOutput, RenderOptions, render};
use wgsplat::splat::{Camera, GaussianTensors, RasterMode};
use wgsplat::tensor::Tensor;
use wgsplat::{GpuContext, MemoryCategory};

/// Display options of the scene view.
#[derive(Clone, Debug, PartialEq)]
pub struct DisplayOptions {
    /// Multiplier of every Gaussian's scale.
    pub splat_scale: f32,
    /// Largest SH degree evaluated.
    pub sh_degree: u32,
    /// Background colour.
    pub background: [f32; 3],
    /// Gain of the difference view.
    pub difference_gain: f32,
    /// Draw antialiased splats (for models trained in that mode).
    pub antialiased: bool,
    /// Gaussians nearer the camera than this depth are not drawn: the model's near plane
    /// ([`wgsplat::data::near_plane`]).
    pub near_plane: f32,
    /// Show the rendered normals (each Gaussian's shortest axis, facing the camera) instead of
    /// the colour.
    pub normals: bool,
}

impl Default for DisplayOptions {
    fn default() -> Self {
        DisplayOptions {
            splat_scale: 1.0,
            sh_degree: 3,
            background: [0.0; 3],
            difference_gain: 4.0,
            antialiased: false,
            near_plane: wgsplat::data::DEFAULT_NEAR,
            normals: false,
        }
    }
}

/// Renders models into a texture egui can draw, and keeps frame times.
#[derive(Default)]
pub struct SceneRenderer {
    target: Option<PresentTarget>,
    difference: Option<PresentTarget>,
    reference: Option<(String, GpuBuffer)>,
    /// Milliseconds each frame's render and present took.
    pub frame_ms: Vec<f64>,
    /// Wait for the GPU after each frame so frame times cover the whole render (scripted runs).
    pub synchronous: bool,
    /// What the textures hold now, so unchanged frames are not rendered again.
    drawn: Option<(DrawKey, (TextureId, Option<TextureId>))>,
}

/// Everything a drawn frame depends on.
struct DrawKey {
    model: Arc<GaussianTensors>,
    camera: Camera,
    options: DisplayOptions,
    reference: Option<String>,
    show_difference: bool,
}

impl PartialEq for DrawKey {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.model, &other.model)
            && self.camera == other.camera
            && self.options == other.options
            && self.reference == other.reference
            && self.show_difference == other.show_difference
    }
}

/// `params` with every log-scale raised by `ln(scale)`, as a new GPU tensor.
fn scaled(
    ctx: &GpuContext,
    params: &GaussianTensors,
    scale: f32,
) -> anyhow::Result<GaussianTensors> {
    let mut enc = ctx.encoder("viewer: splat scale");
    let n = params.len() as usize;
    let log_scales = Tensor::uninit_rows(
        &mut enc,
        wgsplat::tensor::DType::F32,
        &[n, 3],
        params.rows_per_page,
        MemoryCategory::FrameScratch,
        "viewer/log_scales",
    )?;
    unary(
        &mut enc,
        UnaryOp::AddScalar(scale.ln()),
        &params.log_scales,
        &log_scales,
    )?;
    ctx.submit(enc)?;
    Ok(GaussianTensors {
        log_scales,
        ..params.clone()
    })
}

/// `slot`'s texture, recreated when its size differs from `width` x `height`.
fn resized<'a>(
    slot: &'a mut Option<PresentTarget>,
    ctx: &GpuContext,
    renderer: &mut egui_wgpu::Renderer,
    width: u32,
    height: u32,
) -> anyhow::Result<&'a PresentTarget> {
    if slot
        .as_ref()
        .is_none_or(|t| t.width != width || t.height != height)
    {
        if let Some(old) = slot.take() {
            old.release(renderer);
        }
        *slot = Some(PresentTarget::new(ctx, renderer, width, height)?);
    }
    slot.as_ref()
        .ok_or_else(|| anyhow::anyhow!("no scene texture"))
}

/// A frame [`SceneRenderer::begin`] decided to draw: what to render, and what it depends on.
pub struct PendingFrame {
    key: DrawKey,
    /// The model to render (the splat scale applied).
    pub model: GaussianTensors,
    /// The camera, with the display's background.
    pub camera: Camera,
    /// The rasterizer's options.
    pub options: RenderOptions,
    started: Instant,
}

impl SceneRenderer {
    /// Renders `params` from `camera` into the texture (resized to the camera) and returns its
    /// id; with `reference` (a key naming the image, and its 8-bit RGBA pixels) and
    /// `show_difference`, also the id of a texture showing the scaled absolute difference.
    #[allow(clippy::too_many_arguments)]
    pub fn draw(
        &mut self,
        ctx: &GpuContext,
        renderer: &mut egui_wgpu::Renderer,
        params: &Arc<GaussianTensors>,
        camera: &Camera,
        options: &DisplayOptions,
        reference: Option<(&str, &[u8])>,
        show_difference: bool,
    ) -> anyhow::Result<(TextureId, Option<TextureId>)> {
        let Some(frame) = self.begin(ctx, params, camera, options, reference, show_difference)?
        else {
            return self.drawn_ids();
        };
        let output = render(ctx, &frame.model, &frame.camera, frame.options)?;
        self.finish(ctx, renderer, frame, &output, reference)
    }

    /// The textures of the last frame drawn.
    fn drawn_ids(&self) -> anyhow::Result<(TextureId, Option<TextureId>)> {
        self.drawn
            .as_ref()
            .map(|(_, ids)| *ids)
            .ok_or_else(|| anyhow::anyhow!("nothing drawn yet"))
    }

    /// The first half of [`SceneRenderer::draw`]: `None` when the textures already show this
    /// frame, else what to render. A browser page renders it with
    /// [`wgsplat::splat::forward::render_async`] and hands the output to
    /// [`SceneRenderer::finish`].
    #[allow(clippy::too_many_arguments)]
    pub fn begin(
        &self,
        ctx: &GpuContext,
        params: &Arc<GaussianTensors>,
        camera: &Camera,
        options: &DisplayOptions,
        reference: Option<(&str, &[u8])>,
        show_difference: bool,
    ) -> anyhow::Result<Option<PendingFrame>> {
        let key = DrawKey {
            model: params.clone(),
            camera: camera.clone(),
            options: options.clone(),
            reference: reference.map(|(k, _)| k.to_owned()),
            show_difference,
        };
        if let Some((drawn, _)) = &self.drawn
            && *drawn == key
            && !self.synchronous
        {
            return Ok(None);
        }
        let started = Instant::now();
        let model = if (options.splat_scale - 1.0).abs() > 1e-6 && options.splat_scale > 0.0 {
            scaled(ctx, params, options.splat_scale)?
        } else {
            params.as_ref().clone()
        };
        let options = RenderOptions {
            sh_degree: options.sh_degree.min(model.max_sh_degree()),
            raster_mode: if options.antialiased {
                RasterMode::Antialiased
            } else {
                RasterMode::Classic
            },
            normals: options.normals,
            ..Default::default()
        };
        let camera = Camera {
            background: key.options.background,
            near: key.options.near_plane,
            ..camera.clone()
        };
        Ok(Some(PendingFrame {
            key,
            model,
            camera,
            options,
            started,
        }))
    }

    /// The second half of [`SceneRenderer::draw`]: presents `output`, the render of `frame`,
    /// into the textures and returns their ids.
    pub fn finish(
        &mut self,
        ctx: &GpuContext,
        renderer: &mut egui_wgpu::Renderer,
        frame: PendingFrame,
        output: &ForwardOutput,
        reference: Option<(&str, &[u8])>,
    ) -> anyhow::Result<(TextureId, Option<TextureId>)> {
        let (width, height) = (frame.camera.width, frame.camera.height);
        let target = resized(&mut self.target, ctx, renderer, width, height)?;
        match &output.normals {
            Some(normals) => target.present_normals(ctx, &output.image, normals)?,
            None => target.present(ctx, &output.image, None)?,
        }
        let id = target.id;
        let mut difference = None;
        let expected = u64::from(width) * u64::from(height) * 4;
        if let Some((key, pixels)) =
            reference.filter(|(_, p)| frame.key.show_difference && p.len() as u64 == expected)
        {
            if self.reference.as_ref().is_none_or(|(k, _)| k != key) {
                self.reference = Some((key.to_owned(), upload_reference(ctx, pixels)?));
            }
            if let Some((_, truth)) = &self.reference {
                let target = resized(&mut self.difference, ctx, renderer, width, height)?;
                target.present(
                    ctx,
                    &output.image,
                    Some((truth, frame.key.options.difference_gain)),
                )?;
                difference = Some(target.id);
            }
        }
        if self.synchronous {
            ctx.wait_idle()?;
        }
        self.frame_ms
            .push(frame.started.elapsed().as_secs_f64() * 1e3);
        self.drawn = Some((frame.key, (id, difference)));
        Ok((id, difference))
    }

    /// The size of the last image drawn.
    pub fn size(&self) -> [u32; 2] {
        self.target.as_ref().map_or([0, 0], |t| [t.width, t.height])
    }

    /// Mean of the frame times so far, in milliseconds.
    pub fn mean_frame_ms(&self) -> f64 {
        if self.frame_ms.is_empty() {
            0.0
        } else {
            self.frame_ms.iter().sum::<f64>() / self.frame_ms.len() as f64
        }
    }
}

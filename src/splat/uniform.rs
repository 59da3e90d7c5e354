//! `RenderUniform`, the parameters every splatting kernel receives (mirrors `shaders/shared/splat.wgsl`).

use super::camera::Camera;
use crate::mirror;

/// Alpha cutoff behaviour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AlphaMode {
    /// gsplat's: alpha below 1/255 is dropped and compositing stops once transmittance would fall
    /// below 1e-4.
    #[default]
    Hard,
    /// Tests only: no cutoffs, so the image is a smooth function of the parameters and finite
    /// differences are well-posed.
    Smooth,
}

/// How splats are dilated and weighted on screen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RasterMode {
    /// 3DGS: the 2D covariance is dilated by 0.3 px² and the opacity kept as it is.
    #[default]
    Classic,
    /// Mip-Splatting's 2D filter, gsplat's `rasterize_mode="antialiased"`: the same dilation,
    /// and the opacity scaled by `sqrt(det(Σ₂) / det(Σ₂ + 0.3 I))`, so small splats fade instead
    /// of growing when seen from afar or at a lower resolution. A model trained this way must
    /// be rendered this way (the PLY file does not record it).
    Antialiased,
}

impl RasterMode {
    /// The name used on the command line and in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            RasterMode::Classic => "classic",
            RasterMode::Antialiased => "antialiased",
        }
    }
}

/// Tile edge in pixels.
pub const TILE_SIZE: u32 = 16;

/// Uniform parameters of the splatting kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RenderUniform {
    view_r0: [f32; 4],
    view_r1: [f32; 4],
    view_r2: [f32; 4],
    cam_pos: [f32; 4],
    background: [f32; 4],
    focal: [f32; 2],
    principal: [f32; 2],
    image_size: [u32; 2],
    tile_counts: [u32; 2],
    near: f32,
    far: f32,
    sh_degree: u32,
    pub(crate) count: u32,
    sh_rest_count: u32,
    alpha_mode: u32,
    pub(crate) page_offset: u32,
    pub(crate) aux: u32,
    raster_mode: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

pub(crate) fn mirrors() -> Vec<crate::gpu::mirror::Mirror> {
    vec![mirror!(
        RenderUniform,
        "rasterize.wgsl",
        "RenderUniform",
        [
            view_r0,
            view_r1,
            view_r2,
            cam_pos,
            background,
            focal,
            principal,
            image_size,
            tile_counts,
            near,
            far,
            sh_degree,
            count,
            sh_rest_count,
            alpha_mode,
            page_offset,
            aux,
            raster_mode,
            _pad0,
            _pad1,
            _pad2
        ]
    )]
}

/// Tiles along x and y for an image.
pub fn tile_counts(width: u32, height: u32) -> [u32; 2] {
    [width.div_ceil(TILE_SIZE), height.div_ceil(TILE_SIZE)]
}

impl RenderUniform {
    /// The uniform for a camera, SH degree, alpha mode and raster mode (`count` etc. are set per
    /// dispatch).
    pub fn new(
        camera: &Camera,
        sh_degree: u32,
        sh_rest_count: u32,
        alpha_mode: AlphaMode,
        raster_mode: RasterMode,
    ) -> Self {
        let r = &camera.rotation;
        let t = &camera.translation;
        let pos = camera.position();
        RenderUniform {
            view_r0: [r[0][0], r[0][1], r[0][2], t[0]],
            view_r1: [r[1][0], r[1][1], r[1][2], t[1]],
            view_r2: [r[2][0], r[2][1], r[2][2], t[2]],
            cam_pos: [pos[0], pos[1], pos[2], 0.0],
            background: [
                camera.background[0],
                camera.background[1],
                camera.background[2],
                0.0,
            ],
            focal: [camera.fx, camera.fy],
            principal: [camera.cx, camera.cy],
            image_size: [camera.width, camera.height],
            tile_counts: tile_counts(camera.width, camera.height),
            near: camera.near,
            far: camera.far,
            sh_degree,
            count: 0,
            sh_rest_count,
            alpha_mode: match alpha_mode {
                AlphaMode::Hard => 0,
                AlphaMode::Smooth => 1,
            },
            page_offset: 0,
            aux: 0,
            raster_mode: match raster_mode {
                RasterMode::Classic => 0,
                RasterMode::Antialiased => 1,
            },
            ..Default::default()
        }
    }

    /// Tiles along x and y.
    pub fn tile_counts(&self) -> [u32; 2] {
        self.tile_counts
    }

    /// Image width and height.
    pub fn image_size(&self) -> [u32; 2] {
        self.image_size
    }

    /// A copy with the per-dispatch fields set.
    pub(crate) fn with_count(mut self, count: u64, page_offset: u64, aux: u64) -> Self {
        self.count = count as u32;
        self.page_offset = page_offset as u32;
        self.aux = aux as u32;
        self
    }
}

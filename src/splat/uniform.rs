//! `RenderUniform`, the parameters every splatting kernel receives (generated from
//! `shaders/shared/splat.wgsl`; its constructor and accessors live here).

use super::camera::Camera;
use super::lens::{CameraLens, LensKind};
use crate::gpu::kernels::{shared_lens, shared_splat};

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

/// Tile edge in pixels (`TILE_SIZE` in `shaders/shared/splat.wgsl`).
pub use crate::gpu::kernels::shared_splat::TILE_SIZE;

/// Uniform parameters of the splatting kernels: the `RenderUniform` struct generated from
/// `shaders/shared/splat.wgsl` (constructed with [`RenderUniform::new`]).
pub use crate::gpu::kernels::shared_splat::RenderUniform;

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
                RasterMode::Classic => shared_splat::RASTER_CLASSIC,
                RasterMode::Antialiased => shared_splat::RASTER_ANTIALIASED,
            },
            ..Default::default()
        }
        .with_lens(&camera.lens)
    }

    /// A copy carrying `lens`'s coefficients (`shaders/shared/lens.wgsl` reads them).
    fn with_lens(mut self, lens: &CameraLens) -> Self {
        let l = lens;
        self.lens_kind = match l.kind {
            LensKind::Pinhole => shared_lens::LENS_PINHOLE,
            LensKind::Perspective => shared_lens::LENS_PERSPECTIVE,
            LensKind::Fisheye => shared_lens::LENS_FISHEYE,
            LensKind::Fov => shared_lens::LENS_FOV,
        };
        self.lens_radial = l.radial;
        self.lens_rational = [l.rational[0], l.rational[1], l.rational[2], 0.0];
        self.lens_tangential = [l.tangential[0], l.tangential[1], l.prism[0], l.prism[1]];
        let t = 2.0 * (0.5 * f64::from(l.omega)).tan();
        self.lens_limits = [l.limit, t as f32, l.omega, 0.0];
        self
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

    /// A copy naming a rasterizer dispatch's slice of each tile's run: slice `slice` of `len`
    /// intersections each (`len` 0: the whole run; see `shaders/shared/chunk.wgsl`).
    pub(crate) fn with_slice(mut self, slice: u64, len: u32) -> Self {
        self.slice = slice as u32;
        self.slice_len = len;
        self
    }
}

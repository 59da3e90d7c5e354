//! Regularisers that shape the Gaussians for surfaces (`train --geometry`):
//! - the flattening term, λ · mean over the Gaussians of their shortest scale (PGSR's), which
//!   pulls each Gaussian towards a disc whose normal, its shortest axis, is well defined (the
//!   normals `render --normals` and the mesh read). Its gradient is added to each chunk's
//!   gradients before the optimizer step (`shaders/flatten.wgsl`);
//! - depth–normal consistency and depth distortion (2DGS's, defined in [`crate::loss::geometry`]),
//!   from the step's iteration `geometry_from` on: two more rasterizations of the step's splats
//!   (the depth moments and the normals as colour, sharing its projection and sorts,
//!   [`crate::splat::geometry`]), the loss kernel on them, and two more backward passes whose
//!   gradients are added to the colour's in the chunk scratch (`train::gradient_step`).

use super::strategy::ChunkRows;
use crate::error::Result;
use crate::gpu::kernels::flatten;
use crate::gpu::{Encoder, MemoryCategory};
use crate::loss::geometry::{DEFAULT_MIN_ALPHA, GeometryLossOptions, record_geometry_loss};
use crate::splat::forward::{Binned, ColourSource, ForwardOutput};
use crate::splat::{Camera, CameraLens, GaussianTensors};
use crate::tensor::Tensor;

/// The weights `train --geometry` turns on (measured on the built-in scene: docs/measurements.md,
/// "Surfaces").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeometryRecipe {
    /// The flattening weight.
    pub flatten: f32,
    /// The depth–normal consistency weight.
    pub depth_normal: f32,
    /// The depth distortion weight.
    pub distortion: f32,
}

impl GeometryRecipe {
    /// The recipe that meshed best: flattening and depth–normal consistency. The distortion term
    /// at 100 meshed no better (F-score at 0.5% 0.454 against 0.451, at 1% 0.757 against 0.767)
    /// for 0.12 dB, at 1000 it lost 2.4 dB: it stays off unless `--distortion` names a weight.
    pub const MEASURED: GeometryRecipe = GeometryRecipe {
        flatten: 100.0,
        depth_normal: 0.05,
        distortion: 0.0,
    };
}

/// Records the flattening term's gradient, `weight` · mean over all N Gaussians of the shortest
/// scale, for rows `chunks.model` of `g`, added to rows `chunks.grads` of `grads`' log scales.
/// Nothing is recorded for a zero weight.
pub fn record_flatten(
    enc: &mut Encoder,
    g: &GaussianTensors,
    grads: &GaussianTensors,
    chunks: ChunkRows,
    weight: f32,
) -> Result<()> {
    if weight == 0.0 {
        return Ok(());
    }
    let n = g.len().max(1) as f32;
    let (rows, at) = (&chunks.model, &chunks.grads);
    let params = flatten::FlattenParams {
        weight: weight / n,
        count: rows.rows as u32,
        ..Default::default()
    };
    let kernel = enc.ctx().typed::<flatten::Flatten>()?;
    let grid = crate::ops::grid(enc, rows.rows, kernel.threads())?;
    let bindings = flatten::FlattenBindings {
        log_scales: g.log_scales.rows_arg(rows)?,
        grad_log_scales: grads.log_scales.rows_arg(at)?,
    };
    enc.run(&kernel, &params, bindings, grid)
}

/// One geometry render of a step and the gradient of the regularisers with respect to its image,
/// for a backward pass that adds to the colour's.
pub struct GeometryGradient {
    /// The render.
    pub fwd: ForwardOutput,
    /// dLoss/d(its image).
    pub v_image: Tensor,
    /// What it composited.
    pub colour: ColourSource,
}

/// The camera-space ray of every pixel centre of `camera`, `[H, W, 4]`: `(r, 1)` with the point at
/// the rasterizer's depth `d` at `d·r` (`r.z = 1` for a depth along z, `|r| = 1` for a fisheye's
/// ray length), or zeros where the lens sees nothing.
pub fn pixel_rays(camera: &Camera) -> Vec<f32> {
    let lens = crate::data::lens::Lens::of_camera(camera);
    let fisheye = camera.lens.is_fisheye();
    let (w, h) = (camera.width as usize, camera.height as usize);
    let mut rays = vec![0f32; w * h * 4];
    for (i, ray) in rays.chunks_exact_mut(4).enumerate() {
        let pixel = [(i % w) as f64 + 0.5, (i / w) as f64 + 0.5];
        let Some(d) = lens.ray(pixel) else {
            continue;
        };
        let r = match fisheye {
            true => d,
            false if d[2] > 0.0 => [d[0] / d[2], d[1] / d[2], 1.0],
            false => continue,
        };
        ray.copy_from_slice(&[r[0] as f32, r[1] as f32, r[2] as f32, 1.0]);
    }
    rays
}

/// How many cameras' pixel rays [`RayCache`] keeps (most captures have one to a few distinct
/// intrinsics; past that the least recently used is dropped and recomputed when next seen).
pub const RAY_CACHE_CAMERAS: usize = 4;

/// The size, intrinsics and lens that pixel rays depend on.
type RayKey = (u32, u32, [f32; 4], CameraLens);

/// The pixel rays of the cameras a run trains on, uploaded once per distinct size, intrinsics and
/// lens, for the [`RAY_CACHE_CAMERAS`] most recently used.
#[derive(Default)]
pub struct RayCache {
    /// Most recently used last.
    entries: Vec<(RayKey, Tensor)>,
}

impl RayCache {
    /// The rays of `camera`'s pixels, uploaded when no cached camera has its size, intrinsics
    /// and lens.
    pub fn rays(&mut self, enc: &mut Encoder, camera: &Camera) -> Result<Tensor> {
        let key = (
            camera.width,
            camera.height,
            [camera.fx, camera.fy, camera.cx, camera.cy],
            camera.lens,
        );
        if let Some(at) = self.entries.iter().position(|(k, _)| *k == key) {
            let entry = self.entries.remove(at);
            let rays = entry.1.clone();
            self.entries.push(entry);
            return Ok(rays);
        }
        let (w, h) = (camera.width as usize, camera.height as usize);
        let rays = Tensor::from_slice(
            enc,
            &pixel_rays(camera),
            &[h, w, 4],
            MemoryCategory::FrameScratch,
            "train/pixel_rays",
        )?;
        if self.entries.len() == RAY_CACHE_CAMERAS {
            self.entries.remove(0);
        }
        self.entries.push((key, rays.clone()));
        Ok(rays)
    }
}

/// Whether the step at `iteration` applies the depth–normal or distortion regulariser, and
/// whether it needs the normals (the depth–normal term).
pub fn regularises(config: &super::config::TrainConfig, iteration: u64) -> (bool, bool) {
    let on = iteration >= config.geometry_from.unwrap_or(config.iterations / 5)
        && (config.depth_normal > 0.0 || config.distortion > 0.0);
    (on, on && config.depth_normal > 0.0)
}

/// Records the geometry renders of a step's binned splats (the moments, and the normals when the
/// depth–normal term is on: `binned` then has the splat normals) and the regularisers' gradients
/// with respect to them. `scale` is the scene's (the distortion's depth unit).
pub fn record_geometry_gradients(
    enc: &mut Encoder,
    binned: &Binned,
    rays: &Tensor,
    config: &super::config::TrainConfig,
    scale: f32,
) -> Result<Vec<GeometryGradient>> {
    let geometry = crate::splat::geometry::record_geometry_raster;
    let moments = geometry(enc, binned, ColourSource::DepthMoments)?;
    let normals = match config.depth_normal > 0.0 {
        true => Some(geometry(enc, binned, ColourSource::Normal)?),
        false => None,
    };
    let options = GeometryLossOptions {
        normal_weight: config.depth_normal,
        distortion_weight: config.distortion,
        scale,
        min_alpha: DEFAULT_MIN_ALPHA,
    };
    // Without the normal term the kernel reads the moments in their place (its weight is 0).
    let normal_image = normals.as_ref().map_or(&moments.image, |n| &n.image);
    let loss = record_geometry_loss(enc, &moments.image, normal_image, rays, &options)?;
    let mut out = vec![GeometryGradient {
        fwd: moments,
        v_image: loss.v_moments,
        colour: ColourSource::DepthMoments,
    }];
    if let Some(fwd) = normals {
        out.push(GeometryGradient {
            fwd,
            v_image: loss.v_normals,
            colour: ColourSource::Normal,
        });
    }
    Ok(out)
}

/// The depth–normal and distortion terms of a model seen from one camera, unweighted (λ = 1):
/// what the regularisers lower.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeometryTerms {
    /// Mean over the pixels of A·(1 − N·n).
    pub depth_normal: f64,
    /// Mean over the pixels of Σᵢ<ⱼ wᵢ wⱼ (dᵢ − dⱼ)², depths in units of `scale`.
    pub distortion: f64,
}

/// Measures [`GeometryTerms`] of `g` from `camera` with the renders and kernel a training step
/// uses; `scale` is the scene's (`Dataset::extent`).
pub fn measure_geometry_terms(
    ctx: &crate::gpu::GpuContext,
    g: &GaussianTensors,
    camera: &Camera,
    scale: f32,
) -> Result<GeometryTerms> {
    use crate::splat::forward::{RenderOptions, record_binning, record_projection};
    let options = RenderOptions {
        sh_degree: g.max_sh_degree(),
        normals: true,
        ..Default::default()
    };
    let mut enc = ctx.encoder("geometry terms: projection");
    let projection = record_projection(&mut enc, g, camera, options)?;
    ctx.submit(enc)?;
    let counted = projection.read_counts(ctx)?;
    let mut enc = ctx.encoder("geometry terms");
    let binned = record_binning(&mut enc, counted)?;
    let geometry = crate::splat::geometry::record_geometry_raster;
    let moments = geometry(&mut enc, &binned, ColourSource::DepthMoments)?;
    let normals = geometry(&mut enc, &binned, ColourSource::Normal)?;
    let rays = RayCache::default().rays(&mut enc, camera)?;
    let unit = GeometryLossOptions {
        normal_weight: 1.0,
        distortion_weight: 1.0,
        scale,
        min_alpha: DEFAULT_MIN_ALPHA,
    };
    let loss = record_geometry_loss(&mut enc, &moments.image, &normals.image, &rays, &unit)?;
    ctx.submit(enc)?;
    let losses = loss.losses.read::<f32>(ctx)?;
    let sum = |k: usize| losses.chunks_exact(2).map(|l| f64::from(l[k])).sum::<f64>();
    Ok(GeometryTerms {
        depth_normal: sum(0),
        distortion: sum(1),
    })
}

//! The forward pass: project, count, compact, depth-sort, bin into tiles, sort by tile, find tile
//! ranges and rasterize.
//!
//! Sorting scheme (WGSL has no u64 keys): visible splats are first sorted by depth (the f32 depth's
//! bit pattern, which orders like the float for positive depths); intersections are then emitted
//! in that depth order and stable-sorted by tile id on only `ceil(log2(tiles))` bits, so each
//! tile's run comes out depth-ordered.
//!
//! Sizes: the number of visible splats V and of intersections I depend on the data. They are
//! counted on the GPU and read back once (8 bytes) between the two halves of the pass
//! ([`Projection::read_counts`]), and every later buffer is sized exactly from them. The visible
//! splats are paged by whole rows and rasterized chunk by chunk (see [`super::raster`]), so their
//! count is not capped by one binding; the u32 lists (V splat indices, I intersections) and the
//! image must each fit one binding, and a size that does not is reported as an error, never
//! truncated.

use super::camera::Camera;
use super::gaussians::GaussianTensors;
use super::uniform::{AlphaMode, RasterMode, RenderUniform};
use crate::error::{Error, Result};
use crate::gpu::kernels::{
    self, geometry_colour, index_isects, map_intersections, page_rows, project_forward, sh_forward,
    shared_splat, splat_normals,
};
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::ops;
use crate::tensor::{DType, Tensor, TensorReadback};

pub use super::raster::record_raster;

/// Floats per projected splat row (`SPLAT_STRIDE` in `shaders/shared/splat.wgsl`).
pub const SPLAT_STRIDE: u64 = shared_splat::SPLAT_STRIDE as u64;

/// Options of one render.
#[derive(Clone, Copy, Debug, Default)]
pub struct RenderOptions {
    /// Active SH degree (clamped to the model's).
    pub sh_degree: u32,
    /// Alpha cutoff behaviour.
    pub alpha_mode: AlphaMode,
    /// Classic 3DGS or antialiased splats.
    pub raster_mode: RasterMode,
    /// Also composite each Gaussian's normal (its shortest axis in camera space, facing the
    /// camera) into [`ForwardOutput::normals`].
    pub normals: bool,
    /// What each Gaussian's colour is: its SH colour, or its depth or normal for a loss on
    /// the geometry (see [`ColourSource`]).
    pub colour: ColourSource,
}

/// What a render composites as each Gaussian's colour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColourSource {
    /// The colour of its spherical harmonics.
    #[default]
    Sh,
    /// Its depth, as (depth, 0, 0): the image's red channel is the alpha-weighted depth of the
    /// depth output, bit for bit.
    Depth,
    /// Its camera-space normal, as the normals output composites it.
    Normal,
    /// Its depth's moments, (depth, depth², 1): per pixel the image holds Σ w·d, Σ w·d² and
    /// Σ w, from which the depth distortion loss Σᵢ Σⱼ wᵢ wⱼ (dᵢ − dⱼ)² / 2 = Σ w · Σ w·d² −
    /// (Σ w·d)² and the expected depth Σ w·d / Σ w follow (see `loss::geometry`).
    DepthMoments,
}

impl ColourSource {
    /// Whether the colour is geometry (depth or normal).
    pub fn is_geometry(self) -> bool {
        self != ColourSource::Sh
    }
}

/// The variant of `geometry_colour.wgsl` that writes `colour`.
fn geometry_colour_overrides(colour: ColourSource) -> geometry_colour::Overrides {
    geometry_colour::Overrides {
        normal: colour == ColourSource::Normal,
        moments: colour == ColourSource::DepthMoments,
    }
}

/// Floats per normal (camera-space x, y, z), per Gaussian and per pixel.
pub const NORMAL_STRIDE: u64 = 3;

/// The first half of a forward pass, recorded and waiting for its counts.
pub struct Projection {
    pub(crate) uniform: RenderUniform,
    pub(crate) camera: Camera,
    /// Projected rows in Gaussian order, `[N, 12]`.
    pub projected: Tensor,
    /// Tiles each Gaussian touches (0 = culled), `[N]`.
    pub tiles_touched: Tensor,
    /// Depth sort keys, `[N]`.
    pub depth_keys: Tensor,
    /// Each Gaussian's camera-space normal, `[N, 3]`, when the options asked for normals.
    pub normals: Option<Tensor>,
    visible: Option<TensorReadback>,
    intersections: Option<TensorReadback>,
}

/// Everything the forward pass produced; the backward pass reads it.
pub struct ForwardOutput {
    /// RGB composited on the background, and alpha: `[H, W, 4]`.
    pub image: Tensor,
    /// Per pixel, the alpha-weighted depth (divide by alpha for the expected depth) and the
    /// median depth (of the splat at which the accumulated opacity first reaches 0.5; 0 where
    /// it never does): `[H, W, 2]`. Depth is camera-space z, or a fisheye's ray length.
    pub depth: Tensor,
    /// Per pixel, the alpha-weighted camera-space normal (x right, y down, z forward; divide by
    /// alpha for the mean normal), `[H, W, 3]`, when the options asked for normals. Each
    /// Gaussian's normal is its shortest axis turned towards the camera.
    pub normals: Option<Tensor>,
    /// Per pixel, how many of its tile's intersections it consumed up to its last contributor.
    pub consumed: Tensor,
    /// Visible splats in depth order, `[V, 12]`, paged by whole rows: each page is one chunk of the
    /// rasterizer (see [`super::raster::splat_rows_per_page`]).
    pub splats: Tensor,
    /// For each visible splat, the Gaussian it came from: `[V]`.
    pub global_from_splat: Tensor,
    /// For each tile-sorted intersection, its splat: `[I]`.
    pub splat_from_isect: Tensor,
    /// For each visible splat, the emission index of its first intersection (its intersections
    /// are emitted together, tiles row-major): `[V]`.
    pub isect_offsets: Tensor,
    /// For each emission index, the intersection's tile-sorted position: `[I]`.
    pub isect_from_orig: Tensor,
    /// (start, end) of each tile's run of intersections: `[2 * tiles]`.
    pub tile_ranges: Tensor,
    /// V.
    pub num_visible: u64,
    /// I.
    pub num_intersections: u64,
    /// The uniform used.
    pub uniform: RenderUniform,
}

fn check_camera(camera: &Camera) -> Result<()> {
    let ok = camera.width > 0
        && camera.height > 0
        && camera.near > 0.0
        && camera.far > camera.near
        && camera.fx > 0.0
        && camera.fy > 0.0
        && camera
            .rotation
            .iter()
            .flatten()
            .chain(&camera.translation)
            .all(|v| v.is_finite());
    let lens = &camera.lens;
    let coefficients = lens
        .radial
        .iter()
        .chain(&lens.rational)
        .chain(&lens.tangential)
        .chain(&lens.prism)
        .chain([&lens.omega, &lens.limit]);
    let lens_ok =
        lens.is_pinhole() || (coefficients.clone().all(|v| v.is_finite()) && lens.limit > 0.0);
    if ok && !lens_ok {
        return Err(Error::InvalidArgument {
            op: "render",
            detail: format!(
                "the camera's lens needs finite coefficients and a positive limit; got {lens:?} (build it with \
                 CameraLens::perspective, fisheye or fov)"
            ),
        });
    }
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op: "render",
            detail: format!(
                "camera needs width, height, fx, fy > 0, 0 < near < far and a finite pose; got {}x{}, f=({}, {}), near {}, far {}",
                camera.width, camera.height, camera.fx, camera.fy, camera.near, camera.far
            ),
        })
    }
}

/// Records projection and colour of every Gaussian, and the counts V and I.
pub fn record_projection(
    enc: &mut Encoder,
    g: &GaussianTensors,
    camera: &Camera,
    options: RenderOptions,
) -> Result<Projection> {
    check_camera(camera)?;
    if options.colour.is_geometry() && camera.background != [0.0; 3] {
        return Err(Error::InvalidArgument {
            op: "render",
            detail: format!(
                "a render of {:?} as colour composites on black, not on {:?}: set the camera's background to zero",
                options.colour, camera.background
            ),
        });
    }
    let n = g.len() as usize;
    let degree = options.sh_degree.min(g.max_sh_degree());
    let uniform = RenderUniform::new(
        camera,
        degree,
        g.sh_rest_count(),
        options.alpha_mode,
        options.raster_mode,
    );
    let rows = g.rows_per_page;
    let scratch = |enc: &mut Encoder, shape: &[usize], dtype, label| {
        Tensor::uninit_rows(enc, dtype, shape, rows, MemoryCategory::FrameScratch, label)
    };
    let projected = scratch(
        enc,
        &[n, SPLAT_STRIDE as usize],
        DType::F32,
        "splat/projected",
    )?;
    let tiles_touched = scratch(enc, &[n], DType::U32, "splat/tiles_touched")?;
    let depth_keys = scratch(enc, &[n], DType::U32, "splat/depth_keys")?;
    let lens = project_forward::Overrides {
        lens: !camera.lens.is_pinhole(),
    };
    let project = enc.ctx().typed_with::<project_forward::Project>(&lens)?;
    let color = enc.ctx().typed::<sh_forward::Color>()?;
    // Each Gaussian's normal and the kernel that writes it, when asked for.
    let normals = match options.normals {
        true => Some((
            scratch(
                enc,
                &[n, NORMAL_STRIDE as usize],
                DType::F32,
                "splat/gaussian_normals",
            )?,
            enc.ctx().typed::<splat_normals::SplatNormals>()?,
        )),
        false => None,
    };
    let geometry_kernel = match options.colour.is_geometry() {
        true => Some(enc.ctx().typed_with::<geometry_colour::GeometryColour>(
            &geometry_colour_overrides(options.colour),
        )?),
        false => None,
    };
    // A page's kernels run before the next page's, on the projection's grid.
    for span in page_rows(g.len(), rows) {
        let page = span.page;
        let u = uniform.with_count(span.rows, span.first_row, 0);
        let grid = ops::grid(enc, span.rows, project.threads())?;
        let bindings = project_forward::ProjectBindings {
            means: g.means.page_arg(page),
            log_scales: g.log_scales.page_arg(page),
            quats: g.quats.page_arg(page),
            opacity_logits: g.opacity_logits.page_arg(page),
            projected: projected.page_arg(page),
            tiles_touched: tiles_touched.page_arg(page),
            depth_keys: depth_keys.page_arg(page),
        };
        enc.run(&project, &u, bindings, grid)?;
        let bindings = sh_forward::ColorBindings {
            means: g.means.page_arg(page),
            sh_dc: g.sh_dc.page_arg(page),
            sh_rest: g.sh_rest.page_arg_or_absent(page),
            projected: projected.page_arg(page),
            tiles_touched: tiles_touched.page_arg(page),
        };
        enc.run(&color, &u, bindings, grid)?;
        if let Some(kernel) = &geometry_kernel {
            let bindings = geometry_colour::GeometryColourBindings {
                means: g.means.page_arg(page),
                log_scales: g.log_scales.page_arg(page),
                quats: g.quats.page_arg(page),
                tiles_touched: tiles_touched.page_arg(page),
                projected: projected.page_arg(page),
            };
            enc.run(kernel, &u, bindings, grid)?;
        }
        if let Some((normals, kernel)) = &normals {
            let bindings = splat_normals::SplatNormalsBindings {
                means: g.means.page_arg(page),
                log_scales: g.log_scales.page_arg(page),
                quats: g.quats.page_arg(page),
                normals: normals.page_arg(page),
            };
            enc.run(kernel, &u, bindings, grid)?;
        }
    }
    let visible = ops::count::count_nonzero(enc, &tiles_touched)?;
    // I is the sum of the tile counts; the offsets themselves are scanned later, in depth order.
    let total = ops::reduce::reduce(enc, &tiles_touched, ops::reduce::ReduceOp::Sum)?;
    Ok(Projection {
        uniform,
        camera: camera.clone(),
        visible: Some(visible.record_read(enc)?),
        intersections: Some(total.record_read(enc)?),
        projected,
        tiles_touched,
        depth_keys,
        normals: normals.map(|(normals, _)| normals),
    })
}

/// V and I, read back after the projection's encoder was submitted.
pub struct Counted {
    projection: Projection,
    /// Visible splats.
    pub num_visible: u64,
    /// Tile intersections.
    pub num_intersections: u64,
}

impl Projection {
    /// Waits for the counts (submit the encoder holding the projection first).
    pub fn read_counts(self, ctx: &GpuContext) -> Result<Counted> {
        crate::gpu::readback::blocking("the projection's counts", self.counts(ctx))
    }

    /// [`Projection::read_counts`] in the form that also runs in a browser, where the counts
    /// are awaited (see [`crate::gpu::Readback::fetch`]).
    pub async fn counts(mut self, ctx: &GpuContext) -> Result<Counted> {
        let (Some(visible), Some(isects)) = (self.visible.take(), self.intersections.take()) else {
            return Err(Error::InvalidArgument {
                op: "counts",
                detail: "the counts were already read".into(),
            });
        };
        let visible = visible.fetch::<u32>(ctx).await?;
        let isects = isects.fetch::<u32>(ctx).await?;
        Ok(self.counted(&visible, &isects))
    }

    fn counted(self, visible: &[u32], isects: &[u32]) -> Counted {
        let num_visible = u64::from(visible.first().copied().unwrap_or(0))
            | (u64::from(visible.get(1).copied().unwrap_or(0)) << 32);
        let num_intersections = u64::from(isects.first().copied().unwrap_or(0));
        Counted {
            projection: self,
            num_visible,
            num_intersections,
        }
    }
}

/// Bytes of a rendered `width` × `height` image (four f32 channels a pixel), which the
/// rasterizer and its backward pass bind whole.
pub(crate) fn image_bytes(width: u32, height: u32) -> u64 {
    u64::from(width) * u64::from(height) * 16
}

pub(crate) fn fits_one_page(ctx: &GpuContext, what: &str, elems: u64) -> Result<()> {
    let bytes = elems * 4;
    if bytes > ctx.page_bytes() {
        return Err(Error::Overflow {
            what: format!("{what} in one binding"),
            needed: bytes,
            max: ctx.page_bytes(),
            hint: "render at a lower resolution (a larger -r) or with fewer Gaussians; this adapter's storage binding limit is the cap".into(),
        });
    }
    Ok(())
}

/// The sorted and binned splats of one view, ready to rasterize. The Gaussian-order rows of the
/// projection are gone by now: the splats hold the visible ones in depth order.
#[derive(Clone)]
pub struct Binned {
    pub(super) uniform: RenderUniform,
    pub(super) camera: Camera,
    pub(super) splats: Tensor,
    pub(super) global_from_splat: Tensor,
    pub(super) splat_from_isect: Tensor,
    pub(super) isect_offsets: Tensor,
    pub(super) isect_from_orig: Tensor,
    pub(super) tile_ranges: Tensor,
    /// The visible splats' normals in depth order, `[V, 3]`, when normals were asked for.
    pub(super) splat_normals: Option<Tensor>,
    pub(super) num_visible: u64,
    pub(super) num_intersections: u64,
}

impl Binned {
    /// The same splats without their normals: the colour render of a step whose normals served
    /// only a geometry render ([`super::geometry::record_geometry_raster`]) composites none.
    pub fn without_normals(self) -> Binned {
        Binned {
            splat_normals: None,
            ..self
        }
    }
}

impl ForwardOutput {
    /// Chunks the rasterizer ran in (pages of [`ForwardOutput::splats`]; at least 1).
    pub fn num_chunks(&self) -> usize {
        self.splats.num_pages().max(1)
    }
}

/// Records the second half: compaction, sorts, binning and rasterization.
pub fn record_rasterize(enc: &mut Encoder, counted: Counted) -> Result<ForwardOutput> {
    let binned = record_binning(enc, counted)?;
    record_raster(enc, binned)
}

/// Records compaction of the visible splats, the depth sort, intersection emission, the tile sort
/// and the tile ranges.
pub fn record_binning(enc: &mut Encoder, counted: Counted) -> Result<Binned> {
    let Counted {
        projection: p,
        num_visible: v,
        num_intersections: isects,
    } = counted;
    let ctx = enc.ctx().clone();
    fits_one_page(&ctx, "visible splat indices", v)?;
    fits_one_page(&ctx, "tile intersections", isects)?;
    fits_one_page(
        &ctx,
        "the image",
        image_bytes(p.camera.width, p.camera.height) / 4,
    )?;
    let u = p.uniform;
    let num_tiles = u64::from(u.tile_counts()[0]) * u64::from(u.tile_counts()[1]);

    let Projection {
        uniform: _,
        camera,
        projected,
        tiles_touched,
        depth_keys,
        normals,
        ..
    } = p;
    let compacted = ops::compact::compact_indices(enc, &tiles_touched)?;
    let visible_ids = compacted.values.prefix(v)?;
    let keys = ops::gather::gather(enc, &depth_keys, &visible_ids)?;
    drop(depth_keys);
    let (sorted_depths, global_from_splat) =
        ops::radix_sort::sort_pairs(enc, &keys, &visible_ids, 32)?;
    // Each tensor is released as soon as its last reader is recorded, so the Gaussian-order rows
    // and the visible splats coexist with little else (the frame's peak, see `train::budget`).
    drop((keys, visible_ids, compacted, sorted_depths));
    let splats = Tensor::uninit_rows(
        enc,
        DType::F32,
        &[v as usize, SPLAT_STRIDE as usize],
        super::raster::splat_rows_per_page(&ctx),
        MemoryCategory::FrameScratch,
        "splat/splats",
    )?;
    ops::gather::gather_rows_into(enc, &projected, &global_from_splat, SPLAT_STRIDE, &splats)?;
    drop(projected);
    let splat_normals = match normals {
        Some(normals) => {
            // The rasterizer binds them whole, indexed by splat.
            fits_one_page(&ctx, "the visible splats' normals", v * NORMAL_STRIDE)?;
            let splat_normals = Tensor::uninit(
                enc,
                DType::F32,
                &[v as usize, NORMAL_STRIDE as usize],
                MemoryCategory::FrameScratch,
                "splat/splat_normals",
            )?;
            ops::gather::gather_rows_into(
                enc,
                &normals,
                &global_from_splat,
                NORMAL_STRIDE,
                &splat_normals,
            )?;
            Some(splat_normals)
        }
        None => None,
    };
    let counts = ops::gather::gather(enc, &tiles_touched, &global_from_splat)?;
    drop(tiles_touched);
    let offsets = Tensor::uninit(
        enc,
        DType::U32,
        &[v as usize],
        MemoryCategory::FrameScratch,
        "splat/isect_offsets",
    )?;
    ops::scan::exclusive_scan_u32(enc, &counts, &offsets)?;

    let tile_keys = Tensor::uninit(
        enc,
        DType::U32,
        &[isects as usize],
        MemoryCategory::FrameScratch,
        "splat/tile_keys",
    )?;
    let splat_from_orig = Tensor::uninit(
        enc,
        DType::U32,
        &[isects as usize],
        MemoryCategory::FrameScratch,
        "splat/isect_splats",
    )?;
    let isect_ids = Tensor::uninit(
        enc,
        DType::U32,
        &[isects as usize],
        MemoryCategory::FrameScratch,
        "splat/isect_ids",
    )?;
    if v > 0 && isects > 0 {
        let emit = ctx.typed::<map_intersections::Emit>()?;
        let rows = splats.page_elems() / SPLAT_STRIDE;
        enc.run_pages(&emit, v, rows, |page| {
            (
                u.with_count(page.rows, page.first_row, isects),
                map_intersections::EmitBindings {
                    splats: splats.page_arg(page.page),
                    offsets: offsets.page_arg(0),
                    tile_keys: tile_keys.page_arg(0),
                    splat_from_isect: splat_from_orig.page_arg(0),
                    isect_ids: isect_ids.page_arg(0),
                },
            )
        })?;
    }
    let tile_bits = (64 - num_tiles.saturating_sub(1).leading_zeros()).max(1);
    let (sorted_keys, orig_from_isect) =
        ops::radix_sort::sort_pairs_consuming(enc, tile_keys, isect_ids, tile_bits)?;
    let index = |enc: &mut Encoder, label| {
        Tensor::uninit(
            enc,
            DType::U32,
            &[isects as usize],
            MemoryCategory::FrameScratch,
            label,
        )
    };
    let splat_from_isect = index(enc, "splat/splat_from_isect")?;
    let isect_from_orig = index(enc, "splat/isect_from_orig")?;
    if isects > 0 {
        let kernel = ctx.typed::<index_isects::IndexIsects>()?;
        let bindings = index_isects::IndexIsectsBindings {
            orig_from_isect: orig_from_isect.page_arg(0),
            splat_from_orig: splat_from_orig.page_arg(0),
            splat_from_isect: splat_from_isect.page_arg(0),
            isect_from_orig: isect_from_orig.page_arg(0),
        };
        let grid = ops::grid(enc, isects, kernel.threads())?;
        enc.run(&kernel, &u.with_count(isects, 0, 0), bindings, grid)?;
    }
    drop((orig_from_isect, splat_from_orig));
    let tile_ranges = Tensor::zeros(
        enc,
        DType::U32,
        &[2 * num_tiles as usize],
        MemoryCategory::FrameScratch,
        "splat/tile_ranges",
    )?;
    if isects > 0 {
        let ranges = ctx.typed::<kernels::tile_ranges::RangesFromKeys>()?;
        let bindings = kernels::tile_ranges::RangesFromKeysBindings {
            tile_keys: sorted_keys.page_arg(0),
            ranges: tile_ranges.page_arg(0),
        };
        let grid = ops::grid(enc, isects, ranges.threads())?;
        enc.run(&ranges, &u.with_count(isects, 0, 0), bindings, grid)?;
    }
    Ok(Binned {
        uniform: u,
        camera,
        splats,
        global_from_splat,
        splat_from_isect,
        isect_offsets: offsets,
        isect_from_orig,
        tile_ranges,
        splat_normals,
        num_visible: v,
        num_intersections: isects,
    })
}

/// Renders one image: records the projection, submits, reads the counts, records and submits the
/// rasterization. The returned tensors are ready to read.
pub fn render(
    ctx: &GpuContext,
    g: &GaussianTensors,
    camera: &Camera,
    options: RenderOptions,
) -> Result<ForwardOutput> {
    crate::gpu::readback::blocking("render", render_async(ctx, g, camera, options))
}

/// Renders `g` from `camera` at its own SH degree and reads the image back as RGB (row-major,
/// clamped to 0–1): what a comparison of renders scores.
pub fn render_rgb(ctx: &GpuContext, g: &GaussianTensors, camera: &Camera) -> Result<Vec<f32>> {
    let options = RenderOptions {
        sh_degree: g.max_sh_degree(),
        ..Default::default()
    };
    let rgba = render(ctx, g, camera, options)?.image.read::<f32>(ctx)?;
    Ok(rgba
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]].map(|v| v.clamp(0.0, 1.0)))
        .collect())
}

/// [`render`] in the form that also runs in a browser page, where the projection's counts are
/// awaited instead of blocked on.
pub async fn render_async(
    ctx: &GpuContext,
    g: &GaussianTensors,
    camera: &Camera,
    options: RenderOptions,
) -> Result<ForwardOutput> {
    let mut enc = ctx.encoder("render: projection");
    let projection = record_projection(&mut enc, g, camera, options)?;
    ctx.submit(enc)?;
    let counted = projection.counts(ctx).await?;
    let mut enc = ctx.encoder("render: rasterization");
    let out = record_rasterize(&mut enc, counted)?;
    ctx.submit(enc)?;
    Ok(out)
}

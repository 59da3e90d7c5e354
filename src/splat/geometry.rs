//! Geometry renders that share a colour render's projection and sorts: the depth's moments or the
//! normals composited as colour, on black, over the same splats in the same order. A training step
//! with geometry regularisers renders its view once for colour and rasterizes these beside it
//! (`train::geometry`), rather than project and sort the model three times. Each is bit for bit the
//! render with [`RenderOptions::colour`](super::forward::RenderOptions::colour) set, which the
//! tests check.

use super::forward::{Binned, ColourSource, ForwardOutput, SPLAT_STRIDE};
use crate::error::{Error, Result};
use crate::gpu::Encoder;
use crate::gpu::MemoryCategory;
use crate::gpu::kernels::{Arg, geometry_splats};
use crate::tensor::{DType, Tensor};

/// Records the rasterization of `binned`'s splats with each splat's colour replaced by its
/// geometry `colour` (depth, depth moments or normal; not [`ColourSource::Sh`]) on a black
/// background. The normal needs the splat normals of a projection with
/// [`RenderOptions::normals`](super::forward::RenderOptions::normals) set. `binned` itself is
/// left for the colour render ([`Binned::without_normals`] drops the normals it no longer needs).
pub fn record_geometry_raster(
    enc: &mut Encoder,
    binned: &Binned,
    colour: ColourSource,
) -> Result<ForwardOutput> {
    let refuse = |detail: &str| Error::InvalidArgument {
        op: "record_geometry_raster",
        detail: detail.into(),
    };
    let normal = colour == ColourSource::Normal;
    if colour == ColourSource::Sh {
        return Err(refuse(
            "a geometry render needs a geometry colour (depth, depth moments or normal), not the SH colour",
        ));
    }
    if normal && binned.splat_normals.is_none() {
        return Err(refuse(
            "a render of the normals as colour needs a projection with RenderOptions::normals set",
        ));
    }
    let v = binned.num_visible;
    let splats = Tensor::uninit_rows(
        enc,
        DType::F32,
        &[v as usize, SPLAT_STRIDE as usize],
        binned.splats.page_elems() / SPLAT_STRIDE,
        MemoryCategory::FrameScratch,
        "splat/geometry_splats",
    )?;
    if v > 0 {
        let kernel = enc.ctx().typed_with::<geometry_splats::GeometrySplats>(
            &geometry_splats::Overrides {
                normal,
                moments: colour == ColourSource::DepthMoments,
            },
        )?;
        let rows_per_page = binned.splats.page_elems() / SPLAT_STRIDE;
        let u = binned.uniform;
        enc.run_pages(&kernel, v, rows_per_page, |page| {
            (
                u.with_count(page.rows, page.first_row, 0),
                geometry_splats::GeometrySplatsBindings {
                    splats: binned.splats.page_arg(page.page),
                    splat_normals: match (&binned.splat_normals, normal) {
                        (Some(n), true) => n.page_arg(0),
                        _ => Arg::Absent,
                    },
                    rows: splats.page_arg(page.page),
                },
            )
        })?;
    }
    let mut geometry = Binned {
        splats,
        splat_normals: None,
        ..binned.clone()
    };
    geometry.uniform.background = [0.0; 4];
    geometry.camera.background = [0.0; 3];
    super::raster::record_raster(enc, geometry)
}

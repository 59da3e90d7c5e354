//! The geometry regularisers of surface training (`train --geometry`), on one view, and their
//! gradients with respect to two geometry renders of it (`splat::geometry`): the depth moments
//! render, per pixel `(S1, S2, A) = (Σ w·d, Σ w·d², Σ w)`, and the normals render, per pixel the
//! alpha-weighted camera-space normal `N`. With `P = W·H` pixels:
//!
//! - **Depth distortion** (Mip-NeRF 360's, as 2DGS uses): `λ_d / (P·s²) · Σ_p (A·S2 − S1²)`,
//!   which is `Σᵢ<ⱼ wᵢ wⱼ (dᵢ − dⱼ)²` per pixel: the spread of the depths a pixel blends, zero when
//!   they agree. `s` is the scene's scale, so the weight does not depend on the capture's units.
//! - **Depth–normal consistency** (2DGS's): `λ_n / P · Σ_p A_p·(1 − N_p·n_p)`, with `n_p` the unit
//!   normal of the surface the expected depths `S1/A` span at p: the cross product of the central
//!   differences of its neighbours' unprojected points, turned towards the camera. `A_p` weighs
//!   the pixel and is held constant (2DGS detaches it: the term must not lower the opacity). Only
//!   pixels whose four neighbours and themselves have `A ≥ min_alpha` and a lens ray count.
//!
//! The gradient reaches the renders' images (`[H, W, 4]`, zero in alpha), whose backward passes
//! carry it to the Gaussians. `shaders/geometry_loss.wgsl` computes both terms in one pass;
//! [`super::geometry_reference`] is its CPU twin.

use crate::error::{Error, Result};
use crate::gpu::kernels::geometry_loss;
use crate::gpu::{Encoder, MemoryCategory};
use crate::tensor::{DType, Tensor};

/// The default opacity below which a pixel has no expected depth for the normal term.
pub const DEFAULT_MIN_ALPHA: f32 = 0.1;

/// Weights of the two terms on one view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GeometryLossOptions {
    /// λ_n, the depth–normal consistency weight (0 = off).
    pub normal_weight: f32,
    /// λ_d, the depth distortion weight (0 = off).
    pub distortion_weight: f32,
    /// The scene's scale `s` the depths are divided by in the distortion term.
    pub scale: f32,
    /// Pixels with less opacity have no expected depth for the normal term (above 0).
    pub min_alpha: f32,
}

/// The per-pixel losses and the gradients with respect to the two renders.
pub struct GeometryLoss {
    /// dLoss/d(moments image), `[H, W, 4]`.
    pub v_moments: Tensor,
    /// dLoss/d(normals image), `[H, W, 4]`.
    pub v_normals: Tensor,
    /// Per pixel the weighted normal and distortion losses, `[H, W, 2]`; their sums are the
    /// view's two terms.
    pub losses: Tensor,
}

/// Checks the options and that the three images are single-page `[H, W, 4]` f32 tensors.
fn check(
    moments: &Tensor,
    normals: &Tensor,
    rays: &Tensor,
    options: &GeometryLossOptions,
) -> Result<(usize, usize)> {
    let invalid = |detail: String| Error::InvalidArgument {
        op: "geometry_loss",
        detail,
    };
    let weights = [options.normal_weight, options.distortion_weight];
    if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) {
        return Err(invalid(format!(
            "the weights must be finite and 0 or more, not {weights:?}"
        )));
    }
    if !(options.scale.is_finite() && options.scale > 0.0) {
        return Err(invalid(format!(
            "the scene scale must be finite and above 0, not {}",
            options.scale
        )));
    }
    if !(options.min_alpha.is_finite() && options.min_alpha > 0.0) {
        return Err(invalid(format!(
            "the least opacity with a depth must be above 0, not {}",
            options.min_alpha
        )));
    }
    let shape = moments.shape().to_vec();
    for (what, t) in [("moments", moments), ("normals", normals), ("rays", rays)] {
        t.expect_dtype("geometry_loss", DType::F32)?;
        if t.shape() != shape.as_slice() || shape.len() != 3 || shape[2] != 4 {
            return Err(Error::Shape {
                op: "geometry_loss",
                detail: format!(
                    "the {what} image is {:?}: the moments, normals and rays must all be [H, W, 4] (the moments' is {shape:?})",
                    t.shape()
                ),
            });
        }
        if t.num_pages() > 1 {
            return Err(Error::Shape {
                op: "geometry_loss",
                detail: format!("the {what} image spans several pages: render a smaller view"),
            });
        }
    }
    Ok((shape[0], shape[1]))
}

/// Records both terms and their gradients for one view. `rays` holds, per pixel, the
/// camera-space ray `r` with the point at depth `d` at `d·r` and a 1 where the lens sees the pixel
/// (see `train::geometry::pixel_rays`).
pub fn record_geometry_loss(
    enc: &mut Encoder,
    moments: &Tensor,
    normals: &Tensor,
    rays: &Tensor,
    options: &GeometryLossOptions,
) -> Result<GeometryLoss> {
    let (h, w) = check(moments, normals, rays, options)?;
    let pixels = (h * w) as f32;
    let image = |enc: &mut Encoder, channels: usize, label| {
        Tensor::uninit(
            enc,
            DType::F32,
            &[h, w, channels],
            MemoryCategory::FrameScratch,
            label,
        )
    };
    let out = GeometryLoss {
        v_moments: image(enc, 4, "loss/v_moments")?,
        v_normals: image(enc, 4, "loss/v_normals")?,
        losses: image(enc, 2, "loss/geometry_losses")?,
    };
    let params = geometry_loss::GeometryLossParams {
        width: w as u32,
        height: h as u32,
        normal_weight: options.normal_weight / pixels,
        distortion_weight: options.distortion_weight / (pixels * options.scale * options.scale),
        min_alpha: options.min_alpha,
        ..Default::default()
    };
    let kernel = enc.ctx().typed::<geometry_loss::GeometryLoss>()?;
    let grid = crate::ops::grid(enc, (h * w) as u64, kernel.threads())?;
    let bindings = geometry_loss::GeometryLossBindings {
        moments: moments.page_arg(0),
        normals: normals.page_arg(0),
        rays: rays.page_arg(0),
        v_moments: out.v_moments.page_arg(0),
        v_normals: out.v_normals.page_arg(0),
        losses: out.losses.page_arg(0),
    };
    enc.run(&kernel, &params, bindings, grid)?;
    Ok(out)
}

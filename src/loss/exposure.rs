//! Exposure compensation (INRIA's `--train_test_exp`): each training image gets a learned affine
//! colour transform, applied to the render before the loss, so that auto-exposure and white
//! balance differences between photographs are not baked into the Gaussians' colours.
//!
//! A transform is 12 floats, row-major 3×4: `out_c = Σ_k T[c][k]·rgb_k + T[c][3]`, the identity
//! at the start. The kernels (`shaders/exposure.wgsl`): [`record_apply`] (the forward),
//! [`record_backward`] (the render's gradient `Tᵀ·g` and `dL/dT = Σ_p g_p ⊗ [rgb_p, 1]`, summed
//! per workgroup and then by one workgroup in a fixed order: deterministic, no float atomics)
//! and [`record_adam`] (one Adam step of one view's 12 values with their own learning rate).
//! [`reference`] is the CPU twin the tests use.

pub mod reference;

use crate::error::{Error, Result};
use crate::gpu::kernels::exposure;
use crate::gpu::{Encoder, GpuContext, MemoryCategory, WorkgroupGrid};
use crate::tensor::{DType, Tensor};

/// Floats per transform.
pub const TERMS: usize = 12;
/// The identity transform.
pub const IDENTITY: [f32; TERMS] = [
    1.0, 0.0, 0.0, 0.0, //
    0.0, 1.0, 0.0, 0.0, //
    0.0, 0.0, 1.0, 0.0,
];
/// Pixels per workgroup of the per-pixel kernels (`WG * PIXELS_PER_LANE` in the WGSL).
const WORKGROUP: u64 = 256 * 8;

/// Adam's settings for the transforms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExposureAdam {
    /// Learning rate of this step.
    pub lr: f32,
    /// First-moment decay.
    pub beta1: f32,
    /// Second-moment decay.
    pub beta2: f32,
    /// Denominator epsilon.
    pub eps: f32,
}

impl ExposureAdam {
    /// Adam's usual decays with learning rate `lr`.
    pub fn with_lr(lr: f32) -> ExposureAdam {
        ExposureAdam {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-15,
        }
    }
}

fn check_image(op: &'static str, image: &Tensor) -> Result<u64> {
    image.expect_dtype(op, DType::F32)?;
    let shape = image.shape();
    if shape.len() != 3 || shape[2] != 4 {
        return Err(Error::InvalidArgument {
            op,
            detail: format!("the image must be [H, W, 4] f32, got shape {shape:?}"),
        });
    }
    if !image.page_elems().is_multiple_of(4) {
        return Err(Error::InvalidArgument {
            op,
            detail: "the image's pages must hold whole pixels (a multiple of 4 elements)".into(),
        });
    }
    Ok(image.len() / 4)
}

fn check_view(op: &'static str, transforms: &Tensor, view: usize) -> Result<()> {
    transforms.expect_dtype(op, DType::F32)?;
    let views = transforms.len() / TERMS as u64;
    if view as u64 >= views || transforms.num_pages() != 1 {
        return Err(Error::InvalidArgument {
            op,
            detail: format!(
                "view {view} is outside the {views} transforms (a one-page [views, 12] f32 tensor)"
            ),
        });
    }
    Ok(())
}

/// Pages of `image` as (page, pixels, first workgroup record).
fn pixel_pages(image: &Tensor) -> Vec<(usize, u64, u64)> {
    let mut record = 0;
    (0..image.num_pages())
        .map(|page| {
            let pixels = image.page_len(page) / 4;
            let first = record;
            record += pixels.div_ceil(WORKGROUP);
            (page, pixels, first)
        })
        .collect()
}

/// Records `T_view(image)` into a new `[H, W, 4]` tensor (alpha copied).
pub fn record_apply(
    enc: &mut Encoder,
    image: &Tensor,
    transforms: &Tensor,
    view: usize,
) -> Result<Tensor> {
    check_image("exposure apply", image)?;
    check_view("exposure apply", transforms, view)?;
    let out = Tensor::uninit(
        enc,
        DType::F32,
        image.shape(),
        MemoryCategory::FrameScratch,
        "exposure/exposed",
    )?;
    let kernel = enc.ctx().typed::<exposure::ExposureApply>()?;
    for (page, pixels, _) in pixel_pages(image) {
        let params = exposure::ExposureParams {
            pixels: pixels as u32,
            view: view as u32,
            ..Default::default()
        };
        let bindings = exposure::ExposureApplyBindings {
            image: image.page_arg(page),
            out: out.page_arg(page),
            transforms: transforms.page_arg(0),
        };
        let grid = crate::ops::grid(enc, pixels, WORKGROUP as u32)?;
        enc.run(&kernel, &params, bindings, grid)?;
    }
    Ok(out)
}

/// Records the backward pass of [`record_apply`]: from `d_out` (`dL/d exposed`, `[H, W, 4]`),
/// the render's gradient `[H, W, 4]` and `dL/dT` of the view (`[12]`).
pub fn record_backward(
    enc: &mut Encoder,
    image: &Tensor,
    d_out: &Tensor,
    transforms: &Tensor,
    view: usize,
) -> Result<(Tensor, Tensor)> {
    check_image("exposure backward", image)?;
    check_image("exposure backward", d_out)?;
    image.expect_same_layout("exposure backward", d_out)?;
    check_view("exposure backward", transforms, view)?;
    let pages = pixel_pages(image);
    let records_count = pages
        .last()
        .map_or(0, |&(_, pixels, first)| first + pixels.div_ceil(WORKGROUP));
    let d_image = Tensor::uninit(
        enc,
        DType::F32,
        image.shape(),
        MemoryCategory::FrameScratch,
        "exposure/d_image",
    )?;
    // Every record is written: one per workgroup of each page.
    let records = Tensor::uninit(
        enc,
        DType::F32,
        &[records_count.max(1) as usize, TERMS],
        MemoryCategory::FrameScratch,
        "exposure/records",
    )?;
    let kernel = enc.ctx().typed::<exposure::ExposureBackward>()?;
    for (page, pixels, first) in pages {
        let params = exposure::ExposureParams {
            pixels: pixels as u32,
            record0: first as u32,
            view: view as u32,
            ..Default::default()
        };
        let bindings = exposure::ExposureBackwardBindings {
            image: image.page_arg(page),
            d_out: d_out.page_arg(page),
            out: d_image.page_arg(page),
            transforms: transforms.page_arg(0),
            records: records.page_arg(0),
        };
        let grid = crate::ops::grid(enc, pixels, WORKGROUP as u32)?;
        enc.run(&kernel, &params, bindings, grid)?;
    }
    let gradient = Tensor::uninit(
        enc,
        DType::F32,
        &[TERMS],
        MemoryCategory::FrameScratch,
        "exposure/gradient",
    )?;
    let sum = enc.ctx().typed::<exposure::ExposureSum>()?;
    let params = exposure::ExposureParams {
        record0: records_count as u32,
        ..Default::default()
    };
    let bindings = exposure::ExposureSumBindings {
        records: records.page_arg(0),
        gradient: gradient.page_arg(0),
    };
    enc.run(&sum, &params, bindings, WorkgroupGrid { x: 1, y: 1 })?;
    Ok((d_image, gradient))
}

/// Records one Adam step of view `view`'s transform from `gradient` (`[12]`), with `moments`
/// (`[views, 24]`: m then v) and `step` the view's step count including this one (≥ 1).
pub fn record_adam(
    enc: &mut Encoder,
    transforms: &Tensor,
    moments: &Tensor,
    gradient: &Tensor,
    view: usize,
    step: u64,
    settings: ExposureAdam,
) -> Result<()> {
    check_view("exposure Adam", transforms, view)?;
    moments.expect_dtype("exposure Adam", DType::F32)?;
    if moments.len() != 2 * transforms.len() || step == 0 {
        return Err(Error::InvalidArgument {
            op: "exposure Adam",
            detail: format!(
                "moments must be [views, 24] beside [views, 12] transforms (got {} and {} floats) and the step >= 1 (got {step})",
                moments.len(),
                transforms.len()
            ),
        });
    }
    let t = step.min(i32::MAX as u64) as i32;
    let params = exposure::ExposureParams {
        view: view as u32,
        bias1: 1.0 - settings.beta1.powi(t),
        bias2: 1.0 - settings.beta2.powi(t),
        lr: settings.lr,
        beta1: settings.beta1,
        beta2: settings.beta2,
        eps: settings.eps,
        ..Default::default()
    };
    let kernel = enc.ctx().typed::<exposure::ExposureAdam>()?;
    let bindings = exposure::ExposureAdamBindings {
        gradient: gradient.page_arg(0),
        moments: moments.page_arg(0),
        transforms: transforms.page_arg(0),
    };
    enc.run(&kernel, &params, bindings, WorkgroupGrid { x: 1, y: 1 })
}

/// The learned transforms of every training view, with their Adam state.
pub struct ExposureState {
    /// `[views, 12]` transforms.
    pub transforms: Tensor,
    /// `[views, 24]` Adam moments (m, then v).
    pub moments: Tensor,
    /// Adam steps taken per view.
    pub steps: Vec<u64>,
}

impl ExposureState {
    /// Identity transforms for `views` views, moments zero.
    pub fn identity(enc: &mut Encoder, views: usize) -> Result<ExposureState> {
        let transforms: Vec<f32> = (0..views).flat_map(|_| IDENTITY).collect();
        Self::from_host(
            enc,
            &transforms,
            &vec![0.0; views * 2 * TERMS],
            vec![0; views],
        )
    }

    /// A state from host values (a checkpoint's).
    pub fn from_host(
        enc: &mut Encoder,
        transforms: &[f32],
        moments: &[f32],
        steps: Vec<u64>,
    ) -> Result<ExposureState> {
        let views = steps.len();
        if transforms.len() != views * TERMS || moments.len() != views * 2 * TERMS || views == 0 {
            return Err(Error::InvalidArgument {
                op: "exposure state",
                detail: format!(
                    "{views} views need {} transform and {} moment floats, got {} and {}",
                    views * TERMS,
                    views * 2 * TERMS,
                    transforms.len(),
                    moments.len()
                ),
            });
        }
        Ok(ExposureState {
            transforms: Tensor::from_slice(
                enc,
                transforms,
                &[views, TERMS],
                MemoryCategory::OptimizerState,
                "exposure/transforms",
            )?,
            moments: Tensor::from_slice(
                enc,
                moments,
                &[views, 2 * TERMS],
                MemoryCategory::OptimizerState,
                "exposure/moments",
            )?,
            steps,
        })
    }

    /// Records the backward pass of view `view`'s transform and one Adam step of it at learning
    /// rate `lr`; returns the render's gradient (see [`record_backward`]).
    pub fn record_step(
        &mut self,
        enc: &mut Encoder,
        image: &Tensor,
        d_out: &Tensor,
        view: usize,
        lr: f32,
    ) -> Result<Tensor> {
        let (d_image, d_transform) = record_backward(enc, image, d_out, &self.transforms, view)?;
        let views = self.steps.len();
        let step = self
            .steps
            .get_mut(view)
            .ok_or_else(|| Error::InvalidArgument {
                op: "exposure step",
                detail: format!("view {view} is outside the {views} transforms"),
            })?;
        *step += 1;
        let settings = ExposureAdam::with_lr(lr);
        record_adam(
            enc,
            &self.transforms,
            &self.moments,
            &d_transform,
            view,
            *step,
            settings,
        )?;
        Ok(d_image)
    }

    /// Reads the transforms and moments back.
    pub fn read(&self, ctx: &GpuContext) -> Result<(Vec<f32>, Vec<f32>)> {
        Ok((self.transforms.read(ctx)?, self.moments.read(ctx)?))
    }
}

//! Layer 3: the training loss `(1 - λ)·L1 + λ·(1 - SSIM)` with its gradient, and image metrics
//! (PSNR, SSIM, MSE, L1), as fused WGSL kernels. [`reference`](mod@reference) is the CPU twin
//! the tests use.
//!
//! # Definitions
//! Images are `[H, W, 4]` f32 tensors (RGB + alpha); only RGB enters the loss. The ground truth
//! is either f32 `[H, W, 4]` or 8-bit RGBA packed one pixel per u32 (`[H, W]` U32, red in the
//! low byte, decoded as `byte / 255`; sRGB values are used as they are).
//! - **Ground truth colour**: with [`LossOptions::background`] set, `gt = a·rgb + (1 - a)·bg`
//!   with `a` the ground-truth alpha; otherwise the ground-truth alpha is ignored.
//! - **SSIM** is the 3DGS definition: 11×11 Gaussian window (σ = 1.5, normalised), C1 = 0.01²,
//!   C2 = 0.03², each RGB channel separately, population (co)variances. With
//!   [`SsimPadding::Same`] the map is computed at every pixel with zeros outside the image; with
//!   [`SsimPadding::Valid`] only at positions whose window lies inside the image (the mean
//!   scikit-image reports). SSIM is the mean of the map over counted positions and channels.
//! - **Mask** ([`LossOptions::mask_by_alpha`]): every pixel `p` gets the weight `w_p` = its
//!   ground-truth alpha (else 1), and both images are multiplied by it before anything else
//!   (`x' = w·x`, `y' = w·y`, as gsplat masks), so a masked pixel (w = 0) adds nothing to any
//!   term, to its neighbours' SSIM windows or to the gradient, whatever its colour. The means
//!   are weighted: `L1 = Σ_p Σ_c |x' - y'| / (3 Σ_p w_p)`, MSE likewise with squares, and
//!   `SSIM = Σ_q w_q Σ_c ssim_c(q) / (3 Σ_q w_q)` over counted positions `q`. If a weight sum is
//!   zero, L1 = MSE = 0 and SSIM = 1 (loss 0, gradient 0).
//! - **Gradient**: `dLoss/dRendered`, `[H, W, 4]` with 0 in alpha. The L1 part is
//!   `(1 - λ)·w_p·sign(x' - y') / (3 Σ w)` (sign(0) = 0); the whole gradient of a pixel is
//!   multiplied by its `w_p`.
//!
//! # Design note: kernels and intermediates
//! Workgroups are (16×16 output tile, channel). The forward kernel stages the tile plus a
//! 5-pixel halo of both images in workgroup memory, filters the five moments (μx, μy, E(x²),
//! E(y²), E(xy)) with the separable Gaussian (rows, then columns) and writes one record of
//! partial sums per workgroup. The gradient of the mean SSIM is
//! `dS/dx_p = G ⋆ A + 2·x_p·(G ⋆ B) + y_p·(G ⋆ C)` with per-position coefficients
//! `A = s·(∂m/∂μx - 2μx·∂m/∂σx² - μy·∂m/∂σxy)`, `B = s·∂m/∂σx²`, `C = s·∂m/∂σxy`, where
//! `m` is the SSIM map at position q, the partials hold the other statistics fixed and `s` is
//! the position's weight in the mean (`G ⋆` is the Gaussian filter; the window is symmetric).
//! The usual approach stores A, B, C per pixel and channel in the forward (9 f32 = 36 B per
//! pixel, ~300 MB at 4K) and filters them in a backward kernel. Here the backward is *one*
//! fused kernel that also produces the loss: each workgroup recomputes the statistics at the
//! 42×26 positions around its 32×16 tile (from the images on 52×36, halo 10), derives A, B, C
//! there in workgroup memory and filters them for its pixels. SSIM needs the two variances only
//! through their sum, so four moments per position (`E[x]`, `E[y]`, `E[x²] + E[y²]`, `E[xy]`)
//! fill one `vec4`. Every separable filter pass is a
//! walk with an 11-tap sliding window in registers, one invocation per row or column
//! (`shaders/shared/window11.wgsl`), so each value is loaded once per pass rather than once per
//! tap (on lavapipe every varying-address load is a loop over the lanes: 59–77 → 35–38 ms per
//! training iteration on duck_colmap at 256²). That costs about 3× the
//! arithmetic of the forward kernel (3× its time on lavapipe) instead of writing and reading
//! 36 B per pixel, and materialises **no per-pixel intermediate** except
//! the gradient itself: scratch is 16 bytes per workgroup of partial sums (≈0.19 B per pixel),
//! 16 bytes of normalisers and the 16-byte result, plus band buffers for multi-page tensors.
//! The fused kernel uses 24,208 bytes of workgroup memory (its passes share one array).
//!
//! Values are shifted by the tile-centre pixel before the moments are taken (variance is
//! shift-invariant), so `E[x²] - μ²` does not cancel catastrophically in f32 on flat regions.
//! Records are reduced by one workgroup (`loss_finalize.wgsl`): no float atomics, no
//! subgroups, deterministic, no CPU readback. Images whose tensors span several pages are
//! processed in row bands (see `bands.rs`); single-page tensors (up to 4K RGBA f32 under a
//! 128 MiB binding) are bound directly. There is no subgroup variant: the kernels are bound by
//! workgroup-memory filtering, which subgroups would not shorten.

mod bands;
pub mod exposure;
pub mod geometry;
pub mod geometry_reference;
mod kernels;
pub mod lpips;
pub mod reference;

use crate::error::{Error, Result};
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::tensor::{DType, Tensor};
use kernels::{Images, Pass};

/// Where the SSIM map is evaluated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SsimPadding {
    /// At every pixel, zeros outside the image (3DGS, fused-ssim).
    #[default]
    Same,
    /// Only where the 11×11 window lies inside the image (needs H, W >= 11).
    Valid,
}

/// Options of the loss and the metrics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossOptions {
    /// λ, the weight of `1 - SSIM` (in [0, 1]; 0.2 by default).
    pub ssim_weight: f32,
    /// Where the SSIM map is evaluated.
    pub padding: SsimPadding,
    /// Composite the ground truth on this RGB background using its alpha.
    pub background: Option<[f32; 3]>,
    /// Weight every pixel's terms by the ground-truth alpha (module docs).
    pub mask_by_alpha: bool,
}

impl Default for LossOptions {
    fn default() -> Self {
        LossOptions {
            ssim_weight: 0.2,
            padding: SsimPadding::Same,
            background: None,
            mask_by_alpha: false,
        }
    }
}

/// What [`loss_and_grad`] returns. All tensors are GPU tensors; nothing was read back.
#[derive(Debug)]
pub struct LossOutput {
    /// The loss, a 1-element view of `stats`.
    pub loss: Tensor,
    /// `[loss, L1 mean, SSIM mean, MSE]`.
    pub stats: Tensor,
    /// dLoss/dRendered, `[H, W, 4]` f32 (alpha channel 0), paged like a fresh `[H, W, 4]` tensor.
    pub grad: Tensor,
}

/// Image quality figures from [`evaluate_metrics`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImageMetrics {
    /// `10·log10(1 / MSE)` (images in [0, 1]); infinite for identical images.
    pub psnr: f64,
    /// Mean SSIM.
    pub ssim: f64,
    /// Mean squared error over RGB.
    pub mse: f64,
    /// Mean absolute error over RGB.
    pub l1: f64,
}

fn check(
    rendered: &Tensor,
    gt: &Tensor,
    options: &LossOptions,
    op: &'static str,
) -> Result<(u64, u64)> {
    rendered.expect_dtype(op, DType::F32)?;
    let (height, width) = match rendered.shape() {
        &[h, w, 4] if h > 0 && w > 0 => (h as u64, w as u64),
        shape => {
            return Err(Error::Shape {
                op,
                detail: format!(
                    "the rendered image must be [H, W, 4] with H, W > 0, got {shape:?}"
                ),
            });
        }
    };
    let gt_ok = match (gt.dtype(), gt.shape()) {
        (DType::F32, &[h, w, 4]) | (DType::U32, &[h, w] | &[h, w, 1]) => {
            (h as u64, w as u64) == (height, width)
        }
        _ => false,
    };
    if !gt_ok {
        return Err(Error::Shape {
            op,
            detail: format!(
                "ground truth must be f32 [{height}, {width}, 4] or packed RGBA8 u32 [{height}, {width}], got {:?} {:?}",
                gt.dtype(),
                gt.shape()
            ),
        });
    }
    if !(0.0..=1.0).contains(&options.ssim_weight) {
        return Err(Error::InvalidArgument {
            op,
            detail: format!("ssim_weight must be in [0, 1], got {}", options.ssim_weight),
        });
    }
    if options
        .background
        .is_some_and(|bg| bg.iter().any(|v| !v.is_finite()))
    {
        return Err(Error::InvalidArgument {
            op,
            detail: format!("background must be finite, got {:?}", options.background),
        });
    }
    let window = 2 * kernels::RADIUS + 1;
    if options.padding == SsimPadding::Valid && (width < window || height < window) {
        return Err(Error::InvalidArgument {
            op,
            detail: format!(
                "valid padding needs images of at least {window}x{window}, got {width}x{height}"
            ),
        });
    }
    let max_side = u64::from(u32::MAX >> 4);
    if width > max_side || height > max_side {
        return Err(Error::Overflow {
            what: format!("a {width}x{height} image"),
            needed: width.max(height),
            max: max_side,
            hint: "use a smaller image".into(),
        });
    }
    Ok((height, width))
}

/// Records the loss and its gradient: one fused kernel pass (per row band) and a one-workgroup
/// reduction. Returns GPU tensors; read `stats` or `loss` when you need the value.
pub fn loss_and_grad(
    enc: &mut Encoder,
    rendered: &Tensor,
    gt: &Tensor,
    options: &LossOptions,
) -> Result<LossOutput> {
    let (height, width) = check(rendered, gt, options, "loss_and_grad")?;
    let available = enc.ctx().info().limits.max_compute_workgroup_storage_size;
    if available < kernels::BACKWARD_WORKGROUP_BYTES {
        return Err(Error::Overflow {
            what: "workgroup memory of the fused SSIM backward kernel".into(),
            needed: u64::from(kernels::BACKWARD_WORKGROUP_BYTES),
            max: u64::from(available),
            hint: "this adapter offers too little workgroup memory for the loss gradient".into(),
        });
    }
    let images = Images {
        rendered,
        gt,
        width,
        height,
        options,
        clamp_rendered: false,
    };
    let grad = Tensor::uninit(
        enc,
        DType::F32,
        &[height as usize, width as usize, 4],
        MemoryCategory::FrameScratch,
        "loss/grad",
    )?;
    let stats = tiled_stats(enc, &images, Pass::Backward, Some(&grad))?;
    Ok(LossOutput {
        loss: stats.prefix(1)?,
        stats,
        grad,
    })
}

/// The normalisers, one tiled pass (writing `grad` on the backward pass) and the reduction into
/// `[loss, L1 mean, SSIM mean, MSE]`.
fn tiled_stats(
    enc: &mut Encoder,
    images: &Images<'_>,
    pass: Pass,
    grad: Option<&Tensor>,
) -> Result<Tensor> {
    let norm = kernels::normalisers(enc, images)?;
    // Only the backward kernel reads the normalisers; the forward one is reduced by `finalize`.
    let pass_norm = (pass == Pass::Backward).then_some(&norm);
    let (records, count) = kernels::tiled_pass(enc, images, pass, pass_norm, grad)?;
    let stats = Tensor::uninit(
        enc,
        DType::F32,
        &[4],
        MemoryCategory::FrameScratch,
        "loss/stats",
    )?;
    kernels::finalize(
        enc,
        &records,
        count,
        Some(&norm),
        images.options.ssim_weight,
        stats.page(0),
    )?;
    Ok(stats)
}

/// Records the loss without the gradient; returns `[loss, L1 mean, SSIM mean, MSE]` on the GPU.
pub fn loss_stats(
    enc: &mut Encoder,
    rendered: &Tensor,
    gt: &Tensor,
    options: &LossOptions,
) -> Result<Tensor> {
    stats_of(enc, rendered, gt, options, false)
}

fn stats_of(
    enc: &mut Encoder,
    rendered: &Tensor,
    gt: &Tensor,
    options: &LossOptions,
    clamp_rendered: bool,
) -> Result<Tensor> {
    let (height, width) = check(rendered, gt, options, "loss_stats")?;
    let images = Images {
        rendered,
        gt,
        width,
        height,
        options,
        clamp_rendered,
    };
    let stats = tiled_stats(enc, &images, Pass::Forward, None)?;
    Ok(stats)
}

/// Records the image metrics of `rendered` against `gt` (same options as the loss; λ is unused)
/// without reading them back: a 4-element tensor `[loss, L1, SSIM, MSE]` for
/// [`ImageMetrics::from_stats`]. As gsplat and INRIA score, the rendered values are clamped to
/// [0, 1] first (a render may exceed 1 where splats overlap).
pub fn record_metrics(
    enc: &mut Encoder,
    rendered: &Tensor,
    gt: &Tensor,
    options: &LossOptions,
) -> Result<Tensor> {
    stats_of(enc, rendered, gt, options, true)
}

impl ImageMetrics {
    /// The metrics from the values [`record_metrics`] recorded.
    pub fn from_stats(values: &[f32]) -> Result<Self> {
        let &[_, l1, ssim, mse] = values else {
            return Err(Error::Readback {
                label: "loss/stats".into(),
                message: format!("expected 4 values, got {}", values.len()),
            });
        };
        let mse = f64::from(mse);
        let psnr = if mse > 0.0 {
            -10.0 * mse.log10()
        } else {
            f64::INFINITY
        };
        Ok(ImageMetrics {
            psnr,
            ssim: f64::from(ssim),
            mse,
            l1: f64::from(l1),
        })
    }
}

/// PSNR, SSIM, MSE and L1 of `rendered` against `gt` (see [`record_metrics`]), with one
/// readback (blocking).
pub fn evaluate_metrics(
    ctx: &GpuContext,
    rendered: &Tensor,
    gt: &Tensor,
    options: &LossOptions,
) -> Result<ImageMetrics> {
    let mut enc = ctx.encoder("evaluate_metrics");
    let stats = record_metrics(&mut enc, rendered, gt, options)?;
    let pending = stats.record_read(&mut enc)?;
    ctx.submit(enc)?;
    ImageMetrics::from_stats(&pending.wait::<f32>(ctx)?)
}

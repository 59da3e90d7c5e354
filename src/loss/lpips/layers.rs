//! Recording of the LPIPS layers: the uniform parameters of the four kernels (mirrors of their
//! WGSL structs), the input layer, one convolution with its ReLU, and the max-pooling.

use super::{CONV_CHANNELS, GpuConv, GpuFeatureMap, Lpips, LpipsImage, MIN_IMAGE_SIDE};
use crate::error::{Error, Result};
use crate::gpu::{Encoder, MemoryCategory, WorkgroupGrid};
use crate::mirror;
use crate::tensor::{DType, Tensor};

pub(super) const PREPARE: &str = "lpips_prepare.wgsl";
pub(super) const CONV: &str = "lpips_conv.wgsl";
pub(super) const POOL: &str = "lpips_pool.wgsl";
pub(super) const DISTANCE: &str = "lpips_distance.wgsl";

/// Output pixels per convolution workgroup (`CONV_PIXELS` in shaders/shared/lpips.wgsl).
const CONV_PIXELS: u64 = 64;
const FLAG_RGBA8: u32 = 1;
const FLAG_COMPOSITE: u32 = 2;
const FLAG_MASK: u32 = 4;

/// Uniform parameters of `lpips_prepare.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct PrepareParams {
    width: u32,
    height: u32,
    flags: u32,
    _pad0: u32,
    background: [f32; 4],
}

/// Uniform parameters of `lpips_conv.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct ConvParams {
    in_channels: u32,
    in_height: u32,
    in_width: u32,
    kernel_size: u32,
    out_channels: u32,
    out_height: u32,
    out_width: u32,
    stride: u32,
    padding: u32,
    pixel_blocks: u32,
    _pad0: u32,
    _pad1: u32,
}

/// Uniform parameters of `lpips_pool.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct PoolParams {
    channels: u32,
    in_height: u32,
    in_width: u32,
    out_height: u32,
    out_width: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

/// Uniform parameters of `lpips_distance.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct DistanceParams {
    pub(super) channels: u32,
    pub(super) pixels: u32,
    pub(super) out_offset: u32,
    pub(super) scale: f32,
}

pub(crate) fn mirrors() -> Vec<crate::gpu::mirror::Mirror> {
    vec![
        mirror!(
            PrepareParams,
            PREPARE,
            "PrepareParams",
            [width, height, flags, _pad0, background]
        ),
        mirror!(
            ConvParams,
            CONV,
            "ConvParams",
            [
                in_channels,
                in_height,
                in_width,
                kernel_size,
                out_channels,
                out_height,
                out_width,
                stride,
                padding,
                pixel_blocks,
                _pad0,
                _pad1
            ]
        ),
        mirror!(
            PoolParams,
            POOL,
            "PoolParams",
            [
                channels, in_height, in_width, out_height, out_width, _pad0, _pad1, _pad2
            ]
        ),
        mirror!(
            DistanceParams,
            DISTANCE,
            "DistanceParams",
            [channels, pixels, out_offset, scale]
        ),
    ]
}

pub(super) fn single_page<'a>(t: &'a Tensor, what: &str) -> Result<wgpu::BufferBinding<'a>> {
    if t.num_pages() != 1 {
        return Err(Error::Overflow {
            what: format!("LPIPS {what}"),
            needed: t.len() * t.dtype().size(),
            max: t.page_elems() * t.dtype().size(),
            hint: "LPIPS binds each feature map whole; evaluate at a lower resolution (-r 2)"
                .into(),
        });
    }
    Ok(t.page_binding(0))
}

impl Lpips {
    /// Records the network input for `image` (`lpips_prepare.wgsl`): `[3, H, W]`.
    pub fn prepare(&self, enc: &mut Encoder, input: LpipsImage<'_>) -> Result<GpuFeatureMap> {
        let t = input.image;
        let (height, width, mut flags) = match (t.dtype(), t.shape()) {
            (DType::F32, &[h, w, 4]) => (h, w, 0),
            (DType::U32, &[h, w]) => (h, w, FLAG_RGBA8),
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
            flags |= FLAG_COMPOSITE;
            background[..3].copy_from_slice(&bg);
        }
        let image = single_page(t, "input image")?;
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
                flags |= FLAG_MASK;
                single_page(mask, "mask")?
            }
            None => image.clone(),
        };
        let out = Tensor::uninit(
            enc,
            DType::F32,
            &[3, height, width],
            MemoryCategory::FrameScratch,
            "lpips/input",
        )?;
        let kernel = enc.ctx().kernel(PREPARE, "prepare")?;
        let params = PrepareParams {
            width: w32,
            height: h32,
            flags,
            _pad0: 0,
            background,
        };
        let grid = crate::ops::grid(enc, (width * height) as u64, kernel.threads())?;
        enc.dispatch(
            &kernel,
            &params,
            &[image, single_page(&out, "input layer")?, mask],
            grid,
        )?;
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
        let pixel_blocks = (u64::from(oh) * u64::from(ow)).div_ceil(CONV_PIXELS);
        let groups = u64::from(s.out_channels / CONV_CHANNELS);
        let params = ConvParams {
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
        let kernel = enc.ctx().kernel(CONV, "conv")?;
        let grid = WorkgroupGrid::for_workgroups(
            pixel_blocks * groups,
            enc.ctx().max_workgroups_per_dimension(),
        )?;
        enc.dispatch(
            &kernel,
            &params,
            &[
                single_page(&x.tensor, "feature map")?,
                single_page(&layer.weights, "kernel")?,
                single_page(&layer.bias, "bias")?,
                single_page(&out, "feature map")?,
            ],
            grid,
        )?;
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
        let params = PoolParams {
            channels: x.channels,
            in_height: x.height,
            in_width: x.width,
            out_height: oh,
            out_width: ow,
            ..Default::default()
        };
        let kernel = enc.ctx().kernel(POOL, "max_pool")?;
        let grid = crate::ops::grid(enc, out.len(), kernel.threads())?;
        enc.dispatch(
            &kernel,
            &params,
            &[
                single_page(&x.tensor, "feature map")?,
                single_page(&out, "pooled map")?,
            ],
            grid,
        )?;
        Ok(GpuFeatureMap {
            tensor: out,
            channels: x.channels,
            height: oh,
            width: ow,
        })
    }
}

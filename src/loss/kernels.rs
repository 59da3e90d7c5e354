//! Recording of the loss kernels: the tiled passes over row bands (shaders/ssim_forward.wgsl,
//! shaders/ssim_backward.wgsl, shaders/loss_weights.wgsl) and the one-workgroup reduction of
//! their records (shaders/loss_finalize.wgsl).

use super::bands::{self, RowWindow, TILE};
use super::{LossOptions, SsimPadding};
use crate::error::{Error, Result};
use crate::gpu::kernels::{
    Arg, KernelSpec, loss_finalize, loss_weights, shared_ssim, ssim_backward, ssim_forward,
};
use crate::gpu::{Encoder, GpuBuffer, MemoryCategory, WorkgroupGrid};
use crate::tensor::{DType, Tensor};

/// Gaussian window radius: outputs read inputs up to this many pixels away.
pub(crate) const RADIUS: u64 = shared_ssim::RADIUS as u64;
/// Bytes of one record (four f32 partial sums) per workgroup.
const RECORD_BYTES: u64 = 16;
/// Workgroup memory the fused backward kernel declares: `MOMENTS` vec4.
pub(crate) const BACKWARD_WORKGROUP_BYTES: u32 = ssim_backward::MOMENTS * 16;
/// Output columns of a tile of the fused backward kernel; the other passes' tiles are [`TILE`]
/// square.
const BACKWARD_TILE_WIDTH: u64 = ssim_backward::TILE_WIDTH as u64;

/// Which tiled pass to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Loss/metric partial sums only (halo 5).
    Forward,
    /// Partial sums and the gradient (halo 10).
    Backward,
    /// Weight sums of the alpha mask (no halo, one workgroup per tile instead of per channel).
    Weights,
}

impl Pass {
    fn halo(self) -> u64 {
        match self {
            Pass::Forward => RADIUS,
            Pass::Backward => 2 * RADIUS,
            Pass::Weights => 0,
        }
    }

    fn workgroups_per_tile(self) -> u64 {
        if self == Pass::Weights { 1 } else { 3 }
    }

    /// Output columns of one tile (every pass's tiles are [`TILE`] rows tall).
    fn tile_width(self) -> u64 {
        if self == Pass::Backward {
            BACKWARD_TILE_WIDTH
        } else {
            TILE
        }
    }
}

/// A validated pair of images and the options, as the kernels see them.
pub(crate) struct Images<'a> {
    pub(crate) rendered: &'a Tensor,
    pub(crate) gt: &'a Tensor,
    pub(crate) width: u64,
    pub(crate) height: u64,
    pub(crate) options: &'a LossOptions,
    /// Clamp the rendered values to [0, 1] before comparing (scores; the forward kernel only).
    pub(crate) clamp_rendered: bool,
}

impl Images<'_> {
    fn gt_row_elems(&self) -> u64 {
        if self.gt.dtype() == DType::U32 {
            self.width
        } else {
            4 * self.width
        }
    }

    /// Tiles across the image in `pass`.
    fn tiles_x(&self, pass: Pass) -> u64 {
        self.width.div_ceil(pass.tile_width())
    }

    /// Records a tiled pass writes: one per workgroup.
    pub(crate) fn record_count(&self, pass: Pass) -> u64 {
        self.tiles_x(pass) * self.height.div_ceil(TILE) * pass.workgroups_per_tile()
    }

    /// The loss kernels' specialisation for these images and options.
    fn overrides(&self) -> shared_ssim::Overrides {
        let o = self.options;
        shared_ssim::Overrides {
            gt_packed: self.gt.dtype() == DType::U32,
            composite: o.background.is_some(),
            mask: o.mask_by_alpha,
            valid_padding: o.padding == SsimPadding::Valid,
            clamp_rendered: self.clamp_rendered,
        }
    }

    /// Counted SSIM positions without a mask.
    pub(crate) fn position_count(&self) -> u64 {
        match self.options.padding {
            SsimPadding::Same => self.width * self.height,
            SsimPadding::Valid => {
                self.width.saturating_sub(2 * RADIUS) * self.height.saturating_sub(2 * RADIUS)
            }
        }
    }
}

fn alloc_records(enc: &mut Encoder, count: u64) -> Result<GpuBuffer> {
    let bytes = count * RECORD_BYTES;
    let limit = enc.ctx().info().limits.max_storage_buffer_binding_size;
    if bytes > limit {
        return Err(Error::Overflow {
            what: "loss partial sums".into(),
            needed: bytes,
            max: limit,
            hint: "use a smaller image".into(),
        });
    }
    enc.alloc(bytes, MemoryCategory::FrameScratch, "loss/records")
}

/// Records one tiled pass over all bands; returns the records buffer and its record count.
pub(crate) fn tiled_pass(
    enc: &mut Encoder,
    images: &Images<'_>,
    pass: Pass,
    norm: Option<&GpuBuffer>,
    grad: Option<&Tensor>,
) -> Result<(GpuBuffer, u64)> {
    if pass == Pass::Backward && (norm.is_none() || grad.is_none()) {
        return Err(Error::InvalidArgument {
            op: "loss backward",
            detail: "needs the normalisers and a gradient tensor".into(),
        });
    }
    let (width, height) = (images.width, images.height);
    let halo = pass.halo();
    let mut staged_row_bytes: Option<u64> = None;
    let mut note = |tensor: &Tensor, row_elems: u64| {
        if tensor.num_pages() > 1 {
            staged_row_bytes = Some(staged_row_bytes.unwrap_or(0).max(row_elems * 4));
        }
    };
    if pass != Pass::Weights {
        note(images.rendered, 4 * width);
    }
    note(images.gt, images.gt_row_elems());
    if let Some(g) = grad {
        note(g, 4 * width);
    }
    let band = bands::band_rows(enc.ctx(), height, halo, staged_row_bytes)?;
    let max_rows = band + 2 * halo;
    let x_window = match pass {
        Pass::Weights => None,
        _ => Some(RowWindow::new(
            enc,
            images.rendered,
            4 * width,
            max_rows,
            "loss/rendered band",
        )?),
    };
    let y_window = RowWindow::new(
        enc,
        images.gt,
        images.gt_row_elems(),
        max_rows,
        "loss/gt band",
    )?;
    let out_window = match grad {
        Some(g) => Some(RowWindow::new(enc, g, 4 * width, band, "loss/grad band")?),
        None => None,
    };
    let count = images.record_count(pass);
    let records = alloc_records(enc, count)?;
    let windows = Windows {
        x: x_window.as_ref(),
        y: &y_window,
        out: None,
    };
    let records_arg = || Arg::raw(records.raw());
    // The kernels read the ground truth as words (packed RGBA8, or the bits of f32 RGBA).
    let gt_arg = || Arg::Raw(y_window.binding());
    match (pass, &x_window, norm, &out_window, grad) {
        (Pass::Weights, ..) => {
            run_bands::<loss_weights::LossWeights>(enc, images, pass, band, &windows, || {
                loss_weights::LossWeightsBindings {
                    gt: gt_arg(),
                    records: records_arg(),
                }
            })?
        }
        (Pass::Forward, Some(x), ..) => {
            run_bands::<ssim_forward::SsimForward>(enc, images, pass, band, &windows, || {
                ssim_forward::SsimForwardBindings {
                    rendered: Arg::Typed(x.binding(), images.rendered.dtype()),
                    gt: gt_arg(),
                    records: records_arg(),
                }
            })?
        }
        (Pass::Backward, Some(x), Some(norm), Some(out), Some(grad)) => {
            run_bands::<ssim_backward::SsimLossBackward>(
                enc,
                images,
                pass,
                band,
                &Windows {
                    out: Some(out),
                    ..windows
                },
                || ssim_backward::SsimLossBackwardBindings {
                    rendered: Arg::Typed(x.binding(), images.rendered.dtype()),
                    gt: gt_arg(),
                    norm: Arg::raw(norm.raw()),
                    grad: Arg::Typed(out.binding(), grad.dtype()),
                    records: records_arg(),
                },
            )?
        }
        _ => {
            return Err(crate::error::Error::InvalidArgument {
                op: "loss",
                detail: format!(
                    "the {pass:?} pass needs the rendered image, and the backward pass also its normalisers and gradient"
                ),
            });
        }
    }
    Ok((records, count))
}

/// The row windows of a tiled pass: the rendered image (not read by the weights pass), the
/// ground truth, and the gradient (written by the backward pass only).
#[derive(Clone, Copy)]
struct Windows<'w> {
    x: Option<&'w RowWindow<'w>>,
    y: &'w RowWindow<'w>,
    out: Option<&'w RowWindow<'w>>,
}

/// Records `K` once per band of at most `band` rows: loads the band's rows into the windows,
/// dispatches one workgroup per record with `bindings()`, and copies the gradient rows back.
fn run_bands<
    'w,
    K: KernelSpec<Params = shared_ssim::LossParams, Overrides = shared_ssim::Overrides>,
>(
    enc: &mut Encoder,
    images: &Images<'_>,
    pass: Pass,
    band: u64,
    windows: &Windows<'_>,
    bindings: impl Fn() -> K::Bindings<'w>,
) -> Result<()> {
    let (width, height) = (images.width, images.height);
    let halo = pass.halo();
    let kernel = enc.ctx().typed_with::<K>(&images.overrides())?;
    let background = images.options.background.unwrap_or([0.0; 3]);
    let mut record0 = 0u64;
    let mut first = 0u64;
    while first < height {
        let end = (first + band).min(height);
        let (read_first, read_end) = (first.saturating_sub(halo), (end + halo).min(height));
        let x_row0 = windows.x.map_or(0, |w| w.load(enc, read_first, read_end));
        let y_row0 = windows.y.load(enc, read_first, read_end);
        let params = shared_ssim::LossParams {
            width: width as u32,
            height: height as u32,
            band_row0: first as u32,
            band_rows: (end - first) as u32,
            x_row0,
            y_row0,
            out_row0: windows.out.map_or(0, |w| w.output_row0(first)),
            record0: record0 as u32,
            tiles_x: images.tiles_x(pass) as u32,
            ssim_weight: images.options.ssim_weight,
            _pad0: 0,
            _pad1: 0,
            background: [background[0], background[1], background[2], 0.0],
        };
        let workgroups =
            images.tiles_x(pass) * (end - first).div_ceil(TILE) * pass.workgroups_per_tile();
        let grid = crate::ops::grid(enc, workgroups, 1)?;
        enc.run(&kernel, &params, bindings(), grid)?;
        if let Some(out) = windows.out {
            out.store(enc, first, end);
        }
        record0 += workgroups;
        first = end;
    }
    Ok(())
}

/// Records the reduction of `count` records into `out` (4 f32): column sums, or with `norm`
/// the loss statistics (loss, L1 mean, SSIM mean, MSE).
pub(crate) fn finalize(
    enc: &mut Encoder,
    records: &GpuBuffer,
    count: u64,
    norm: Option<&GpuBuffer>,
    ssim_weight: f32,
    out: &GpuBuffer,
) -> Result<()> {
    let params = loss_finalize::FinalizeParams {
        count: count as u32,
        ssim_weight,
        ..Default::default()
    };
    let out_binding = wgpu::BufferBinding {
        buffer: out.raw(),
        offset: 0,
        size: std::num::NonZeroU64::new(16),
    };
    let one = WorkgroupGrid { x: 1, y: 1 };
    match norm {
        Some(norm) => {
            let kernel = enc.ctx().typed::<loss_finalize::FinalizeLoss>()?;
            let bindings = loss_finalize::FinalizeLossBindings {
                records: Arg::raw(records.raw()),
                out: out_binding.into(),
                norm: Arg::raw(norm.raw()),
            };
            enc.run(&kernel, &params, bindings, one)
        }
        None => {
            let kernel = enc.ctx().typed::<loss_finalize::FinalizeSums>()?;
            let bindings = loss_finalize::FinalizeSumsBindings {
                records: Arg::raw(records.raw()),
                out: out_binding.into(),
            };
            enc.run(&kernel, &params, bindings, one)
        }
    }
}

/// The normalisers (W_l1, W_ssim, 0, 0) as a 4-f32 GPU buffer: pixel and position counts
/// uploaded from the CPU, or with an alpha mask, the GPU sums of the ground-truth alpha.
pub(crate) fn normalisers(enc: &mut Encoder, images: &Images<'_>) -> Result<GpuBuffer> {
    let norm = enc.alloc(16, MemoryCategory::FrameScratch, "loss/normalisers")?;
    if images.options.mask_by_alpha {
        let (records, count) = tiled_pass(enc, images, Pass::Weights, None, None)?;
        finalize(enc, &records, count, None, 0.0, &norm)?;
    } else {
        let counts = [
            (images.width * images.height) as f32,
            images.position_count() as f32,
            0.0,
            0.0,
        ];
        enc.upload(norm.raw(), 0, bytemuck::cast_slice(&counts))?;
    }
    Ok(norm)
}

//! The GPU bytes LPIPS takes, for `--memory-budget`: its weights, the peak of uploading them and
//! the peak of scoring one pair of images, each summed from the tensors [`super::Lpips`]
//! allocates (their shapes from [`ALEXNET`], rounded as the allocator rounds them).

use super::weights::{ALEXNET, ConvShape};
use crate::gpu::GpuContext;
use crate::gpu::encoder::upload_staging_bytes;
use crate::tensor::{DType, Tensor};

/// What LPIPS adds to the GPU memory of an evaluation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LpipsBytes {
    /// The network's weights, biases and heads, resident once created.
    pub weights: u64,
    /// The peak while the weights are uploaded, one tensor and its staging at a time (the
    /// weights included).
    pub loading: u64,
    /// The peak of scoring one pair of images beyond the weights and the images: the feature maps
    /// of both (the first image's five taps kept while the second's are computed), the per-pixel
    /// distances and their sum.
    pub scoring: u64,
}

/// The bytes of [`super::Lpips::alexnet`] and of scoring a `width` × `height` pair with it, or
/// `None` when the images are too small for AlexNet's layers.
pub fn planned_bytes(ctx: &GpuContext, width: u32, height: u32) -> Option<LpipsBytes> {
    let floats = |len: u64| Tensor::planned_bytes(ctx, DType::F32, len);
    // The upload order of `Lpips::new`: each layer's kernel and bias, then the heads.
    let tensors = ALEXNET
        .iter()
        .flat_map(|s| [s.weight_count(), u64::from(s.out_channels)])
        .chain(ALEXNET.iter().map(|s| u64::from(s.out_channels)));
    let (mut weights, mut loading) = (0, 0);
    for len in tensors {
        let bytes = floats(len);
        loading = loading.max(weights + bytes + upload_staging_bytes(len * 4));
        weights += bytes;
    }
    let mut live = Live::default();
    let taps = features(&mut live, &floats, width, height)?;
    features(&mut live, &floats, width, height)?;
    let pixels: u64 = taps.iter().sum();
    // The distances, and at most as much again for the partial sums of their reduction.
    live.alloc(2 * floats(pixels));
    Some(LpipsBytes {
        weights,
        loading,
        scoring: live.peak,
    })
}

/// Live bytes and their peak.
#[derive(Default)]
struct Live {
    now: u64,
    peak: u64,
}

impl Live {
    fn alloc(&mut self, bytes: u64) {
        self.now += bytes;
        self.peak = self.peak.max(self.now);
    }
}

/// Follows `Lpips::features` on a `width` × `height` image: the input layer and pooled maps are
/// released when the next layer replaces them, the five taps are kept. Returns each tap's pixels.
fn features(
    live: &mut Live,
    floats: &impl Fn(u64) -> u64,
    width: u32,
    height: u32,
) -> Option<Vec<u64>> {
    let map =
        |channels: u32, h: u32, w: u32| floats(u64::from(channels) * u64::from(h) * u64::from(w));
    let mut x = (3, height, width);
    let mut x_bytes = map(3, height, width);
    let mut x_is_tap = false;
    live.alloc(x_bytes);
    let mut taps = Vec::with_capacity(ALEXNET.len());
    for (i, s) in ALEXNET.iter().enumerate() {
        if i == 1 || i == 2 {
            let side = |n: u32| (n >= 3).then(|| (n - 3) / 2 + 1);
            let pooled = (x.0, side(x.1)?, side(x.2)?);
            let bytes = map(pooled.0, pooled.1, pooled.2);
            live.alloc(bytes);
            if !x_is_tap {
                live.now -= x_bytes;
            }
            (x, x_bytes, x_is_tap) = (pooled, bytes, false);
        }
        let out = conv_output(s, x.1, x.2)?;
        let bytes = map(out.0, out.1, out.2);
        live.alloc(bytes);
        if !x_is_tap {
            live.now -= x_bytes;
        }
        (x, x_bytes, x_is_tap) = (out, bytes, true);
        taps.push(u64::from(out.1) * u64::from(out.2));
    }
    Some(taps)
}

/// A convolution's output `(channels, height, width)` from a `height` × `width` input.
fn conv_output(s: &ConvShape, height: u32, width: u32) -> Option<(u32, u32, u32)> {
    Some((
        s.out_channels,
        s.output_side(height)?,
        s.output_side(width)?,
    ))
}

//! The CPU twin of the LPIPS kernels, accumulating in f64: one function per kernel and the whole
//! metric. Feature maps are planar (`[channels, height, width]`), as on the GPU.

use super::weights::{ConvLayer, LpipsWeights};
use super::{INPUT_SCALE, INPUT_SHIFT};

/// A planar feature map.
#[derive(Clone, Debug, PartialEq)]
pub struct FeatureMap {
    /// Channels.
    pub channels: usize,
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// `channels * height * width` values, channel-major.
    pub values: Vec<f32>,
}

/// The network input for an RGB image in `[0, 1]` (`rgb` holds `[H, W, 3]` interleaved): clamp,
/// map to `[-1, 1]`, then `(x - shift) / scale` per channel (`lpips_prepare.wgsl`).
pub fn prepare(rgb: &[f32], width: usize, height: usize) -> FeatureMap {
    let pixels = width * height;
    let mut values = vec![0.0; 3 * pixels];
    for p in 0..pixels {
        for c in 0..3 {
            let x = 2.0 * f64::from(rgb[3 * p + c].clamp(0.0, 1.0)) - 1.0;
            values[c * pixels + p] =
                ((x - f64::from(INPUT_SHIFT[c])) / f64::from(INPUT_SCALE[c])) as f32;
        }
    }
    FeatureMap {
        channels: 3,
        height,
        width,
        values,
    }
}

/// Convolution with zero padding, bias and ReLU (`lpips_conv.wgsl`).
pub fn conv_relu(input: &FeatureMap, layer: &ConvLayer) -> FeatureMap {
    let s = layer.shape;
    let (k, stride, pad) = (
        s.kernel_size as usize,
        s.stride as usize,
        s.padding as usize,
    );
    let (cin, cout) = (s.in_channels as usize, s.out_channels as usize);
    assert_eq!(input.channels, cin, "input channels");
    let oh = s.output_side(input.height as u32).expect("kernel fits") as usize;
    let ow = s.output_side(input.width as u32).expect("kernel fits") as usize;
    let plane = input.height * input.width;
    let mut values = vec![0.0f32; cout * oh * ow];
    let mut acc = vec![0.0f64; cout];
    for oy in 0..oh {
        for ox in 0..ow {
            for (o, a) in acc.iter_mut().enumerate() {
                *a = f64::from(layer.bias[o]);
            }
            for ky in 0..k {
                let Some(iy) = (oy * stride + ky).checked_sub(pad) else {
                    continue;
                };
                if iy >= input.height {
                    continue;
                }
                for kx in 0..k {
                    let Some(ix) = (ox * stride + kx).checked_sub(pad) else {
                        continue;
                    };
                    if ix >= input.width {
                        continue;
                    }
                    for c in 0..cin {
                        let x = f64::from(input.values[c * plane + iy * input.width + ix]);
                        let w = &layer.weights[((ky * k + kx) * cin + c) * cout..][..cout];
                        for (a, &wo) in acc.iter_mut().zip(w) {
                            *a += x * f64::from(wo);
                        }
                    }
                }
            }
            for (o, &a) in acc.iter().enumerate() {
                values[(o * oh + oy) * ow + ox] = a.max(0.0) as f32;
            }
        }
    }
    FeatureMap {
        channels: cout,
        height: oh,
        width: ow,
        values,
    }
}

/// 3×3 max-pooling at stride 2 without padding (`lpips_pool.wgsl`).
pub fn max_pool(input: &FeatureMap) -> FeatureMap {
    let oh = (input.height - 3) / 2 + 1;
    let ow = (input.width - 3) / 2 + 1;
    let mut values = Vec::with_capacity(input.channels * oh * ow);
    for c in 0..input.channels {
        for oy in 0..oh {
            for ox in 0..ow {
                let mut best = f32::NEG_INFINITY;
                for dy in 0..3 {
                    for dx in 0..3 {
                        let (y, x) = (2 * oy + dy, 2 * ox + dx);
                        best = best.max(input.values[(c * input.height + y) * input.width + x]);
                    }
                }
                values.push(best);
            }
        }
    }
    FeatureMap {
        channels: input.channels,
        height: oh,
        width: ow,
        values,
    }
}

/// Per-pixel distance of one layer (`lpips_distance.wgsl` with `scale` = 1): unit-normalised
/// features, squared difference weighted by the head, summed over channels.
pub fn layer_distances(a: &FeatureMap, b: &FeatureMap, head: &[f32]) -> Vec<f64> {
    let pixels = a.height * a.width;
    (0..pixels)
        .map(|p| {
            let norm = |m: &FeatureMap| {
                let s: f64 = (0..m.channels)
                    .map(|c| f64::from(m.values[c * pixels + p]).powi(2))
                    .sum();
                s.sqrt() + 1e-10
            };
            let (na, nb) = (norm(a), norm(b));
            (0..a.channels)
                .map(|c| {
                    let d = f64::from(a.values[c * pixels + p]) / na
                        - f64::from(b.values[c * pixels + p]) / nb;
                    f64::from(head[c]) * d * d
                })
                .sum()
        })
        .collect()
}

/// The five tapped feature maps of AlexNet for a prepared input.
pub fn features(input: &FeatureMap, weights: &LpipsWeights) -> Vec<FeatureMap> {
    let mut taps = Vec::with_capacity(weights.convs.len());
    let mut x = input.clone();
    for (i, layer) in weights.convs.iter().enumerate() {
        if i == 1 || i == 2 {
            x = max_pool(&x);
        }
        x = conv_relu(&x, layer);
        taps.push(x.clone());
    }
    taps
}

/// LPIPS between two RGB images in `[0, 1]` (`[H, W, 3]` interleaved each): the sum over the
/// five layers of the spatial mean of [`layer_distances`].
pub fn lpips(a: &[f32], b: &[f32], width: usize, height: usize, weights: &LpipsWeights) -> f64 {
    let fa = features(&prepare(a, width, height), weights);
    let fb = features(&prepare(b, width, height), weights);
    fa.iter()
        .zip(&fb)
        .zip(&weights.heads)
        .map(|((x, y), head)| {
            let d = layer_distances(x, y, head);
            d.iter().sum::<f64>() / d.len() as f64
        })
        .sum()
}

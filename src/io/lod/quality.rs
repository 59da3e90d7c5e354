//! What a level of detail's renders are measured against (`wgsplat bench lod`, the tests): the
//! full model rendered larger and area-downsampled (the truth a far view should approach: a
//! render at the view's own size is aliased where Gaussians are smaller than a pixel), and the
//! naive cut of the same budget (the model's largest and most opaque Gaussians, the rest dropped).

use crate::GpuContext;
use crate::error::Result;
use crate::gpu::MemoryCategory;
use crate::io::ply::PlyModel;
use crate::splat::forward::{RenderOptions, render, render_rgb};
use crate::splat::{Camera, GaussianTensors};
use crate::tensor::Tensor;

fn options(sh_degree: u32) -> RenderOptions {
    RenderOptions {
        sh_degree,
        ..Default::default()
    }
}

/// `camera` with `scale` times as many pixels along each side, seeing the same view.
pub fn scaled(camera: &Camera, scale: u32) -> Camera {
    let k = scale as f32;
    Camera {
        fx: camera.fx * k,
        fy: camera.fy * k,
        cx: camera.cx * k,
        cy: camera.cy * k,
        width: camera.width * scale,
        height: camera.height * scale,
        ..camera.clone()
    }
}

/// The mean of each `scale` × `scale` block of an RGB image `width` pixels wide.
pub fn area_downsample(rgb: &[f32], width: u32, height: u32, scale: u32) -> Vec<f32> {
    let (w, h, k) = (width as usize, height as usize, scale as usize);
    let (ow, oh) = (w / k, h / k);
    let mut out = vec![0f32; ow * oh * 3];
    for y in 0..oh * k {
        for x in 0..ow * k {
            for c in 0..3 {
                out[((y / k) * ow + x / k) * 3 + c] += rgb[(y * w + x) * 3 + c];
            }
        }
    }
    let n = (k * k) as f32;
    out.iter_mut().for_each(|v| *v /= n);
    out
}

/// The truth of `camera`'s view: the full model rendered at `scale` times its size, each block of
/// `scale` × `scale` pixels averaged (clamped first: the image as displayed).
pub fn truth(
    ctx: &GpuContext,
    full: &GaussianTensors,
    camera: &Camera,
    scale: u32,
) -> Result<Vec<f32>> {
    let big = scaled(camera, scale.max(1));
    let image = render_rgb(ctx, full, &big)?;
    Ok(area_downsample(&image, big.width, big.height, scale.max(1)))
}

/// The full model's image from `camera`, rendered `scale` times larger and area-downsampled (an
/// image tensor of `camera`'s size, as the renderer writes it).
pub fn supersampled(
    ctx: &GpuContext,
    full: &GaussianTensors,
    camera: &Camera,
    scale: u32,
    sh_degree: u32,
) -> Result<Tensor> {
    if scale <= 1 {
        return Ok(render(ctx, full, camera, options(sh_degree))?.image);
    }
    let big = scaled(camera, scale);
    let image = render(ctx, full, &big, options(sh_degree))?;
    let shape = image.image.shape().to_vec();
    let pixels = image.image.read::<f32>(ctx)?;
    let (w, h, s) = (
        camera.width as usize,
        camera.height as usize,
        scale as usize,
    );
    let mut out = vec![0f32; w * h * 4];
    for y in 0..h * s {
        for x in 0..w * s {
            let from = (y * w * s + x) * 4;
            let to = ((y / s) * w + x / s) * 4;
            for c in 0..4 {
                out[to + c] += pixels[from + c];
            }
        }
    }
    let n = (s * s) as f32;
    out.iter_mut().for_each(|v| *v /= n);
    let mut small_shape = shape;
    let dims = small_shape.len();
    if dims >= 3 {
        small_shape[dims - 3] = h;
        small_shape[dims - 2] = w;
    } else {
        small_shape = vec![out.len()];
    }
    let mut enc = ctx.encoder("lod refine: target");
    let t = Tensor::from_slice(
        &mut enc,
        &out,
        &small_shape,
        MemoryCategory::Other,
        "lod refine target",
    )?;
    ctx.submit(enc)?;
    Ok(t)
}

/// The naive cut of `count` Gaussians: those of largest opacity times the area of their two
/// largest axes, the rest dropped.
pub fn naive_cut(model: &PlyModel, count: usize) -> PlyModel {
    let g = &model.gaussians;
    let weight = |i: usize| {
        let mut s = g.log_scales[i].map(|v| f64::from(v).exp());
        s.sort_by(|a, b| b.total_cmp(a));
        let alpha = 1.0 / (1.0 + (-f64::from(g.opacity_logits[i])).exp());
        alpha * s[0] * s[1]
    };
    let mut order: Vec<(f64, usize)> = (0..g.means.len()).map(|i| (weight(i), i)).collect();
    let count = count.clamp(1, order.len().max(1));
    if count < order.len() {
        order.select_nth_unstable_by(count - 1, |a, b| b.0.total_cmp(&a.0));
        order.truncate(count);
    }
    order.sort_by_key(|&(_, i)| i);
    let mut out = PlyModel {
        gaussians: Default::default(),
        sh_degree: model.sh_degree,
    };
    let o = &mut out.gaussians;
    for &(_, i) in &order {
        o.means.push(g.means[i]);
        o.log_scales.push(g.log_scales[i]);
        o.quats.push(g.quats[i]);
        o.opacity_logits.push(g.opacity_logits[i]);
        o.sh.push(g.sh[i]);
    }
    out
}

/// PSNR in dB of two RGB images (infinite when equal).
pub fn psnr(a: &[f32], b: &[f32]) -> f64 {
    let mse = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(x - y).powi(2))
        .sum::<f64>()
        / a.len().max(1) as f64;
    if mse == 0.0 {
        f64::INFINITY
    } else {
        -10.0 * mse.log10()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn area_downsampling_averages_blocks() {
        // 4 × 2 pixels, one channel varying: blocks of 2 × 2.
        let rgb: Vec<f32> = (0..8).flat_map(|i| [i as f32, 0.0, 1.0]).collect();
        let out = area_downsample(&rgb, 4, 2, 2);
        assert_eq!(out, vec![2.5, 0.0, 1.0, 4.5, 0.0, 1.0]);
    }

    #[test]
    fn the_naive_cut_keeps_the_largest_opaque_gaussians_in_order() {
        let mut model = PlyModel {
            gaussians: Default::default(),
            sh_degree: 0,
        };
        for (i, (scale, logit)) in [(-1.0f32, 0.0f32), (0.0, 0.0), (-3.0, 4.0), (0.5, -6.0)]
            .into_iter()
            .enumerate()
        {
            let g = &mut model.gaussians;
            g.means.push([i as f32, 0.0, 0.0]);
            g.log_scales.push([scale, scale, -9.0]);
            g.quats.push([1.0, 0.0, 0.0, 0.0]);
            g.opacity_logits.push(logit);
            g.sh.push([[0.0; 3]; 16]);
        }
        // Weights: 0.5e^-2 = 0.068, 0.5, 0.98e^-6 = 0.0024, 0.0025e^1 = 0.0067.
        let cut = naive_cut(&model, 2);
        assert_eq!(cut.gaussians.means, vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]);
    }
}

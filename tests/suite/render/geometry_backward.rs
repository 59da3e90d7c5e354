//! The gradients of the rendered depth and normals: a render of depth (or normal) as colour
//! composites the same alpha-weighted depth (normal) as the rasterizer's depth (normals) output,
//! bit for bit, and its backward pass matches central differences of a weighted sum of that
//! output for every mean, scale, rotation and opacity, through a pinhole and through a fisheye
//! (whose depth is the ray's length), on both kernel paths; the SH coefficients get none. The
//! depth moments (depth, depth², 1) as colour likewise, against central differences of the
//! moments render itself, whose first channel is the depth output's, bit for bit.

use crate::common::{self, camera, random_gaussians};
use wgsplat::splat::backward::BackwardOptions;
use wgsplat::splat::forward::{ColourSource, RenderOptions, render};
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::splat::{AlphaMode, Camera, CameraLens, GaussianTensors};
use wgsplat::testing::{TestRng, both_paths, compare_close};
use wgsplat::{GpuContext, MemoryCategory};

fn upload(ctx: &GpuContext, g: &CpuGaussians) -> GaussianTensors {
    let mut enc = ctx.encoder("upload");
    let t = GaussianTensors::upload(&mut enc, g, 3, MemoryCategory::Parameters, "p").unwrap();
    ctx.submit(enc).unwrap();
    t
}

fn options(colour: ColourSource) -> RenderOptions {
    RenderOptions {
        sh_degree: 3,
        alpha_mode: AlphaMode::Smooth,
        normals: colour == ColourSource::Normal,
        colour,
        ..Default::default()
    }
}

/// The rasterizer's own output of `what` (not a render of it as colour), three values a pixel:
/// the alpha-weighted depth and two zeros, or the alpha-weighted normal.
fn geometry_output(
    ctx: &GpuContext,
    params: &GaussianTensors,
    cam: &Camera,
    what: ColourSource,
) -> Vec<f32> {
    let fwd = render(
        ctx,
        params,
        cam,
        RenderOptions {
            colour: ColourSource::Sh,
            ..options(what)
        },
    )
    .unwrap();
    match what {
        ColourSource::Normal => fwd.normals.as_ref().unwrap().read::<f32>(ctx).unwrap(),
        // Its own render: the first channel is checked against the depth output below.
        ColourSource::DepthMoments => render(ctx, params, cam, options(what))
            .unwrap()
            .image
            .read::<f32>(ctx)
            .unwrap()
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect(),
        _ => fwd
            .depth
            .read::<f32>(ctx)
            .unwrap()
            .chunks_exact(2)
            .flat_map(|d| [d[0], 0.0, 0.0])
            .collect(),
    }
}

/// Σ weights · (the rasterizer's output of `what`), in f64.
fn geometry_loss(
    ctx: &GpuContext,
    g: &CpuGaussians,
    cam: &Camera,
    what: ColourSource,
    weights: &[f32],
) -> f64 {
    geometry_output(ctx, &upload(ctx, g), cam, what)
        .iter()
        .zip(weights)
        .map(|(&v, &w)| f64::from(v) * f64::from(w))
        .sum()
}

/// Means, log scales, quaternions and logit opacities, in that order.
fn geometry_parameters(g: &CpuGaussians) -> Vec<f32> {
    let mut v: Vec<f32> = g.means.iter().flatten().copied().collect();
    v.extend(g.log_scales.iter().flatten());
    v.extend(g.quats.iter().flatten());
    v.extend(&g.opacity_logits);
    v
}

fn with_parameter(g: &CpuGaussians, index: usize, value: f32) -> CpuGaussians {
    let mut g = g.clone();
    let n = g.means.len();
    match index {
        i if i < 3 * n => g.means[i / 3][i % 3] = value,
        i if i < 6 * n => g.log_scales[(i - 3 * n) / 3][(i - 3 * n) % 3] = value,
        i if i < 10 * n => g.quats[(i - 6 * n) / 4][(i - 6 * n) % 4] = value,
        i => g.opacity_logits[i - 10 * n] = value,
    }
    g
}

fn check(cam: &Camera, what: &str, source: ColourSource) {
    let mut g = random_gaussians(17, 5, 0.6, 0.25);
    for logit in &mut g.opacity_logits {
        *logit = logit.clamp(-1.5, 1.5); // stay away from the 0.999 alpha cap
    }
    let pixels = (cam.width * cam.height) as usize;
    let weights = TestRng::new(18).vec_f32(3 * pixels, -1.0, 1.0);
    let contexts = both_paths();
    let base = geometry_parameters(&g);
    let numeric: Vec<f32> = (0..base.len())
        .map(|i| {
            let h = 1e-2f32.max(base[i].abs() * 1e-2);
            let at = |v: f32| {
                geometry_loss(
                    contexts[0],
                    &with_parameter(&g, i, v),
                    cam,
                    source,
                    &weights,
                )
            };
            let (plus, minus) = (at(base[i] + h), at(base[i] - h));
            ((plus - minus) / (2.0 * f64::from(h))) as f32
        })
        .collect();
    let scale = numeric.iter().fold(0f32, |m, v| m.max(v.abs()));
    assert!(
        scale > 0.0,
        "{what}: the depth must depend on the parameters"
    );
    for ctx in contexts {
        let params = upload(ctx, &g);
        let output = geometry_output(ctx, &params, cam, source);
        let fwd = render(ctx, &params, cam, options(source)).unwrap();
        let colour = fwd.image.read::<f32>(ctx).unwrap();
        let same = output
            .chunks_exact(3)
            .zip(colour.chunks_exact(4))
            .all(|(o, c)| (0..3).all(|k| o[k].to_bits() == c[k].to_bits()));
        assert!(
            same,
            "{what}: the colour must be the rasterizer's {source:?} output, bit for bit"
        );
        let v_image: Vec<f32> = weights
            .chunks_exact(3)
            .flat_map(|w| [w[0], w[1], w[2], 0.0])
            .collect();
        let backward = BackwardOptions {
            colour: source,
            ..Default::default()
        };
        let (grads, _) = common::run_backward(ctx, &params, &fwd, &v_image, backward);
        let grads = grads.download(ctx).unwrap();
        compare_close(
            &format!("{what} {source:?} gradients ({})", ctx.info().kernel_path()),
            &geometry_parameters(&grads),
            &numeric,
            2e-3 * scale,
            3e-2,
        )
        .unwrap();
        let sh = grads.sh.iter().flatten().flatten();
        assert!(
            sh.clone().all(|&v| v == 0.0),
            "{what}: SH gradients must be zero"
        );
    }
}

#[test]
fn depth_gradients_match_central_differences_through_a_pinhole() {
    check(&camera(40, 28, [0.0; 3]), "pinhole", ColourSource::Depth);
}

fn fisheye_camera() -> Camera {
    let mut cam = camera(40, 28, [0.0; 3]);
    cam.lens = CameraLens::fisheye([0.02, -0.01, 0.0, 0.0], [0.0; 2], [0.0; 2]);
    cam
}

#[test]
fn depth_gradients_match_central_differences_through_a_fisheye() {
    check(&fisheye_camera(), "fisheye", ColourSource::Depth);
}

#[test]
fn normal_gradients_match_central_differences_through_a_pinhole() {
    check(&camera(40, 28, [0.0; 3]), "pinhole", ColourSource::Normal);
}

#[test]
fn normal_gradients_match_central_differences_through_a_fisheye() {
    check(&fisheye_camera(), "fisheye", ColourSource::Normal);
}

#[test]
fn depth_moment_gradients_match_central_differences_through_a_pinhole() {
    check(
        &camera(40, 28, [0.0; 3]),
        "pinhole",
        ColourSource::DepthMoments,
    );
}

#[test]
fn depth_moment_gradients_match_central_differences_through_a_fisheye() {
    check(&fisheye_camera(), "fisheye", ColourSource::DepthMoments);
}

#[test]
fn the_first_depth_moment_is_the_depth_output_bit_for_bit() {
    let cam = fisheye_camera();
    let g = random_gaussians(21, 9, 0.6, 0.25);
    for ctx in both_paths() {
        let params = upload(ctx, &g);
        let depth = geometry_output(ctx, &params, &cam, ColourSource::Depth);
        let moments = geometry_output(ctx, &params, &cam, ColourSource::DepthMoments);
        let alpha = render(ctx, &params, &cam, options(ColourSource::Sh))
            .unwrap()
            .image
            .read::<f32>(ctx)
            .unwrap();
        assert!(
            depth.iter().any(|&d| d > 0.0),
            "the view must see the Gaussians"
        );
        for (pixel, (d, m)) in depth
            .chunks_exact(3)
            .zip(moments.chunks_exact(3))
            .enumerate()
        {
            assert_eq!(d[0].to_bits(), m[0].to_bits(), "Σ w·d at pixel {pixel}");
            let a = alpha[4 * pixel + 3];
            assert!(
                (m[2] - a).abs() <= 1e-5,
                "Σ w {} against alpha {a} at pixel {pixel}",
                m[2]
            );
            // Σ w·d² ≥ (Σ w·d)² / Σ w (Cauchy–Schwarz), so the distortion is never negative.
            assert!(
                m[1] * m[2] - m[0] * m[0] >= -1e-4 * m[0] * m[0],
                "pixel {pixel}: {m:?}"
            );
        }
    }
}

#[test]
fn geometry_as_colour_refuses_a_coloured_background() {
    let ctx = both_paths()[0];
    let g = random_gaussians(19, 3, 0.6, 0.25);
    let err = render(
        ctx,
        &upload(ctx, &g),
        &camera(16, 16, [0.5, 0.0, 0.0]),
        options(ColourSource::Depth),
    )
    .err()
    .expect("a coloured background is refused");
    assert!(err.to_string().contains("background"), "{err}");
}

//! Camera pose refinement's gradient: the kernel against its CPU reference (chunked, on both
//! kernel paths and small pages), and the gradient with respect to a camera correction against
//! central finite differences of a rendered loss.

use crate::common;

use common::{camera, random_gaussians};
use wgsplat::gpu::kernels::row_chunks;
use wgsplat::splat::backward::BackwardOptions;
use wgsplat::splat::forward::{RenderOptions, render};
use wgsplat::splat::pose::reference::world_pose_gradient;
use wgsplat::splat::pose::{
    PoseCorrection, PoseGradientPass, WorldPoseGradient, correction_gradient,
};
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::splat::{AlphaMode, Camera, GaussianTensors};
use wgsplat::testing::{TestRng, both_paths, both_paths_both_layouts, compare_close};
use wgsplat::{GpuContext, MemoryCategory};

fn upload(ctx: &GpuContext, g: &CpuGaussians, category: MemoryCategory) -> GaussianTensors {
    let mut enc = ctx.encoder("upload");
    let t = GaussianTensors::upload(&mut enc, g, 3, category, "p").unwrap();
    ctx.submit(enc).unwrap();
    t
}

/// The kernel's world-space sums over `params` with gradients `grads`, in chunks of `chunk_rows`.
fn kernel_sums(
    ctx: &GpuContext,
    params: &GaussianTensors,
    grads: &GaussianTensors,
    chunk_rows: u64,
) -> Vec<f32> {
    let n = params.len();
    let chunks = || row_chunks(n, params.rows_per_page, chunk_rows);
    let mut enc = ctx.encoder("pose gradient");
    let mut pass = PoseGradientPass::new(&mut enc, chunks()).unwrap();
    for chunk in chunks() {
        pass.record_chunk(&mut enc, params, &chunk, grads, &chunk)
            .unwrap();
    }
    let out = pass.finish(&mut enc).unwrap();
    ctx.submit(enc).unwrap();
    out.read::<f32>(ctx).unwrap()
}

fn floats(rows: &[[f32; 3]]) -> Vec<f32> {
    rows.iter().flatten().copied().collect()
}

fn floats4(rows: &[[f32; 4]]) -> Vec<f32> {
    rows.iter().flatten().copied().collect()
}

#[test]
fn pose_gradient_kernel_matches_its_reference() {
    for ctx in both_paths_both_layouts(false) {
        let n = 1_337;
        let params = random_gaussians(5, n, 3.0, 0.1);
        let mut grads = random_gaussians(6, n, 1.0, 0.1);
        // Culled Gaussians: zero gradients, and a parameter that is not finite, left out.
        for i in (0..n).step_by(7) {
            grads.means[i] = [0.0; 3];
            grads.quats[i] = [0.0; 4];
        }
        let mut params_nan = params.clone();
        params_nan.means[14] = [f32::NAN, f32::INFINITY, 0.0];
        let want = world_pose_gradient(
            &floats(&params_nan.means),
            &floats4(&params_nan.quats),
            &floats(&grads.means),
            &floats4(&grads.quats),
        );
        let p = upload(ctx, &params_nan, MemoryCategory::Parameters);
        let g = upload(ctx, &grads, MemoryCategory::Gradients);
        for chunk_rows in [n as u64, 512, 256] {
            let got = kernel_sums(ctx, &p, &g, chunk_rows);
            let got = WorldPoseGradient::from_floats(&got).unwrap();
            let flat = |w: &WorldPoseGradient| -> Vec<f32> {
                w.shift
                    .iter()
                    .chain(&w.rotation)
                    .map(|&x| x as f32)
                    .collect()
            };
            let scale = flat(&want).iter().fold(0f32, |m, v| m.max(v.abs()));
            compare_close(
                &format!(
                    "pose sums ({}, {} rows per chunk)",
                    ctx.info().kernel_path(),
                    chunk_rows
                ),
                &flat(&got),
                &flat(&want),
                1e-4 * scale,
                1e-4,
            )
            .unwrap();
        }
    }
}

/// A weighted sum of the image rendered by `camera` (SH degree 0, smooth alpha).
fn loss(ctx: &GpuContext, params: &GaussianTensors, camera: &Camera, weights: &[f32]) -> f64 {
    let fwd = render(ctx, params, camera, options()).unwrap();
    common::weighted_sum(&fwd.image, weights, ctx)
}

fn options() -> RenderOptions {
    RenderOptions {
        sh_degree: 0,
        alpha_mode: AlphaMode::Smooth,
        ..Default::default()
    }
}

/// `dL/d(τ, ε)` through the backward pass, the kernel and [`correction_gradient`].
fn analytic(
    ctx: &GpuContext,
    params: &GaussianTensors,
    base: &Camera,
    correction: &PoseCorrection,
    weights: &[f32],
) -> [f64; 6] {
    let fwd = render(ctx, params, &correction.apply(base), options()).unwrap();
    let (grads, _) = common::run_backward(ctx, params, &fwd, weights, BackwardOptions::default());
    let sums = kernel_sums(ctx, params, &grads, params.len());
    let world = WorldPoseGradient::from_floats(&sums).unwrap();
    correction_gradient(base, correction, &world)
}

#[test]
fn pose_gradient_matches_finite_differences() {
    // A camera away from the origin and turned, so rotation and shift do not separate.
    let mut base = camera(40, 28, [0.1, 0.2, 0.3]);
    base = PoseCorrection {
        translation: [0.3, -0.2, 0.4],
        rotation: [0.1, -0.2, 0.05],
    }
    .apply(&base);
    let mut g = random_gaussians(21, 12, 0.7, 0.25);
    for logit in &mut g.opacity_logits {
        *logit = logit.clamp(-1.5, 1.5);
    }
    let corrections = [
        PoseCorrection::default(),
        PoseCorrection {
            translation: [0.05, -0.03, 0.02],
            rotation: [0.03, -0.04, 0.05],
        },
    ];
    for ctx in both_paths() {
        let params = upload(ctx, &g, MemoryCategory::Parameters);
        let mut rng = TestRng::new(3);
        let weights = rng.vec_f32((base.width * base.height * 4) as usize, -1.0, 1.0);
        for correction in &corrections {
            let want = analytic(ctx, &params, &base, correction, &weights);
            let mut numeric = [0f64; 6];
            for (k, slot) in numeric.iter_mut().enumerate() {
                let h = 2e-3;
                let moved = |sign: f64| {
                    let mut p = correction.to_array();
                    p[k] += sign * h;
                    let camera = PoseCorrection::from_array(p).apply(&base);
                    loss(ctx, &params, &camera, &weights)
                };
                *slot = (moved(1.0) - moved(-1.0)) / (2.0 * h);
            }
            let to32 = |v: [f64; 6]| v.map(|x| x as f32);
            let scale = numeric.iter().fold(0f64, |m, v| m.max(v.abs())) as f32;
            compare_close(
                &format!(
                    "pose gradient against finite differences ({}, {correction:?})",
                    ctx.info().kernel_path()
                ),
                &to32(want),
                &to32(numeric),
                2e-2 * scale,
                3e-2,
            )
            .unwrap();
        }
    }
}

#[test]
fn corrections_compose_as_documented() {
    let base = camera(16, 16, [0.0; 3]);
    let c = PoseCorrection {
        translation: [0.1, 0.2, -0.3],
        rotation: [0.0, 0.0, std::f64::consts::FRAC_PI_2],
    };
    let moved = c.apply(&base);
    // A point on the camera's +x axis lands on +y after a quarter turn about z, then shifts.
    let p = moved.to_camera([1.0, 0.0, 0.0]);
    let want = [0.1, 1.2, 5.0 - 0.3];
    for k in 0..3 {
        assert!((f64::from(p[k]) - want[k]).abs() < 1e-5, "{p:?}");
    }
    assert!((c.angle_degrees() - 90.0).abs() < 1e-9);
}

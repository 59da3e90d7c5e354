//! Gradients of the rasterizer: against gsplat's gradients on the peer cases, and against central
//! finite differences (with the smooth alpha cutoff) for every parameter; on both kernel paths.

use crate::common;

use common::{PeerCase, camera, random_gaussians};
use wgsplat::splat::backward::BackwardOptions;
use wgsplat::splat::forward::{RenderOptions, render};
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::splat::{AlphaMode, Camera, GaussianTensors, RasterMode};
use wgsplat::testing::{TestRng, both_paths, both_paths_both_layouts, compare_close};
use wgsplat::{GpuContext, MemoryCategory};

struct Gradients {
    params: CpuGaussians,
    v_projected: Vec<f32>,
}

fn upload(ctx: &GpuContext, g: &CpuGaussians) -> GaussianTensors {
    let mut enc = ctx.encoder("upload");
    let t = GaussianTensors::upload(&mut enc, g, 3, MemoryCategory::Parameters, "p").unwrap();
    ctx.submit(enc).unwrap();
    t
}

fn gradients(
    ctx: &GpuContext,
    g: &CpuGaussians,
    cam: &Camera,
    v_image: &[f32],
    mode: AlphaMode,
    detach: bool,
    raster_mode: RasterMode,
) -> Gradients {
    let params = upload(ctx, g);
    let fwd = render(
        ctx,
        &params,
        cam,
        RenderOptions {
            sh_degree: 3,
            alpha_mode: mode,
            raster_mode,
            ..Default::default()
        },
    )
    .unwrap();
    let options = BackwardOptions {
        detach_view_dir: detach,
        ..Default::default()
    };
    let (grads, out) = common::run_backward(ctx, &params, &fwd, v_image, options);
    Gradients {
        params: grads.download(ctx).unwrap(),
        v_projected: out.v_projected.read::<f32>(ctx).unwrap(),
    }
}

fn loss(
    ctx: &GpuContext,
    g: &CpuGaussians,
    cam: &Camera,
    weights: &[f32],
    raster_mode: RasterMode,
) -> f64 {
    let params = upload(ctx, g);
    let fwd = render(
        ctx,
        &params,
        cam,
        RenderOptions {
            sh_degree: 3,
            alpha_mode: AlphaMode::Smooth,
            raster_mode,
            ..Default::default()
        },
    )
    .unwrap();
    common::weighted_sum(&fwd.image, weights, ctx)
}

fn flat(g: &CpuGaussians) -> Vec<f32> {
    let mut v = Vec::new();
    v.extend(g.means.iter().flatten());
    v.extend(g.log_scales.iter().flatten());
    v.extend(g.quats.iter().flatten());
    v.extend(&g.opacity_logits);
    v.extend(g.sh.iter().flat_map(|c| c.iter().flatten()));
    v
}

fn set_flat(g: &mut CpuGaussians, index: usize, value: f32) {
    let n = g.means.len();
    let mut i = index;
    macro_rules! field {
        ($vec:expr, $w:expr) => {
            if i < n * $w {
                let row = &mut $vec[i / $w];
                let slice: &mut [f32] = bytemuck::cast_slice_mut(std::slice::from_mut(row));
                slice[i % $w] = value;
                return;
            }
            i -= n * $w;
        };
    }
    field!(g.means, 3);
    field!(g.log_scales, 3);
    field!(g.quats, 4);
    if i < n {
        g.opacity_logits[i] = value;
        return;
    }
    i -= n;
    let row = &mut g.sh[i / 48];
    let slice: &mut [f32] = bytemuck::cast_slice_mut(std::slice::from_mut(row));
    slice[i % 48] = value;
}

#[test]
fn gradients_match_gsplat_peer_cases() {
    for ctx in both_paths_both_layouts(false) {
        for peer in PeerCase::all() {
            let v_image = peer.tensor("v_out_img");
            let got = gradients(
                ctx,
                &peer.gaussians,
                &PeerCase::camera(),
                &v_image,
                AlphaMode::Hard,
                true,
                RasterMode::Classic,
            );
            let n = peer.gaussians.means.len();
            let path = ctx.info().kernel_path();
            let check = |what: &str, got: &[f32], want: &[f32]| {
                let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
                compare_close(
                    &format!("{} {what} ({path})", peer.name),
                    got,
                    want,
                    1e-4 * scale + 1e-9,
                    2e-3,
                )
                .unwrap();
            };
            let vp = &got.v_projected;
            let v_xy: Vec<f32> = (0..n).flat_map(|i| [vp[i * 12], vp[i * 12 + 1]]).collect();
            let v_conic: Vec<f32> = (0..n)
                .flat_map(|i| [vp[i * 12 + 2], vp[i * 12 + 3], vp[i * 12 + 4]])
                .collect();
            check("v_xy", &v_xy, &peer.tensor("v_xy"));
            check("v_conics", &v_conic, &peer.tensor("v_conics"));
            let p = &got.params;
            check(
                "v_means",
                &p.means.iter().flatten().copied().collect::<Vec<_>>(),
                &peer.tensor("v_means"),
            );
            check(
                "v_scales",
                &p.log_scales.iter().flatten().copied().collect::<Vec<_>>(),
                &peer.tensor("v_scales"),
            );
            check(
                "v_quats",
                &p.quats.iter().flatten().copied().collect::<Vec<_>>(),
                &peer.tensor("v_quats"),
            );
            check(
                "v_opacities",
                &p.opacity_logits,
                &peer.tensor("v_opacities"),
            );
            check(
                "v_coeffs",
                &p.sh
                    .iter()
                    .flat_map(|c| c.iter().flatten())
                    .copied()
                    .collect::<Vec<_>>(),
                &peer.tensor("v_coeffs"),
            );
        }
    }
}

/// Central differences of a weighted image sum against the analytic gradient of the first
/// `checked` parameters (all when `None`), in `raster_mode`, on both kernel paths.
fn check_central_differences(raster_mode: RasterMode, checked: Option<usize>) {
    let cam = camera(40, 28, [0.2, 0.1, 0.3]);
    let mut g = random_gaussians(11, 5, 0.6, 0.25);
    for logit in &mut g.opacity_logits {
        *logit = logit.clamp(-1.5, 1.5); // stay away from the 0.999 alpha cap
    }
    let checked: Vec<usize> = (0..checked.unwrap_or(flat(&g).len())).collect();
    check_indices_by_central_differences(&cam, &g, &checked, raster_mode, 1e-2);
}

/// Central differences of a weighted image sum against the analytic gradient of the parameters
/// at `checked` (indices into `flat`'s order), on both kernel paths, with steps of `step` (times
/// the parameter's magnitude where that is larger).
pub(super) fn check_indices_by_central_differences(
    cam: &Camera,
    g: &CpuGaussians,
    checked: &[usize],
    raster_mode: RasterMode,
    step: f32,
) {
    let contexts = both_paths_both_layouts(false);
    let mut rng = TestRng::new(12);
    let weights = rng.vec_f32((cam.width * cam.height * 4) as usize, -1.0, 1.0);
    // The differences through the first context's forward pass, once: every path and layout
    // renders the same image (forward.rs holds each to the CPU reference within 1e-4), and each
    // one's analytic gradient is held to them.
    let base = flat(g);
    let mut numeric = Vec::with_capacity(checked.len());
    for &index in checked {
        let x = base[index];
        let h = step.max(x.abs() * step);
        let mut plus = g.clone();
        set_flat(&mut plus, index, x + h);
        let mut minus = g.clone();
        set_flat(&mut minus, index, x - h);
        let d = (loss(contexts[0], &plus, cam, &weights, raster_mode)
            - loss(contexts[0], &minus, cam, &weights, raster_mode))
            / (2.0 * f64::from(h));
        numeric.push(d as f32);
    }
    let scale = numeric.iter().fold(0f32, |m, v| m.max(v.abs()));
    for ctx in contexts {
        let all =
            flat(&gradients(ctx, g, cam, &weights, AlphaMode::Smooth, false, raster_mode).params);
        let analytic: Vec<f32> = checked.iter().map(|&i| all[i]).collect();
        compare_close(
            &format!(
                "finite differences ({}, {} variant, {} Gaussians)",
                raster_mode.name(),
                ctx.variant().name(),
                g.means.len()
            ),
            &analytic,
            &numeric,
            2e-3 * scale,
            3e-2,
        )
        .unwrap();
    }
}

/// One 16x16 tile crossed by 80 Gaussians: more than one batch of 64 and more splats per
/// subgroup group than a workgroup of 64 has invocations for three parts each once subgroups
/// have more than 21 lanes (NVIDIA's 32, AMD's 64). On such GPUs the fast path once dropped the
/// gradient rows of group splats 22 and up; lavapipe's 8-lane subgroups never showed it. Means
/// (x, y) and opacity logits of every Gaussian are checked.
#[test]
fn crowded_tile_gradients_match_central_differences() {
    let cam = camera(16, 16, [0.2, 0.1, 0.3]);
    let n = 80;
    let mut g = random_gaussians(21, n, 1.5, 0.5);
    for logit in &mut g.opacity_logits {
        // Low opacities: the pixels stay far from the transmittance cutoff behind 80 splats.
        *logit = -4.0 + 0.5 * (*logit + 2.0);
    }
    let means_xy = (0..3 * n).filter(|i| i % 3 != 2);
    let opacity_logits = 10 * n..11 * n;
    let checked: Vec<usize> = means_xy.chain(opacity_logits).collect();
    check_indices_by_central_differences(&cam, &g, &checked, RasterMode::Classic, 1e-2);
}

#[test]
fn every_gradient_matches_central_differences() {
    check_central_differences(RasterMode::Classic, None);
}

/// The antialiased mode changes the projection and the opacity only: means, log scales,
/// quaternions and opacity logits (11 per Gaussian, first in `flat`'s order) are checked.
#[test]
fn antialiased_gradients_match_central_differences() {
    check_central_differences(RasterMode::Antialiased, Some(5 * 11));
}

#[test]
fn non_finite_parameters_give_finite_gradients() {
    for ctx in both_paths() {
        let cam = camera(48, 32, [0.0; 3]);
        let mut g = random_gaussians(13, 40, 1.0, 0.1);
        g.means[3][0] = f32::NAN;
        g.log_scales[5][1] = f32::INFINITY;
        g.quats[7] = [0.0; 4];
        g.sh[9][0][0] = f32::NAN;
        let weights = vec![1.0f32; (cam.width * cam.height * 4) as usize];
        let got = gradients(
            ctx,
            &g,
            &cam,
            &weights,
            AlphaMode::Hard,
            false,
            RasterMode::Classic,
        );
        let values = flat(&got.params);
        let bad: Vec<usize> = values
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.is_finite())
            .map(|(i, _)| i)
            .collect();
        assert!(bad.is_empty(), "non-finite gradients at {bad:?}");
        assert!(got.v_projected.iter().all(|v| v.is_finite()));
    }
}

//! The GPU forward rasterizer against gsplat's renders, against the CPU reference on random
//! scenes, and on invariants; on both kernel paths.

use crate::common;

use common::{PeerCase, camera, random_gaussians};
use wgsplat::splat::forward::{RenderOptions, render};
use wgsplat::splat::reference::{self, CpuGaussians};
use wgsplat::splat::{Camera, GaussianTensors, RasterMode};
use wgsplat::testing::{both_paths, both_paths_both_layouts, compare_close, max_abs_diff};
use wgsplat::{GpuContext, MemoryCategory};

pub(super) fn gpu_render(
    ctx: &GpuContext,
    g: &CpuGaussians,
    cam: &Camera,
    degree: u32,
) -> Vec<f32> {
    gpu_render_in_mode(ctx, g, cam, degree, RasterMode::Classic)
}

fn gpu_render_in_mode(
    ctx: &GpuContext,
    g: &CpuGaussians,
    cam: &Camera,
    degree: u32,
    raster_mode: RasterMode,
) -> Vec<f32> {
    let mut enc = ctx.encoder("upload");
    let tensors =
        GaussianTensors::upload(&mut enc, g, 3, MemoryCategory::Parameters, "test").unwrap();
    ctx.submit(enc).unwrap();
    let out = render(
        ctx,
        &tensors,
        cam,
        RenderOptions {
            sh_degree: degree,
            raster_mode,
            ..Default::default()
        },
    )
    .unwrap();
    out.image.read::<f32>(ctx).unwrap()
}

pub(super) fn cpu_render(g: &CpuGaussians, cam: &Camera, degree: u32) -> Vec<f32> {
    reference::render(g, cam, degree)
        .rgba
        .iter()
        .flatten()
        .copied()
        .collect()
}

#[test]
fn forward_matches_gsplat_peer_cases() {
    for ctx in both_paths_both_layouts(false) {
        for peer in PeerCase::all() {
            let got = gpu_render(ctx, &peer.gaussians, &PeerCase::camera(), 3);
            assert!(
                got.iter().all(|v| v.is_finite()),
                "{}: NaN in image",
                peer.name
            );
            let want = peer.tensor("out_img");
            eprintln!(
                "{} ({}): max abs error vs gsplat {:e}",
                peer.name,
                ctx.info().kernel_path(),
                max_abs_diff(&got, &want)
            );
            compare_close(&format!("{} image", peer.name), &got, &want, 1e-4, 0.01).unwrap();
        }
    }
}

#[test]
fn forward_matches_cpu_reference_on_random_scenes() {
    // The CPU reference once per scene and degree, for every path and layout.
    let scenes: Vec<_> = [
        (1u64, 300usize, 123u32, 82u32),
        (2, 3000, 257, 255),
        (3, 50, 16, 16),
        (4, 2000, 64, 200),
    ]
    .into_iter()
    .map(|(seed, n, w, h)| {
        let g = random_gaussians(seed, n, 1.5, 0.05);
        let cam = camera(w, h, [0.1, 0.2, 0.3]);
        let wants = [0, 3].map(|degree| (degree, cpu_render(&g, &cam, degree)));
        (format!("seed {seed} n {n} {w}x{h}"), g, cam, wants)
    })
    .collect();
    for ctx in both_paths_both_layouts(false) {
        for (label, g, cam, wants) in &scenes {
            for (degree, want) in wants {
                let got = gpu_render(ctx, g, cam, *degree);
                let what = format!("{label} deg {degree} {}", ctx.info().kernel_path());
                compare_close(&what, &got, want, 1e-4, 1e-3).unwrap();
            }
        }
    }
}

/// The antialiased mode against the CPU reference, and its defining property: every splat's
/// opacity is scaled by a factor in (0, 1], small splats much more than large ones, so the
/// accumulated alpha never exceeds the classic mode's.
#[test]
fn antialiased_forward_matches_cpu_reference() {
    for ctx in both_paths() {
        for (seed, n, w, h, scale) in [
            (7u64, 400usize, 97u32, 70u32, 0.05f32),
            (8, 300, 64, 64, 0.004),
        ] {
            let g = random_gaussians(seed, n, 1.5, scale);
            let cam = camera(w, h, [0.0; 3]);
            let got = gpu_render_in_mode(ctx, &g, &cam, 3, RasterMode::Antialiased);
            let want: Vec<f32> = reference::render_in_mode(&g, &cam, 3, RasterMode::Antialiased)
                .rgba
                .iter()
                .flatten()
                .copied()
                .collect();
            let what = format!(
                "antialiased seed {seed} {w}x{h} {}",
                ctx.info().kernel_path()
            );
            compare_close(&what, &got, &want, 1e-4, 1e-3).unwrap();
            let classic = gpu_render(ctx, &g, &cam, 3);
            let alpha = |img: &[f32]| img.chunks_exact(4).map(|p| p[3]).sum::<f32>();
            let (aa, cl) = (alpha(&got), alpha(&classic));
            assert!(
                aa < cl,
                "{what}: total alpha {aa} (antialiased) vs {cl} (classic)"
            );
        }
    }
}

#[test]
fn zero_gaussians_give_the_background() {
    let ctx = both_paths()[1];
    let cam = camera(40, 30, [0.25, 0.5, 0.75]);
    let got = gpu_render(ctx, &CpuGaussians::default(), &cam, 0);
    for px in got.chunks_exact(4) {
        assert_eq!(px, [0.25, 0.5, 0.75, 0.0]);
    }
}

#[test]
fn invisible_gaussians_leave_the_image_bit_identical() {
    for ctx in both_paths() {
        let cam = camera(64, 48, [0.0; 3]);
        let base = random_gaussians(5, 200, 1.0, 0.08);
        let before = gpu_render(ctx, &base, &cam, 3);
        let mut more = base.clone();
        let extra = random_gaussians(6, 50, 1.0, 0.08);
        for i in 0..extra.means.len() {
            let mut mean = extra.means[i];
            let mut logit = extra.opacity_logits[i];
            if i % 2 == 0 {
                mean[2] = -10.0; // behind the camera (camera at z = -5 looking +z)
            } else {
                logit = -30.0; // fully transparent
            }
            more.means.push(mean);
            more.log_scales.push(extra.log_scales[i]);
            more.quats.push(extra.quats[i]);
            more.opacity_logits.push(logit);
            more.sh.push(extra.sh[i]);
        }
        let after = gpu_render(ctx, &more, &cam, 3);
        assert!(
            before == after,
            "image changed by invisible Gaussians (max diff {:e})",
            max_abs_diff(&after, &before)
        );
    }
}

#[test]
fn huge_straddling_and_non_finite_gaussians_poison_nothing() {
    for ctx in both_paths_both_layouts(false) {
        let cam = camera(64, 48, [0.0; 3]);
        let mut g = random_gaussians(7, 100, 1.0, 0.08);
        let clean = g.clone();
        // Huge, and straddling the near plane (camera at z = -5).
        g.means.push([0.0, 0.0, 0.0]);
        g.log_scales.push([5.0, 5.0, 5.0]);
        g.means.push([0.0, 0.0, -5.0]);
        g.log_scales.push([0.0, 0.0, 0.0]);
        for _ in 0..2 {
            g.quats.push([1.0, 0.0, 0.0, 0.0]);
            g.opacity_logits.push(0.0);
            g.sh.push([[0.1; 3]; 16]);
        }
        let got = gpu_render(ctx, &g, &cam, 3);
        assert!(
            got.iter().all(|v| v.is_finite()),
            "NaN with huge/straddling Gaussians"
        );
        // NaN and infinite parameters are culled and change nothing.
        let mut bad = clean.clone();
        for (k, value) in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY]
            .into_iter()
            .enumerate()
        {
            for field in 0..4 {
                let mut m = [0.1 * k as f32, 0.0, 0.0];
                let mut s = [-2.0; 3];
                let mut q = [1.0, 0.0, 0.0, 0.0];
                let mut o = 1.0;
                match field {
                    0 => m[1] = value,
                    1 => s[2] = value,
                    2 => q[3] = value,
                    _ => o = value,
                }
                bad.means.push(m);
                bad.log_scales.push(s);
                bad.quats.push(q);
                bad.opacity_logits.push(o);
                bad.sh.push([[0.2; 3]; 16]);
            }
        }
        let with_bad = gpu_render(ctx, &bad, &cam, 3);
        let without = gpu_render(ctx, &clean, &cam, 3);
        assert!(with_bad.iter().all(|v| v.is_finite()));
        // +inf opacity logits give opacity 1: a valid splat. Everything else must be culled.
        let max = max_abs_diff(&with_bad, &without);
        assert!(
            max < 1.0,
            "non-finite parameters changed the image by {max}"
        );
    }
}

#[test]
fn the_same_inputs_give_a_bit_identical_image() {
    for ctx in both_paths() {
        let g = random_gaussians(8, 1500, 1.5, 0.06);
        let cam = camera(100, 70, [0.3; 3]);
        let a = gpu_render(ctx, &g, &cam, 3);
        let b = gpu_render(ctx, &g, &cam, 3);
        assert!(a == b, "two renders differ");
    }
}

#[test]
fn rendering_allocates_nothing_after_warm_up() {
    let ctx = wgsplat::testing::fresh_context(false);
    let g = random_gaussians(9, 2000, 1.5, 0.05);
    let cam = camera(96, 64, [0.0; 3]);
    let mut enc = ctx.encoder("upload");
    let tensors =
        GaussianTensors::upload(&mut enc, &g, 3, MemoryCategory::Parameters, "test").unwrap();
    ctx.submit(enc).unwrap();
    let mut created = None;
    let baseline = ctx.memory_report().total.live_bytes;
    for frame in 0..6 {
        let out = render(
            &ctx,
            &tensors,
            &cam,
            RenderOptions {
                sh_degree: 3,
                ..Default::default()
            },
        )
        .unwrap();
        drop(out);
        ctx.wait_idle().unwrap();
        let report = ctx.memory_report();
        assert_eq!(
            report.total.live_bytes, baseline,
            "frame {frame}: scratch not returned"
        );
        if frame >= 2 {
            let c = *created.get_or_insert(report.buffers_created);
            assert_eq!(report.buffers_created, c, "frame {frame} created buffers");
        }
    }
}

/// The depth outputs against the CPU reference: the alpha-weighted depth everywhere, and the
/// median depth (the splat where the accumulated opacity reaches 0.5) on all but 0.2% of the
/// pixels (where rounding near 0.5 could pick the neighbouring splat).
#[test]
fn depths_match_cpu_reference() {
    let g = random_gaussians(41, 600, 1.5, 0.08);
    let cam = camera(80, 60, [0.1, 0.2, 0.3]);
    let want = reference::render(&g, &cam, 0);
    for ctx in both_paths() {
        let mut enc = ctx.encoder("upload");
        let tensors =
            GaussianTensors::upload(&mut enc, &g, 3, MemoryCategory::Parameters, "test").unwrap();
        ctx.submit(enc).unwrap();
        let out = render(ctx, &tensors, &cam, RenderOptions::default()).unwrap();
        let got = out.depth.read::<f32>(ctx).unwrap();
        let path = ctx.info().kernel_path();
        let weighted: Vec<f32> = got.chunks_exact(2).map(|d| d[0]).collect();
        let want_weighted: Vec<f32> = want.depth.iter().map(|d| d[0]).collect();
        compare_close(
            &format!("weighted depth ({path})"),
            &weighted,
            &want_weighted,
            1e-4,
            1e-4,
        )
        .unwrap();
        let medians: Vec<f32> = got.chunks_exact(2).map(|d| d[1]).collect();
        let want_medians: Vec<f32> = want.depth.iter().map(|d| d[1]).collect();
        let found = want_medians.iter().filter(|&&m| m > 0.0).count();
        assert!(
            found > medians.len() / 3,
            "the scene must cover most pixels: {found}"
        );
        let mismatched = medians
            .iter()
            .zip(&want_medians)
            .filter(|(a, b)| (*a - *b).abs() > 1e-4 * (1.0 + b.abs()))
            .count();
        // Measured: 0 of 4,800 on both paths.
        assert!(
            mismatched <= medians.len() / 500,
            "median depth ({path}): {mismatched} of {} pixels differ from the reference",
            medians.len()
        );
    }
}

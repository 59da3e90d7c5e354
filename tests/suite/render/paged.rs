//! The rasterizer in chunks: with 64 KiB pages a page holds 1365 splats, so a scene of several
//! thousand visible splats renders in 4+ chunks. Its image, depth, alpha and consumed counts must
//! match the single-chunk render (and the CPU reference), and its gradients the single-chunk
//! gradients; on both kernel paths.

use crate::common;

use common::camera;
use wgsplat::splat::backward::BackwardOptions;
use wgsplat::splat::forward::{ForwardOutput, RenderOptions, render};
use wgsplat::splat::raster::splat_rows_per_page;
use wgsplat::splat::reference::{self, CpuGaussians};
use wgsplat::splat::{Camera, GaussianTensors};
use wgsplat::testing::{
    TestRng, both_paths_both_layouts, both_paths_small_pages, compare_close, compare_exact,
    max_abs_diff,
};
use wgsplat::{Error, GpuContext, MemoryCategory};

/// `n` small splats filling the view of `camera(64, 64, ..)`. With `depth_follows_x`, depth grows
/// with x, so the chunks (ranges of depth) cover different tiles and many tiles have chunks with
/// no intersections.
fn crowded_scene(seed: u64, n: usize, depth_follows_x: bool) -> CpuGaussians {
    let mut rng = TestRng::new(seed);
    let mut g = CpuGaussians::default();
    for _ in 0..n {
        let x = rng.range(-2.6, 2.6);
        let z = if depth_follows_x {
            0.5 * x + rng.range(-0.1, 0.1)
        } else {
            rng.range(-1.5, 1.5)
        };
        g.means.push([x, rng.range(-2.6, 2.6), z]);
        let s = rng.range(0.015, 0.05).ln();
        g.log_scales.push([s, s + rng.range(-0.3, 0.3), s]);
        g.quats.push([
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
        ]);
        g.opacity_logits.push(rng.range(-1.0, 6.0));
        let mut sh = [[0f32; 3]; 16];
        for (k, c) in sh.iter_mut().enumerate() {
            let amp = if k == 0 { 1.0 } else { 0.2 };
            *c = [
                rng.range(-amp, amp),
                rng.range(-amp, amp),
                rng.range(-amp, amp),
            ];
        }
        g.sh.push(sh);
    }
    g
}

struct Rendered {
    rgba: Vec<f32>,
    depth: Vec<f32>,
    consumed: Vec<u32>,
    chunks: usize,
    visible: u64,
    /// Gradient of every parameter, flattened, and of every projected row.
    grads: Vec<f32>,
    v_projected: Vec<f32>,
}

fn upload(ctx: &GpuContext, g: &CpuGaussians) -> GaussianTensors {
    let mut enc = ctx.encoder("upload");
    let t = GaussianTensors::upload(&mut enc, g, 3, MemoryCategory::Parameters, "p").unwrap();
    ctx.submit(enc).unwrap();
    t
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

fn backward(
    ctx: &GpuContext,
    params: &GaussianTensors,
    fwd: &ForwardOutput,
    v_image: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let (grads, out) = common::run_backward(ctx, params, fwd, v_image, BackwardOptions::default());
    (
        flat(&grads.download(ctx).unwrap()),
        out.v_projected.read::<f32>(ctx).unwrap(),
    )
}

fn render_and_backward(
    ctx: &GpuContext,
    g: &CpuGaussians,
    cam: &Camera,
    v_image: &[f32],
) -> Rendered {
    let params = upload(ctx, g);
    let options = RenderOptions {
        sh_degree: 3,
        ..Default::default()
    };
    let fwd = render(ctx, &params, cam, options).unwrap();
    let (grads, v_projected) = backward(ctx, &params, &fwd, v_image);
    Rendered {
        rgba: fwd.image.read::<f32>(ctx).unwrap(),
        depth: fwd.depth.read::<f32>(ctx).unwrap(),
        consumed: fwd.consumed.read::<u32>(ctx).unwrap(),
        chunks: fwd.num_chunks(),
        visible: fwd.num_visible,
        grads,
        v_projected,
    }
}

#[test]
fn chunked_render_and_gradients_match_one_chunk() {
    let cam = camera(64, 64, [0.2, 0.4, 0.6]);
    let mut rng = TestRng::new(40);
    let v_image = rng.vec_f32((cam.width * cam.height * 4) as usize, -1.0, 1.0);
    for (seed, n, depth_follows_x) in [(41u64, 5000usize, false), (42, 4500, true)] {
        let g = crowded_scene(seed, n, depth_follows_x);
        let want_cpu: Vec<f32> = reference::render(&g, &cam, 3)
            .rgba
            .iter()
            .flatten()
            .copied()
            .collect();
        for (one, paged) in both_paths_both_layouts(false)
            .into_iter()
            .zip(both_paths_both_layouts(true))
        {
            let what = format!(
                "seed {seed} ({}, {})",
                paged.info().kernel_path(),
                paged.variant().name()
            );
            let single = render_and_backward(one, &g, &cam, &v_image);
            let chunked = render_and_backward(paged, &g, &cam, &v_image);
            assert_eq!(single.chunks, 1, "{what}");
            assert_eq!(chunked.visible, single.visible, "{what}");
            assert!(
                chunked.chunks >= 3 && chunked.visible > 2 * splat_rows_per_page(paged),
                "{what}: {} visible splats in {} chunks; the test needs 3 or more",
                chunked.visible,
                chunked.chunks
            );
            eprintln!(
                "{what}: {} visible in {} chunks; {} of {} pixels opaque; max image diff vs one chunk {:e}",
                chunked.visible,
                chunked.chunks,
                single.rgba.chunks_exact(4).filter(|p| p[3] > 0.999).count(),
                single.rgba.len() / 4,
                max_abs_diff(&chunked.rgba, &single.rgba)
            );
            // Every pixel composites the same splats in the same order: bit-identical.
            compare_exact(&format!("{what} rgba"), &chunked.rgba, &single.rgba).unwrap();
            compare_exact(&format!("{what} depth"), &chunked.depth, &single.depth).unwrap();
            compare_exact(
                &format!("{what} consumed"),
                &chunked.consumed,
                &single.consumed,
            )
            .unwrap();
            compare_close(
                &format!("{what} vs CPU"),
                &chunked.rgba,
                &want_cpu,
                1e-4,
                1e-3,
            )
            .unwrap();
            let scale = single.grads.iter().fold(0f32, |m, v| m.max(v.abs()));
            compare_close(
                &format!("{what} parameter gradients"),
                &chunked.grads,
                &single.grads,
                1e-5 * scale,
                1e-3,
            )
            .unwrap();
            let scale = single.v_projected.iter().fold(0f32, |m, v| m.max(v.abs()));
            compare_close(
                &format!("{what} projected gradients"),
                &chunked.v_projected,
                &single.v_projected,
                1e-5 * scale,
                1e-3,
            )
            .unwrap();
        }
    }
}

#[test]
fn more_visible_splats_than_one_page_holds_render() {
    // 7 pages of splats, a handful of intersections each: only the splats outgrow a page.
    let cam = camera(48, 40, [0.0; 3]);
    let g = crowded_scene(43, 9_000, false);
    for ctx in both_paths_small_pages() {
        let params = upload(ctx, &g);
        let fwd = render(ctx, &params, &cam, RenderOptions::default()).unwrap();
        assert!(fwd.num_visible > 5 * splat_rows_per_page(ctx));
        assert_eq!(fwd.num_chunks(), fwd.splats.num_pages());
        let image = fwd.image.read::<f32>(ctx).unwrap();
        assert!(image.iter().all(|v| v.is_finite()));
    }
}

#[test]
fn intersections_beyond_one_binding_are_a_reported_error() {
    // Large splats on the small-page context: I exceeds one 16,384-element binding.
    let cam = camera(64, 64, [0.0; 3]);
    let mut g = crowded_scene(44, 3000, false);
    for s in &mut g.log_scales {
        *s = [0.6f32.ln(); 3];
    }
    let ctx = both_paths_small_pages()[1];
    let params = upload(ctx, &g);
    match render(ctx, &params, &cam, RenderOptions::default()) {
        Err(Error::Overflow { what, .. }) => assert!(what.contains("intersections"), "{what}"),
        Err(e) => panic!("expected an overflow error, got {e}"),
        Ok(out) => panic!(
            "{} intersections fit one 64 KiB binding; the test needs more",
            out.num_intersections
        ),
    }
}

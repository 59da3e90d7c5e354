//! One tile covered by more splats than a CPU adapter's shader may loop over in one dispatch.
//! llvmpipe (lavapipe) leaves every loop of an invocation once the invocation has run 65,535 loop
//! iterations in all, so a tile's run of tens of thousands of intersections in one dispatch lost
//! its back splats in the forward pass (NaN or missing colour) and its front splats' gradients in
//! the backward. The rasterizers now split such runs over several dispatches on CPU adapters; the
//! image must match the CPU reference and every splat's colour gradient its CPU value, on both
//! kernel paths.

use crate::common;

use common::camera;
use wgsplat::splat::backward::{BackwardOptions, V_STRIDE};
use wgsplat::splat::forward::{RenderOptions, render};
use wgsplat::splat::reference::{self, CpuGaussians};
use wgsplat::splat::{Camera, GaussianTensors};
use wgsplat::testing::{TestRng, both_paths, compare_close};
use wgsplat::{GpuContext, MemoryCategory};

/// Faint specks in front (each pixel keeps most of its transmittance through all of them), then
/// a wall of larger, denser splats behind that ends every pixel: with `specks` over 60,000 the
/// one-tile image's run up to the last contributor is longer than one llvmpipe invocation could
/// loop over.
fn specks_before_a_wall(seed: u64, specks: usize, wall: usize) -> CpuGaussians {
    let mut rng = TestRng::new(seed);
    let mut g = CpuGaussians::default();
    for k in 0..specks + wall {
        let is_wall = k >= specks;
        let (z, scale, opacity) = if is_wall {
            (rng.range(1.0, 1.5), 0.5, 0.5f32)
        } else {
            (rng.range(-1.0, 0.0), 0.12, 0.012)
        };
        g.means
            .push([rng.range(-2.7, 2.7), rng.range(-2.7, 2.7), z]);
        let s = f32::ln(scale);
        g.log_scales.push([s, s, s]);
        g.quats.push([1.0, 0.0, 0.0, 0.0]);
        g.opacity_logits.push((opacity / (1.0 - opacity)).ln());
        let mut sh = [[0f32; 3]; 16];
        sh[0] = [
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
        ];
        g.sh.push(sh);
    }
    g
}

/// Per Gaussian, Σ over pixels of alpha × transmittance where it blends: the gradient of the
/// image's red channel summed over pixels with respect to the splat's red colour (the compositing
/// of [`reference::render`]); and the longest run of depth-ordered splats a pixel composites up
/// to its last contributor.
fn red_weights(g: &CpuGaussians, cam: &Camera) -> (Vec<f32>, usize) {
    let mut splats: Vec<_> = (0..g.means.len())
        .filter_map(|i| reference::project(g, i, cam, 0))
        .collect();
    splats.sort_by(|p, q| p.depth.total_cmp(&q.depth).then(p.index.cmp(&q.index)));
    let mut weights = vec![0f32; g.means.len()];
    let mut longest = 0;
    for py in 0..cam.height {
        for px in 0..cam.width {
            let (cx, cy) = (px as f32 + 0.5, py as f32 + 0.5);
            let mut t = 1f32;
            for (k, s) in splats.iter().enumerate() {
                let (dx, dy) = (s.xy[0] - cx, s.xy[1] - cy);
                let power =
                    -0.5 * (s.conic[0] * dx * dx + s.conic[2] * dy * dy) - s.conic[1] * dx * dy;
                if power > 0.0 {
                    continue;
                }
                let alpha = (s.opacity * power.exp()).min(0.999);
                if alpha < 1.0 / 255.0 {
                    continue;
                }
                let next_t = t * (1.0 - alpha);
                if next_t <= 1e-4 {
                    break;
                }
                weights[s.index] += alpha * t;
                t = next_t;
                longest = longest.max(k + 1);
            }
        }
    }
    (weights, longest)
}

fn upload(ctx: &GpuContext, g: &CpuGaussians) -> GaussianTensors {
    let mut enc = ctx.encoder("upload");
    let t = GaussianTensors::upload(&mut enc, g, 0, MemoryCategory::Parameters, "p").unwrap();
    ctx.submit(enc).unwrap();
    t
}

#[test]
fn a_tile_of_more_splats_than_one_dispatch_may_loop_over_renders_and_backpropagates() {
    let cam = camera(16, 16, [0.1, 0.2, 0.3]);
    let g = specks_before_a_wall(50, 62_000, 1_000);
    let want: Vec<f32> = reference::render(&g, &cam, 0)
        .rgba
        .iter()
        .flatten()
        .copied()
        .collect();
    let (want_red, longest) = red_weights(&g, &cam);
    assert!(
        longest > 60_000,
        "the longest pixel run is {longest} splats; the test needs over 60,000"
    );
    let v_image: Vec<f32> = (0..cam.width * cam.height)
        .flat_map(|_| [1.0, 0.0, 0.0, 0.0])
        .collect();
    for ctx in both_paths() {
        let what = ctx.info().kernel_path();
        let params = upload(ctx, &g);
        let fwd = render(ctx, &params, &cam, RenderOptions::default()).unwrap();
        let rgba = fwd.image.read::<f32>(ctx).unwrap();
        compare_close(&format!("{what} image vs CPU"), &rgba, &want, 1e-4, 1e-3).unwrap();
        let (_, out) =
            common::run_backward(ctx, &params, &fwd, &v_image, BackwardOptions::default());
        let rows = out.v_projected.read::<f32>(ctx).unwrap();
        let red: Vec<f32> = rows
            .chunks_exact(V_STRIDE as usize)
            .map(|row| row[6])
            .collect();
        let scale = want_red.iter().fold(0f32, |m, v| m.max(v.abs()));
        compare_close(
            &format!("{what} colour gradients vs CPU"),
            &red,
            &want_red,
            1e-4 * scale,
            1e-3,
        )
        .unwrap();
    }
}

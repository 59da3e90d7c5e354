//! The rasterizer's normals (each Gaussian's shortest axis in camera space, turned towards the
//! camera, composited with the colour's weights) against the CPU reference: on both kernel paths
//! and layouts, in chunks of small pages, through a pinhole and through a lens; and the colour,
//! depth and consumed counts of a render with normals bit-identical to one without.

use crate::common::{camera, random_gaussians};
use wgsplat::splat::forward::{ForwardOutput, RenderOptions, render};
use wgsplat::splat::reference::{self, CpuGaussians};
use wgsplat::splat::{Camera, CameraLens, GaussianTensors};
use wgsplat::testing::{both_paths_both_layouts, compare_close};
use wgsplat::{GpuContext, MemoryCategory};

fn render_with(ctx: &GpuContext, g: &CpuGaussians, cam: &Camera, normals: bool) -> ForwardOutput {
    let mut enc = ctx.encoder("upload");
    let tensors =
        GaussianTensors::upload(&mut enc, g, 3, MemoryCategory::Parameters, "test").unwrap();
    ctx.submit(enc).unwrap();
    let options = RenderOptions {
        normals,
        ..Default::default()
    };
    render(ctx, &tensors, cam, options).unwrap()
}

fn lens_camera() -> Camera {
    let mut cam = camera(64, 48, [0.2, 0.1, 0.0]);
    cam.lens = CameraLens::perspective([-0.2, 0.03, 0.0, 0.0, 0.0, 0.0], [0.002, -0.001]);
    cam
}

#[test]
fn normals_match_cpu_reference() {
    let g = random_gaussians(52, 3000, 1.5, 0.05);
    for (what, cam) in [
        ("pinhole", camera(64, 48, [0.1, 0.2, 0.3])),
        ("lens", lens_camera()),
    ] {
        let want = reference::render(&g, &cam, 0);
        let want_normals: Vec<f32> = want.normals.iter().flatten().copied().collect();
        let covered = want.rgba.iter().filter(|p| p[3] > 0.5).count();
        assert!(
            covered > want.rgba.len() / 3,
            "{what}: the scene must cover most pixels: {covered}"
        );
        let mut chunked = false;
        for ctx in both_paths_both_layouts(true) {
            let out = render_with(ctx, &g, &cam, true);
            chunked |= out.num_chunks() > 1;
            let got = out.normals.as_ref().expect("normals asked for");
            let got = got.read::<f32>(ctx).unwrap();
            let path = ctx.info().kernel_path();
            compare_close(
                &format!("{what} normals ({path}, {} chunks)", out.num_chunks()),
                &got,
                &want_normals,
                1e-4,
                1e-4,
            )
            .unwrap();
            // Where a pixel is covered, its normal faces the camera: the composite of unit
            // normals pointing back along the ray has a negative component along it.
            let facing = got
                .chunks_exact(3)
                .zip(&want.rgba)
                .filter(|(_, p)| p[3] > 0.5)
                .filter(|(n, _)| n[0] * n[0] + n[1] * n[1] + n[2] * n[2] > 0.01)
                .count();
            assert!(
                facing > covered / 2,
                "{what}: {facing} of {covered} pixels carry a normal"
            );
        }
        assert!(
            chunked,
            "{what}: the small pages must split the splats into chunks"
        );
    }
}

#[test]
fn normals_leave_colour_and_depth_bit_identical() {
    let g = random_gaussians(53, 800, 1.5, 0.08);
    let cam = lens_camera();
    for ctx in both_paths_both_layouts(false) {
        let plain = render_with(ctx, &g, &cam, false);
        let with = render_with(ctx, &g, &cam, true);
        assert!(plain.normals.is_none());
        let bits = |t: &wgsplat::Tensor| -> Vec<u32> {
            t.read::<f32>(ctx)
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        assert_eq!(bits(&plain.image), bits(&with.image), "colour");
        assert_eq!(bits(&plain.depth), bits(&with.depth), "depth");
        let consumed = |t: &wgsplat::Tensor| t.read::<u32>(ctx).unwrap();
        assert_eq!(
            consumed(&plain.consumed),
            consumed(&with.consumed),
            "consumed"
        );
    }
}

#[test]
fn a_flat_disc_seen_from_either_side_faces_the_camera() {
    // One flat Gaussian in the plane z = 0, its short axis along world z, seen from +z and -z:
    // the normal points back at the camera both times.
    let g = CpuGaussians {
        means: vec![[0.0, 0.0, 0.0]],
        log_scales: vec![[0.5f32.ln(), 0.5f32.ln(), 0.01f32.ln()]],
        quats: vec![[1.0, 0.0, 0.0, 0.0]],
        opacity_logits: vec![4.0],
        sh: vec![[[0.5; 3]; 16]],
    };
    let views = [
        (-5.0, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
        (5.0, [[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]]),
    ];
    for (from, rows) in views {
        let cam = Camera::centred(rows, [0.0, 0.0, from], 40.0, [48, 48], [0.01, 100.0]);
        for ctx in both_paths_both_layouts(false) {
            let out = render_with(ctx, &g, &cam, true);
            let normals = out.normals.as_ref().unwrap().read::<f32>(ctx).unwrap();
            let alpha: Vec<f32> = out
                .image
                .read::<f32>(ctx)
                .unwrap()
                .chunks_exact(4)
                .map(|p| p[3])
                .collect();
            let centre = 24 * 48 + 24;
            let n = &normals[3 * centre..3 * centre + 3];
            let a = alpha[centre];
            assert!(a > 0.9, "the disc covers the centre: alpha {a}");
            // Camera space: the camera looks along +z, so facing it means z < 0.
            assert!(
                (n[2] / a + 1.0).abs() < 1e-4 && n[0].abs() < 1e-4 && n[1].abs() < 1e-4,
                "seen from z = {from}: normal {n:?} at alpha {a}"
            );
        }
    }
}

//! Geometry renders that share a colour render's projection and sorts
//! (`splat::geometry::record_geometry_raster`) are bit for bit the renders with the geometry as
//! colour, on black, through a pinhole and a fisheye on both kernel paths, and leave the colour
//! render as it was; a geometry render's backward pass with `accumulate` adds its gradients to
//! the colour's, which it leaves otherwise untouched, and refuses to add the SH colour's.

use crate::common::{self, camera, random_gaussians};
use wgsplat::splat::backward::{BackwardOptions, record_backward};
use wgsplat::splat::forward::{
    ColourSource, ForwardOutput, RenderOptions, record_binning, record_projection, record_raster,
    render,
};
use wgsplat::splat::geometry::record_geometry_raster;
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::splat::{AlphaMode, Camera, CameraLens, GaussianTensors};
use wgsplat::tensor::Tensor;
use wgsplat::testing::{TestRng, both_paths, compare_close};
use wgsplat::{GpuContext, MemoryCategory};

fn upload(ctx: &GpuContext, g: &CpuGaussians) -> GaussianTensors {
    let mut enc = ctx.encoder("upload");
    let t = GaussianTensors::upload(&mut enc, g, 3, MemoryCategory::Parameters, "p").unwrap();
    ctx.submit(enc).unwrap();
    t
}

fn options(colour: ColourSource, normals: bool) -> RenderOptions {
    RenderOptions {
        sh_degree: 3,
        alpha_mode: AlphaMode::Smooth,
        normals,
        colour,
        ..Default::default()
    }
}

/// The colour render and the moments and normals renders sharing its sort.
fn shared_renders(
    ctx: &GpuContext,
    params: &GaussianTensors,
    cam: &Camera,
) -> (ForwardOutput, ForwardOutput, ForwardOutput) {
    let mut enc = ctx.encoder("projection");
    let projection =
        record_projection(&mut enc, params, cam, options(ColourSource::Sh, true)).unwrap();
    ctx.submit(enc).unwrap();
    let counted = projection.read_counts(ctx).unwrap();
    let mut enc = ctx.encoder("renders");
    let binned = record_binning(&mut enc, counted).unwrap();
    let moments = record_geometry_raster(&mut enc, &binned, ColourSource::DepthMoments).unwrap();
    let normals = record_geometry_raster(&mut enc, &binned, ColourSource::Normal).unwrap();
    let colour = record_raster(&mut enc, binned.without_normals()).unwrap();
    ctx.submit(enc).unwrap();
    (colour, moments, normals)
}

fn fisheye_camera(background: [f32; 3]) -> Camera {
    let mut cam = camera(40, 28, background);
    cam.lens = CameraLens::fisheye([0.02, -0.01, 0.0, 0.0], [0.0; 2], [0.0; 2]);
    cam
}

fn same_bits(ctx: &GpuContext, a: &Tensor, b: &Tensor, what: &str) {
    let (a, b) = (a.read::<f32>(ctx).unwrap(), b.read::<f32>(ctx).unwrap());
    assert_eq!(a.len(), b.len(), "{what}: sizes");
    let differ = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x.to_bits() != y.to_bits());
    assert!(differ.is_none(), "{what}: first difference at {differ:?}");
}

#[test]
fn geometry_renders_sharing_the_sort_are_the_separate_renders_bit_for_bit() {
    let g = random_gaussians(31, 24, 0.6, 0.25);
    let background = [0.3, 0.5, 0.7];
    for cam in [camera(40, 28, background), fisheye_camera(background)] {
        let black = Camera {
            background: [0.0; 3],
            ..cam.clone()
        };
        for ctx in both_paths() {
            let path = ctx.info().kernel_path();
            let params = upload(ctx, &g);
            let (colour, moments, normals) = shared_renders(ctx, &params, &cam);
            let alone = render(ctx, &params, &cam, options(ColourSource::Sh, false)).unwrap();
            same_bits(
                ctx,
                &colour.image,
                &alone.image,
                &format!("colour ({path})"),
            );
            assert!(
                colour.normals.is_none(),
                "the colour render composites no normals"
            );
            for (shared, source) in [
                (&moments, ColourSource::DepthMoments),
                (&normals, ColourSource::Normal),
            ] {
                let alone = render(ctx, &params, &black, options(source, false)).unwrap();
                same_bits(
                    ctx,
                    &shared.image,
                    &alone.image,
                    &format!("{source:?} ({path})"),
                );
            }
        }
    }
}

#[test]
fn a_geometry_backward_pass_adds_its_gradients_to_the_colours() {
    let g = random_gaussians(32, 12, 0.6, 0.25);
    let cam = camera(40, 28, [0.0; 3]);
    let pixels = 40 * 28 * 4;
    let v_colour = TestRng::new(33).vec_f32(pixels, -1.0, 1.0);
    let v_moments = TestRng::new(34).vec_f32(pixels, -1.0, 1.0);
    for ctx in both_paths() {
        let path = ctx.info().kernel_path();
        let params = upload(ctx, &g);
        let (colour, moments, _) = shared_renders(ctx, &params, &cam);
        let moments_options = BackwardOptions {
            colour: ColourSource::DepthMoments,
            ..Default::default()
        };
        let (alone_colour, _) =
            common::run_backward(ctx, &params, &colour, &v_colour, Default::default());
        let (alone_moments, _) =
            common::run_backward(ctx, &params, &moments, &v_moments, moments_options);
        let mut enc = ctx.encoder("both");
        let grads =
            GaussianTensors::zeros_like(&mut enc, &params, MemoryCategory::Gradients, "g").unwrap();
        let image = |enc: &mut wgsplat::gpu::Encoder, v: &[f32]| {
            Tensor::from_slice(enc, v, colour.image.shape(), MemoryCategory::Other, "v").unwrap()
        };
        let (v1, v2) = (image(&mut enc, &v_colour), image(&mut enc, &v_moments));
        record_backward(
            &mut enc,
            &params,
            &colour,
            &v1,
            &grads,
            None,
            Default::default(),
        )
        .unwrap();
        let adding = BackwardOptions {
            accumulate: true,
            ..moments_options
        };
        record_backward(&mut enc, &params, &moments, &v2, &grads, None, adding).unwrap();
        ctx.submit(enc).unwrap();
        let both = grads.download(ctx).unwrap();
        let (a, b) = (
            alone_colour.download(ctx).unwrap(),
            alone_moments.download(ctx).unwrap(),
        );
        let flat = |g: &CpuGaussians| -> Vec<f32> {
            let mut v: Vec<f32> = g.means.iter().flatten().copied().collect();
            v.extend(g.log_scales.iter().flatten());
            v.extend(g.quats.iter().flatten());
            v.extend(&g.opacity_logits);
            v
        };
        let sum: Vec<f32> = flat(&a).iter().zip(flat(&b)).map(|(x, y)| x + y).collect();
        let scale = sum.iter().fold(0f32, |m, v| m.max(v.abs()));
        assert!(
            flat(&b).iter().any(|&v| v != 0.0),
            "the moments must have gradients"
        );
        compare_close(
            &format!("colour + moments gradients ({path})"),
            &flat(&both),
            &sum,
            1e-5 * scale,
            1e-5,
        )
        .unwrap();
        let sh = |g: &CpuGaussians| {
            g.sh.iter()
                .flatten()
                .flatten()
                .copied()
                .collect::<Vec<f32>>()
        };
        assert_eq!(sh(&both), sh(&a), "the SH gradients are the colour's alone");
        let mut enc = ctx.encoder("refused");
        let refused = BackwardOptions {
            accumulate: true,
            ..Default::default()
        };
        let err = record_backward(&mut enc, &params, &colour, &v1, &grads, None, refused)
            .err()
            .expect("the SH colour's backward cannot add");
        assert!(err.to_string().contains("accumulate"), "{err}");
    }
}

//! The near plane: a trainer draws every view with the dataset's default near plane (a fifth of
//! the median spacing of the training cameras) unless told otherwise, so a Gaussian right in
//! front of a held-out camera is not drawn there; the GPU's culling matches the CPU reference's.

use super::*;
use wgsplat::data::near_plane::NEAR_PLANE_FRACTION;
use wgsplat::splat::forward::{RenderOptions, render};
use wgsplat::splat::reference::{self, CpuGaussians};
use wgsplat::splat::{Camera, GaussianTensors};
use wgsplat::testing::{both_paths, compare_close, max_abs_diff};
use wgsplat::{GpuContext, MemoryCategory};

/// The built-in scene at 32² with its sixth view held out, and the initial Gaussians plus an
/// opaque one half the default near plane in front of the held-out camera.
fn veiled_scene(ctx: &GpuContext, config: &TrainConfig) -> (Dataset, CpuGaussians) {
    let scene = generate(&BuiltinOptions {
        resolution: 32,
        train_views: 12,
        test_views: 0,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let mut train = scene.train.clone();
    let held_out = train.remove(5);
    let camera = held_out.camera.clone();
    let dataset = Dataset::new(train, vec![held_out], scene.points.clone());
    let mut cpu = initial_gaussians(ctx, &dataset, config)
        .unwrap()
        .download(ctx)
        .unwrap();
    // Half the near plane along the optical axis: world = Rᵀ (c − t) for c = (0, 0, depth).
    let depth = 0.5 * dataset.default_near_plane();
    let r = &camera.rotation;
    let t = &camera.translation;
    let mean: [f32; 3] =
        std::array::from_fn(|k| r[0][k] * -t[0] + r[1][k] * -t[1] + r[2][k] * (depth - t[2]));
    cpu.means.push(mean);
    cpu.log_scales.push([(0.5 * depth).ln(); 3]);
    cpu.quats.push([1.0, 0.0, 0.0, 0.0]);
    cpu.opacity_logits.push(6.0);
    let mut sh = [[0.0; 3]; 16];
    sh[0] = [1.5; 3];
    cpu.sh.push(sh);
    (dataset, cpu)
}

fn upload(ctx: &GpuContext, cpu: &CpuGaussians, degree: u32) -> GaussianTensors {
    let mut enc = ctx.encoder("near-plane upload");
    let params =
        GaussianTensors::upload(&mut enc, cpu, degree, MemoryCategory::Parameters, "params")
            .unwrap();
    ctx.submit(enc).unwrap();
    params
}

fn cpu_render(g: &CpuGaussians, camera: &Camera) -> Vec<f32> {
    reference::render(g, camera, 0)
        .rgba
        .iter()
        .flatten()
        .copied()
        .collect()
}

#[test]
fn a_trainer_draws_with_the_datasets_near_plane_and_culls_as_the_reference_does() {
    let config = short_config(60);
    let ctx = fresh_context(false);
    let (dataset, cpu) = veiled_scene(&ctx, &config);
    let default = dataset.default_near_plane();
    let centres: Vec<[f32; 3]> = dataset.train.iter().map(|v| v.camera.position()).collect();
    let spacing = wgsplat::geometry::nearest_others(&centres, 1)
        .median_spacing()
        .unwrap();
    assert!((default - NEAR_PLANE_FRACTION * spacing).abs() < 1e-6 && default > 0.05);

    // PSNR of the held-out view, drawn with the trainer's near plane.
    let score = |near_plane: Option<f32>| {
        let params = upload(&ctx, &cpu, config.sh_degree);
        let config = TrainConfig {
            near_plane,
            ..config.clone()
        };
        let trainer = Trainer::new(&ctx, dataset.clone(), params, config).unwrap();
        let near = trainer.near_plane();
        assert_eq!(trainer.config().near_plane, Some(near));
        assert!(trainer.dataset().views().all(|v| v.camera.near == near));
        (
            trainer.evaluate().unwrap().psnr,
            trainer.dataset().test[0].camera.clone(),
        )
    };
    let (culled, camera) = score(None);
    assert_eq!(camera.near, default);
    let (veiled, _) = score(Some(0.01));
    println!(
        "held-out view: {culled:.2} dB at the default near plane {default}, {veiled:.2} dB at 0.01"
    );
    assert!(culled > veiled + 3.0, "{culled:.2} against {veiled:.2} dB");

    // The GPU's culling at that near plane against the CPU reference, on both kernel paths.
    let want = cpu_render(&cpu, &camera);
    let veiled_want = cpu_render(
        &cpu,
        &Camera {
            near: 0.01,
            ..camera.clone()
        },
    );
    assert!(
        max_abs_diff(&want, &veiled_want) > 0.5,
        "the veil changes nothing"
    );
    for ctx in both_paths() {
        let params = upload(ctx, &cpu, 3);
        let options = RenderOptions {
            sh_degree: 0,
            ..Default::default()
        };
        let got = render(ctx, &params, &camera, options).unwrap();
        let got = got.image.read::<f32>(ctx).unwrap();
        compare_close("held-out view at the near plane", &got, &want, 2e-3, 1e-3).unwrap();
    }
}

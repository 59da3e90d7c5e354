//! Camera pose refinement on the built-in scene with its training poses perturbed (a few
//! degrees and a few percent of the scene): with `pose_opt` the corrected poses come closer to
//! the true ones and the held-out views (true poses) score higher than without.

use wgsplat::data::Dataset;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::splat::Camera;
use wgsplat::splat::pose::PoseCorrection;
use wgsplat::testing::{TestRng, fresh_context};
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::{TrainConfig, Trainer};

/// Rotation between two cameras (degrees) and the distance of their centres.
fn pose_error(a: &Camera, b: &Camera) -> (f64, f64) {
    let (ra, rb) = (a.rotation, b.rotation);
    // trace(Ra Rbᵀ)
    let trace: f64 = (0..3)
        .map(|i| {
            (0..3)
                .map(|k| f64::from(ra[i][k]) * f64::from(rb[i][k]))
                .sum::<f64>()
        })
        .sum();
    let angle = ((trace - 1.0) / 2.0).clamp(-1.0, 1.0).acos().to_degrees();
    let (ca, cb) = (a.position(), b.position());
    let d = (0..3)
        .map(|k| f64::from(ca[k] - cb[k]).powi(2))
        .sum::<f64>()
        .sqrt();
    (angle, d)
}

/// The mean distance in pixels between where `camera` and `truth` project `points` (those in
/// front of both).
fn reprojection_error(camera: &Camera, truth: &Camera, points: &[[f32; 3]]) -> f64 {
    let project = |c: &Camera, p: [f32; 3]| {
        let q = c.to_camera(p);
        (q[2] > 0.1).then(|| {
            [
                f64::from(c.fx * q[0] / q[2] + c.cx),
                f64::from(c.fy * q[1] / q[2] + c.cy),
            ]
        })
    };
    let (mut sum, mut count) = (0.0, 0usize);
    for &p in points {
        if let (Some(a), Some(b)) = (project(camera, p), project(truth, p)) {
            sum += ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt();
            count += 1;
        }
    }
    sum / count.max(1) as f64
}

/// Errors of `cameras` against the true ones, averaged: rotation (degrees), centre (fraction of
/// the extent) and the reprojection of the scene's points (pixels).
fn mean_error(cameras: &[Camera], truth: &[Camera], extent: f64, points: &[[f32; 3]]) -> [f64; 3] {
    let n = cameras.len() as f64;
    let mut out = [0.0; 3];
    for (c, t) in cameras.iter().zip(truth) {
        let (a, d) = pose_error(c, t);
        out[0] += a / n;
        out[1] += d / extent / n;
        out[2] += reprojection_error(c, t, points) / n;
    }
    out
}

fn config(pose_opt: bool) -> TrainConfig {
    TrainConfig {
        iterations: 400,
        densify_from: 100,
        densify_every: 100,
        densify_until: 300,
        opacity_reset_every: 100_000,
        sh_degree_interval: 200,
        loss_readback_every: 50,
        lpips: false,
        pose_opt,
        pose_lr_init: 1.5e-2,
        pose_lr_final: 1e-4,
        pose_opt_from: 50,
        ..TrainConfig::default()
    }
}

/// Trains `dataset` and returns the test PSNR and the training cameras it ended with.
fn train(dataset: Dataset, config: TrainConfig) -> (f64, Vec<Camera>) {
    let ctx = fresh_context(false);
    let params = initial_gaussians(&ctx, &dataset, &config).unwrap();
    let mut trainer = Trainer::new(&ctx, dataset, params, config).unwrap();
    let iterations = trainer.config().iterations;
    trainer
        .run_until(iterations, &mut |_| {}, &|| false)
        .unwrap();
    let psnr = trainer.evaluate().unwrap().psnr;
    let cameras = (0..trainer.dataset().train.len())
        .map(|v| trainer.training_camera(v))
        .collect();
    (psnr, cameras)
}

#[test]
fn pose_refinement_recovers_perturbed_poses_and_scores_higher() {
    let truth = generate(&BuiltinOptions {
        resolution: 48,
        train_views: 12,
        test_views: 4,
        // A quarter of the default cloud: a step costs about a third as much, and the recovery
        // keeps its margins (measured: 2.00° / 2.10 px -> 0.95° / 0.77 px, +2.17 dB).
        points: 1000,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let extent = f64::from(truth.extent);
    let true_cameras: Vec<Camera> = truth.train.iter().map(|v| v.camera.clone()).collect();
    // Each training pose turned 2° about a random axis and shifted 2% of the extent.
    let mut rng = TestRng::new(7);
    let mut perturbed = truth.clone();
    for view in &mut perturbed.train {
        let unit = |rng: &mut TestRng| {
            let v: [f64; 3] = std::array::from_fn(|_| f64::from(rng.range(-1.0, 1.0)));
            let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            v.map(|x| x / n)
        };
        let axis = unit(&mut rng);
        let dir = unit(&mut rng);
        let wrong = PoseCorrection {
            translation: dir.map(|x| x * 0.02 * extent),
            rotation: axis.map(|x| x * 2f64.to_radians()),
        };
        view.camera = wrong.apply(&view.camera);
    }
    let given: Vec<Camera> = perturbed.train.iter().map(|v| v.camera.clone()).collect();
    let points = truth.points.as_ref().unwrap().positions.clone();
    let before = mean_error(&given, &true_cameras, extent, &points);
    let (psnr_fixed, _) = train(perturbed.clone(), config(false));
    let (psnr_refined, refined) = train(perturbed, config(true));
    let after = mean_error(&refined, &true_cameras, extent, &points);
    eprintln!(
        "pose error {:.2}° / {:.2}% of the extent / {:.2} px -> {:.2}° / {:.2}% / {:.2} px; test PSNR {psnr_fixed:.2} dB without, {psnr_refined:.2} dB with pose refinement",
        before[0],
        100.0 * before[1],
        before[2],
        after[0],
        100.0 * after[1],
        after[2]
    );
    // The rotation and where the scene lands in the image are recovered; the centre is weakly
    // observed at this size (a turn and a sideways shift look alike from a few units away), and
    // the scene itself may drift with the cameras.
    assert!(
        after[0] < 0.6 * before[0] && after[2] < 0.6 * before[2],
        "poses not recovered: {before:?} -> {after:?}"
    );
    assert!(
        psnr_refined > psnr_fixed + 1.0,
        "pose refinement scored {psnr_refined:.2} dB against {psnr_fixed:.2} without"
    );
}

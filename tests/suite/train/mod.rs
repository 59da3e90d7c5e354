//! Short training runs on lavapipe: the built-in scene and the NeRF duck must improve clearly, the
//! memory must stay bounded, densification must keep the optimizer aligned, and a resumed run must
//! equal an uninterrupted one.

use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::data::{Dataset, LoadOptions, Resolution, Split};
use wgsplat::testing::fresh_context;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::{TrainConfig, Trainer};

mod clearance;
mod densification;
mod near_plane;
mod refinement_schedule;

fn short_config(iterations: u64) -> TrainConfig {
    TrainConfig {
        iterations,
        densify_from: 40,
        densify_every: 40,
        densify_until: iterations - 39,
        opacity_reset_every: 100_000,
        sh_degree_interval: 100,
        loss_readback_every: 25,
        random_init_points: 2_000,
        // These tests compare PSNR; LPIPS (tests/suite/fitting/lpips.rs) would only add time.
        lpips: false,
        ..TrainConfig::default()
    }
}

fn train_and_measure(dataset: Dataset, config: TrainConfig) -> (f64, f64, u64, u64) {
    let ctx = fresh_context(false);
    let params = initial_gaussians(&ctx, &dataset, &config).unwrap();
    let start_count = params.len();
    let mut trainer = Trainer::new(&ctx, dataset, params, config).unwrap();
    let before = trainer.evaluate().unwrap().psnr;
    trainer.run(&mut |_| {}, &|| false).unwrap();
    let after = trainer.evaluate().unwrap().psnr;
    (before, after, start_count, trainer.params().len())
}

#[test]
fn builtin_scene_improves_clearly() {
    let dataset = generate(&BuiltinOptions {
        resolution: 48,
        train_views: 16,
        test_views: 4,
        // 1,500 points instead of 4,000: a step costs about a third as much.
        points: 1500,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let (before, after, start, end) = train_and_measure(dataset, short_config(200));
    eprintln!("built-in 48²: test PSNR {before:.2} -> {after:.2} dB, Gaussians {start} -> {end}");
    assert!(
        after > before + 3.0,
        "test PSNR went from {before:.2} to {after:.2} dB"
    );
    assert!(end != start, "densification should change the model");
}

#[test]
fn nerf_duck_improves_clearly() {
    let Some(root) = wgsplat::testing::shared_data("data/duck") else {
        return;
    };
    let options = LoadOptions {
        resolution: Resolution::Factor(8),
        split: Split::Default,
        ..LoadOptions::default()
    };
    let mut dataset = Dataset::load(&root, &options).unwrap();
    dataset.test.truncate(5);
    let (before, after, start, end) = train_and_measure(dataset, short_config(200));
    eprintln!("duck 32²: test PSNR {before:.2} -> {after:.2} dB, Gaussians {start} -> {end}");
    assert!(
        after > before + 3.0,
        "test PSNR went from {before:.2} to {after:.2} dB"
    );
}

/// A NaN in the model is caught at the next loss readback, and a checkpoint of the broken model
/// is refused, so the last good checkpoint stays on disk untouched.
#[test]
fn nan_stops_training_and_keeps_the_last_good_checkpoint() {
    let dataset = generate(&BuiltinOptions {
        resolution: 24,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let ctx = fresh_context(false);
    let config = TrainConfig {
        iterations: 50,
        loss_readback_every: 2,
        densify_from: 1_000,
        densify_until: 1_000,
        ..TrainConfig::default()
    };
    let params = initial_gaussians(&ctx, &dataset, &config).unwrap();
    let mut trainer = Trainer::new(&ctx, dataset, params, config).unwrap();
    for _ in 0..2 {
        trainer.step().unwrap();
    }
    let dir = std::env::temp_dir().join(format!("wgsplat-nan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("checkpoint.bin");
    trainer
        .save_checkpoint(&path, &serde_json::Value::Null)
        .unwrap();
    let good = std::fs::read(&path).unwrap();

    let sh_dc = &trainer.params().sh_dc;
    let mut enc = ctx.encoder("poison");
    sh_dc
        .write(&mut enc, &vec![f32::NAN; sh_dc.len() as usize])
        .unwrap();
    ctx.submit(enc).unwrap();
    let error = (0..4)
        .find_map(|_| trainer.step().err())
        .expect("the NaN loss was not detected within two readbacks");
    let text = error.to_string();
    assert!(
        matches!(error, wgsplat::Error::NonFinite { .. }) && text.contains("sh_dc"),
        "{text}"
    );
    let refused = trainer.save_checkpoint(&path, &serde_json::Value::Null);
    assert!(
        matches!(refused, Err(wgsplat::Error::NonFinite { .. })),
        "a NaN model was saved: {refused:?}"
    );
    assert!(
        std::fs::read(&path).unwrap() == good,
        "the good checkpoint changed"
    );
    let entries = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(entries, 1, "a temporary file was left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A model trained on white has white where the views are empty; scoring it on black would count
/// that as error (the bug that made a white-trained duck score 5 dB). One huge white Gaussian
/// stands in for such a model: on the training background it matches every empty pixel.
#[test]
fn evaluation_uses_the_training_background() {
    use wgsplat::MemoryCategory;
    use wgsplat::splat::GaussianTensors;
    use wgsplat::splat::reference::CpuGaussians;
    use wgsplat::train::Background;
    let ctx = fresh_context(false);
    let dataset = generate(&BuiltinOptions {
        resolution: 24,
        train_views: 2,
        test_views: 2,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let white_dc = 0.5 / 0.282_094_8;
    let mut sh = [[0f32; 3]; 16];
    sh[0] = [white_dc; 3];
    let model = CpuGaussians {
        means: vec![dataset.center],
        log_scales: vec![[(20.0f32).ln(); 3]],
        quats: vec![[1.0, 0.0, 0.0, 0.0]],
        opacity_logits: vec![8.0],
        sh: vec![sh],
    };
    let score = |background| {
        let mut enc = ctx.encoder("model");
        let params =
            GaussianTensors::upload(&mut enc, &model, 3, MemoryCategory::Parameters, "p").unwrap();
        ctx.submit(enc).unwrap();
        let config = TrainConfig {
            background,
            ..TrainConfig::default()
        };
        let trainer = Trainer::new(&ctx, dataset.clone(), params, config).unwrap();
        trainer.evaluate().unwrap().psnr
    };
    let (on_white, on_black) = (score(Background::White), score(Background::Black));
    eprintln!("white model scored on white {on_white:.2} dB, on black {on_black:.2} dB");
    assert!(
        on_white > on_black + 5.0,
        "{on_white:.2} vs {on_black:.2} dB"
    );
}

/// Trains the built-in scene for 50 iterations (a densification step included) on a fresh
/// context and writes the model as a PLY; returns its bytes.
fn fifty_iterations_as_ply(portable: bool, run: u32) -> Vec<u8> {
    let dataset = generate(&BuiltinOptions {
        resolution: 48,
        train_views: 8,
        test_views: 2,
        // A quarter of the default cloud: enough to densify, at a third of the cost per step.
        points: 1000,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let config = TrainConfig {
        iterations: 50,
        densify_from: 20,
        densify_every: 20,
        densify_until: 45,
        opacity_reset_every: 100_000,
        sh_degree_interval: 20,
        loss_readback_every: 25,
        random_init_points: 2_000,
        ..TrainConfig::default()
    };
    let ctx = fresh_context(portable);
    let params = initial_gaussians(&ctx, &dataset, &config).unwrap();
    let start = params.len();
    let mut trainer = Trainer::new(&ctx, dataset, params, config).unwrap();
    trainer.run(&mut |_| {}, &|| false).unwrap();
    assert_ne!(trainer.params().len(), start, "the run should densify");
    let path = std::env::temp_dir().join(format!(
        "wgsplat-determinism-{}-{portable}-{run}.ply",
        std::process::id()
    ));
    wgsplat::io::model::save_gpu_model_as_ply(
        &ctx,
        trainer.params(),
        &path,
        Some(trainer.near_plane()),
    )
    .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    bytes
}

/// Issue 13: no kernel of a training step sums floats in an order that depends on scheduling
/// (the rasterizer's backward writes per-intersection rows and sums them in a fixed order), so
/// two runs on multi-threaded lavapipe give the same bits, on both kernel paths.
#[test]
fn training_twice_writes_byte_identical_models() {
    for portable in [true, false] {
        let first = fifty_iterations_as_ply(portable, 0);
        let second = fifty_iterations_as_ply(portable, 1);
        let differing = first.iter().zip(&second).filter(|(a, b)| a != b).count();
        assert!(
            first.len() == second.len() && differing == 0,
            "portable = {portable}: the two PLY files differ ({} and {} bytes, {differing} bytes differ)",
            first.len(),
            second.len()
        );
    }
}

/// Issue 14: the library's defaults follow the measured recipe: gsplat's opacity learning rate
/// (0.05 beat INRIA's 0.025 on duck_colmap and on the built-in scene with 3DGS's pruning opacity;
/// captures trained by `wgsplat train` use 0.025 with their own pruning, `CAPTURE_OPACITY_LR`), no
/// screen-size pruning, densification by the summed gradient unless `absgrad` is asked for.
#[test]
fn defaults_follow_the_measured_recipe() {
    let c = TrainConfig::default();
    assert_eq!(c.opacity_lr, 0.05);
    assert_eq!(c.prune_screen_radius, 0.0);
    assert!(!c.absgrad);
    assert_eq!(c.absgrad_threshold, 8e-4);
}

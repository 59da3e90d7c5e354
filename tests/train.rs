//! Short training runs on lavapipe: the built-in scene and the NeRF duck must improve clearly, the
//! memory must stay bounded, densification must keep the optimizer aligned, and a resumed run must
//! equal an uninterrupted one.

use std::path::PathBuf;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::data::{Dataset, LoadOptions, Resolution, Split};
use wgsplat::testing::fresh_context;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::{TrainConfig, Trainer};

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
        ..TrainConfig::default()
    }
}

fn train_and_measure(dataset: Dataset, config: TrainConfig) -> (f64, f64, u64, u64) {
    let ctx = fresh_context(false);
    let params = initial_gaussians(&ctx, &dataset, &config).unwrap();
    let start_count = params.len();
    let mut trainer = Trainer::new(&ctx, dataset, params, config).unwrap();
    let (before, _) = trainer.evaluate().unwrap();
    trainer.run(&mut |_| {}, &|| false).unwrap();
    let (after, _) = trainer.evaluate().unwrap();
    (before, after, start_count, trainer.params().len())
}

#[test]
fn builtin_scene_improves_clearly() {
    let dataset = generate(&BuiltinOptions {
        resolution: 48,
        train_views: 16,
        test_views: 4,
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
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/duck");
    if !root.exists() {
        eprintln!("skipping: ../shared/data/duck is not present");
        return;
    }
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

// Training images that do not fit the host memory kept for them: read from disk at each upload
// to the GPU cache (never more often), with the same model as images kept in memory; and a
// COLMAP capture loaded past its host budget, which streams the views that do not fit.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::data::{Dataset, ImageSource, LoadOptions, Resolution};
use wgsplat::testing::fresh_context;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::{TrainConfig, Trainer};
use wgsplat::{DType, GpuContext, Tensor};

const SIDE: u32 = 32;

fn config(image_cache: Option<u64>) -> TrainConfig {
    TrainConfig {
        iterations: 24,
        densify_from: 8,
        densify_every: 8,
        densify_until: 17,
        opacity_reset_every: 100_000,
        sh_degree_interval: 5,
        lpips: false,
        image_cache,
        ..TrainConfig::default()
    }
}

/// Trains `dataset` and returns the model's bits and the trainer's cache counts.
fn train(ctx: &GpuContext, dataset: Dataset, config: TrainConfig) -> (Vec<u32>, (u64, u64)) {
    let params = initial_gaussians(ctx, &dataset, &config).unwrap();
    let mut trainer = Trainer::new(ctx, dataset, params, config).unwrap();
    while trainer.iteration() < trainer.config().iterations {
        trainer.step().unwrap();
    }
    let stats = trainer.image_cache().stats();
    let bits = trainer
        .params()
        .attributes()
        .iter()
        .flat_map(|a| a.read::<f32>(ctx).unwrap())
        .map(f32::to_bits)
        .collect();
    (bits, (stats.uploads, stats.disk_reads))
}

/// The built-in scene with every training view streamed from a source that counts its reads.
fn streamed(dataset: &Dataset, reads: &Arc<AtomicUsize>) -> Dataset {
    let mut out = dataset.clone();
    for view in &mut out.train {
        let (image, reads) = (view.image.clone(), Arc::clone(reads));
        view.stream_from(ImageSource::new(move || {
            reads.fetch_add(1, Ordering::Relaxed);
            Ok(image.clone())
        }));
        assert!(view.is_streamed() && view.image.pixels.is_empty());
    }
    out
}

#[test]
fn streamed_views_are_read_once_per_upload_and_train_the_same_model() {
    let ctx = fresh_context(false);
    let dataset = generate(&BuiltinOptions {
        resolution: SIDE,
        train_views: 4,
        test_views: 2,
        points: 500,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let slot = Tensor::planned_bytes(&ctx, DType::U32, u64::from(SIDE * SIDE));
    let (in_memory, (uploads, disk_reads)) = train(&ctx, dataset.clone(), config(None));
    assert_eq!((uploads, disk_reads), (4, 0));
    // Every view fits the GPU cache: each is read from disk once in 6 epochs.
    let reads = Arc::new(AtomicUsize::new(0));
    let (bits, (uploads, disk_reads)) = train(&ctx, streamed(&dataset, &reads), config(None));
    assert_eq!(bits, in_memory, "streamed views trained another model");
    assert_eq!((uploads, disk_reads), (4, 4));
    assert_eq!(reads.load(Ordering::Relaxed), 4, "a view was read twice");
    // Two slots for four views: a read per upload, and the same model.
    let reads = Arc::new(AtomicUsize::new(0));
    let two_slots = config(Some(2 * slot));
    let (bits, (uploads, disk_reads)) = train(&ctx, streamed(&dataset, &reads), two_slots);
    assert_eq!(
        bits, in_memory,
        "streamed views through 2 slots trained another model"
    );
    assert!(uploads > 4, "{uploads} uploads through 2 slots");
    assert_eq!(disk_reads, uploads);
    assert_eq!(reads.load(Ordering::Relaxed) as u64, uploads);
}

#[test]
fn a_capture_past_its_host_budget_reads_the_rest_from_disk() {
    let Some(root) = wgsplat::testing::shared_data("data/castle_colmap") else {
        return;
    };
    let options = LoadOptions {
        resolution: Resolution::Factor(8),
        ..LoadOptions::default()
    };
    let kept = Dataset::load(&root, &options).unwrap();
    let bytes = kept.train[0].image.pixels.len() as u64;
    let budget = 3 * bytes;
    let streaming = Dataset::load(
        &root,
        &LoadOptions {
            host_image_budget: Some(budget),
            ..options.clone()
        },
    )
    .unwrap();
    let views: Vec<_> = streaming.views().collect();
    let streamed = views.iter().filter(|v| v.is_streamed()).count();
    assert_eq!(streamed, views.len() - 3, "3 views fit {budget} bytes");
    let note = streaming
        .notes
        .iter()
        .find(|n| n.contains("read from disk"));
    assert!(
        note.is_some_and(|n| n.starts_with(&format!("{streamed} images"))),
        "{:?}",
        streaming.notes
    );
    // Each streamed view reads back as the kept one.
    for (a, b) in kept.views().zip(streaming.views()) {
        assert_eq!(a.image, b.resident().unwrap().image, "{}", a.name);
    }
    let ctx = fresh_context(false);
    let config = TrainConfig {
        iterations: 12,
        ..config(Some(2 * bytes))
    };
    let (a, _) = train(&ctx, kept, config.clone());
    let (b, (uploads, disk_reads)) = train(&ctx, streaming, config);
    assert_eq!(a, b, "the streamed capture trained another model");
    assert!(
        disk_reads > 0 && disk_reads <= uploads,
        "{disk_reads} of {uploads}"
    );
}

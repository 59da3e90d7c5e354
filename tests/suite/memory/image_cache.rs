// The GPU cache of training images (src/train/image_cache.rs): its least-recently-used policy
// replayed on the CPU over the trainer's own view order, the slots it holds, results that do not
// depend on its size, uploads only on first use when everything fits, a budget too small for one
// image, and the bits of a view read back from a slot that views of another shape share.

use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::data::image::pack_rgba8;
use wgsplat::data::{Dataset, RgbaImage, View};
use wgsplat::loss::{LossOptions, record_metrics};
use wgsplat::testing::fresh_context;
use wgsplat::train::budget::{apply_memory_budget, plan_budget_with, plan_evaluation};
use wgsplat::train::image_cache::ImageCachePlan;
use wgsplat::train::image_cache::{ImageCache, ImageCacheStats};
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::{TrainConfig, Trainer};
use wgsplat::{DType, GpuContext, MemoryCategory, Tensor};

const SIDE: u32 = 32;
/// Every other view is cropped to this width, so the views have two sizes.
const NARROW: u32 = 24;
const LABEL: &str = "dataset/image_cache";

/// The built-in scene at 32² with `views` training views and no test views (evaluation then
/// scores the training views, through the cache), every odd view cropped to 24×32: its camera
/// keeps its intrinsics, the image loses its right-hand columns.
fn mixed_sizes(views: usize) -> Dataset {
    let full = generate(&BuiltinOptions {
        resolution: SIDE,
        train_views: views,
        test_views: 0,
        points: 500,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let crop = |(i, view): (usize, &View)| {
        if i % 2 == 0 {
            return view.clone();
        }
        let row = |y: u32| {
            let start = (y * SIDE * 4) as usize;
            view.image.pixels[start..start + (NARROW * 4) as usize].to_vec()
        };
        let mut camera = view.camera.clone();
        camera.width = NARROW;
        View {
            camera,
            image: RgbaImage {
                width: NARROW,
                height: SIDE,
                pixels: (0..SIDE).flat_map(row).collect(),
            },
            ..view.clone()
        }
    };
    let train = full.train.iter().enumerate().map(crop).collect();
    Dataset::new(train, Vec::new(), full.points.clone())
}

/// Bytes of one slot (the largest view, 32² packed).
fn slot_bytes(ctx: &GpuContext) -> u64 {
    Tensor::planned_bytes(ctx, DType::U32, u64::from(SIDE * SIDE))
}

/// 21 iterations (7 epochs of 3 views) with a densification and evaluations of the training
/// views on the way.
fn config(image_cache: Option<u64>) -> TrainConfig {
    TrainConfig {
        iterations: 21,
        densify_from: 8,
        densify_every: 8,
        densify_until: 17,
        opacity_reset_every: 100_000,
        sh_degree_interval: 5,
        eval_every: 10,
        lpips: false,
        image_cache,
        ..TrainConfig::default()
    }
}

fn trainer(ctx: &GpuContext, image_cache: Option<u64>) -> Trainer {
    let dataset = mixed_sizes(3);
    let config = config(image_cache);
    let params = initial_gaussians(ctx, &dataset, &config).unwrap();
    Trainer::new(ctx, dataset, params, config).unwrap()
}

/// Least recently used over `capacity` slots, on the CPU: the resident views, most recent first.
struct Replay {
    capacity: usize,
    order: Vec<usize>,
    stats: ImageCacheStats,
}

impl Replay {
    fn access(&mut self, view: usize) {
        match self.order.iter().position(|&v| v == view) {
            Some(at) => {
                self.stats.hits += 1;
                self.order.remove(at);
            }
            None => {
                self.stats.uploads += 1;
                if self.order.len() == self.capacity {
                    self.order.pop();
                    self.stats.evictions += 1;
                }
            }
        }
        self.order.insert(0, view);
    }
}

fn model_bits(ctx: &GpuContext, trainer: &Trainer) -> Vec<u32> {
    let params = trainer.params();
    params
        .attributes()
        .iter()
        .flat_map(|a| a.read::<f32>(ctx).unwrap())
        .map(f32::to_bits)
        .collect()
}

/// (a) A cache of 2 slots over 3 views of two sizes: after every step its resident views, most
/// recent first, and its counts are those of a CPU replay of LRU over the views the trainer
/// picked (`Trainer::view_for`, the view just trained first), evaluations do not disturb it, and
/// the allocator never holds more than 2 slots under its label.
#[test]
fn a_two_slot_cache_is_lru_over_the_training_order() {
    let ctx = fresh_context(false);
    let slot = slot_bytes(&ctx);
    let mut trainer = trainer(&ctx, Some(2 * slot));
    assert_eq!(trainer.image_cache().capacity_slots(), 2);
    assert_eq!(trainer.image_cache().capacity_bytes(), 2 * slot);
    let mut replay = Replay {
        capacity: 2,
        order: Vec::new(),
        stats: ImageCacheStats::default(),
    };
    while trainer.iteration() < trainer.config().iterations {
        replay.access(trainer.view_for(trainer.iteration()));
        trainer.step().unwrap();
        let cache = trainer.image_cache();
        assert_eq!(
            cache.resident_views(),
            replay.order,
            "at {}",
            trainer.iteration()
        );
        assert_eq!(cache.stats(), replay.stats, "at {}", trainer.iteration());
        assert!(cache.slots_in_use() <= 2);
    }
    let stats = trainer.image_cache().stats();
    println!("2 slots, 3 views, 21 iterations: {stats:?}");
    // The seed's order has both: a test of the policy, not of an always-missing cache.
    assert!(stats.hits > 0 && stats.evictions > 0, "{stats:?}");
    assert_eq!(stats.uploads + stats.hits, 21);
    let used = ctx.memory_report().by_label[LABEL];
    assert_eq!((used.live_bytes, used.peak_bytes), (2 * slot, 2 * slot));
}

/// (b) The same training with every view resident gives the same model, bit for bit, and the
/// same scores: the cache changes where the images wait, never what training sees.
#[test]
fn the_cache_size_never_changes_the_model() {
    let ctx = fresh_context(false);
    let mut runs = Vec::new();
    for image_cache in [Some(2 * slot_bytes(&ctx)), None] {
        let mut trainer = trainer(&ctx, image_cache);
        trainer.run(&mut |_| {}, &|| false).unwrap();
        let scores = trainer.evaluate().unwrap();
        let stats = trainer.image_cache().stats();
        println!("{image_cache:?}: {stats:?}, {:.4} dB", scores.psnr);
        runs.push((model_bits(&ctx, &trainer), scores.psnr.to_bits(), stats));
    }
    assert_ne!(runs[0].2, runs[1].2, "the two caches behaved alike");
    assert!(runs[0].0 == runs[1].0, "the 2-slot cache changed the model");
    assert_eq!(runs[0].1, runs[1].1, "the 2-slot cache changed the scores");
}

/// (c) When every view fits, nothing is uploaded at the start, each view is uploaded at its
/// first use, and never again: after 3 epochs, 3 uploads and 6 hits.
#[test]
fn when_all_fit_each_view_is_uploaded_once() {
    let ctx = fresh_context(false);
    let mut trainer = trainer(&ctx, None);
    let cache = trainer.image_cache();
    assert_eq!((cache.capacity_slots(), cache.slots_in_use()), (3, 0));
    assert!(cache.plan().all_resident());
    assert_eq!(cache.stats(), ImageCacheStats::default());
    trainer.step().unwrap();
    assert_eq!(trainer.image_cache().stats().uploads, 1);
    trainer.run_until(9, &mut |_| {}, &|| false).unwrap();
    let stats = trainer.image_cache().stats();
    let expected = ImageCacheStats {
        uploads: 3,
        hits: 6,
        evictions: 0,
        disk_reads: 0,
    };
    assert_eq!(stats, expected);
    assert!(trainer.image_cache().summary().contains("all resident"));
}

/// (d) A budget smaller than one image is refused before training, with the budget, the slot's
/// bytes and image size, the frame's bytes and the smallest budget that works, which does.
#[test]
fn a_budget_below_one_image_is_refused_with_the_figures() {
    let ctx = fresh_context(false);
    let dataset = mixed_sizes(2);
    let mut config = config(None);
    let slot = slot_bytes(&ctx);
    // The frame as the budget plans it: a training step or the evaluation, the larger.
    let evaluation = plan_evaluation(&ctx, &dataset, config.exposure, config.lpips);
    let frame = plan_budget_with(
        &ctx,
        slot / 2,
        config.sh_degree,
        config.optimizer_state,
        &dataset,
        None,
        evaluation,
    )
    .frame;
    let budget = format!("{}", slot / 2);
    let error = apply_memory_budget(&budget, &ctx, &dataset, 100, &mut config)
        .unwrap_err()
        .to_string();
    println!("{error}");
    let expected = format!(
        "{} bytes cannot hold one training image and one frame: a GPU image cache slot for the \
         largest training view (32x32 as RGBA8) takes {slot} bytes and one 32x32 frame's \
         buffers {frame} bytes, {} in all; raise --memory-budget to at least ",
        slot / 2,
        slot + frame
    );
    assert!(error.contains(&expected), "{error}");
    let rest = error.split("at least ").nth(1).unwrap();
    let smallest: u64 = rest.split(' ').next().unwrap().parse().unwrap();
    assert!(rest.contains("(one slot, one frame and the initial 100 Gaussians)"));
    let mut fits = config.clone();
    let plan = apply_memory_budget(&smallest.to_string(), &ctx, &dataset, 100, &mut fits).unwrap();
    assert!(plan.max_gaussians >= 100, "{plan:?}");
    assert_eq!(fits.image_cache, Some(plan.images));
    let short = (smallest - 1).to_string();
    assert!(apply_memory_budget(&short, &ctx, &dataset, 100, &mut config.clone()).is_err());
}

/// (e) Two views of different shapes (6×4 and 3×7) share one slot: each, once resident, reads
/// back as `pack_rgba8` of its pixels in its own shape, and the shorter one, a prefix of the
/// slot, scores as the same image uploaded on its own does.
#[test]
fn views_of_two_shapes_share_a_slot_and_read_back_packed() {
    let ctx = fresh_context(false);
    let base = mixed_sizes(2).train[0].clone();
    let view = |width: u32, height: u32, seed: u32| View {
        image: RgbaImage {
            width,
            height,
            pixels: (0..width * height * 4)
                .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8)
                .collect(),
        },
        ..base.clone()
    };
    let (wide, tall) = (view(6, 4, 1), view(3, 7, 2));
    let sizes = [(6u32, 4u32), (3, 7)];
    let mut cache = ImageCache::new(ImageCachePlan::for_views(&ctx, sizes, None, Some(1)));
    assert_eq!(cache.capacity_slots(), 1);
    let resident = |cache: &mut ImageCache, index: usize, v: &View| {
        let mut enc = ctx.encoder("test: resident");
        let tensor = cache.resident(&mut enc, index, v).unwrap();
        ctx.submit(enc).unwrap();
        tensor
    };
    let first = resident(&mut cache, 0, &wide);
    assert_eq!(first.shape(), [4, 6]);
    assert_eq!(
        first.read::<u32>(&ctx).unwrap(),
        pack_rgba8(&wide.image.pixels)
    );
    let second = resident(&mut cache, 1, &tall);
    assert!(second.shares_storage_with(&first), "not the same slot");
    assert_eq!(second.shape(), [7, 3]);
    assert_eq!(
        second.read::<u32>(&ctx).unwrap(),
        pack_rgba8(&tall.image.pixels)
    );
    assert!(cache.peek(0, &wide).unwrap().is_none());
    let again = resident(&mut cache, 0, &wide);
    assert_eq!(
        again.read::<u32>(&ctx).unwrap(),
        pack_rgba8(&wide.image.pixels)
    );
    let expected = ImageCacheStats {
        uploads: 3,
        hits: 0,
        evictions: 2,
        disk_reads: 0,
    };
    assert_eq!(cache.stats(), expected);
    // The 3×7 view through the slot (21 of its 24 words) against the same view on its own.
    let second = resident(&mut cache, 1, &tall);
    let mut enc = ctx.encoder("test: metrics");
    let rendered: Vec<f32> = (0..7 * 3 * 4).map(|i| (i % 11) as f32 / 10.0).collect();
    let rendered = Tensor::from_slice(
        &mut enc,
        &rendered,
        &[7, 3, 4],
        MemoryCategory::Other,
        "render",
    )
    .unwrap();
    let packed = pack_rgba8(&tall.image.pixels);
    let alone =
        Tensor::from_slice(&mut enc, &packed, &[7, 3], MemoryCategory::Other, "gt").unwrap();
    let options = LossOptions {
        background: Some([0.0; 3]),
        ..Default::default()
    };
    let via_slot = record_metrics(&mut enc, &rendered, &second, &options).unwrap();
    let on_its_own = record_metrics(&mut enc, &rendered, &alone, &options).unwrap();
    ctx.submit(enc).unwrap();
    let bits = |t: &Tensor| -> Vec<u32> {
        t.read::<f32>(&ctx)
            .unwrap()
            .into_iter()
            .map(f32::to_bits)
            .collect()
    };
    assert_eq!(bits(&via_slot), bits(&on_its_own));
}

/// (f) A view whose render target passes the adapter's binding limit (a photograph trained at
/// full size) is refused when the trainer is made, before anything is uploaded, naming the view,
/// its size and how much smaller it must be; the same view at half the side trains.
#[test]
fn a_view_past_the_binding_limit_is_refused_naming_it() {
    let ctx = fresh_context(false);
    let max_pixels = ctx.page_bytes() / 16;
    let side = (max_pixels as f64).sqrt().floor() as u32 + 1;
    let with_large_view = |side: u32| {
        let mut dataset = mixed_sizes(2);
        let view = &mut dataset.train[1];
        view.name = "large.jpg".into();
        view.camera.width = side;
        view.camera.height = side;
        view.camera.cx = side as f32 / 2.0;
        view.camera.cy = side as f32 / 2.0;
        view.image = RgbaImage {
            width: side,
            height: side,
            pixels: vec![128; side as usize * side as usize * 4],
        };
        dataset
    };
    let config = config(None);
    let dataset = with_large_view(side);
    let params = initial_gaussians(&ctx, &dataset, &config).unwrap();
    let error = match Trainer::new(&ctx, dataset, params, config.clone()) {
        Ok(_) => panic!("a {side}² view past the binding limit was accepted"),
        Err(error) => error.to_string(),
    };
    println!("{error}");
    for part in [
        format!("view large.jpg ({side}×{side})"),
        format!("needs {}", u64::from(side) * u64::from(side) * 16),
        format!("at most {max_pixels} pixels per image"),
        "2× smaller on each side".to_string(),
    ] {
        assert!(error.contains(&part), "{part:?} missing from: {error}");
    }
    let dataset = with_large_view(side / 2);
    let params = initial_gaussians(&ctx, &dataset, &config).unwrap();
    assert!(Trainer::new(&ctx, dataset, params, config).is_ok());
}

// `--memory-budget` at a photograph's size (1024²), where one frame's buffers (render target,
// loss gradient, per-pixel and per-tile buffers: about 60 MB) outweigh thousands of Gaussians:
// they are paid once, never per Gaussian; the training images take a bounded GPU cache; and the
// plan's total, that cache included, bounds a measured training run.

use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::data::{Dataset, RgbaImage, View};
use wgsplat::optim::MomentStorage;
use wgsplat::testing::fresh_context;
use wgsplat::train::budget::{check_plan, plan_budget, plan_for_cache};
use wgsplat::train::image_cache::ImageCachePlan;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::{TrainConfig, Trainer};
use wgsplat::{DType, Tensor};

const SIDE: u32 = 1024;

/// The number after `label` in `text` (digits only).
fn number_after(text: &str, label: &str) -> u64 {
    let rest = text
        .split(label)
        .nth(1)
        .unwrap_or_else(|| panic!("no {label:?} in {text}"));
    rest.trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {label:?} in {text}"))
}

/// The 160-view town at 1024² (640 MiB of images as RGBA8) with a 384 MiB budget and 16,000
/// initial points. The images no longer need to fit whole: the GPU image cache takes a quarter of
/// the budget (24 slots of 4 MiB), and the 16,000 fit beside it. A tighter budget is refused with
/// the plan's figures, one frame's buffers charged once (not to every Gaussian, which read
/// 58,824,448 B per Gaussian and asked for 942 GB), and the smallest budget that works, exactly.
#[test]
fn a_1024_frame_is_paid_once_in_the_budget_and_its_error() {
    let ctx = fresh_context(false);
    let storage = MomentStorage::default();
    let cache = ImageCachePlan::for_views(&ctx, vec![(SIDE, SIDE); 160], None, None);
    let slot = Tensor::planned_bytes(&ctx, DType::U32, u64::from(SIDE * SIDE));
    assert_eq!(cache.slot_bytes, slot);
    let plan = plan_for_cache(&ctx, 384 << 20, 3, storage, cache, (SIDE, SIDE));
    assert_eq!(plan.cache.slots, 24, "{plan:?}");
    assert_eq!(plan.images, 24 * slot);
    assert!(plan.max_gaussians >= 16_000, "{plan:?}");
    assert!(check_plan(&ctx, &plan, 16_000).is_ok());
    // One frame: three 1024² RGBA f32 maps (render, loss gradient, raster carry), an image's
    // upload and more, but not a gigabyte.
    assert!(
        (48 << 20..256 << 20).contains(&plan.frame),
        "one frame's buffers planned at {} B",
        plan.frame
    );
    // Room for the frame and a few slots (a quarter of it: 5), not for 16,000 Gaussians beside
    // them.
    let tight = plan_for_cache(&ctx, plan.frame + 6 * slot, 3, storage, cache, (SIDE, SIDE));
    assert_eq!(tight.cache.slots, 5, "{tight:?}");
    assert!(tight.max_gaussians < 16_000, "{tight:?}");
    let error = check_plan(&ctx, &tight, 16_000).unwrap_err().to_string();
    println!("{error}");
    assert!(
        error.contains(&format!(
            "the GPU image cache takes {} bytes ({} slots of {slot} bytes for 1024x1024 views)",
            tight.images, tight.cache.slots
        )),
        "{error}"
    );
    let per_gaussian = number_after(&error, "each Gaussian about");
    let minimum = number_after(&error, "at least");
    // `bench memory`: 488 B persistent at SH 3; the frame scratch of a Gaussian (its projected
    // rows, sort keys, gradient rows and eight tile intersections) adds about as much again.
    assert!(
        (488..4096).contains(&per_gaussian),
        "{per_gaussian} B per Gaussian"
    );
    let at_minimum = plan_for_cache(&ctx, minimum, 3, storage, cache, (SIDE, SIDE));
    assert!(
        minimum < at_minimum.images + plan.frame + 16_000 * 4096,
        "minimum budget {minimum} B"
    );
    // The minimum it suggests is exact: it holds the 16,000 with the cache that budget buys, one
    // byte less does not.
    assert!(at_minimum.max_gaussians >= 16_000, "{at_minimum:?}");
    assert!(check_plan(&ctx, &at_minimum, 16_000).is_ok());
    let short = plan_for_cache(&ctx, minimum - 1, 3, storage, cache, (SIDE, SIDE));
    assert!(short.max_gaussians < 16_000, "{short:?}");
    // A budget with room: the cache takes its quarter (128 of the 160 views), the cap's
    // per-Gaussian figure is the same few hundred bytes, and the cache plus one frame plus the
    // cap's Gaussians add up to the budget.
    let roomy = plan_for_cache(&ctx, 2 << 30, 3, storage, cache, (SIDE, SIDE));
    assert_eq!(roomy.cache.slots, 128, "{roomy:?}");
    assert!((488..4096).contains(&roomy.per_gaussian), "{roomy:?}");
    let used = roomy.images + roomy.frame + roomy.max_gaussians * roomy.per_gaussian;
    assert!(
        used <= roomy.budget + roomy.max_gaussians && used > roomy.budget / 10 * 9,
        "{roomy:?} accounts for {used} B"
    );
}

/// The built-in scene's first view, scaled up to `SIDE`² (nearest pixel; the camera's
/// intrinsics scaled to match), with `points` sparse points: a 1024² capture without ray tracing
/// a million pixels.
fn dataset_at_1024(points: usize) -> Dataset {
    let small = generate(&BuiltinOptions {
        resolution: 64,
        train_views: 4,
        test_views: 1,
        points,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let scale = |view: &View| {
        let factor = SIDE / view.image.width;
        let mut pixels = Vec::with_capacity((SIDE * SIDE * 4) as usize);
        for y in 0..SIDE {
            for x in 0..SIDE {
                let i = (((y / factor) * view.image.width + x / factor) * 4) as usize;
                pixels.extend_from_slice(&view.image.pixels[i..i + 4]);
            }
        }
        let mut camera = view.camera.clone();
        let f = factor as f32;
        (camera.fx, camera.fy, camera.cx, camera.cy) =
            (camera.fx * f, camera.fy * f, camera.cx * f, camera.cy * f);
        (camera.width, camera.height) = (SIDE, SIDE);
        View {
            camera,
            image: RgbaImage {
                width: SIDE,
                height: SIDE,
                pixels,
            },
            ..view.clone()
        }
    };
    Dataset::new(
        small.train.iter().map(scale).collect(),
        small.test.iter().map(scale).collect(),
        small.points.clone(),
    )
}

/// Trains a few steps at 1024² over 4 views through an image cache of 2 slots from `points`
/// Gaussians and returns (N, the allocator's peak above the empty context, the plan's total for
/// N, the cache's evictions).
fn measured_and_planned(points: usize) -> (u64, u64, u64, u64) {
    let ctx = fresh_context(false);
    let dataset = dataset_at_1024(points);
    let slot = Tensor::planned_bytes(&ctx, DType::U32, u64::from(SIDE * SIDE));
    let config = TrainConfig {
        iterations: 100,
        densify_until: 0,
        lpips: false,
        sh_degree_interval: 1,
        image_cache: Some(2 * slot),
        ..TrainConfig::default()
    };
    let moments = config.optimizer_state;
    let plan = plan_budget(&ctx, u64::MAX / 4, 3, moments, &dataset, config.image_cache);
    assert_eq!(plan.cache.slots, 2, "{plan:?}");
    let baseline = ctx.memory_report().total.live_bytes;
    ctx.allocator().reset_peaks();
    let params = initial_gaussians(&ctx, &dataset, &config).unwrap();
    let mut trainer = Trainer::new(&ctx, dataset, params, config).unwrap();
    // Past the SH warm-up, so that every band is evaluated and differentiated.
    for _ in 0..5 {
        trainer.step().unwrap();
    }
    ctx.wait_idle().unwrap();
    let n = trainer.params().len();
    let peak = ctx.memory_report().total.peak_bytes - baseline;
    assert_eq!(trainer.image_cache().slots_in_use(), 2);
    let evictions = trainer.image_cache().stats().evictions;
    (n, peak, plan.planned_bytes(&ctx, n), evictions)
}

/// The plan's total for N Gaussians at 1024² against the allocator's peak over five steps: the
/// model, and the training images through a GPU cache of 2 slots for 4 views, so the steps evict
/// and upload (an upload's staging is live while its step records).
///
/// Measured on lavapipe (fast path): 4,000 Gaussians, 80,086,016 B measured, 80,822,272 B
/// planned (1.01×); 40,000 Gaussians, 107,840,512 B against 111,607,808 B (1.03×). Both frames
/// hold the backward's per-pixel carry (16 B a pixel: 16 MiB at 1024²), which a CPU adapter's
/// sliced backward allocates for any chunk of more than 2,048 splats, and which the plan always
/// reserves. The 4,000 Gaussians of the initial size cover the view about 20 deep (80,774
/// intersections, 20 a Gaussian): the plan's floor of 32 intersections a tile
/// ([`wgsplat::train::budget::PLANNED_DEPTH_PER_TILE`]) holds them where 8 a Gaussian would not.
/// Hence the bounds: never below the measured peak, and at most 1.5× it (room for the paths and
/// drivers whose pages or size classes differ, while still failing a plan that charges a frame's
/// buffers more than once).
#[test]
fn the_plan_bounds_a_training_run_at_1024() {
    for points in [4_000, 40_000] {
        let (n, measured, planned, evictions) = measured_and_planned(points);
        let ratio = planned as f64 / measured as f64;
        println!(
            "1024²: {n} Gaussians: measured peak {measured} B, planned {planned} B ({ratio:.3}x), {evictions} evictions"
        );
        // Five steps over four views in two slots: the cache evicted, and uploaded mid-run.
        assert!(evictions >= 2, "{evictions} evictions");
        assert!(
            planned >= measured,
            "{n} Gaussians: planned {planned} B below the measured peak {measured} B"
        );
        assert!(
            ratio <= 1.5,
            "{n} Gaussians: planned {planned} B is {ratio:.2}x the measured peak {measured} B"
        );
    }
}

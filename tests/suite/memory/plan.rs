//! The `--memory-budget` plan (src/train/budget.rs) against the allocator: its persistent part is
//! computed by the functions that size the real allocations, so it equals the live bytes exactly;
//! its per-frame part must bound a training step's measured transient peak from above, and not by
//! much, with the geometry regularisers' renders too.

use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::gpu::encoder::upload_staging_bytes;
use wgsplat::optim::MomentStorage;
use wgsplat::testing::fresh_context;
use wgsplat::train::budget::{
    frame_scratch_bytes, geometry_frame_bytes, plan_budget, planned_training_bytes,
};
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::state::ModelState;
use wgsplat::train::{TrainConfig, Trainer};
use wgsplat::{GpuContext, MemoryCategory};

const RESOLUTION: u32 = 64;

fn trainer(ctx: &GpuContext, points: usize) -> Trainer {
    trainer_with(ctx, points, MomentStorage::default())
}

fn trainer_with(ctx: &GpuContext, points: usize, optimizer_state: MomentStorage) -> Trainer {
    trainer_configured(ctx, points, |c| c.optimizer_state = optimizer_state)
}

fn trainer_configured(
    ctx: &GpuContext,
    points: usize,
    configure: impl FnOnce(&mut TrainConfig),
) -> Trainer {
    let dataset = generate(&BuiltinOptions {
        resolution: RESOLUTION,
        train_views: 1,
        test_views: 1,
        points,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let config = TrainConfig {
        iterations: 100,
        random_init_points: points,
        densify_until: 0,
        lpips: false,
        sh_degree_interval: 1,
        ..TrainConfig::default()
    };
    let mut config = config;
    configure(&mut config);
    let params = initial_gaussians(ctx, &dataset, &config).unwrap();
    Trainer::new(ctx, dataset, params, config).unwrap()
}

fn persistent_live(ctx: &GpuContext) -> u64 {
    let r = ctx.memory_report();
    r.live(MemoryCategory::Parameters)
        + r.live(MemoryCategory::Gradients)
        + r.live(MemoryCategory::OptimizerState)
}

#[test]
fn the_persistent_plan_is_the_allocators_live_bytes() {
    let ctx = fresh_context(true);
    for storage in [MomentStorage::Packed, MomentStorage::F32] {
        for points in [1_000, 20_000] {
            let t = trainer_with(&ctx, points, storage);
            let n = t.params().len();
            let planned = ModelState::planned_bytes(&ctx, n, t.config().sh_degree, storage);
            assert_eq!(planned, persistent_live(&ctx), "{n} Gaussians, {storage:?}");
            drop(t);
        }
    }
}

/// A training step's transient peak (everything allocated above the steady state) and its V, I.
fn measured_step(ctx: &GpuContext, points: usize) -> (u64, u64, f64, f64) {
    measured_step_of(ctx, trainer(ctx, points))
}

fn measured_step_of(ctx: &GpuContext, mut t: Trainer) -> (u64, u64, f64, f64) {
    // Past the SH warm-up, so every band is evaluated.
    for _ in 0..4 {
        t.step().unwrap();
    }
    ctx.wait_idle().unwrap();
    ctx.trim();
    let before = ctx.memory_report().total.live_bytes;
    ctx.allocator().reset_peaks();
    t.step().unwrap();
    ctx.wait_idle().unwrap();
    let transient = ctx.memory_report().total.peak_bytes - before;
    // The same (only) view again, profiled, for V and I.
    t.enable_profiling();
    t.step().unwrap();
    let (v, i) = t.profile().expect("attached").mean_counts();
    (t.params().len(), transient, v, i)
}

#[test]
fn the_frame_plan_bounds_a_training_step() {
    // The fast path at 20,000 Gaussians, the portable path at 2,000 (CI time).
    for (portable, points) in [(false, 20_000), (true, 2_000)] {
        let ctx = fresh_context(portable);
        let (n, transient, v, i) = measured_step(&ctx, points);
        let (v, i) = (v as u64, i as u64);
        let plan = frame_scratch_bytes(&ctx, n, v, i, RESOLUTION, RESOLUTION, 3);
        let ratio = plan as f64 / transient as f64;
        println!(
            "{}: N {n}, V {v}, I {i}: measured {transient} B, planned {plan} B ({ratio:.3}x)",
            ctx.info().kernel_path()
        );
        assert!(
            plan >= transient,
            "plan {plan} below the measured {transient}"
        );
        assert!(
            ratio <= 1.3,
            "plan {plan} is {ratio:.2}x the measured {transient}"
        );
    }
}

#[test]
fn the_geometry_regularisers_frame_plan_bounds_their_step() {
    let ctx = fresh_context(false);
    let t = trainer_configured(&ctx, 2_000, |c| {
        c.depth_normal = 0.05;
        c.distortion = 100.0;
        c.geometry_from = Some(0);
    });
    let (n, transient, v, i) = measured_step_of(&ctx, t);
    let (v, i) = (v as u64, i as u64);
    let plain = frame_scratch_bytes(&ctx, n, v, i, RESOLUTION, RESOLUTION, 3);
    let plan = plain + geometry_frame_bytes(&ctx, n, RESOLUTION, RESOLUTION);
    let ratio = plan as f64 / transient as f64;
    println!("N {n}, V {v}, I {i}: measured {transient} B, planned {plan} B ({ratio:.3}x)");
    assert!(
        plan >= transient,
        "plan {plan} below the measured {transient}"
    );
    assert!(
        transient > plain,
        "the geometry renders must cost something: {transient} B"
    );
    assert!(
        ratio <= 1.6,
        "plan {plan} is {ratio:.2}x the measured {transient}"
    );
}

#[test]
fn the_budget_cap_is_the_largest_count_that_fits() {
    let ctx = fresh_context(true);
    let dataset = generate(&BuiltinOptions {
        resolution: RESOLUTION,
        train_views: 3,
        test_views: 1,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let budget = 64 << 20;
    let storage = MomentStorage::default();
    let plan = plan_budget(&ctx, budget, 3, storage, &dataset, None);
    // The image cache, one image's upload staging, the model and one frame.
    let total = |n| {
        plan.images
            + upload_staging_bytes(64 * 64 * 4)
            + planned_training_bytes(&ctx, n, 3, storage, RESOLUTION, RESOLUTION)
    };
    assert!(plan.max_gaussians > 10_000, "{plan:?}");
    assert_eq!(
        total(plan.max_gaussians),
        plan.planned_bytes(&ctx, plan.max_gaussians)
    );
    assert!(total(plan.max_gaussians) <= budget, "{plan:?}");
    assert!(total(plan.max_gaussians + 1) > budget, "{plan:?}");
    // The 3 images of 64² packed RGBA8 fit a quarter of the budget: a slot for each.
    assert_eq!((plan.cache.slots, plan.cache.slot_bytes), (3, 64 * 64 * 4));
    assert_eq!(plan.images, 3 * 64 * 64 * 4);
}

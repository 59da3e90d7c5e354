//! The `--memory-budget` plan (src/train/budget.rs) against the allocator: its persistent part is
//! computed by the functions that size the real allocations, so it equals the live bytes exactly;
//! its per-frame part must bound a training step's measured transient peak from above, and not by
//! much.

use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::testing::fresh_context;
use wgsplat::train::budget::{frame_scratch_bytes, plan_budget, planned_training_bytes};
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::state::ModelState;
use wgsplat::train::{TrainConfig, Trainer};
use wgsplat::{GpuContext, MemoryCategory};

const RESOLUTION: u32 = 64;

fn trainer(ctx: &GpuContext, points: usize) -> Trainer {
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
    for points in [1_000, 20_000] {
        let t = trainer(&ctx, points);
        let n = t.params().len();
        let planned = ModelState::planned_bytes(&ctx, n, t.config().sh_degree);
        assert_eq!(planned, persistent_live(&ctx), "{n} Gaussians");
        drop(t);
    }
}

/// A training step's transient peak (everything allocated above the steady state) and its V, I.
fn measured_step(ctx: &GpuContext, points: usize) -> (u64, u64, f64, f64) {
    let mut t = trainer(ctx, points);
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
    for portable in [false, true] {
        let ctx = fresh_context(portable);
        for points in [2_000, 20_000] {
            let (n, transient, v, i) = measured_step(&ctx, points);
            let plan = frame_scratch_bytes(&ctx, n, v as u64, i as u64, RESOLUTION, RESOLUTION);
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
    let plan = plan_budget(&ctx, budget, 3, &dataset);
    let total = |n| plan.fixed + planned_training_bytes(&ctx, n, 3, RESOLUTION, RESOLUTION);
    assert!(plan.max_gaussians > 10_000, "{plan:?}");
    assert!(total(plan.max_gaussians) <= budget, "{plan:?}");
    assert!(total(plan.max_gaussians + 1) > budget, "{plan:?}");
    // 3 images of 64² packed RGBA8.
    assert_eq!(plan.fixed, 3 * 64 * 64 * 4);
}

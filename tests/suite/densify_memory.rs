//! Densification within a bound: a 50% split, a 30% prune and an MCMC relocation peak at no more
//! than 1.25 × the steady-state bytes of the larger of the models before and after, by the
//! allocator's own accounting. An MCMC growth keeps every full page and allocates only the pages
//! past them, so on a model of many pages it peaks within 5% (one partial page per tensor).

use crate::common;

use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::splat::GaussianTensors;
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::train::{TrainConfig, Trainer};
use wgsplat::{GpuContext, MemoryCategory, Tensor};

const BOUND: f64 = 1.25;

/// The growth's bound (see the module documentation).
const GROWTH_BOUND: f64 = 1.05;

/// `n` random Gaussians; every tenth one dead, for the relocation step.
fn model(n: usize) -> CpuGaussians {
    let mut g = common::random_gaussians(5, n, 1.0, 0.01);
    for logit in g.opacity_logits.iter_mut().step_by(10) {
        *logit = -8.0;
    }
    g
}

fn indices(ctx: &GpuContext, values: &[u32]) -> Tensor {
    let mut enc = ctx.encoder("indices");
    let t = Tensor::from_slice(
        &mut enc,
        values,
        &[values.len()],
        MemoryCategory::Other,
        "idx",
    )
    .unwrap();
    ctx.submit(enc).unwrap();
    t
}

/// Runs `step` and returns peak / max(before, after) of the allocator's live bytes.
fn peak_ratio(ctx: &GpuContext, step: impl FnOnce()) -> f64 {
    ctx.wait_idle().unwrap();
    ctx.trim();
    let before = ctx.memory_report().total.live_bytes;
    ctx.allocator().reset_peaks();
    step();
    ctx.wait_idle().unwrap();
    let report = ctx.memory_report();
    report.total.peak_bytes as f64 / before.max(report.total.live_bytes) as f64
}

#[test]
fn every_densify_step_peaks_within_a_quarter_of_the_steady_state() {
    // 1 MiB pages, so that the model spans several (as a model of millions does with full-size
    // ones).
    let options = wgsplat::ContextOptions::from_env()
        .unwrap()
        .with_max_page_bytes(1 << 20);
    let ctx = GpuContext::new(options).unwrap();
    let n = 40_000;
    let dataset = generate(&BuiltinOptions {
        resolution: 16,
        train_views: 2,
        test_views: 1,
        points: 100,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let mut enc = ctx.encoder("model");
    let params =
        GaussianTensors::upload(&mut enc, &model(n), 3, MemoryCategory::Parameters, "params")
            .unwrap();
    ctx.submit(enc).unwrap();
    // The packed moments: the smaller steady state, so the tighter bound.
    let config = TrainConfig {
        max_gaussians: 4 * n as u64,
        optimizer_state: wgsplat::optim::MomentStorage::Packed,
        ..TrainConfig::default().with_statistics_only()
    };
    let mut t = Trainer::new(&ctx, dataset, params, config).unwrap();
    t.step().unwrap();
    let keep = indices(
        &ctx,
        &(0..n as u32).filter(|i| i % 2 == 0).collect::<Vec<_>>(),
    );
    let split = indices(
        &ctx,
        &(0..n as u32).filter(|i| i % 2 == 1).collect::<Vec<_>>(),
    );
    let none = indices(&ctx, &[]);
    let mut ratios = vec![(
        "split 50%",
        peak_ratio(&ctx, || t.apply_row_changes(&keep, &none, &split).unwrap()),
    )];
    assert_eq!(t.params().len(), 3 * n as u64 / 2);
    let m = t.params().len() as u32;
    let keep = indices(&ctx, &(0..m).filter(|i| i % 10 >= 3).collect::<Vec<_>>());
    ratios.push((
        "prune 30%",
        peak_ratio(&ctx, || t.apply_row_changes(&keep, &none, &none).unwrap()),
    ));
    let mut relocated = 0;
    ratios.push((
        "relocate",
        peak_ratio(&ctx, || relocated = t.relocate_dead().unwrap()),
    ));
    assert!(relocated > 0, "nothing was relocated");
    let before = t.params().len();
    ratios.push((
        "grow 5%",
        peak_ratio(&ctx, || {
            t.grow().unwrap();
        }),
    ));
    assert_eq!(t.params().len(), before + before / 20);
    t.step().unwrap();
    eprintln!("peak ratios: {ratios:?}");
    for (name, ratio) in ratios {
        let bound = if name == "grow 5%" {
            GROWTH_BOUND
        } else {
            BOUND
        };
        assert!(ratio <= bound, "{name}: peak {ratio:.3} × the steady state");
    }
}

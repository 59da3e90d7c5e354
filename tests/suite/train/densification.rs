//! One densification step on hand-placed Gaussians: growth before pruning, no screen-size
//! pruning, the world-size bound by distance, absgrad selection.

use super::*;

/// The defaults, with the step past the first opacity "reset" after one step, so the post-reset
/// world-size and screen-size tests are on.
fn past_the_first_reset() -> TrainConfig {
    TrainConfig {
        opacity_reset_every: 0,
        ..TrainConfig::default()
    }
}

/// Uploads one Gaussian per row of `rows` ((opacity, scale / extent) each), takes one training
/// step, writes the densification statistics `stats` (4 floats per row), runs one densification
/// step and returns the model's opacities, sorted.
fn densify_once(rows: &[(f32, f32)], stats: &[f32], config: TrainConfig) -> Vec<f32> {
    let placed: Vec<(f32, f32, f32)> = rows.iter().map(|&(o, s)| (o, s, -1.0)).collect();
    densify_placed(&placed, stats, config)
}

/// [`densify_once`] with each row's centre given as a distance from the scene centre along x, in
/// extents (a negative distance: `0.1 × row` world units along x from the origin, as
/// [`densify_once`] places them).
fn densify_placed(rows: &[(f32, f32, f32)], stats: &[f32], config: TrainConfig) -> Vec<f32> {
    use wgsplat::MemoryCategory;
    use wgsplat::splat::GaussianTensors;
    use wgsplat::splat::reference::CpuGaussians;
    let dataset = generate(&BuiltinOptions {
        resolution: 32,
        train_views: 2,
        test_views: 1,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let (extent, center) = (dataset.extent, dataset.center);
    let mut cpu = CpuGaussians::default();
    for (i, &(opacity, scale, distance)) in rows.iter().enumerate() {
        cpu.means.push(if distance < 0.0 {
            [0.1 * i as f32, 0.0, 0.0]
        } else {
            [center[0] + distance * extent, center[1], center[2]]
        });
        cpu.log_scales.push([(scale * extent).ln(); 3]);
        cpu.quats.push([1.0, 0.0, 0.0, 0.0]);
        cpu.opacity_logits.push((opacity / (1.0 - opacity)).ln());
        cpu.sh.push([[0.0; 3]; 16]);
    }
    let ctx = fresh_context(false);
    let mut enc = ctx.encoder("upload");
    let params =
        GaussianTensors::upload(&mut enc, &cpu, 0, MemoryCategory::Parameters, "p").unwrap();
    ctx.submit(enc).unwrap();
    let config = TrainConfig {
        iterations: 10,
        sh_degree: 0,
        densify_until: 0,
        ..config
    };
    let mut trainer = Trainer::new(&ctx, dataset, params, config).unwrap();
    trainer.step().unwrap();
    let mut enc = ctx.encoder("stats");
    trainer
        .densification_stats()
        .write(&mut enc, stats)
        .unwrap();
    ctx.submit(enc).unwrap();
    trainer.densify_now().unwrap();
    let after = trainer.params().download(&ctx).unwrap();
    let mut opacities: Vec<f32> = after
        .opacity_logits
        .iter()
        .map(|l| 1.0 / (1.0 + (-l).exp()))
        .collect();
    opacities.sort_by(f32::total_cmp);
    opacities
}

/// Issue 14: pruning by screen size is off by default (gsplat), and the prune applies to the grown
/// model (INRIA, gsplat): the split children of a transparent parent die in the same step instead
/// of surviving until the next one.
#[test]
fn densification_prunes_after_growth_and_not_by_screen_size() {
    assert_eq!(
        TrainConfig::default().prune_screen_radius,
        0.0,
        "screen-size pruning is off by default"
    );
    // A transparent split candidate, an opaque Gaussian 30 px wide on screen, an ordinary one, and
    // a transparent clone candidate; the two transparent ones are selected for densification
    // (gradient sum / views >= 2e-4). Stats rows: grad sum, absgrad sum, views, radius.
    let rows = [(0.003, 0.05), (0.5, 0.005), (0.5, 0.005), (0.003, 0.001)];
    let stats = [
        1.0, 0.0, 1.0, 5.0, //
        0.0, 0.0, 1.0, 30.0, //
        0.0, 0.0, 1.0, 5.0, //
        1.0, 0.0, 1.0, 5.0,
    ];
    let opacities = densify_once(&rows, &stats, past_the_first_reset());
    // Kept: the wide one and the ordinary one. Nothing transparent survives (the old order split
    // the first row into two transparent children), and nothing was pruned for its screen size.
    assert_eq!(
        opacities.len(),
        2,
        "opacities after densification: {opacities:?}"
    );
    assert!(opacities.iter().all(|&o| o > 0.4), "{opacities:?}");
    // With the screen test enabled, the wide one goes.
    let screen = TrainConfig {
        prune_screen_radius: 20.0,
        ..past_the_first_reset()
    };
    assert_eq!(densify_once(&rows, &stats, screen).len(), 1);
}

/// A Gaussian's world-size bound is relative to its reach (the larger of the extent and its
/// distance from the scene centre): after the first opacity reset 3DGS's 0.1 of it, so a far-field
/// Gaussian may be as large as its distance makes it look; before it, a third of it, which only a
/// Gaussian grown to envelop the scene exceeds (a sky Gaussian that veils views from inside it).
#[test]
fn the_world_size_bound_follows_a_gaussians_distance() {
    // Opaque, no gradient: only the size bound can prune. (scale / extent, distance / extent)
    let rows = [
        (0.5, 0.05, 0.0), // near, small: kept always
        (0.5, 0.2, 0.0),  // near, 0.2 extent: pruned after the reset only
        (0.5, 1.5, 20.0), // far (20 extents), 1.5 extents: kept always (0.1 × 20 = 2)
        (0.5, 2.5, 20.0), // far, 2.5 extents: pruned after the reset only
        (0.5, 8.0, 20.0), // far, 8 extents (a third of 20 is 6.7): pruned always
        (0.5, 0.5, 1.2),  // within its reach's third (0.4 of 1.2 < 0.5): pruned always
    ];
    let stats = [0.0, 0.0, 1.0, 5.0].repeat(rows.len());
    let after_reset = TrainConfig {
        opacity_reset_every: 0,
        ..TrainConfig::default()
    };
    let before_reset = TrainConfig {
        opacity_reset_every: 1_000,
        ..TrainConfig::default()
    };
    assert_eq!(densify_placed(&rows, &stats, after_reset).len(), 2);
    assert_eq!(densify_placed(&rows, &stats, before_reset).len(), 4);
}

/// Issue 14: with `absgrad`, the per-pixel absolute gradient (statistics column 1) against
/// `absgrad_threshold` selects the Gaussians to densify.
#[test]
fn absgrad_selects_by_the_absolute_gradient() {
    // Two small opaque Gaussians: the first has a summed gradient of 0 (cancelling pixels) but a
    // large absolute one; the second the reverse, below the absgrad threshold.
    let rows = [(0.5, 0.001), (0.7, 0.001)];
    let stats = [
        0.0, 1e-3, 1.0, 5.0, //
        5e-4, 5e-4, 1.0, 5.0,
    ];
    let opaque = |o: &[f32]| o.iter().filter(|&&v| v > 0.6).count();
    // Default: only the second is selected (5e-4 >= 2e-4) and cloned.
    let opacities = densify_once(&rows, &stats, TrainConfig::default());
    assert_eq!(
        (opacities.len(), opaque(&opacities)),
        (3, 2),
        "{opacities:?}"
    );
    let absgrad = TrainConfig {
        absgrad: true,
        ..TrainConfig::default()
    };
    // absgrad: only the first (1e-3 >= 8e-4; 5e-4 < 8e-4).
    let opacities = densify_once(&rows, &stats, absgrad);
    assert_eq!(
        (opacities.len(), opaque(&opacities)),
        (3, 1),
        "{opacities:?}"
    );
}

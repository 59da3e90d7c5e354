//! Quality on the built-in town: 4 blocks of N iterations each, merged, against one process
//! trained N iterations on the whole scene, scored on the same held-out views; and no seams: the
//! test views that straddle block borders score within 1 dB of the rest (each relative to the
//! single model on the same views, so the views' own difficulty cancels out).

use super::merge::scratch;
use wgsplat::data::town::{TownOptions, generate};
use wgsplat::data::{Dataset, Split, View};
use wgsplat::io::PlyModel;
use wgsplat::plan::partition::{Balance, Grid, PartitionSettings, visible_fraction};
use wgsplat::plan::{BlockStop, PartitionRequest, PlanData, PlanManifest, train_block};
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::{TrainConfig, Trainer};

fn ctx() -> &'static wgsplat::GpuContext {
    wgsplat::testing::both_paths()[0]
}

const ITERATIONS: u64 = 150;

fn config() -> TrainConfig {
    TrainConfig {
        iterations: ITERATIONS,
        densify_from: 50,
        densify_every: 25,
        densify_until: ITERATIONS - 25,
        opacity_reset_every: 100_000,
        sh_degree: 1,
        sh_degree_interval: 50,
        loss_readback_every: 50,
        save_every: ITERATIONS,
        lpips: false,
        ..TrainConfig::default()
    }
}

/// Mean test PSNR of `model` on `views` (rendered at the model's full degree).
fn psnr_of(model: &PlyModel, views: &[View]) -> f64 {
    let params = wgsplat::io::model::upload_model(ctx(), model, "eval").unwrap();
    let dataset = Dataset::new(vec![views[0].clone()], views.to_vec(), None);
    let trainer = Trainer::new(
        ctx(),
        dataset,
        params,
        TrainConfig {
            sh_degree: model.sh_degree,
            sh_degree_interval: 1,
            lpips: false,
            ..TrainConfig::default()
        },
    )
    .unwrap();
    trainer.evaluate_at_full_degree().unwrap().psnr
}

/// Whether a test view sees two blocks' cores in earnest: of the sparse points in its image,
/// the largest share in one core is under 80%.
fn straddles(plan: &PlanManifest, view: &View, points: &[[f32; 3]]) -> bool {
    let seen: Vec<[f32; 3]> = points
        .iter()
        .copied()
        .filter(|&p| visible_fraction(&view.camera, &[p]) > 0.0)
        .collect();
    let largest = plan
        .blocks
        .iter()
        .map(|b| {
            seen.iter()
                .filter(|&&p| b.core.contains(plan.ground.ground(p)))
                .count()
        })
        .max()
        .unwrap_or(0);
    (largest as f64) < 0.8 * seen.len() as f64
}

#[test]
fn four_merged_blocks_match_one_process_without_seams() {
    let started = std::time::Instant::now();
    let dataset = generate(
        &TownOptions {
            views: 64,
            resolution: 40,
            ..TownOptions::small()
        },
        &Split::HoldoutEvery(4),
    )
    .unwrap();
    let dir = scratch("quality");
    let data = PlanData {
        path: None,
        builtin: wgsplat::train::setup::BuiltinScene::Town,
        builtin_resolution: 40,
        resolution: Some(1),
        eval: true,
        test_every: Some(4),
        test_list: None,
        alpha_as_mask: false,
        undistort: false,
    };
    let request = PartitionRequest {
        grid: Some(Grid { rows: 2, cols: 2 }),
        max_views_per_block: None,
        memory_budget: None,
        settings: PartitionSettings {
            margin: 0.2,
            visibility: 0.25,
            balance: Balance::Views,
        },
    };
    let plan = wgsplat::plan::plan_partition(ctx(), &dataset, data, config(), &request).unwrap();
    plan.save(&dir).unwrap();
    for k in 0..plan.blocks.len() {
        train_block(
            ctx(),
            &dir,
            &plan,
            k,
            &dataset,
            BlockStop::never(),
            &mut |_| {},
        )
        .unwrap();
    }
    let (merged, report) = wgsplat::plan::merge::merged_model(&dir, &plan).unwrap();

    let params = initial_gaussians(ctx(), &dataset, &config()).unwrap();
    let mut single = Trainer::new(ctx(), dataset.clone(), params, config()).unwrap();
    single.run(&mut |_| {}, &|| false).unwrap();
    let single = PlyModel {
        gaussians: single.params().download(ctx()).unwrap(),
        sh_degree: single.params().max_sh_degree(),
    };

    let points = &dataset.points.as_ref().unwrap().positions;
    let (border, rest): (Vec<View>, Vec<View>) = dataset
        .test
        .iter()
        .cloned()
        .partition(|v| straddles(&plan, v, points));
    let merged_all = psnr_of(&merged, &dataset.test);
    let single_all = psnr_of(&single, &dataset.test);
    let views: Vec<usize> = plan.blocks.iter().map(|b| b.views.len()).collect();
    eprintln!(
        "town {} train / {} test views, 2x2 blocks of {ITERATIONS} iterations (views {views:?}): \
         merged test PSNR {merged_all:.2} dB ({} Gaussians, kept {:?}), single process \
         {single_all:.2} dB ({} Gaussians)",
        dataset.train.len(),
        dataset.test.len(),
        report.total,
        report.blocks.iter().map(|b| b.kept).collect::<Vec<_>>(),
        single.gaussians.means.len(),
    );
    assert!(
        merged_all >= single_all,
        "merged {merged_all:.2} dB below one process's {single_all:.2} dB"
    );
    assert!(
        !border.is_empty() && !rest.is_empty(),
        "{} border views",
        border.len()
    );
    let [merged_border, merged_rest, single_border, single_rest] = [
        (&merged, &border),
        (&merged, &rest),
        (&single, &border),
        (&single, &rest),
    ]
    .map(|(model, views)| psnr_of(model, views));
    let (border_gain, rest_gain) = (merged_border - single_border, merged_rest - single_rest);
    eprintln!(
        "seams: {} border views merged {merged_border:.2} dB (single {single_border:.2}), {} \
         other views merged {merged_rest:.2} dB (single {single_rest:.2}); merged − single: \
         border {border_gain:+.2} dB, rest {rest_gain:+.2} dB; {:.1} s",
        border.len(),
        rest.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        (merged_border - merged_rest).abs() <= 1.0,
        "border views {merged_border:.2} dB, the rest {merged_rest:.2} dB"
    );
    assert!(
        (border_gain - rest_gain).abs() <= 1.0,
        "border views gain {border_gain:+.2} dB, the rest {rest_gain:+.2} dB"
    );
}

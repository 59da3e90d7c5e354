//! Training blocks on lavapipe: a block stopped midway resumes from its checkpoint and ends
//! bit-for-bit where the uninterrupted block does; a finished block is a no-op; a block's
//! Gaussians stay inside its bounds. And the commands end to end.

use super::merge::scratch;
use crate::common::binary::output_text;
use std::path::Path;
use std::process::Command;
use wgsplat::data::Dataset;
use wgsplat::plan::outputs::{CHECKPOINT_FILE, DONE_FILE, MODEL_FILE, block_dir};
use wgsplat::plan::partition::{Balance, Grid, PartitionSettings};
use wgsplat::plan::{
    BlockOutcome, BlockStop, PartitionRequest, PlanData, PlanManifest, train_block,
};
use wgsplat::train::TrainConfig;
use wgsplat::train::setup::BuiltinScene;

fn ctx() -> &'static wgsplat::GpuContext {
    wgsplat::testing::both_paths()[0]
}

/// A 2 × 1 plan of the built-in scene at 24², 60 iterations with densification every 10.
pub(super) fn small_plan(dir: &Path) -> (PlanManifest, Dataset) {
    let data = PlanData {
        path: None,
        builtin: BuiltinScene::Objects,
        builtin_resolution: 24,
        resolution: Some(1),
        eval: false,
        test_every: None,
        test_list: None,
        alpha_as_mask: false,
        undistort: false,
    };
    let config = TrainConfig {
        iterations: 60,
        densify_from: 10,
        densify_every: 10,
        densify_until: 50,
        opacity_reset_every: 100_000,
        sh_degree: 1,
        sh_degree_interval: 20,
        loss_readback_every: 10,
        save_every: 20,
        lpips: false,
        ..TrainConfig::default()
    };
    let bare = PlanManifest {
        version: wgsplat::plan::PLAN_VERSION,
        data,
        config,
        partition: wgsplat::plan::manifest::PartitionRecord {
            grid: Grid { rows: 2, cols: 1 },
            settings: PartitionSettings {
                margin: 0.1,
                visibility: 2.0,
                balance: Balance::Views,
            },
            max_views_per_block: None,
            memory_budget_bytes: None,
        },
        ground: wgsplat::plan::GroundFrame {
            origin: [0.0; 3],
            u: [1.0, 0.0, 0.0],
            v: [0.0, 1.0, 0.0],
            up: [0.0, 0.0, 1.0],
        },
        blocks: Vec::new(),
    };
    let dataset = wgsplat::plan::load_plan_dataset(&bare).unwrap();
    let request = PartitionRequest {
        grid: Some(bare.partition.grid),
        max_views_per_block: None,
        memory_budget: None,
        settings: bare.partition.settings,
    };
    let plan =
        wgsplat::plan::plan_partition(ctx(), &dataset, bare.data, bare.config, &request).unwrap();
    plan.save(dir).unwrap();
    (plan, dataset)
}

#[test]
fn a_requeued_block_resumes_bit_exactly_and_a_done_block_is_a_no_op() {
    let straight = scratch("block_straight");
    let (plan, dataset) = small_plan(&straight);
    let requeued = scratch("block_requeued");
    plan.save(&requeued).unwrap();
    let quiet = &mut |_| {};
    let outcome = train_block(
        ctx(),
        &straight,
        &plan,
        0,
        &dataset,
        BlockStop::never(),
        quiet,
    )
    .unwrap();
    assert!(matches!(
        outcome,
        BlockOutcome::Finished {
            resumed_from: None,
            ..
        }
    ));

    // Preempted at iteration 30: a checkpoint, no completion record.
    let outcome = train_block(
        ctx(),
        &requeued,
        &plan,
        0,
        &dataset,
        BlockStop::at(30),
        quiet,
    )
    .unwrap();
    assert_eq!(outcome, BlockOutcome::Stopped { iteration: 30 });
    let dir = block_dir(&requeued, 0);
    assert!(dir.join(CHECKPOINT_FILE).is_file());
    assert!(!dir.join(DONE_FILE).exists());
    let err = wgsplat::plan::merge_plan(&requeued, &plan, &requeued.join("m.ply"), None);
    assert!(err.unwrap_err().to_string().contains("block 0"));

    // Requeued: resumes from 30 and ends with the same model, byte for byte.
    let outcome = train_block(
        ctx(),
        &requeued,
        &plan,
        0,
        &dataset,
        BlockStop::never(),
        quiet,
    )
    .unwrap();
    assert!(
        matches!(
            outcome,
            BlockOutcome::Finished {
                resumed_from: Some(30),
                ..
            }
        ),
        "{outcome:?}"
    );
    let a = std::fs::read(block_dir(&straight, 0).join(MODEL_FILE)).unwrap();
    let b = std::fs::read(dir.join(MODEL_FILE)).unwrap();
    assert!(
        a == b,
        "the resumed block differs from the uninterrupted one"
    );
    assert!(!dir.join(CHECKPOINT_FILE).exists());

    // Done: a no-op that leaves the outputs untouched.
    let before = std::fs::metadata(dir.join(MODEL_FILE))
        .unwrap()
        .modified()
        .unwrap();
    let outcome = train_block(
        ctx(),
        &requeued,
        &plan,
        0,
        &dataset,
        BlockStop::never(),
        quiet,
    )
    .unwrap();
    assert_eq!(outcome, BlockOutcome::AlreadyDone);
    let after = std::fs::metadata(dir.join(MODEL_FILE))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(before, after);

    // The block kept its Gaussians inside its bounds while it densified.
    let model = wgsplat::io::read_ply(&dir.join(MODEL_FILE)).unwrap();
    let block = &plan.blocks[0];
    let outside = model
        .gaussians
        .means
        .iter()
        .filter(|&&m| !block.bounds.contains(plan.ground.ground(m)))
        .count();
    assert_eq!(outside, 0, "{outside} Gaussians left block 0's bounds");
}

fn wgsplat(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wgsplat"))
        .args(args)
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .unwrap();
    (out.status.success(), output_text(&out))
}

#[test]
fn partition_run_plan_and_merge_from_the_command_line() {
    let dir = scratch("cli");
    let plan = dir.join("plan");
    let p = plan.to_str().unwrap();
    let (ok, text) = wgsplat(&[
        "partition",
        "--out",
        p,
        "--builtin-resolution",
        "24",
        "--blocks",
        "2x1",
        "--iterations",
        "20",
        "--no-lpips",
        "--sh-degree",
        "0",
        "--memory-budget",
        "64MiB",
    ]);
    assert!(ok, "{text}");
    assert!(text.contains("2 blocks (2x1 grid)"), "{text}");
    assert!(text.contains("est. peak"), "{text}");
    assert!(plan.join("slurm/submit.sh").is_file() && plan.join("k8s/train-job.yaml").is_file());
    let manifest = PlanManifest::load(&plan).unwrap();
    assert_eq!(manifest.config.iterations, 20);
    assert_eq!(
        manifest.config.save_every, 2,
        "a checkpoint every 10% by default"
    );

    // Which block? None given and no engine variable: a clear error.
    let (ok, text) = wgsplat(&["train", "--plan", p]);
    assert!(!ok && text.contains("SLURM_ARRAY_TASK_ID"), "{text}");
    // An engine's index picks the block.
    let out = Command::new(env!("CARGO_BIN_EXE_wgsplat"))
        .args(["train", "--plan", &format!("{p}/plan.json")])
        .env("SLURM_ARRAY_TASK_ID", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(block_dir(&plan, 1).join(DONE_FILE).is_file());
    // The block's process stayed within the memory partition planned for it, inside the budget.
    let metrics: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(block_dir(&plan, 1).join("metrics.json")).unwrap(),
    )
    .unwrap();
    let peak = metrics["peak_gpu_total_bytes"].as_u64().unwrap();
    let planned = manifest.blocks[1].estimated_peak_bytes;
    assert!(
        peak <= planned && planned <= 64 << 20,
        "peak {peak}, planned {planned}"
    );
    assert!(manifest.blocks[1].max_gaussians > 0);
    // Its images fit a quarter of the budget, so its image cache held them all, each uploaded
    // once at most.
    let (cache, views) = (
        &metrics["image_cache"],
        manifest.blocks[1].views.len() as u64,
    );
    assert_eq!(cache["slots"].as_u64(), Some(views), "{cache}");
    assert_eq!(cache["evictions"].as_u64(), Some(0), "{cache}");
    assert!(
        cache["uploads"].as_u64().is_some_and(|n| n <= views),
        "{cache}"
    );
    assert!(!block_dir(&plan, 0).exists());

    let (ok, text) = wgsplat(&["run-plan", p]);
    assert!(ok, "{text}");
    assert!(text.contains("block 1 is already done"), "{text}");
    assert!(plan.join("merged.ply").is_file(), "{text}");
    let lod = dir.join("m.lod");
    let (ok, text) = wgsplat(&[
        "merge",
        p,
        "--out",
        dir.join("m.splat").to_str().unwrap(),
        "--lod",
        lod.to_str().unwrap(),
        "--page-nodes",
        "256",
        "--refine-steps",
        "4",
        "--refine-size",
        "32",
    ]);
    assert!(ok, "{text}");
    assert!(text.contains("in 4 steps"), "{text}");
    assert!(dir.join("m.splat").is_file());
    // The level of detail's leaves are the merged model's Gaussians.
    let merged = wgsplat::io::formats::read_model(
        &dir.join("m.splat"),
        wgsplat::io::formats::ModelFormat::Splat,
    )
    .unwrap();
    let scene = wgsplat::io::lod::LodScene::open(&lod).unwrap();
    assert_eq!(
        scene.index.leaves as usize,
        merged.gaussians.means.len(),
        "{text}"
    );
}

#[test]
fn the_block_comes_from_the_option_then_slurm_then_kubernetes() {
    use wgsplat::plan::block_from_env;
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    let both = env(&[("SLURM_ARRAY_TASK_ID", "3"), ("JOB_COMPLETION_INDEX", "5")]);
    assert_eq!(block_from_env(Some(1), both).unwrap(), 1);
    assert_eq!(block_from_env(None, both).unwrap(), 3);
    assert_eq!(
        block_from_env(None, env(&[("JOB_COMPLETION_INDEX", "5")])).unwrap(),
        5
    );
    let err = block_from_env(None, env(&[("SLURM_ARRAY_TASK_ID", "x")])).unwrap_err();
    assert!(err.to_string().contains("SLURM_ARRAY_TASK_ID"), "{err}");
    let err = block_from_env(None, env(&[])).unwrap_err().to_string();
    assert!(
        err.contains("--block") && err.contains("JOB_COMPLETION_INDEX"),
        "{err}"
    );
}

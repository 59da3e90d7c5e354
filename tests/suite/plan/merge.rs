//! The merge (core-cell ownership; a missing, unfinished or damaged block is named and nothing
//! is written) and the manifest's versioning. CPU only: the blocks' models are written here.

use std::path::{Path, PathBuf};
use wgsplat::data::builtin::BuiltinOptions;
use wgsplat::io::write_ply;
use wgsplat::plan::manifest::PartitionRecord;
use wgsplat::plan::outputs::{DONE_FILE, METRICS_FILE, MODEL_FILE, block_dir, write_done};
use wgsplat::plan::partition::Grid;
use wgsplat::plan::{BlockPlan, Cell, GroundFrame, PLAN_VERSION, PlanData, PlanManifest};
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::train::TrainConfig;

/// A fresh folder under the test target's temporary folder.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("plan")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Two blocks split at world x = 0 (ground u = x), bounds one unit wider.
fn two_block_plan() -> PlanManifest {
    let block = |index: usize, core: Cell, bounds: Cell| BlockPlan {
        index,
        core,
        bounds,
        views: vec![format!("v{index}")],
        test_views: Vec::new(),
        points: 0,
        max_gaussians: 0,
        estimated_peak_bytes: 0,
    };
    PlanManifest {
        version: PLAN_VERSION,
        data: PlanData {
            path: None,
            builtin: Default::default(),
            builtin_resolution: BuiltinOptions::default().resolution,
            resolution: Some(1),
            eval: false,
            test_every: None,
            test_list: None,
            alpha_as_mask: false,
            undistort: false,
        },
        config: TrainConfig::default(),
        partition: PartitionRecord::of_grid(Grid { rows: 2, cols: 1 }),
        ground: GroundFrame {
            origin: [0.0; 3],
            u: [1.0, 0.0, 0.0],
            v: [0.0, 1.0, 0.0],
            up: [0.0, 0.0, 1.0],
        },
        blocks: vec![
            block(
                0,
                Cell {
                    u_max: Some(0.0),
                    ..Cell::default()
                },
                Cell {
                    u_max: Some(1.0),
                    ..Cell::default()
                },
            ),
            block(
                1,
                Cell {
                    u_min: Some(0.0),
                    ..Cell::default()
                },
                Cell {
                    u_min: Some(-1.0),
                    ..Cell::default()
                },
            ),
        ],
    }
}

/// Gaussians at the given x (y = z = 0); the opacity logit records x, so rows can be traced.
fn gaussians_at(xs: &[f32]) -> CpuGaussians {
    let mut g = CpuGaussians::default();
    for &x in xs {
        g.means.push([x, 0.25, 0.0]);
        g.log_scales.push([-2.0; 3]);
        g.quats.push([1.0, 0.0, 0.0, 0.0]);
        g.opacity_logits.push(x);
        g.sh.push([[0.1; 3]; 16]);
    }
    g
}

/// Writes a finished block `index` holding Gaussians at `xs`.
fn write_block(dir: &Path, index: usize, xs: &[f32]) {
    let out = block_dir(dir, index);
    std::fs::create_dir_all(&out).unwrap();
    write_ply(&out.join(MODEL_FILE), &gaussians_at(xs), 0).unwrap();
    std::fs::write(out.join(METRICS_FILE), "{}").unwrap();
    write_done(&out, index, 1, xs.len() as u64, &[MODEL_FILE, METRICS_FILE]).unwrap();
}

fn finished_plan(name: &str) -> (PathBuf, PlanManifest) {
    let dir = scratch(name);
    let plan = two_block_plan();
    plan.save(&dir).unwrap();
    write_block(&dir, 0, &[-2.0, -0.5, 0.5]);
    write_block(&dir, 1, &[-0.5, 0.0, 0.5, 3.0]);
    (dir, plan)
}

#[test]
fn merge_keeps_each_blocks_core() {
    let (dir, plan) = finished_plan("merge_cores");
    let out = dir.join("merged.ply");
    let report = wgsplat::plan::merge_plan(&dir, &plan, &out, None).unwrap();
    let kept: Vec<u64> = report.blocks.iter().map(|b| b.kept).collect();
    let trained: Vec<u64> = report.blocks.iter().map(|b| b.trained).collect();
    assert_eq!(trained, [3, 4]);
    // Block 0 owns x < 0, block 1 owns x ≥ 0: each margin Gaussian comes from its owner only.
    assert_eq!(kept, [2, 3]);
    let merged = wgsplat::io::read_ply(&out).unwrap();
    let xs: Vec<f32> = merged.gaussians.means.iter().map(|m| m[0]).collect();
    assert_eq!(xs, [-2.0, -0.5, 0.0, 0.5, 3.0]);
    assert_eq!(report.total, 5);
    // Any format: the merged model as SPZ reads back with the same count.
    let spz = dir.join("merged.spz");
    wgsplat::plan::merge_plan(&dir, &plan, &spz, None).unwrap();
    let back = wgsplat::io::formats::read_model(&spz, wgsplat::io::formats::ModelFormat::Spz);
    assert_eq!(back.unwrap().gaussians.means.len(), 5);
}

/// Merges `dir`, expecting an error that names block 1 and mentions `what`, and no output.
fn expect_block_error(dir: &Path, plan: &PlanManifest, what: &str) {
    let out = dir.join("merged.ply");
    let err = wgsplat::plan::merge_plan(dir, plan, &out, None).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("block 1"), "{text}");
    assert!(text.contains(what), "{text} (expected {what:?})");
    assert!(
        !out.exists(),
        "the merge wrote {} despite: {text}",
        out.display()
    );
    assert!(wgsplat::io::temporary_files_of(&out).is_empty());
}

#[test]
fn merge_names_a_missing_block() {
    let (dir, plan) = finished_plan("merge_missing");
    std::fs::remove_dir_all(block_dir(&dir, 1)).unwrap();
    expect_block_error(&dir, &plan, "missing");
}

#[test]
fn merge_names_an_unfinished_block() {
    let (dir, plan) = finished_plan("merge_unfinished");
    std::fs::remove_file(block_dir(&dir, 1).join(DONE_FILE)).unwrap();
    expect_block_error(&dir, &plan, "unfinished");
}

#[test]
fn merge_names_a_truncated_or_corrupt_block() {
    let (dir, plan) = finished_plan("merge_truncated");
    let ply = block_dir(&dir, 1).join(MODEL_FILE);
    let bytes = std::fs::read(&ply).unwrap();
    std::fs::write(&ply, &bytes[..bytes.len() - 10]).unwrap();
    expect_block_error(&dir, &plan, "corrupt");
    // Same length, one byte changed: the CRC catches it.
    let mut flipped = bytes.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x40;
    std::fs::write(&ply, &flipped).unwrap();
    expect_block_error(&dir, &plan, "corrupt");
    // A model that was broken before its checksum was taken is named when it is read.
    std::fs::write(&ply, b"ply\nformat nonsense\n").unwrap();
    write_done(&block_dir(&dir, 1), 1, 1, 4, &[MODEL_FILE]).unwrap();
    expect_block_error(&dir, &plan, "does not read");
}

#[test]
fn plans_of_another_version_are_refused() {
    let dir = scratch("versions");
    let plan = two_block_plan();
    plan.save(&dir).unwrap();
    assert_eq!(PlanManifest::load(&dir).unwrap(), plan);
    let file = dir.join("plan.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    value["version"] = (PLAN_VERSION + 1).into();
    std::fs::write(&file, value.to_string()).unwrap();
    let err = PlanManifest::load(&file).unwrap_err().to_string();
    assert!(
        err.contains(&format!("plan version {}", PLAN_VERSION + 1)),
        "{err}"
    );
    assert!(err.contains("partition the scene again"), "{err}");
    value.as_object_mut().unwrap().remove("version");
    std::fs::write(&file, value.to_string()).unwrap();
    let err = PlanManifest::load(&file).unwrap_err().to_string();
    assert!(err.contains("not a wgsplat plan"), "{err}");
}

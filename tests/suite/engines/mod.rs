//! The engine files beside a plan: the Slurm scripts' directives and commands, and the Kubernetes
//! manifests parsed as YAML. No cluster is needed here (`slurm` submits to a real one).

use clap::Parser;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use wgsplat::plan::manifest::PartitionRecord;
use wgsplat::plan::{
    BlockPlan, Cell, EngineArgs, EngineOptions, Grid, GroundFrame, PLAN_VERSION, PlanData,
    PlanManifest, write_engine_files,
};
use wgsplat::train::TrainConfig;

mod kubernetes;
mod slurm_scripts;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgsplat-engines-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A plan of `blocks` blocks over a dataset at `data`.
fn plan(blocks: usize, data: Option<PathBuf>) -> PlanManifest {
    PlanManifest {
        version: PLAN_VERSION,
        data: PlanData {
            path: data,
            builtin: Default::default(),
            builtin_resolution: 64,
            resolution: Some(1),
            eval: true,
            test_every: None,
            test_list: None,
            alpha_as_mask: false,
            undistort: false,
        },
        config: TrainConfig::default(),
        partition: PartitionRecord::of_grid(Grid {
            rows: 1,
            cols: blocks,
        }),
        ground: GroundFrame {
            origin: [0.0; 3],
            u: [1.0, 0.0, 0.0],
            v: [0.0, 1.0, 0.0],
            up: [0.0, 0.0, 1.0],
        },
        blocks: (0..blocks)
            .map(|index| BlockPlan {
                index,
                core: Cell::default(),
                bounds: Cell::default(),
                views: vec![format!("view{index}.png")],
                test_views: Vec::new(),
                points: 10,
                max_gaussians: 0,
                estimated_peak_bytes: 1 << 20,
            })
            .collect(),
    }
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    engines: EngineArgs,
}

fn options(args: &[&str]) -> EngineOptions {
    let cli = Cli::try_parse_from(std::iter::once("wgsplat").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    cli.engines.options().unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `#SBATCH` options of a script, checking they all come before its first command (sbatch
/// stops reading them there).
fn directives(script: &str) -> Vec<String> {
    let mut seen_command = false;
    let mut found = Vec::new();
    for line in script.lines().skip(1) {
        if let Some(option) = line.strip_prefix("#SBATCH ") {
            assert!(!seen_command, "#SBATCH after the first command: {line}");
            found.push(option.to_string());
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            seen_command = true;
        }
    }
    found
}

fn has_prefix(options: &[String], prefix: &str) -> bool {
    options.iter().any(|o| o.starts_with(prefix))
}

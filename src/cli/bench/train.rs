//! `wgsplat bench train`: iterations per second of the trainer and milliseconds per stage
//! (project, sort, raster, loss, backward, Adam, densify), on the fast and the portable kernel
//! paths in the same run; the portable path is the baseline.

use super::write_json_atomic;
use crate::cli::dataset::load_dataset;
use anyhow::Context as _;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;
use wgsplat::GpuContext;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::options::DataArgs;
use wgsplat::train::profile::Stage;
use wgsplat::train::{Background, TrainConfig, Trainer};

/// Options of `wgsplat bench train`.
#[derive(clap::Args)]
pub struct TrainBenchArgs {
    /// Dataset folder; omit it for the built-in scene.
    data: Option<PathBuf>,
    #[command(flatten)]
    data_args: DataArgs,
    /// Untimed iterations first (pipeline compilation, pool warm-up).
    #[arg(long, default_value_t = 3)]
    warmup: u64,
    /// Timed iterations, run once unprofiled (for it/s) and once profiled (for the stage split).
    #[arg(long, default_value_t = 10)]
    iterations: u64,
    /// Largest SH degree of the model (all bands active during the benchmark).
    #[arg(long, default_value_t = 3)]
    sh_degree: u32,
    /// Time `train --geometry`'s recipe: its regularisers at their measured weights, from the
    /// first step (the geometry renders and their loss count in the raster stage, their backward
    /// passes in the backward stage).
    #[arg(long)]
    geometry: bool,
    /// Output JSON path (default target/bench/train.json).
    #[arg(long)]
    json: Option<PathBuf>,
}

fn bench_config(args: &TrainBenchArgs) -> TrainConfig {
    let recipe = wgsplat::train::geometry::GeometryRecipe::MEASURED;
    let on = |weight: f32| if args.geometry { weight } else { 0.0 };
    // Statistics accumulate but scheduled densification never fires: the model stays the same
    // size while timing, and one explicit densify step is timed separately.
    TrainConfig {
        flatten: on(recipe.flatten),
        depth_normal: on(recipe.depth_normal),
        distortion: on(recipe.distortion),
        geometry_from: Some(0),
        iterations: u64::MAX / 2,
        sh_degree: args.sh_degree,
        sh_degree_interval: 1,
        background: Background::Random,
        loss_readback_every: 10,
        ..TrainConfig::default()
    }
    .with_statistics_only()
}

/// One kernel path's figures.
fn run_path(args: &TrainBenchArgs, portable: bool) -> anyhow::Result<serde_json::Value> {
    let ctx = GpuContext::new(wgsplat::ContextOptions::from_env()?.with_portable(portable))
        .context("opening the GPU")?;
    let config = bench_config(args);
    let dataset = load_dataset(args.data.as_deref(), &args.data_args, [0.0; 3])?;
    let (width, height) = dataset
        .train
        .first()
        .map(|v| (v.image.width, v.image.height))
        .unwrap_or((0, 0));
    let params = initial_gaussians(&ctx, &dataset, &config)?;
    let mut trainer = Trainer::new(&ctx, dataset, params, config)?;
    for _ in 0..args.warmup {
        trainer.step()?;
    }
    ctx.wait_idle()?;
    let start = Instant::now();
    for _ in 0..args.iterations {
        trainer.step()?;
    }
    ctx.wait_idle()?;
    let seconds = start.elapsed().as_secs_f64();
    let rate = args.iterations as f64 / seconds.max(1e-9);
    trainer.enable_profiling();
    for _ in 0..args.iterations {
        trainer.step()?;
    }
    let stages = trainer.profile().map(|p| p.mean_ms()).unwrap_or_default();
    let (visible, intersections) = trainer
        .profile()
        .map(|p| p.mean_counts())
        .unwrap_or_default();
    let before = trainer.params().len();
    ctx.wait_idle()?;
    let densify_start = Instant::now();
    trainer.densify_now()?;
    ctx.wait_idle()?;
    let densify_ms = densify_start.elapsed().as_secs_f64() * 1e3;
    let after = trainer.params().len();
    let path = ctx.info().kernel_path();
    println!(
        "{path:>9} {:>8.3} {:>9}x{:<4} {:>9} {}  | visible {visible:.0}, intersections {intersections:.0}; densify step {densify_ms:.1} ms ({before} -> {after})",
        rate,
        width,
        height,
        before,
        stages
            .iter()
            .map(|(_, ms)| format!("{ms:>8.1}"))
            .collect::<String>(),
    );
    Ok(json!({
        "kernel_path": path,
        "geometry": args.geometry,
        "adapter": ctx.info().name,
        "iterations_per_second": rate,
        "timed_iterations": args.iterations,
        "resolution": [width, height],
        "gaussians": before,
        "stage_ms": stages.iter().map(|(s, ms)| (s.name().to_owned(), *ms)).collect::<std::collections::BTreeMap<_, _>>(),
        "densify_step_ms": densify_ms,
        "mean_visible": visible,
        "mean_intersections": intersections,
        "densify_gaussians_after": after,
        "peak_gpu_bytes": ctx.memory_report().total.peak_bytes,
    }))
}

/// Runs the benchmark.
pub fn run(args: TrainBenchArgs, portable_only: bool) -> anyhow::Result<()> {
    println!(
        "training iterations, {} warm-up + {} timed; stage columns are ms per iteration with the device drained at each boundary",
        args.warmup, args.iterations
    );
    println!(
        "{:>9} {:>8} {:>14} {:>9} {}",
        "path",
        "it/s",
        "resolution",
        "gaussians",
        Stage::ALL
            .iter()
            .map(|s| format!("{:>8}", s.name()))
            .collect::<String>()
    );
    let mut rows = Vec::new();
    let fast = if portable_only {
        None
    } else {
        let row = run_path(&args, false)?;
        rows.push(row.clone());
        Some(row)
    };
    let portable = run_path(&args, true)?;
    rows.push(portable.clone());
    if let Some(fast) = &fast {
        let ratio = fast["iterations_per_second"].as_f64().unwrap_or(0.0)
            / portable["iterations_per_second"]
                .as_f64()
                .unwrap_or(1.0)
                .max(1e-12);
        println!("fast path / portable path speed: {ratio:.2}x");
    }
    let json_path = args
        .json
        .clone()
        .unwrap_or_else(|| super::default_json_path("train"));
    write_json_atomic(&json_path, &json!({ "benchmark": "train", "runs": rows }))?;
    println!("wrote {}", json_path.display());
    Ok(())
}

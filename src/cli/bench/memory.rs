//! `wgsplat bench memory`: persistent bytes per Gaussian with its breakdown (parameters, Adam's
//! moments, densification statistics) for each optimizer-state storage, and the transient peak of
//! a training step, a densify step that splits half the Gaussians and a prune step that removes
//! 30%, an MCMC relocation of the dead tenth and an MCMC growth of 5%, each as a ratio to the
//! steady state (the larger of the models before and after). On lavapipe device memory is host
//! memory, so the process's peak RSS checks the allocator.

use super::{parse_size, write_json_atomic};
use anyhow::Context as _;
use serde_json::json;
use std::path::PathBuf;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::data::init::RandomBox;
use wgsplat::optim::MomentStorage;
use wgsplat::rng::SplitMix64;
use wgsplat::splat::GaussianTensors;
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::train::budget::floats_per_gaussian;
use wgsplat::train::{TrainConfig, Trainer};
use wgsplat::{GpuContext, MemoryCategory, Tensor};

/// Options of `wgsplat bench memory`.
#[derive(clap::Args)]
pub struct MemoryArgs {
    /// Gaussian counts of the synthetic models.
    #[arg(long, value_delimiter = ',', default_values = ["1M"], value_parser = parse_size)]
    gaussians: Vec<u64>,
    /// Resolution of the built-in scene's views used for the training step (16 to 4096).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(wgsplat::train::setup::BUILTIN_RESOLUTIONS))]
    resolution: u32,
    /// Percentage of the Gaussians the densify step splits (50 by the issue; lower it where the
    /// split model would not fit in memory, e.g. 10M on a 24 GiB machine).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(0..=100))]
    split_percent: u32,
    /// Optimizer-state storages to measure: 16bit (the default: both moments in one word) and
    /// f32; bf16 (the earlier packing) on request.
    #[arg(long, value_delimiter = ',', default_values = ["16bit", "f32"])]
    optimizer_state: Vec<String>,
    /// Output JSON path (default target/bench/memory.json).
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The classic fp32 floor per Gaussian at SH degree 3: parameters, a gradient per parameter and
/// two f32 Adam moments.
fn floor_bytes() -> u64 {
    floats_per_gaussian(3) * 16
}

/// Persistent model bytes: parameters, gradients (none between steps) and optimizer state
/// (densification statistics included).
fn model_bytes(ctx: &GpuContext) -> u64 {
    let r = ctx.memory_report();
    r.live(MemoryCategory::Parameters)
        + r.live(MemoryCategory::Gradients)
        + r.live(MemoryCategory::OptimizerState)
}

/// Live bytes of the buffers whose label starts with one of `prefixes`.
fn live_labelled(ctx: &GpuContext, prefixes: &[&str]) -> u64 {
    ctx.memory_report()
        .by_label
        .iter()
        .filter(|(label, _)| prefixes.iter().any(|p| label.starts_with(p)))
        .map(|(_, u)| u.live_bytes)
        .sum()
}

/// Runs `step`, returning its JSON row: allocator bytes before, after and at peak, the ratio of
/// the peak to the steady state, and the peak RSS.
fn measure(
    ctx: &GpuContext,
    name: &str,
    step: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<serde_json::Value> {
    ctx.wait_idle()?;
    ctx.trim();
    let before = ctx.memory_report().total.live_bytes;
    ctx.allocator().reset_peaks();
    wgsplat::gpu::host::reset_peak_rss();
    let result = step();
    ctx.wait_idle()?;
    let report = ctx.memory_report();
    let after = report.total.live_bytes;
    let peak = report.total.peak_bytes;
    let ratio = peak as f64 / before.max(after).max(1) as f64;
    let rss = wgsplat::gpu::ProcessMemory::sample().map(|m| m.peak_rss_bytes);
    match &result {
        Ok(()) => println!(
            "{name:>14} {:>12} {:>12} {:>12} {ratio:>7.3} {:>12}",
            before,
            after,
            peak,
            rss.map_or("-".into(), |r| r.to_string())
        ),
        Err(e) => println!("{name:>14} failed: {e:#}"),
    }
    Ok(json!({
        "step": name, "before_bytes": before, "after_bytes": after, "peak_bytes": peak,
        "peak_ratio": ratio, "peak_rss_bytes": rss,
        "error": result.err().map(|e| format!("{e:#}")),
    }))
}

fn synthetic_model(n: usize, bounds: RandomBox, seed: u64) -> CpuGaussians {
    let mut rng = SplitMix64::new(seed);
    let mut g = CpuGaussians::default();
    let h = bounds.half_size;
    for _ in 0..n {
        g.means
            .push([0, 1, 2].map(|k| bounds.center[k] + rng.range(-h[k], h[k])));
        g.log_scales.push([(0.004f32).ln(); 3]);
        g.quats.push([1.0, 0.0, 0.0, 0.0]);
        // Every tenth Gaussian is dead (opacity below 0.005), for the relocation step.
        let logit = rng.range(-2.0, 2.0);
        g.opacity_logits
            .push(if g.means.len() % 10 == 0 { -8.0 } else { logit });
        let mut sh = [[0f32; 3]; 16];
        sh[0] = [
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
        ];
        g.sh.push(sh);
    }
    g
}

fn upload_indices(ctx: &GpuContext, indices: &[u32]) -> anyhow::Result<Tensor> {
    let mut enc = ctx.encoder("bench indices");
    let t = Tensor::from_slice(
        &mut enc,
        indices,
        &[indices.len()],
        MemoryCategory::Other,
        "bench/indices",
    )?;
    ctx.submit(enc)?;
    Ok(t)
}

fn run_size(
    ctx: &GpuContext,
    n: u64,
    storage: MomentStorage,
    args: &MemoryArgs,
) -> anyhow::Result<serde_json::Value> {
    let dataset = generate(&BuiltinOptions {
        resolution: args.resolution,
        ..BuiltinOptions::default()
    })?;
    let cameras: Vec<_> = dataset.train.iter().map(|v| &v.camera).collect();
    let bounds = RandomBox::viewed_by(&cameras, dataset.center, dataset.extent);
    let cpu = synthetic_model(n as usize, bounds, n);
    let mut enc = ctx.encoder("bench model");
    let params = GaussianTensors::upload(&mut enc, &cpu, 3, MemoryCategory::Parameters, "params")?;
    ctx.submit(enc)?;
    drop(cpu);
    let config = TrainConfig {
        max_gaussians: 4 * n,
        optimizer_state: storage,
        ..TrainConfig::default().with_statistics_only()
    };
    let (mut relocated, mut grown) = (0, 0);
    let mut trainer = Trainer::new(ctx, dataset, params, config)?;
    ctx.wait_idle()?;
    let per_gaussian = model_bytes(ctx) as f64 / n as f64;
    let per = |bytes: u64| bytes as f64 / n as f64;
    let breakdown = json!({
        "parameters": per(ctx.memory_report().live(MemoryCategory::Parameters)),
        "gradients": per(ctx.memory_report().live(MemoryCategory::Gradients)),
        "adam_moments": per(live_labelled(ctx, &["adam."])),
        "densify_statistics": per(live_labelled(ctx, &["densify/stats"])),
    });
    println!(
        "{n} Gaussians, {} optimizer state: persistent {per_gaussian:.1} B/Gaussian = parameters {:.1} + gradients {:.1} + Adam moments {:.1} + densification statistics {:.1} (classic fp32 floor {} B + 16 B statistics)",
        storage.name(),
        breakdown["parameters"].as_f64().unwrap_or(0.0),
        breakdown["gradients"].as_f64().unwrap_or(0.0),
        breakdown["adam_moments"].as_f64().unwrap_or(0.0),
        breakdown["densify_statistics"].as_f64().unwrap_or(0.0),
        floor_bytes()
    );
    println!(
        "{:>14} {:>12} {:>12} {:>12} {:>7} {:>12}",
        "step", "before B", "after B", "peak B", "ratio", "peak RSS B"
    );
    let mut steps = vec![measure(ctx, "train step", || {
        trainer.step()?;
        Ok(())
    })?];
    let percent = args.split_percent;
    let is_split = |i: &u32| (u64::from(*i) * u64::from(percent)) % 100 >= u64::from(100 - percent);
    let split: Vec<u32> = (0..n as u32).filter(is_split).collect();
    let keep: Vec<u32> = (0..n as u32).filter(|i| !is_split(i)).collect();
    let (keep_t, split_t) = (upload_indices(ctx, &keep)?, upload_indices(ctx, &split)?);
    let none = upload_indices(ctx, &[])?;
    steps.push(measure(ctx, &format!("split {percent}%"), || {
        Ok(trainer.apply_row_changes(&keep_t, &none, &split_t)?)
    })?);
    drop((keep_t, split_t));
    let m = trainer.params().len();
    let keep: Vec<u32> = (0..m as u32).filter(|i| i % 10 >= 3).collect();
    let keep_t = upload_indices(ctx, &keep)?;
    steps.push(measure(ctx, "prune 30%", || {
        Ok(trainer.apply_row_changes(&keep_t, &none, &none)?)
    })?);
    steps.push(measure(ctx, "relocate", || {
        relocated = trainer.relocate_dead()?;
        Ok(())
    })?);
    steps.push(measure(ctx, "mcmc grow 5%", || {
        grown = trainer.grow()?;
        Ok(())
    })?);
    println!("relocated {relocated} dead Gaussians, grew by {grown}");
    Ok(json!({
        "gaussians": n,
        "optimizer_state": storage.name(),
        "persistent_bytes_per_gaussian": per_gaussian,
        "persistent_breakdown_bytes_per_gaussian": breakdown,
        "fp32_floor_bytes_per_gaussian": floor_bytes(),
        "final_gaussians": trainer.params().len(),
        "steps": steps,
        "relocated": relocated,
        "grown": grown,
    }))
}

/// Runs the benchmark.
pub fn run(args: MemoryArgs, portable: bool) -> anyhow::Result<()> {
    let ctx = GpuContext::new(wgsplat::ContextOptions::from_env()?.with_portable(portable))
        .context("opening the GPU")?;
    println!(
        "adapter: {}; kernel path: {}",
        ctx.info().name,
        ctx.info().kernel_path()
    );
    let storages = args
        .optimizer_state
        .iter()
        .map(|s| s.parse::<MomentStorage>())
        .collect::<Result<Vec<_>, _>>()?;
    let mut rows = Vec::new();
    for &n in &args.gaussians {
        for &storage in &storages {
            rows.push(run_size(&ctx, n, storage, &args)?);
            ctx.trim();
        }
    }
    let path = args
        .json
        .clone()
        .unwrap_or_else(|| super::default_json_path("memory"));
    write_json_atomic(
        &path,
        &json!({ "benchmark": "memory", "adapter": ctx.info().name, "sizes": rows }),
    )?;
    println!("wrote {}", path.display());
    Ok(())
}

//! `wgsplat bench longrun`: a long training run of one model size, sampled every N iterations:
//! the process's resident memory beside the allocator's live and pooled bytes and wgpu's live
//! objects. After warm-up every column must stay flat; the RSS not explained by the allocator is
//! wgpu's objects, the driver and the heap, and it must not grow either (issue 12).

use super::write_json_atomic;
use crate::cli::dataset::load_dataset;
use anyhow::Context as _;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;
use wgsplat::gpu::{ProcessMemory, WgpuObjectCounts};
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::options::DataArgs;
use wgsplat::train::{TrainConfig, Trainer};
use wgsplat::{GpuContext, MemoryReport};

/// Options of `wgsplat bench longrun`.
#[derive(clap::Args)]
pub struct LongrunArgs {
    /// Dataset folder; omit it for the built-in scene.
    data: Option<PathBuf>,
    #[command(flatten)]
    data_args: DataArgs,
    /// Iterations in all.
    #[arg(long, default_value_t = 10_000)]
    iterations: u64,
    /// Sample (and print a row) every this many iterations; the first sample ends the warm-up.
    #[arg(long, default_value_t = 1_000)]
    every: u64,
    /// Densify until this iteration (within the warm-up, so the model size is fixed after it).
    #[arg(long, default_value_t = 500)]
    densify_until: u64,
    /// Output JSON path (default target/bench/longrun.json).
    #[arg(long)]
    json: Option<PathBuf>,
}

/// One sample of the run.
struct Sample {
    iteration: u64,
    seconds: f64,
    gaussians: u64,
    process: Option<ProcessMemory>,
    report: MemoryReport,
    objects: WgpuObjectCounts,
}

impl Sample {
    fn take(ctx: &GpuContext, trainer: &Trainer, seconds: f64) -> anyhow::Result<Sample> {
        ctx.wait_idle()?;
        Ok(Sample {
            iteration: trainer.iteration(),
            seconds,
            gaussians: trainer.params().len(),
            process: ProcessMemory::sample(),
            report: ctx.memory_report(),
            objects: ctx.wgpu_object_counts(),
        })
    }

    /// Bytes the allocator holds: live buffers and the free pool.
    fn allocator_bytes(&self) -> u64 {
        self.report.total.live_bytes + self.report.pooled_bytes
    }

    /// RSS the allocator does not explain.
    fn unexplained(&self) -> Option<i64> {
        self.process
            .map(|p| p.rss_bytes as i64 - self.allocator_bytes() as i64)
    }

    fn to_json(&self) -> serde_json::Value {
        json!({
            "iteration": self.iteration, "seconds": self.seconds, "gaussians": self.gaussians,
            "rss_bytes": self.process.map(|p| p.rss_bytes),
            "allocator_live_bytes": self.report.total.live_bytes,
            "allocator_pooled_bytes": self.report.pooled_bytes,
            "unexplained_rss_bytes": self.unexplained(),
            "wgpu_objects": self.objects,
        })
    }
}

fn mib(bytes: i64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// Runs the benchmark.
pub fn run(args: LongrunArgs, portable: bool) -> anyhow::Result<()> {
    anyhow::ensure!(args.every > 0, "--every must be at least 1");
    let ctx = GpuContext::new(wgsplat::ContextOptions::from_env()?.with_portable(portable))
        .context("opening the GPU")?;
    let dataset = load_dataset(args.data.as_deref(), &args.data_args, [0.0; 3])?;
    let config = TrainConfig {
        iterations: args.iterations,
        densify_until: args.densify_until,
        loss_readback_every: 10,
        ..TrainConfig::default()
    };
    let params = initial_gaussians(&ctx, &dataset, &config)?;
    let mut trainer = Trainer::new(&ctx, dataset, params, config)?;
    println!(
        "{} iterations on {} ({}), sampled every {}; densification stops at {}",
        args.iterations,
        ctx.info().name,
        ctx.info().kernel_path(),
        args.every,
        args.densify_until
    );
    println!(
        "{:>9} {:>8} {:>9} {:>9} {:>10} {:>9} {:>11} {:>8} {:>11} {:>9} {:>10}",
        "iteration",
        "seconds",
        "gaussians",
        "RSS MiB",
        "alloc MiB",
        "pool MiB",
        "unexpl. MiB",
        "buffers",
        "bind groups",
        "pipelines",
        "wgpu MiB"
    );
    let start = Instant::now();
    let mut samples: Vec<Sample> = Vec::new();
    while trainer.iteration() < args.iterations {
        trainer.step()?;
        let i = trainer.iteration();
        if i.is_multiple_of(args.every) || i == args.iterations {
            let s = Sample::take(&ctx, &trainer, start.elapsed().as_secs_f64())?;
            println!(
                "{:>9} {:>8.1} {:>9} {:>9.1} {:>10.1} {:>9.1} {:>11.1} {:>8} {:>11} {:>9} {:>10.1}",
                s.iteration,
                s.seconds,
                s.gaussians,
                s.process.map_or(f64::NAN, |p| mib(p.rss_bytes as i64)),
                mib(s.report.total.live_bytes as i64),
                mib(s.report.pooled_bytes as i64),
                s.unexplained().map_or(f64::NAN, mib),
                s.objects.buffers,
                s.objects.bind_groups,
                s.objects.compute_pipelines,
                mib(s.objects.buffer_memory_bytes as i64),
            );
            samples.push(s);
        }
    }
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        anyhow::bail!("no sample was taken: --iterations must be at least 1");
    };
    let growth = match (first.process, last.process) {
        (Some(a), Some(b)) => Some(b.rss_bytes as i64 - a.rss_bytes as i64),
        _ => None,
    };
    let objects_flat = samples.iter().all(|s| s.objects == first.objects);
    match growth {
        Some(g) => println!(
            "after warm-up (iteration {}): RSS {:+.1} MiB ({:+.2}%) over {} iterations, {:+.1} KiB per iteration; wgpu objects {}",
            first.iteration,
            mib(g),
            100.0 * g as f64 / first.process.map_or(1, |p| p.rss_bytes.max(1)) as f64,
            last.iteration - first.iteration,
            g as f64 / 1024.0 / (last.iteration - first.iteration).max(1) as f64,
            if objects_flat { "flat" } else { "MOVED" }
        ),
        None => println!("no RSS on this system (no /proc/self/status)"),
    }
    let json_path = args
        .json
        .unwrap_or_else(|| super::default_json_path("longrun"));
    write_json_atomic(
        &json_path,
        &json!({
            "adapter": ctx.info().name, "kernel_path": ctx.info().kernel_path(),
            "iterations": args.iterations, "every": args.every, "densify_until": args.densify_until,
            "rss_growth_after_warmup_bytes": growth, "wgpu_objects_flat": objects_flat,
            "samples": samples.iter().map(Sample::to_json).collect::<Vec<_>>(),
        }),
    )?;
    println!("wrote {}", json_path.display());
    Ok(())
}

//! `wgsplat bench knn`: the GPU k-NN initialisation (mean squared distance to the 3 nearest other
//! points) on uniform random points, against a CPU k-d tree (kiddo, all cores) in the same run:
//! seconds, the allocator's peak bytes over the op, and the agreement of the two results.

use super::{default_json_path, parse_size, write_json_atomic};
use anyhow::Context as _;
use kiddo::{ImmutableKdTree, SquaredEuclidean, batch::Executor};
use serde_json::json;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Instant;
use wgsplat::gpu::memory::format_bytes;
use wgsplat::knn;
use wgsplat::rng::SplitMix64;
use wgsplat::{GpuContext, MemoryCategory, Tensor};

/// Options of `wgsplat bench knn`.
#[derive(clap::Args)]
pub struct KnnArgs {
    /// Point counts (uniform random in a cube).
    #[arg(long, value_delimiter = ',', default_values = ["100k", "1M", "10M"], value_parser = parse_size)]
    sizes: Vec<u64>,
    /// Timed runs per size (the median is reported; pipelines are compiled beforehand).
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Output JSON path.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// GPU seconds (median of `runs`), the allocator's peak bytes over the op (total and above the
/// bytes live before it), and the result of the last run.
struct GpuRun {
    seconds: f64,
    peak_bytes: u64,
    peak_above_input_bytes: u64,
    result: Vec<f32>,
}

fn gpu_run(ctx: &GpuContext, points: &[[f32; 3]], runs: usize) -> anyhow::Result<GpuRun> {
    let mut enc = ctx.encoder("bench knn input");
    let flat: &[f32] = bytemuck::cast_slice(points);
    let input = Tensor::from_slice(
        &mut enc,
        flat,
        &[points.len(), 3],
        MemoryCategory::Other,
        "bench knn points",
    )?;
    ctx.submit(enc)?;
    ctx.wait_idle()?;
    let mut samples = Vec::new();
    let (mut peak_bytes, mut peak_above_input_bytes, mut result) = (0, 0, Vec::new());
    for _ in 0..runs.max(1) {
        ctx.allocator().reset_peaks();
        let live_before = ctx.memory_report().total.live_bytes;
        let start = Instant::now();
        let mut enc = ctx.encoder("bench knn");
        let out = knn::mean_sq_dist_3nn(&mut enc, &input)?;
        ctx.submit(enc)?;
        ctx.wait_idle()?;
        samples.push(start.elapsed().as_secs_f64());
        let report = ctx.memory_report();
        peak_bytes = report.total.peak_bytes;
        peak_above_input_bytes = report.total.peak_bytes - live_before;
        result = out.read::<f32>(ctx)?;
    }
    let seconds = super::median_ms(&mut samples);
    Ok(GpuRun {
        seconds,
        peak_bytes,
        peak_above_input_bytes,
        result,
    })
}

/// Seconds of the sorting part alone: one `sort_pairs` per word of the op's sort key
/// ([`knn::KEY_BITS`]) over `n` random keys.
fn gpu_sort_seconds(ctx: &GpuContext, n: usize) -> anyhow::Result<f64> {
    let mut rng = SplitMix64::new(13);
    let mut enc = ctx.encoder("bench knn sort input");
    let keys = Tensor::from_slice(
        &mut enc,
        &rng.vec_u32(n, 0),
        &[n],
        MemoryCategory::Other,
        "bench keys",
    )?;
    let values = Tensor::uninit(
        &mut enc,
        wgsplat::DType::U32,
        &[n],
        MemoryCategory::Other,
        "bench values",
    )?;
    wgsplat::ops::arange(&mut enc, &values, 0u32, 1)?;
    ctx.submit(enc)?;
    ctx.wait_idle()?;
    let start = Instant::now();
    let mut enc = ctx.encoder("bench knn sort");
    let mut current = values;
    for bits in knn::KEY_BITS {
        current = wgsplat::ops::radix_sort::sort_pairs(&mut enc, &keys, &current, bits)?.1;
    }
    ctx.submit(enc)?;
    ctx.wait_idle()?;
    Ok(start.elapsed().as_secs_f64())
}

/// The CPU baseline: build a kiddo tree and query the 4 nearest of every point in parallel
/// (the point itself is one of them), then average the 3 others. Returns (seconds, result).
fn cpu_run(points: &[[f32; 3]]) -> anyhow::Result<(f64, Vec<f32>)> {
    let start = Instant::now();
    let tree: ImmutableKdTree<f32, 3> =
        ImmutableKdTree::new_from_slice(points).map_err(|e| anyhow::anyhow!("kiddo: {e:?}"))?;
    let four = NonZeroUsize::new(knn::NEIGHBOURS + 1).context("neighbour count")?;
    let found = tree
        .query_batch(points)
        .nearest_n::<SquaredEuclidean<f32>>(four)
        .with_executor(&Executor::parallel())
        .execute();
    let mut result = Vec::with_capacity(points.len());
    for i in 0..points.len() {
        let items = found.get(i).context("kiddo result")?;
        let mut d: Vec<f32> = items
            .iter()
            .filter(|r| r.item as usize != i)
            .take(knn::NEIGHBOURS)
            .map(|r| r.distance)
            .collect();
        d.sort_by(f32::total_cmp);
        result.push(knn::mean_of_nearest(&d));
    }
    Ok((start.elapsed().as_secs_f64(), result))
}

fn max_relative_difference(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (f64::from(x) - f64::from(y)).abs() / f64::from(y).abs().max(1e-30))
        .fold(0.0, f64::max)
}

/// Runs the benchmark on one context (the portable path with `--portable`).
pub fn run(args: KnnArgs, portable: bool) -> anyhow::Result<()> {
    let options = wgsplat::ContextOptions::from_env()?.with_portable(portable);
    let ctx = GpuContext::new(options).context("opening the GPU")?;
    let adapter = ctx.info().name.clone();
    let path = ctx.info().kernel_path();
    println!(
        "adapter: {adapter}; path: {path}; runs per figure: {} (median)",
        args.runs
    );
    // Compile every pipeline before timing.
    let mut rng = SplitMix64::new(11);
    let warm: Vec<[f32; 3]> = (0..4096)
        .map(|_| [rng.unit(), rng.unit(), rng.unit()])
        .collect();
    gpu_run(&ctx, &warm, 1)?;
    println!(
        "{:>10} {:>10} {:>12} {:>12} {:>14} {:>10} {:>8} {:>10}",
        "n", "gpu s", "(sorts s)", "gpu peak", "peak-input", "kiddo s", "ratio", "max rel"
    );
    let mut rows = Vec::new();
    for &n in &args.sizes {
        let points: Vec<[f32; 3]> = (0..n)
            .map(|_| {
                [
                    rng.range(-1.0, 1.0),
                    rng.range(-1.0, 1.0),
                    rng.range(-1.0, 1.0),
                ]
            })
            .collect();
        let gpu = gpu_run(&ctx, &points, args.runs)?;
        let sort_seconds = gpu_sort_seconds(&ctx, n as usize)?;
        ctx.trim();
        let (cpu_seconds, cpu_result) = cpu_run(&points)?;
        let diff = max_relative_difference(&gpu.result, &cpu_result);
        println!(
            "{:>10} {:>10.3} {:>12.3} {:>12} {:>14} {:>10.3} {:>8.2} {:>10.1e}",
            n,
            gpu.seconds,
            sort_seconds,
            format_bytes(gpu.peak_bytes),
            format_bytes(gpu.peak_above_input_bytes),
            cpu_seconds,
            cpu_seconds / gpu.seconds,
            diff
        );
        rows.push(json!({
            "n": n, "distribution": "uniform in [-1, 1]^3", "gpu_seconds": gpu.seconds,
            "gpu_sort_seconds_included": sort_seconds,
            "gpu_peak_bytes": gpu.peak_bytes, "gpu_peak_bytes_above_input": gpu.peak_above_input_bytes,
            "gpu_peak_bytes_per_point": gpu.peak_above_input_bytes as f64 / n.max(1) as f64,
            "cpu_kiddo_seconds": cpu_seconds, "cpu_threads": std::thread::available_parallelism().map_or(1, |p| p.get()),
            "speedup_vs_kiddo": cpu_seconds / gpu.seconds, "max_relative_difference": diff,
        }));
    }
    let json_path = args.json.unwrap_or_else(|| default_json_path("knn"));
    let report = json!({
        "benchmark": "knn", "op": "mean_sq_dist_3nn", "adapter": adapter, "path": path, "runs": args.runs,
        "statistic": "median", "peak": "allocator total peak over the op (includes the input points)", "results": rows,
    });
    write_json_atomic(&json_path, &report)?;
    println!("wrote {}", json_path.display());
    Ok(())
}

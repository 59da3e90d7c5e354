//! `wgsplat bench loss`: the fused L1 + SSIM loss forward + backward (one `loss_and_grad` and a
//! wait) at 256², 1080p and 4K, the forward alone, the scratch memory the op allocates (peak of
//! the allocator's frame-scratch and other categories during the op), and the f64 CPU reference
//! of the same computation at 256² as the baseline.

use super::{default_json_path, time_median, write_json_atomic};
use anyhow::Context as _;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;
use wgsplat::loss::reference::{self, ReferenceGt};
use wgsplat::loss::{self, LossOptions};
use wgsplat::rng::SplitMix64;
use wgsplat::{GpuContext, MemoryCategory, Tensor};

/// Options of `wgsplat bench loss`.
#[derive(clap::Args)]
pub struct LossArgs {
    /// Image sizes as WIDTHxHEIGHT.
    #[arg(long, value_delimiter = ',', default_values = ["256x256", "1920x1080", "3840x2160"], value_parser = parse_dims)]
    sizes: Vec<(usize, usize)>,
    /// Timed runs per figure (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Ground truth as packed 8-bit RGBA instead of f32 RGBA.
    #[arg(long)]
    rgba8_gt: bool,
    /// Side of the square image for the CPU baseline.
    #[arg(long, default_value_t = 256)]
    cpu_size: usize,
    /// Output JSON path.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn parse_dims(text: &str) -> Result<(usize, usize), String> {
    let (w, h) = text
        .trim()
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected WIDTHxHEIGHT, got {text:?}"))?;
    let parse = |s: &str| {
        s.parse::<usize>()
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| format!("bad size {text:?}"))
    };
    Ok((parse(w)?, parse(h)?))
}

/// Peak bytes of the scratch categories above what was live before the op.
fn scratch_peak(ctx: &GpuContext, before: &wgsplat::MemoryReport) -> (u64, u64) {
    let after = ctx.memory_report();
    let grow = |c: MemoryCategory| {
        after.by_category[&c]
            .peak_bytes
            .saturating_sub(before.by_category[&c].live_bytes)
    };
    (
        grow(MemoryCategory::FrameScratch),
        grow(MemoryCategory::Other),
    )
}

struct Inputs {
    rendered: Tensor,
    gt: Tensor,
}

fn inputs(
    ctx: &GpuContext,
    width: usize,
    height: usize,
    rgba8: bool,
    rng: &mut SplitMix64,
) -> anyhow::Result<Inputs> {
    let mut enc = ctx.encoder("bench loss inputs");
    let pixels = width * height;
    let rendered = Tensor::from_slice(
        &mut enc,
        &rng.vec_f32(4 * pixels, 0.0, 1.0),
        &[height, width, 4],
        MemoryCategory::Other,
        "bench rendered",
    )?;
    let gt = if rgba8 {
        Tensor::from_slice(
            &mut enc,
            &rng.vec_u32(pixels, 0),
            &[height, width],
            MemoryCategory::Other,
            "bench gt",
        )?
    } else {
        Tensor::from_slice(
            &mut enc,
            &rng.vec_f32(4 * pixels, 0.0, 1.0),
            &[height, width, 4],
            MemoryCategory::Other,
            "bench gt",
        )?
    };
    ctx.submit(enc)?;
    ctx.wait_idle()?;
    Ok(Inputs { rendered, gt })
}

/// Runs the benchmark on one context (the kernels have no subgroup variant, so both paths run the
/// same code; `--portable` selects the portable context).
pub fn run(args: LossArgs, portable_only: bool) -> anyhow::Result<()> {
    let options = wgsplat::ContextOptions::from_env()?.with_portable(portable_only);
    let ctx = GpuContext::new(options).context("opening the GPU")?;
    let adapter = ctx.info().name.clone();
    let path = ctx.info().kernel_path();
    let loss_options = LossOptions::default();
    println!(
        "adapter: {adapter}; path: {path}; runs per figure: {} (median); gt: {}",
        args.runs,
        if args.rgba8_gt { "rgba8" } else { "f32" }
    );
    println!(
        "{:>11} {:>12} {:>12} {:>16} {:>14}",
        "size", "fwd+bwd ms", "fwd ms", "scratch bytes", "grad bytes"
    );
    let mut rng = SplitMix64::new(5);
    let mut rows = Vec::new();
    let mut gpu_at_cpu_size = None;
    for &(width, height) in &args.sizes {
        let data = inputs(&ctx, width, height, args.rgba8_gt, &mut rng)?;
        ctx.allocator().reset_peaks();
        let before = ctx.memory_report();
        let fused_ms = time_median(args.runs, || {
            let mut enc = ctx.encoder("bench loss_and_grad");
            let out = loss::loss_and_grad(&mut enc, &data.rendered, &data.gt, &loss_options)?;
            ctx.submit(enc)?;
            ctx.wait_idle()?;
            drop(out);
            Ok(())
        })?;
        let (frame_scratch, other) = scratch_peak(&ctx, &before);
        let forward_ms = time_median(args.runs, || {
            let mut enc = ctx.encoder("bench loss_stats");
            let stats = loss::loss_stats(&mut enc, &data.rendered, &data.gt, &loss_options)?;
            ctx.submit(enc)?;
            ctx.wait_idle()?;
            drop(stats);
            Ok(())
        })?;
        let grad_bytes = (width * height * 4 * 4) as u64;
        let scratch = frame_scratch + other;
        println!(
            "{:>11} {:>12.2} {:>12.2} {:>16} {:>14}",
            format!("{width}x{height}"),
            fused_ms,
            forward_ms,
            scratch,
            grad_bytes
        );
        if (width, height) == (args.cpu_size, args.cpu_size) {
            gpu_at_cpu_size = Some(fused_ms);
        }
        rows.push(json!({
            "width": width, "height": height, "gpu_forward_backward_ms": fused_ms, "gpu_forward_ms": forward_ms,
            "scratch_peak_bytes": scratch, "scratch_peak_frame_scratch_bytes": frame_scratch, "scratch_peak_other_bytes": other,
            "scratch_bytes_excluding_gradient": scratch.saturating_sub(grad_bytes), "gradient_bytes": grad_bytes,
        }));
    }
    let n = args.cpu_size;
    let rendered = rng.vec_f32(4 * n * n, 0.0, 1.0);
    let gt = rng.vec_f32(4 * n * n, 0.0, 1.0);
    let start = Instant::now();
    let cpu = reference::reference_loss(
        &rendered,
        ReferenceGt::Rgba32F(&gt),
        n,
        n,
        &loss_options,
        true,
    );
    let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
    std::hint::black_box(&cpu);
    let gpu_ms = match gpu_at_cpu_size {
        Some(ms) => ms,
        None => {
            let data = inputs(&ctx, n, n, false, &mut rng)?;
            time_median(args.runs, || {
                let mut enc = ctx.encoder("bench loss_and_grad");
                let out = loss::loss_and_grad(&mut enc, &data.rendered, &data.gt, &loss_options)?;
                ctx.submit(enc)?;
                ctx.wait_idle()?;
                drop(out);
                Ok(())
            })?
        }
    };
    println!(
        "CPU reference (f64, single thread) forward+backward at {n}x{n}: {cpu_ms:.1} ms; GPU {gpu_ms:.2} ms; speedup {:.1}x",
        cpu_ms / gpu_ms
    );
    let report = json!({
        "benchmark": "loss", "adapter": adapter, "path": path, "runs": args.runs, "statistic": "median",
        "ground_truth": if args.rgba8_gt { "rgba8" } else { "f32" }, "ssim_weight": loss_options.ssim_weight, "results": rows,
        "cpu_baseline": { "width": n, "height": n, "cpu_reference_ms": cpu_ms, "gpu_forward_backward_ms": gpu_ms, "speedup": cpu_ms / gpu_ms },
    });
    let out_path = args.json.unwrap_or_else(|| default_json_path("loss"));
    write_json_atomic(&out_path, &report)?;
    println!("wrote {}", out_path.display());
    Ok(())
}

//! `wgsplat bench render`: forward and backward milliseconds of the splat rasterizer, intersections
//! per second, and per-frame scratch bytes per Gaussian, over scene sizes and resolutions.

use super::{default_json_path, parse_size, time_median, write_json_atomic};
use anyhow::Context as _;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;
use wgsplat::rng::SplitMix64;
use wgsplat::splat::backward::{BackwardOptions, record_backward};
use wgsplat::splat::forward::{RenderOptions, render};
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::splat::{Camera, GaussianTensors};
use wgsplat::{DType, GpuContext, MemoryCategory, Tensor, ops};

/// Options of `wgsplat bench render`.
#[derive(clap::Args)]
pub struct RenderArgs {
    /// Gaussian counts.
    #[arg(long, value_delimiter = ',', default_values = ["10k", "100k", "1M"], value_parser = parse_size)]
    gaussians: Vec<u64>,
    /// Resolutions as WIDTHxHEIGHT.
    #[arg(long, value_delimiter = ',', default_values = ["256x256", "512x512", "1920x1080"])]
    resolutions: Vec<String>,
    /// Timed runs per figure (median).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Skip the remaining larger configurations once one forward+backward takes longer than this.
    #[arg(long, default_value_t = 20.0)]
    max_seconds: f64,
    /// Output JSON path.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn parse_resolution(text: &str) -> anyhow::Result<(u32, u32)> {
    let (w, h) = text
        .split_once('x')
        .with_context(|| format!("resolution {text:?} must look like 512x512"))?;
    Ok((w.trim().parse()?, h.trim().parse()?))
}

/// A random scene: Gaussians in a box 4 units in front of the camera, sized so a typical splat
/// covers a few pixels at 256².
fn scene(n: usize, seed: u64) -> CpuGaussians {
    let mut rng = SplitMix64::new(seed);
    let mut g = CpuGaussians::default();
    let scale = (0.02f32 * (10_000.0 / n as f32).cbrt().max(0.2)).ln();
    for _ in 0..n {
        g.means.push([
            rng.range(-1.5, 1.5),
            rng.range(-1.5, 1.5),
            rng.range(-1.5, 1.5),
        ]);
        g.log_scales.push([
            scale + rng.range(-0.5, 0.5),
            scale + rng.range(-0.5, 0.5),
            scale + rng.range(-0.5, 0.5),
        ]);
        g.quats.push([
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
        ]);
        g.opacity_logits.push(rng.range(-1.0, 2.0));
        let mut sh = [[0f32; 3]; 16];
        for c in sh.iter_mut() {
            *c = [
                rng.range(-0.5, 0.5),
                rng.range(-0.5, 0.5),
                rng.range(-0.5, 0.5),
            ];
        }
        g.sh.push(sh);
    }
    g
}

/// Runs the benchmark.
pub fn run(args: RenderArgs, portable: bool) -> anyhow::Result<()> {
    let ctx = GpuContext::new(wgsplat::ContextOptions::from_env()?.with_portable(portable))
        .context("opening the GPU")?;
    let path = ctx.info().kernel_path();
    println!(
        "adapter: {}; kernel path: {path}; runs per figure: {} (median)",
        ctx.info().name,
        args.runs
    );
    println!(
        "{:>9} {:>11} {:>11} {:>11} {:>12} {:>14} {:>12}",
        "gaussians", "resolution", "fwd ms", "bwd ms", "isects", "Misects/s fwd", "scratch B/G"
    );
    let mut rows = Vec::new();
    let mut over_budget = false;
    for &n in &args.gaussians {
        let cpu = scene(n as usize, 42);
        let mut enc = ctx.encoder("bench upload");
        let params =
            GaussianTensors::upload(&mut enc, &cpu, 3, MemoryCategory::Parameters, "bench")?;
        let grads = GaussianTensors::zeros_like(
            &mut enc,
            &params,
            MemoryCategory::Gradients,
            "bench.grad",
        )?;
        ctx.submit(enc)?;
        drop(cpu);
        for res in &args.resolutions {
            if over_budget {
                println!(
                    "{n:>9} {res:>11} skipped (a smaller configuration exceeded --max-seconds)"
                );
                rows.push(json!({ "gaussians": n, "resolution": res, "skipped": true }));
                continue;
            }
            let (w, h) = parse_resolution(res)?;
            let cam = Camera::facing_origin(w, h, 4.0, [0.0; 3]);
            let options = RenderOptions {
                sh_degree: 3,
                ..Default::default()
            };
            let started = Instant::now();
            ctx.allocator().reset_peaks();
            let scratch_before = ctx.memory_report().live(MemoryCategory::FrameScratch)
                + ctx.memory_report().live(MemoryCategory::SortScratch);
            let fwd = render(&ctx, &params, &cam, options)?;
            let mut enc = ctx.encoder("bench v_image");
            let v_image = Tensor::uninit(
                &mut enc,
                DType::F32,
                fwd.image.shape(),
                MemoryCategory::FrameScratch,
                "bench v_image",
            )?;
            ops::fill(&mut enc, &v_image, 1e-3f32)?;
            ctx.submit(enc)?;
            let mut enc = ctx.encoder("bench backward");
            record_backward(
                &mut enc,
                &params,
                &fwd,
                &v_image,
                &grads,
                None,
                BackwardOptions::default(),
            )?;
            ctx.submit(enc)?;
            ctx.wait_idle()?;
            let report = ctx.memory_report();
            let scratch_peak = report.peak(MemoryCategory::FrameScratch)
                + report.peak(MemoryCategory::SortScratch)
                - scratch_before;
            let isects = fwd.num_intersections;
            drop(fwd);
            if started.elapsed().as_secs_f64() > args.max_seconds {
                over_budget = true;
            }
            let fwd_ms = time_median(args.runs, || {
                render(&ctx, &params, &cam, options)?;
                ctx.wait_idle()?;
                Ok(())
            })?;
            let fwd = render(&ctx, &params, &cam, options)?;
            let bwd_ms = time_median(args.runs, || {
                let mut enc = ctx.encoder("bench backward");
                record_backward(
                    &mut enc,
                    &params,
                    &fwd,
                    &v_image,
                    &grads,
                    None,
                    BackwardOptions::default(),
                )?;
                ctx.submit(enc)?;
                ctx.wait_idle()?;
                Ok(())
            })?;
            let per_gaussian = scratch_peak as f64 / n as f64;
            let rate = isects as f64 / (fwd_ms * 1e-3) / 1e6;
            println!(
                "{n:>9} {res:>11} {fwd_ms:>11.2} {bwd_ms:>11.2} {isects:>12} {rate:>14.2} {per_gaussian:>12.1}"
            );
            rows.push(json!({
                "gaussians": n, "resolution": res, "forward_ms": fwd_ms, "backward_ms": bwd_ms,
                "intersections": isects, "visible": fwd.num_visible, "intersections_per_s": isects as f64 / (fwd_ms * 1e-3),
                "frame_scratch_peak_bytes": scratch_peak, "scratch_bytes_per_gaussian": per_gaussian,
            }));
        }
    }
    let out = args.json.unwrap_or_else(|| default_json_path("render"));
    write_json_atomic(
        &out,
        &json!({ "benchmark": "render", "adapter": ctx.info().name, "kernel_path": path, "runs": args.runs, "results": rows }),
    )?;
    println!("wrote {}", out.display());
    Ok(())
}

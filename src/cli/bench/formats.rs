//! `wgsplat bench formats MODEL.ply DATA`: each model format's size, write and read times, and how
//! close its model renders to the PLY's on the dataset's views (PSNR of the format's render
//! against the PLY's render, both made here on the same adapter).

use super::write_json_atomic;
use crate::cli::dataset::load_dataset;
use anyhow::Context as _;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;
use wgsplat::GpuContext;
use wgsplat::data::View;
use wgsplat::io::PlyModel;
use wgsplat::io::formats::{ModelFormat, read_model, write_model};
use wgsplat::io::model::upload_model;
use wgsplat::splat::forward::render_rgb;
use wgsplat::train::options::DataArgs;

/// Options of `wgsplat bench formats`.
#[derive(clap::Args)]
pub struct FormatsArgs {
    /// The model, a 3DGS PLY (e.g. a trained point_cloud.ply).
    model: PathBuf,
    /// The dataset whose cameras to render from (test views, or train views where it has none);
    /// omit it for the built-in scene.
    data: Option<PathBuf>,
    #[command(flatten)]
    data_args: DataArgs,
    /// Views rendered per format (evenly spread over the split).
    #[arg(long, default_value_t = 10)]
    views: usize,
    /// Output JSON path (default target/bench/formats.json).
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Renders `model` from every view in `views`: one RGB image (f32, row-major) per view.
fn render_all(
    ctx: &GpuContext,
    model: &PlyModel,
    views: &[&View],
) -> anyhow::Result<Vec<Vec<f32>>> {
    let params = upload_model(ctx, model, "bench formats model")?;
    views
        .iter()
        .map(|view| {
            let mut camera = view.camera.clone();
            camera.background = [0.0; 3];
            Ok(render_rgb(ctx, &params, &camera)?)
        })
        .collect()
}

/// PSNR of `a` against `b` over every image, in dB (infinite when identical).
fn psnr(a: &[Vec<f32>], b: &[Vec<f32>]) -> f64 {
    let (mut squared, mut count) = (0f64, 0usize);
    for (x, y) in a.iter().zip(b) {
        squared += x
            .iter()
            .zip(y)
            .map(|(p, q)| f64::from(p - q).powi(2))
            .sum::<f64>();
        count += x.len();
    }
    let mse = squared / count.max(1) as f64;
    if mse == 0.0 {
        f64::INFINITY
    } else {
        -10.0 * mse.log10()
    }
}

/// Runs the benchmark.
pub fn run(args: FormatsArgs, portable_only: bool) -> anyhow::Result<()> {
    let ctx = GpuContext::new(wgsplat::ContextOptions::from_env()?.with_portable(portable_only))
        .context("opening the GPU")?;
    let model = wgsplat::io::read_ply(&args.model)
        .with_context(|| format!("reading {}", args.model.display()))?;
    let n = model.gaussians.means.len().max(1);
    let dataset = load_dataset(args.data.as_deref(), &args.data_args, [0.0; 3])?;
    let split = if dataset.test.is_empty() {
        &dataset.train
    } else {
        &dataset.test
    };
    let count = args.views.clamp(1, split.len().max(1));
    let views: Vec<&View> = (0..count)
        .filter_map(|i| split.get(i * split.len() / count))
        .collect();
    let reference = render_all(&ctx, &model, &views)?;
    let dir = tempdir()?;
    println!(
        "{} Gaussians (SH degree {}), {} views; PSNR is each format's render against the PLY's",
        n,
        model.sh_degree,
        views.len()
    );
    println!(
        "{:<16} {:>12} {:>10} {:>10} {:>10}  note",
        "format", "bytes/G", "write s", "read s", "PSNR dB"
    );
    let mut rows = Vec::new();
    for format in ModelFormat::ALL {
        let path = dir.join(format!("model.{}", format.extension()));
        let started = Instant::now();
        let notes = write_model(&path, format, &model)?;
        let write_s = started.elapsed().as_secs_f64();
        let bytes = std::fs::metadata(&path)?.len();
        let started = Instant::now();
        let back = read_model(&path, format)?;
        let read_s = started.elapsed().as_secs_f64();
        let db = psnr(&render_all(&ctx, &back, &views)?, &reference);
        let per = bytes as f64 / n as f64;
        println!(
            "{:<16} {per:>12.1} {write_s:>10.2} {read_s:>10.2} {db:>10.2}  {}",
            format.name(),
            notes.join("; ")
        );
        rows.push(json!({
            "format": format.name(), "bytes": bytes, "bytes_per_gaussian": per, "write_s": write_s,
            "read_s": read_s, "psnr_vs_ply_db": if db.is_finite() { json!(db) } else { json!("inf") }, "notes": notes,
        }));
        let _ = std::fs::remove_file(&path);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let json_path = args
        .json
        .unwrap_or_else(|| super::default_json_path("formats"));
    write_json_atomic(
        &json_path,
        &json!({
            "benchmark": "formats", "model": args.model.display().to_string(), "gaussians": n,
            "sh_degree": model.sh_degree, "views": views.len(), "adapter": ctx.info().name, "rows": rows,
        }),
    )?;
    println!("wrote {}", json_path.display());
    Ok(())
}

/// A fresh folder for the written models, under the system's temporary directory.
fn tempdir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("wgsplat-bench-formats-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating {}", Path::new(&dir).display()))?;
    Ok(dir)
}

//! `wgsplat bench lod MODEL`: the quality and frame time of a level of detail at each splat
//! budget. The model is tiled over a square grid on its ground plane (a trained town made into a
//! city), its level of detail built and written, and three views rendered at 2, 10, 25, 50 and
//! 100% of the Gaussians: a far one that sees the whole grid, a near one inside it, and one
//! straight down over the grid's centre. Each cut's render is scored against the full model's
//! render on the same adapter and against the truth (the full model rendered `--truth-scale`
//! times larger and area-downsampled, `wgsplat::io::lod::quality`), beside the naive cut of the same
//! budget and the full model, each against the truth; frame times include the cut, its pages'
//! loading and the render. A camera moving in small steps through the threshold gives the
//! frame-to-frame PSNR, where a popping level would show as a dip.

use super::write_json_atomic;
use anyhow::Context as _;
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;
use wgsplat::GpuContext;
use wgsplat::io::formats::{ModelFormat, read_model};
use wgsplat::io::lod::city::{centre_bounds, tiled};
use wgsplat::io::lod::quality::{naive_cut, psnr, truth};
use wgsplat::io::lod::{
    CutOptions, Loading, LodRenderer, PageEncoding, RefineOptions, WriteOptions, build_tree,
    refine_tree, write_lod,
};
use wgsplat::io::model::upload_model;
use wgsplat::show::PathFrame;
use wgsplat::show::paths::look_at;
use wgsplat::splat::Camera;
use wgsplat::splat::forward::render_rgb;

/// Options of `wgsplat bench lod`.
#[derive(clap::Args)]
pub struct LodBenchArgs {
    /// The model (any format), e.g. a trained town's point_cloud.ply.
    model: PathBuf,
    /// Copies of the model along each ground axis (the city is TILE × TILE models).
    #[arg(long, default_value_t = 5)]
    tile: usize,
    /// Side of the rendered square images in pixels.
    #[arg(long, default_value_t = 128)]
    size: u32,
    /// Store the pages compressed (compressed PLY), as `wgsplat lod` does by default; without it
    /// the pages are lossless, so the PSNR measures the level of detail alone.
    #[arg(long)]
    compressed: bool,
    /// Frames timed per measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Also write each view's full render and every cut's render as PNGs into this folder.
    #[arg(long)]
    images: Option<PathBuf>,
    /// Optimise the merged nodes for this many steps before writing, as `wgsplat lod
    /// --refine-steps` does; 0 measures the merge alone.
    #[arg(long, default_value_t = wgsplat::io::lod::refine::DEFAULT_STEPS)]
    refine_steps: usize,
    /// The truth each render is also scored against: the full model rendered this many times
    /// larger along each side and area-downsampled.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=16))]
    truth_scale: u32,
    /// Output JSON path (default target/bench/lod.json).
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The fractions of the Gaussians measured.
const BUDGETS: [f64; 5] = [0.02, 0.1, 0.25, 0.5, 1.0];

/// A camera at `eye` looking at `target`, `up` along `up_axis` (sign chosen by the model's
/// heights: the side the camera is on; a camera straight above takes the next axis as its up).
fn camera(eye: [f64; 3], target: [f64; 3], up_axis: usize, size: u32) -> anyhow::Result<Camera> {
    let mut up = [0.0; 3];
    up[up_axis] = if eye[up_axis] >= target[up_axis] {
        1.0
    } else {
        -1.0
    };
    let off_axis = (0..3)
        .filter(|&k| k != up_axis)
        .map(|k| (eye[k] - target[k]).abs())
        .fold(0.0, f64::max);
    if off_axis < 1e-9 * (eye[up_axis] - target[up_axis]).abs() {
        up = [0.0; 3];
        up[(up_axis + 1) % 3] = 1.0;
    }
    let rotation = look_at(eye, target, up).context("a view straight along the up axis")?;
    let frame = PathFrame {
        rotation,
        position: eye,
        fov_y_degrees: 60.0,
    };
    Ok(frame.to_camera(wgsplat::show::CameraType::Perspective, size, size, [0.0; 3]))
}

/// Writes an RGB image as `DIR/NAME.png` when a folder was asked for.
fn save_png(
    dir: Option<&std::path::Path>,
    name: &str,
    rgb: &[f32],
    size: u32,
) -> anyhow::Result<()> {
    let Some(dir) = dir else { return Ok(()) };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let pixels = rgb
        .chunks_exact(3)
        .flat_map(|p| [p[0], p[1], p[2], 1.0].map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8))
        .collect();
    let image = wgsplat::data::image::RgbaImage {
        width: size,
        height: size,
        pixels,
    };
    image.write_png(&dir.join(format!("{name}.png")))?;
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn db_json(db: f64) -> serde_json::Value {
    if db.is_finite() {
        json!(db)
    } else {
        json!("inf")
    }
}

/// Runs the benchmark.
pub fn run(args: LodBenchArgs, portable_only: bool) -> anyhow::Result<()> {
    let ctx = GpuContext::new(wgsplat::ContextOptions::from_env()?.with_portable(portable_only))
        .context("opening the GPU")?;
    let model = read_model(&args.model, ModelFormat::from_path(&args.model)?)
        .with_context(|| format!("reading {}", args.model.display()))?;
    let (city, up) = tiled(&model, args.tile.max(1), args.tile.max(1));
    let total = city.gaussians.means.len() as u64;
    let started = Instant::now();
    let mut tree = build_tree(&city)?;
    let build_s = started.elapsed().as_secs_f64();
    let mut refined = serde_json::Value::Null;
    if args.refine_steps > 0 {
        let started = Instant::now();
        let mut up_vector = [0.0; 3];
        up_vector[up] = 1.0;
        let options = RefineOptions {
            steps: args.refine_steps,
            size: args.size,
            up: Some(up_vector),
            ..Default::default()
        };
        let report = refine_tree(&ctx, &mut tree, &options, &mut |_, _| {})?;
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "refined {} merged nodes in {} steps ({seconds:.1} s): held-out views at 10% {:.2} -> {:.2} dB",
            report.nodes_updated,
            report.steps,
            report.held_out_psnr_before,
            report.held_out_psnr_after
        );
        refined = json!({"steps": report.steps, "nodes_updated": report.nodes_updated,
            "held_out_psnr_before_db": report.held_out_psnr_before,
            "held_out_psnr_after_db": report.held_out_psnr_after, "seconds": seconds});
    }
    let dir = std::env::temp_dir().join(format!("wgsplat-bench-lod-{}", std::process::id()));
    let lod_dir = dir.join("city.lod");
    let encoding = if args.compressed {
        PageEncoding::CompressedPly
    } else {
        PageEncoding::Ply
    };
    let started = Instant::now();
    let index = write_lod(
        &tree,
        &lod_dir,
        WriteOptions {
            encoding,
            ..Default::default()
        },
    )?;
    let write_s = started.elapsed().as_secs_f64();
    drop(tree);
    println!(
        "{total} Gaussians ({}x{} tiles), {} nodes, depth {}, {} pages; built in {build_s:.1} s, \
         written in {write_s:.1} s",
        args.tile,
        args.tile,
        index.nodes,
        index.depth,
        index.pages.len()
    );
    let (lo, hi) = centre_bounds(&city);
    let centre = [0, 1, 2].map(|k| f64::from(lo[k] + hi[k]) / 2.0);
    let span = [0, 1, 2]
        .map(|k| f64::from(hi[k] - lo[k]))
        .into_iter()
        .fold(0.0, f64::max);
    let mut far_eye = centre;
    far_eye[up] += span * 0.9;
    far_eye[(up + 1) % 3] -= span * 0.6;
    let mut near_eye = centre;
    near_eye[up] += span * 0.04;
    near_eye[(up + 1) % 3] -= span * 0.08;
    // Straight down over the centre, high enough that the grid fills most of the view.
    let mut top_eye = centre;
    top_eye[up] += span * 1.1;
    let views = [
        ("far", camera(far_eye, centre, up, args.size)?),
        ("near", camera(near_eye, centre, up, args.size)?),
        ("top", camera(top_eye, centre, up, args.size)?),
    ];
    let full = upload_model(&ctx, &city, "bench lod city")?;
    let mut renderer = LodRenderer::open(&ctx, &lod_dir, 8 << 30)?;
    let repeats = args.repeats.max(1);
    println!(
        "PSNR in dB against the full render (aliased) and against the truth ({0}x larger, \
         area-downsampled); the naive cut keeps the largest opaque Gaussians",
        args.truth_scale
    );
    println!(
        "{:<5} {:>8} {:>10} {:>9} {:>10} {:>7} {:>9} {:>9} {:>11} {:>11}",
        "view",
        "budget",
        "Gaussians",
        "tau px",
        "frame ms",
        "x full",
        "lod:full",
        "lod:truth",
        "naive:full",
        "naive:truth"
    );
    let mut rows = Vec::new();
    let mut truths = Vec::new();
    for (name, cam) in &views {
        let reference = render_rgb(&ctx, &full, cam)?;
        let truth_image = truth(&ctx, &full, cam, args.truth_scale)?;
        let full_vs_truth = psnr(&reference, &truth_image);
        println!("{name:<5} every Gaussian against the truth: {full_vs_truth:.2} dB");
        truths.push(json!({"view": name, "full_vs_truth_db": db_json(full_vs_truth)}));
        save_png(
            args.images.as_deref(),
            &format!("{name}_truth"),
            &truth_image,
            args.size,
        )?;
        let nans = reference.iter().filter(|v| v.is_nan()).count();
        if nans > 0 {
            anyhow::bail!("the full model's render of the {name} view has {nans} NaN values");
        }
        save_png(
            args.images.as_deref(),
            &format!("{name}_full"),
            &reference,
            args.size,
        )?;
        let full_ms = median(
            (0..repeats)
                .map(|_| {
                    let t = Instant::now();
                    render_rgb(&ctx, &full, cam).map(|_| t.elapsed().as_secs_f64() * 1e3)
                })
                .collect::<wgsplat::Result<Vec<_>>>()?,
        );
        for fraction in BUDGETS {
            let options = CutOptions {
                tau_pixels: 0.25,
                splat_budget: ((total as f64 * fraction) as u64).max(1),
            };
            // Load the pages once, then time frames with the pages resident.
            renderer.prepare(&ctx, cam, options, Loading::Complete)?;
            let mut times = Vec::new();
            let mut last = None;
            for _ in 0..repeats {
                let t = Instant::now();
                let (g, report) = renderer.prepare(&ctx, cam, options, Loading::Complete)?;
                let image = render_rgb(&ctx, &g, cam)?;
                times.push(t.elapsed().as_secs_f64() * 1e3);
                last = Some((image, report));
            }
            let (image, report) = last.context("no frame")?;
            let ms = median(times);
            save_png(
                args.images.as_deref(),
                &format!("{name}_{:03.0}", fraction * 100.0),
                &image,
                args.size,
            )?;
            let db = psnr(&image, &reference);
            let db_truth = psnr(&image, &truth_image);
            let naive = naive_cut(&city, options.splat_budget as usize);
            let naive_image =
                render_rgb(&ctx, &upload_model(&ctx, &naive, "bench lod naive")?, cam)?;
            save_png(
                args.images.as_deref(),
                &format!("{name}_{:03.0}_naive", fraction * 100.0),
                &naive_image,
                args.size,
            )?;
            let (naive_db, naive_truth) = (
                psnr(&naive_image, &reference),
                psnr(&naive_image, &truth_image),
            );
            println!(
                "{name:<5} {:>7.0}% {:>10} {:>9.2} {ms:>10.1} {:>7.2} {db:>9.2} {db_truth:>9.2} \
                 {naive_db:>11.2} {naive_truth:>11.2}",
                fraction * 100.0,
                report.cut_nodes,
                report.tau_pixels,
                ms / full_ms
            );
            rows.push(json!({
                "view": name, "budget_fraction": fraction, "gaussians": report.cut_nodes,
                "tau_pixels": report.tau_pixels, "frame_ms": ms, "full_frame_ms": full_ms,
                "psnr_vs_full_db": db_json(db), "psnr_vs_truth_db": db_json(db_truth),
                "naive_psnr_vs_full_db": db_json(naive_db),
                "naive_psnr_vs_truth_db": db_json(naive_truth),
            }));
        }
    }
    // Smoothness: the far camera moving towards the centre in small steps, at 10%.
    let options = CutOptions {
        tau_pixels: 0.25,
        splat_budget: (total / 10).max(1),
    };
    let mut steps = Vec::new();
    let mut previous: Option<Vec<f32>> = None;
    for step in 0..12 {
        let t = 1.0 - 0.03 * step as f64;
        let eye = [0, 1, 2].map(|k| centre[k] + (far_eye[k] - centre[k]) * t);
        let cam = camera(eye, centre, up, args.size)?;
        let (g, report) = renderer.prepare(&ctx, &cam, options, Loading::Complete)?;
        let image = render_rgb(&ctx, &g, &cam)?;
        if let Some(prev) = &previous {
            steps.push(
                json!({"step": step, "psnr_to_previous_db": db_json(psnr(&image, prev)),
                "gaussians": report.cut_nodes, "tau_pixels": report.tau_pixels}),
            );
        }
        previous = Some(image);
    }
    let step_db: Vec<String> = steps
        .iter()
        .map(|s| {
            format!(
                "{:.1}",
                s["psnr_to_previous_db"].as_f64().unwrap_or(f64::INFINITY)
            )
        })
        .collect();
    println!(
        "frame-to-frame PSNR approaching at 10%: {}",
        step_db.join(" ")
    );
    let _ = std::fs::remove_dir_all(&dir);
    let json_path = args
        .json
        .unwrap_or_else(|| PathBuf::from("target/bench/lod.json"));
    write_json_atomic(
        &json_path,
        &json!({
            "bench": "lod", "adapter": ctx.info().name, "gaussians": total, "tile": args.tile,
            "nodes": index.nodes, "depth": index.depth, "pages": index.pages.len(),
            "encoding": format!("{encoding:?}"), "size": args.size, "build_s": build_s,
            "write_s": write_s, "refined": refined, "truth_scale": args.truth_scale,
            "full_vs_truth": truths, "rows": rows, "approach_steps": steps,
        }),
    )?;
    println!("wrote {}", json_path.display());
    Ok(())
}

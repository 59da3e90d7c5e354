//! wgsplat-viewer: inspect a PLY or watch a model train live, rendered by wgsplat's own rasterizer
//! on the same GPU device egui draws with.

mod app;
mod panels;
mod present;
mod render;
mod scene;
mod screenshot;
mod source;
mod training;
mod views;

use anyhow::Context as _;
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Command-line options of `wgsplat-viewer`.
#[derive(Parser, Clone, Debug)]
#[command(name = "wgsplat-viewer", version, about)]
pub struct Args {
    /// A 3DGS PLY to inspect, or a dataset folder (COLMAP or NeRF) to train live. Omit it to train
    /// the built-in scene.
    pub input: Option<PathBuf>,
    /// Cameras to show with a PLY: a dataset folder, or `builtin` for the built-in scene's.
    #[arg(long)]
    pub dataset: Option<String>,
    /// Downscale dataset images by 1, 2, 4 or 8.
    #[arg(short = 'r', long, default_value_t = 1)]
    pub resolution: u32,
    /// Hold out test views (COLMAP: every 8th; NeRF: its test json).
    #[arg(long)]
    pub eval: bool,
    /// Image side of the built-in scene.
    #[arg(long, default_value_t = 128)]
    pub builtin_resolution: u32,
    /// JSON file of TrainConfig fields; command-line options override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Training iterations (default 30000; 300 for the built-in scene).
    #[arg(long)]
    pub iterations: Option<u64>,
    /// Training background: black, white or random.
    #[arg(long)]
    pub background: Option<String>,
    /// Largest SH degree trained.
    #[arg(long)]
    pub sh_degree: Option<u32>,
    /// Cap on the number of Gaussians.
    #[arg(long)]
    pub max_gaussians: Option<u64>,
    /// Densification strategy: default (3DGS) or mcmc (needs --max-gaussians).
    #[arg(long)]
    pub strategy: Option<String>,
    /// Evaluate on the test views every N iterations.
    #[arg(long)]
    pub eval_every: Option<u64>,
    /// Antialiased splats (gsplat's antialiased mode): train with it, and draw with it (a PLY
    /// trained with `wgsplat train --antialiased` must be drawn so; the file does not say).
    #[arg(long)]
    pub antialiased: bool,
    /// Random seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// On exit, write OUT/checkpoint.bin and OUT/point_cloud.ply of the live training run.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Force the portable kernel path (no subgroups).
    #[arg(long)]
    pub portable: bool,
    /// How often the trainer publishes a parameter snapshot for display, per second.
    #[arg(long, default_value_t = 4.0)]
    pub refresh_hz: f64,
    /// Start at a dataset camera, `test:K` or `train:K`, drawn 1:1 at its resolution.
    #[arg(long)]
    pub camera: Option<String>,
    /// Show the dataset image and the difference beside the render (with `--camera`).
    #[arg(long)]
    pub compare: bool,
    /// Scripted mode: save a PNG of the window here (and a `.json` beside it), then exit.
    #[arg(long)]
    pub screenshot: Option<PathBuf>,
    /// Scripted mode: frames to render before the screenshot.
    #[arg(long, default_value_t = 5)]
    pub frames: u32,
    /// Stop live training after N iterations (the screenshot waits for them).
    #[arg(long)]
    pub train_iters: Option<u64>,
    /// Window width in points.
    #[arg(long, default_value_t = 1200.0)]
    pub width: f32,
    /// Window height in points.
    #[arg(long, default_value_t = 760.0)]
    pub height: f32,
}

fn open_gpu(portable: bool) -> anyhow::Result<wgsplat::GpuContext> {
    let mut options = wgsplat::ContextOptions::from_env()?;
    if portable {
        options.portable = true;
    }
    wgsplat::GpuContext::new(options).context("opening the GPU")
}

fn run(args: Args) -> anyhow::Result<()> {
    let ctx = open_gpu(args.portable)?;
    let source = source::Source::open(&ctx, &args)?;
    let setup = egui_wgpu::WgpuSetup::Existing(egui_wgpu::WgpuSetupExisting {
        instance: ctx.instance().clone(),
        adapter: ctx.adapter().clone(),
        device: ctx.device().clone(),
        queue: ctx.queue().clone(),
    });
    let options = eframe::NativeOptions {
        viewport: eframe::egui::ViewportBuilder::default()
            .with_title("wgsplat viewer")
            .with_inner_size([args.width, args.height])
            .with_drag_and_drop(true),
        renderer: eframe::Renderer::Wgpu,
        dithering: false,
        wgpu_options: egui_wgpu::WgpuConfiguration {
            wgpu_setup: setup,
            ..Default::default()
        },
        ..Default::default()
    };
    let outcome = app::Outcome::default();
    let outcome_for_app = outcome.clone();
    eframe::run_native(
        "wgsplat viewer",
        options,
        Box::new(move |cc| {
            let viewer = app::ViewerApp::new(cc, ctx, source, args, outcome_for_app)?;
            Ok(Box::new(viewer))
        }),
    )
    .map_err(|e| anyhow::anyhow!("the window system failed: {e}"))?;
    outcome.result()
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

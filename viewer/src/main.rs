//! wgsplat-viewer: inspect a PLY or watch a model train live, rendered by wgsplat's own rasterizer
//! on the same GPU device egui draws with.

mod app;
mod crop_handles;
mod edit_panel;
mod editing;
mod panels;
mod path_panel;
mod plan_view;
mod screenshot;
mod source;
mod training;
mod video_job;

use wgsplat_viewer::{render, scene, views};

use anyhow::Context as _;
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use wgsplat::train::options::{DataArgs, TrainOptions};

/// Command-line options of `wgsplat-viewer`.
#[derive(Parser, Clone, Debug)]
#[command(name = "wgsplat-viewer", version, about)]
pub struct Args {
    /// A 3DGS PLY to inspect, a level-of-detail folder (SCENE.lod/ from `wgsplat lod`) to draw
    /// by its cut, a dataset folder (COLMAP or NeRF) to train live, or a partition plan (a PLAN/
    /// folder or its plan.json) to show its blocks over the scene. Omit it to train the built-in
    /// scene.
    pub input: Option<PathBuf>,
    /// Cameras to show with a PLY: a dataset folder, or `builtin` for the built-in scene's.
    #[arg(long)]
    pub dataset: Option<String>,
    /// Data options, the same as `wgsplat train`'s.
    #[command(flatten)]
    pub data: DataArgs,
    /// Training options, the same as `wgsplat train`'s.
    #[command(flatten)]
    pub train: TrainOptions,
    /// On exit (and every --save-every iterations), write OUT/checkpoint.bin and
    /// OUT/point_cloud.ply of the live training run.
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
    /// Start showing the rendered normals instead of the colour (the view panel's "show
    /// normals").
    #[arg(long)]
    pub show_normals: bool,
    /// Scripted mode: save a PNG of the window here (and a `.json` beside it), then exit.
    #[arg(long)]
    pub screenshot: Option<PathBuf>,
    /// Scripted mode: frames to render before the screenshot.
    #[arg(long, default_value_t = 5)]
    pub frames: u32,
    /// Stop live training after N iterations (the screenshot waits for them).
    #[arg(long)]
    pub train_iters: Option<u64>,
    /// Scripted mode: add keyframes at these dataset cameras, in order (`train:K` or `test:K`,
    /// separated by commas), to the camera-path panel.
    #[arg(long, value_name = "CAMERAS")]
    pub keyframes: Option<String>,
    /// Seconds between keyframes in the camera-path panel.
    #[arg(long, default_value_t = 1.0)]
    pub keyframe_seconds: f64,
    /// Scripted mode: edits applied in order on the first frame, separated by ';':
    /// select-box:X0,Y0,X1,Y1 (scene image pixels), brush:X,Y,R, select-crop, invert, clear,
    /// delete, undo, redo, save:PATH (any model format, by its extension).
    #[arg(long, value_name = "STEPS")]
    pub edits: Option<String>,
    /// Scripted mode: render the keyframe path into this video (the screenshot waits for it).
    #[arg(long, value_name = "OUT.mp4")]
    pub render_video: Option<PathBuf>,
    /// Most Gaussians a level-of-detail folder draws per frame: the threshold rises until the
    /// cut fits (default: no limit).
    #[arg(long)]
    pub splat_budget: Option<u64>,
    /// The level-of-detail threshold: a node whose projected radius is under this many pixels
    /// is drawn in place of its children.
    #[arg(long, default_value_t = 1.0)]
    pub tau: f32,
    /// GPU memory for a level of detail's resident pages (e.g. 256MiB, 2GiB): pages beyond it
    /// are evicted, least recently used first.
    #[arg(long, default_value = "1GiB")]
    pub lod_memory: String,
    /// Most level-of-detail pages loaded per frame (the rest arrive in later frames).
    #[arg(long, default_value_t = wgsplat_viewer::lod::LOADS_PER_FRAME)]
    pub lod_loads: usize,
    /// Scripted mode: fly over a level of detail in N frames, from far away to near its
    /// centre and across (the screenshot waits for the flight and the pages it wants).
    #[arg(long, value_name = "N")]
    pub fly: Option<u32>,
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

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};
    use std::collections::BTreeSet;
    use wgsplat::train::options::{DataArgs, TrainOptions};

    /// The library's option structs on their own, as `wgsplat train` flattens them.
    #[derive(Parser)]
    struct TrainerFlags {
        #[command(flatten)]
        data: DataArgs,
        #[command(flatten)]
        train: TrainOptions,
    }

    /// Issue 15: the viewer accepts every data and training flag of `wgsplat train` (it used to
    /// lack `--memory-budget`, `--save-every`, `--absgrad`, `--test-list` and `--test-every`).
    #[test]
    fn the_viewer_takes_every_training_flag() {
        let longs = |cmd: clap::Command| -> BTreeSet<String> {
            cmd.get_arguments()
                .filter_map(|a| a.get_long().map(str::to_owned))
                .collect()
        };
        let viewer = longs(super::Args::command());
        let trainer = longs(TrainerFlags::command());
        let missing: Vec<_> = trainer.difference(&viewer).collect();
        assert!(missing.is_empty(), "the viewer lacks {missing:?}");
        for flag in [
            "memory-budget",
            "save-every",
            "absgrad",
            "test-list",
            "antialiased",
        ] {
            assert!(trainer.contains(flag), "--{flag}");
        }
        let args = super::Args::try_parse_from([
            "wgsplat-viewer",
            "-r",
            "2",
            "--memory-budget",
            "1GiB",
            "--save-every",
            "50",
            "--out",
            "out",
            "--absgrad",
        ])
        .expect("parses");
        assert_eq!(args.data.resolution, Some(2));
        assert_eq!(args.train.memory_budget.as_deref(), Some("1GiB"));
        let config = args.train.build_config(None).expect("config");
        assert_eq!(config.save_every, 50);
        assert!(config.absgrad);
    }
}

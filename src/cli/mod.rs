//! Command-line front end: argument parsing and the subcommands.

mod bench;
mod builtin;
mod cleanup;
mod convert;
mod dataset;
mod guard;
mod lod;
mod mesh;
mod plan;
mod render;
mod sfm;
mod signals;
mod status;
mod train;
mod video;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// wgsplat: portable GPU Gaussian splatting (WGSL on wgpu).
#[derive(Parser)]
#[command(name = "wgsplat", version, about)]
struct Cli {
    /// Force the portable kernel path (no subgroups); same as WGSPLAT_PORTABLE=1.
    #[arg(long, global = true)]
    portable: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the adapter, backend, driver, features in use and key limits.
    Info {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Structure from motion: a folder of photographs or video files to a dataset folder
    /// (images/ and a COLMAP model in sparse/0/), by running COLMAP; then `train` that folder.
    Sfm(Box<sfm::SfmArgs>),
    /// Train Gaussians on a dataset (or, with no DATA, on the built-in scene).
    Train(Box<train::TrainArgs>),
    /// Split a large scene into blocks on its ground plane (PLAN/plan.json), to train them as
    /// independent jobs (`train --plan`) and merge them (`merge`).
    Partition(Box<plan::PartitionArgs>),
    /// Merge a plan's trained blocks into one model (each block keeps its core cell).
    Merge(plan::MergeArgs),
    /// Train every block of a plan here, one after another, then merge them to PLAN/merged.ply.
    RunPlan(plan::RunPlanArgs),
    /// Build a level of detail of a model (SCENE.lod/): a tree of merged Gaussians in pages, which
    /// `render`, the viewer and the page draw under a splat budget.
    Lod(lod::LodArgs),
    /// Render a model from a dataset's cameras into PNG files, or along a camera path into a
    /// video (--video OUT.mp4).
    Render(render::RenderArgs),
    /// PSNR, SSIM and LPIPS of a model on a dataset's test views (--json for JSON alone on
    /// stdout).
    Eval(render::RenderArgs),
    /// A surface mesh of a model (.ply, .obj or .glb): its median depth from the training views
    /// of --dataset (or from views round it) fused into a signed distance field.
    Mesh(Box<mesh::MeshArgs>),
    /// Convert a splat model between formats: INRIA PLY, compressed PLY, .splat, SPZ, SOG (by
    /// extension, or --format), optionally cleaned up by a crop box, opacity, scale and floater
    /// filters.
    Convert {
        /// The model to read.
        input: std::path::PathBuf,
        /// The file to write.
        output: std::path::PathBuf,
        /// Output format: ply, compressed-ply, splat, spz or sog (default: OUTPUT's extension; a
        /// `.sog` is a zip bundle, a file named `meta.json` writes SOG's loose files beside it).
        #[arg(long)]
        format: Option<String>,
        /// Input format (default: INPUT's extension).
        #[arg(long)]
        input_format: Option<String>,
        #[command(flatten)]
        spz: convert::SpzArgs,
        #[command(flatten)]
        filters: cleanup::FilterArgs,
    },
    /// Write a built-in scene as a dataset folder: the town as COLMAP (sparse/0/*.txt,
    /// images/*.png), the objects scene as NeRF-synthetic.
    Builtin(builtin::BuiltinArgs),
    /// Benchmarks; each prints a table and writes JSON under target/bench/.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Open the interactive viewer (`wgsplat-viewer`, built next to this binary); every argument
    /// is passed through, e.g. `wgsplat view model.ply` or `wgsplat view DATASET`.
    View {
        /// Arguments for wgsplat-viewer (see `wgsplat-viewer --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

fn context(portable: bool) -> anyhow::Result<wgsplat::GpuContext> {
    let mut options = wgsplat::ContextOptions::from_env()?;
    if portable {
        options.portable = true;
    }
    wgsplat::GpuContext::new(options).context("opening the GPU")
}

/// Runs the CLI and maps errors to a non-zero exit code.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info { json } => info(cli.portable, json),
        Command::Builtin(args) => builtin::write_builtin(args),
        Command::Bench(command) => bench::run(command, cli.portable),
        Command::Sfm(args) => sfm::sfm(*args),
        Command::Train(args) => with_leak_check(cli.portable, |ctx| train::train(ctx, *args)),
        Command::Partition(args) => {
            with_leak_check(cli.portable, |ctx| plan::partition(ctx, *args))
        }
        Command::Merge(args) => plan::merge(args),
        Command::Lod(args) => lod::lod(args),
        Command::RunPlan(args) => with_leak_check(cli.portable, |ctx| plan::run_plan(ctx, args)),
        Command::Render(args) => with_leak_check(cli.portable, |ctx| render::render_ply(ctx, args)),
        Command::Eval(args) => with_leak_check(cli.portable, |ctx| render::eval_ply(ctx, args)),
        Command::Mesh(args) => with_leak_check(cli.portable, |ctx| mesh::mesh(ctx, *args)),
        Command::View { args } => return view(cli.portable, args),
        Command::Convert {
            input,
            output,
            format,
            input_format,
            spz,
            filters,
        } => convert::convert(
            &input,
            &output,
            format.as_deref(),
            input_format.as_deref(),
            &spz,
            &filters,
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Stopped by a signal with a checkpoint written: not an error, but not done either.
        Err(err) => match err.downcast_ref::<signals::Interrupted>() {
            Some(stopped) => {
                eprintln!("{err:#}");
                ExitCode::from(stopped.exit_code())
            }
            None => {
                eprintln!("error: {err:#}");
                ExitCode::FAILURE
            }
        },
    }
}

/// Runs `command` on a fresh context, then checks that it gave back every GPU buffer and prints
/// the process's peak RSS beside the allocator's peak. A leak is listed by label as a warning,
/// and debug builds fail.
fn with_leak_check(
    portable: bool,
    command: impl FnOnce(&wgsplat::GpuContext) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let ctx = context(portable)?;
    let result = command(&ctx);
    let _ = ctx.wait_idle();
    let leaks = ctx.leak_check();
    report_peaks(&ctx);
    if leaks.is_empty() {
        return result;
    }
    let total: u64 = leaks.iter().map(|b| b.bytes).sum();
    eprintln!(
        "warning: {} GPU buffers ({}) were still alive at exit:",
        leaks.len(),
        wgsplat::gpu::memory::format_bytes(total)
    );
    for leak in leaks.iter().take(20) {
        eprintln!(
            "  {} ({}, {})",
            leak.label,
            leak.category.name(),
            wgsplat::gpu::memory::format_bytes(leak.bytes)
        );
    }
    result?;
    if cfg!(debug_assertions) {
        anyhow::bail!("GPU memory leaked (debug builds treat this as an error)");
    }
    Ok(())
}

/// Prints the process's peak resident memory beside the allocator's peak: on a software adapter
/// (device memory is host memory) the two together show what wgsplat's own accounting misses.
fn report_peaks(ctx: &wgsplat::GpuContext) {
    let gpu_peak = ctx.memory_report().total.peak_bytes;
    let format = wgsplat::gpu::memory::format_bytes;
    match wgsplat::gpu::ProcessMemory::sample() {
        Some(process) => eprintln!(
            "memory: process peak RSS {}, GPU allocator peak {}",
            format(process.peak_rss_bytes),
            format(gpu_peak)
        ),
        None => eprintln!("memory: GPU allocator peak {}", format(gpu_peak)),
    }
}

fn info(portable: bool, json: bool) -> anyhow::Result<()> {
    let ctx = context(portable)?;
    if json {
        println!("{}", serde_json::to_string_pretty(ctx.info())?);
    } else {
        println!("{}", ctx.info());
    }
    Ok(())
}

/// Runs `wgsplat-viewer` from this executable's folder with `args`, returning its exit status.
fn view(portable: bool, mut args: Vec<std::ffi::OsString>) -> ExitCode {
    let viewer = std::env::current_exe().ok().and_then(|exe| {
        exe.parent()
            .map(|dir| dir.join(format!("wgsplat-viewer{}", std::env::consts::EXE_SUFFIX)))
    });
    let Some(viewer) = viewer.filter(|p| p.is_file()) else {
        eprintln!(
            "error: the viewer is not built: `wgsplat view` runs wgsplat-viewer from the folder of \
             this executable; build it with `cargo build -p wgsplat-viewer` (add --release to match a release build)"
        );
        return ExitCode::FAILURE;
    };
    if portable {
        args.push("--portable".into());
    }
    match std::process::Command::new(&viewer).args(&args).status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => ExitCode::from(
            status
                .code()
                .and_then(|c| u8::try_from(c).ok())
                .unwrap_or(1),
        ),
        Err(err) => {
            eprintln!("error: running {}: {err}", viewer.display());
            ExitCode::FAILURE
        }
    }
}

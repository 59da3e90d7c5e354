//! `wgsplat train`, `wgsplat render` and `wgsplat eval`.

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::time::Instant;
use wgsplat::GpuContext;
use wgsplat::data::Dataset;
use wgsplat::gpu::memory::format_bytes;
use wgsplat::io::checkpoint::load_checkpoint;
use wgsplat::io::model::save_gpu_model_as_ply;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::options::{DataArgs, TrainOptions};
use wgsplat::train::run::next_checkpoint_pause;
use wgsplat::train::setup;
use wgsplat::train::{ScoredViews, TrainConfig, TrainEvent, Trainer};

/// Options of `wgsplat train`.
#[derive(clap::Args)]
pub struct TrainArgs {
    /// Dataset folder (COLMAP or NeRF-synthetic / nerfstudio). Omit it to train the built-in scene.
    data: Option<PathBuf>,
    /// Output folder.
    #[arg(long, default_value = "out")]
    out: PathBuf,
    #[command(flatten)]
    data_args: DataArgs,
    #[command(flatten)]
    train: TrainOptions,
    /// Write renders of the test views to OUT/test_renders/.
    #[arg(long)]
    save_renders: bool,
    /// Continue from OUT/checkpoint.bin.
    #[arg(long)]
    resume: bool,
    /// Stop after this iteration (writing the outputs as usual) while keeping the schedules of
    /// --iterations; continue later with --resume.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=wgsplat::train::options::MAX_ITERATIONS))]
    stop_at: Option<u64>,
    /// Train one block of a plan written by `wgsplat partition` (PLAN/plan.json or the PLAN
    /// folder): its views, points and settings all come from the plan; the outputs go to
    /// PLAN/blocks/K/. A block already done is left as it is; one with a checkpoint resumes.
    #[arg(long, value_name = "PLAN", conflicts_with = "data")]
    plan: Option<PathBuf>,
    /// The block to train with --plan (default: SLURM_ARRAY_TASK_ID, then JOB_COMPLETION_INDEX).
    #[arg(long, requires = "plan")]
    block: Option<usize>,
    /// Also write the final model in these formats beside point_cloud.ply (comma-separated:
    /// splat, spz, compressed-ply, sog), e.g. --export spz,sog.
    #[arg(long, value_delimiter = ',', value_name = "FORMAT")]
    export: Vec<String>,
    #[command(flatten)]
    spz: super::convert::SpzArgs,
}

/// Prints a line above the progress bar, or on stdout when the bar is hidden (not a terminal).
fn print_line(bar: &ProgressBar, interactive: bool, line: String) {
    if interactive {
        bar.println(line);
    } else {
        println!("{line}");
    }
}

/// `train`'s progress display: a bar on a terminal, a line every 5 s otherwise, and the
/// evaluations and log lines above it. `run-plan` shows every block's training the same way.
pub(crate) struct TrainProgress {
    /// The bar (hidden when stdout is not a terminal).
    pub(crate) bar: ProgressBar,
    interactive: bool,
    iterations: u64,
    last_line: Instant,
}

impl TrainProgress {
    /// A display for a run of `iterations`, starting at `start`.
    pub(crate) fn new(iterations: u64, start: u64) -> Self {
        let interactive = std::io::stdout().is_terminal();
        let bar = if interactive {
            ProgressBar::new(iterations)
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} {per_sec} ETA {eta} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_position(start);
        TrainProgress {
            bar,
            interactive,
            iterations,
            last_line: Instant::now(),
        }
    }

    /// Shows one training event.
    pub(crate) fn event(&mut self, event: TrainEvent) {
        let (bar, interactive) = (&self.bar, self.interactive);
        match event {
            TrainEvent::Progress {
                iteration,
                loss,
                train_psnr,
                gaussians,
                iterations_per_second,
                gpu_bytes,
            } => {
                let msg = format!(
                    "loss {loss:.4} psnr {train_psnr:.2} dB, {gaussians} Gaussians, GPU {}",
                    format_bytes(gpu_bytes)
                );
                bar.set_position(iteration);
                bar.set_message(msg.clone());
                if !interactive
                    && (self.last_line.elapsed().as_secs_f64() > 5.0
                        || iteration == self.iterations)
                {
                    println!(
                        "it {iteration}/{} ({iterations_per_second:.1} it/s): {msg}",
                        self.iterations
                    );
                    self.last_line = Instant::now();
                }
            }
            // A hidden bar (output not a terminal) prints nothing, so lines go to stdout directly.
            TrainEvent::Evaluated { iteration, scores } => print_line(
                bar,
                interactive,
                format!("it {iteration}: {}", scores.summary()),
            ),
            TrainEvent::Log { message } => print_line(bar, interactive, message),
            _ => {}
        }
    }
}

/// Where a command's status lines go: stdout, or stderr when stdout carries the command's
/// machine-readable result (`--json`), so that `wgsplat eval … --json | jq` reads JSON alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StatusTo {
    Stdout,
    Stderr,
}

impl StatusTo {
    /// Status lines go to stderr when `json` is set.
    pub(crate) fn for_json(json: bool) -> Self {
        if json { Self::Stderr } else { Self::Stdout }
    }

    /// Prints one status line.
    pub(crate) fn line(self, text: impl std::fmt::Display) {
        match self {
            Self::Stdout => println!("{text}"),
            Self::Stderr => eprintln!("{text}"),
        }
    }
}

pub(crate) fn load_dataset(
    data: Option<&Path>,
    args: &DataArgs,
    background: [f32; 3],
) -> anyhow::Result<Dataset> {
    load_dataset_reporting(data, args, background, StatusTo::Stdout)
}

/// [`load_dataset`], with its status lines (views loaded, notes) sent to `status`.
pub(crate) fn load_dataset_reporting(
    data: Option<&Path>,
    args: &DataArgs,
    background: [f32; 3],
    status: StatusTo,
) -> anyhow::Result<Dataset> {
    let what = data.map_or_else(
        || "the built-in scene".to_owned(),
        |p| format!("the dataset at {}", p.display()),
    );
    let mut options = args.options(background);
    let interactive = std::io::stdout().is_terminal() && status == StatusTo::Stdout;
    if interactive && data.is_some() {
        let bar = ProgressBar::new(0).with_style(
            ProgressStyle::with_template("loading images {bar:30} {pos}/{len} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        options.progress = wgsplat::data::LoadProgress(Some(bar));
    }
    let started = Instant::now();
    let dataset = setup::load_dataset(data, &options).with_context(|| format!("loading {what}"))?;
    if let Some(bar) = &options.progress.0 {
        bar.finish_and_clear();
    }
    if data.is_some() {
        status.line(format_args!(
            "loaded {} views in {:.1} s",
            dataset.train.len() + dataset.test.len(),
            started.elapsed().as_secs_f64()
        ));
    }
    for note in &dataset.notes {
        status.line(note);
    }
    Ok(dataset)
}

/// Applies `--memory-budget` (when given) to `config` and prints the plan.
fn apply_budget(
    ctx: &GpuContext,
    args: &TrainArgs,
    dataset: &Dataset,
    initial: u64,
    config: &mut TrainConfig,
) -> anyhow::Result<()> {
    let plan = args
        .train
        .apply_memory_budget(ctx, dataset, initial, config)
        .with_context(|| {
            format!(
                "applying --memory-budget {}",
                args.train.memory_budget.as_deref().unwrap_or_default()
            )
        })?;
    if let Some(plan) = plan {
        println!(
            "memory budget {} bytes: {} for the training images + {} for one frame's buffers + {} per Gaussian; cap {} Gaussians",
            plan.budget, plan.images, plan.frame, plan.per_gaussian, config.max_gaussians
        );
    }
    Ok(())
}

/// Runs `wgsplat train`.
pub fn train(ctx: &GpuContext, args: TrainArgs) -> anyhow::Result<()> {
    if let Some(plan) = args.plan.as_deref() {
        return super::plan::train_planned_block(ctx, plan, args.block, args.stop_at);
    }
    let config = args.train.build_config(args.data.is_none())?;
    let background = setup::background_color(config.background);
    let dataset = load_dataset(args.data.as_deref(), &args.data_args, background)?;
    super::guard::refuse_output_among_images(&args.out, args.data.as_deref(), &dataset)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating the output folder {}", args.out.display()))?;
    let checkpoint_path = args.out.join("checkpoint.bin");
    let mut config = config;
    let mut trainer = if args.resume {
        let checkpoint = load_checkpoint(ctx, &checkpoint_path).with_context(
            || "--resume needs OUT/checkpoint.bin from an earlier run with --save-every",
        )?;
        apply_budget(ctx, &args, &dataset, checkpoint.params.len(), &mut config)?;
        Trainer::resume(ctx, dataset, checkpoint, config.clone())?
    } else {
        let params = initial_gaussians(ctx, &dataset, &config)?;
        apply_budget(ctx, &args, &dataset, params.len(), &mut config)?;
        Trainer::new(ctx, dataset, params, config.clone())?
    };
    println!(
        "training {} train / {} test views, {} Gaussians, {} iterations on {}",
        trainer.dataset().train.len(),
        trainer.dataset().test.len(),
        trainer.params().len(),
        config.iterations,
        ctx.info().name
    );
    let started = Instant::now();
    let start_iteration = trainer.iteration();
    let mut progress = TrainProgress::new(config.iterations, trainer.iteration());
    let bar = progress.bar.clone();
    let mut sink = |event: TrainEvent| progress.event(event);
    let save_every = config.save_every;
    let last = args
        .stop_at
        .unwrap_or(config.iterations)
        .min(config.iterations);
    while trainer.iteration() < last {
        let pause = next_checkpoint_pause(trainer.iteration(), last, save_every);
        if let Err(err) = trainer.run_until(pause, &mut sink, &|| false) {
            bar.finish_and_clear();
            let kept = if checkpoint_path.exists() {
                format!(
                    "the last good checkpoint, {}, is kept (continue with --resume)",
                    checkpoint_path.display()
                )
            } else {
                "no checkpoint was written yet (use --save-every N to keep one)".to_owned()
            };
            return Err(anyhow::Error::new(err).context(format!(
                "training stopped at iteration {}; {kept}",
                trainer.iteration()
            )));
        }
        if save_every > 0 && trainer.iteration() % save_every == 0 {
            trainer
                .save_checkpoint(&checkpoint_path, &json!({}))
                .with_context(|| {
                    format!("saving the checkpoint at iteration {}", trainer.iteration())
                })?;
        }
    }
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    let ply = args.out.join("point_cloud.ply");
    save_gpu_model_as_ply(ctx, trainer.params(), &ply)?;
    export_model(&ply, &args.export, &args.spz)?;
    let scores = trainer.evaluate()?;
    let scored = scores.views;
    let (test, train) = (scored == ScoredViews::Test, scored == ScoredViews::Train);
    if args.save_renders {
        super::render::save_renders(
            ctx,
            trainer.params(),
            trainer.scored_view_list(),
            trainer.evaluation_background(),
            trainer.config().raster_mode,
            &args.out.join("test_renders"),
        )?;
    }
    let report = ctx.memory_report();
    let iterations = trainer.iteration() - start_iteration;
    let summary = json!({
        "iterations": trainer.iteration(), "seconds": seconds, "iterations_per_second": iterations as f64 / seconds.max(1e-9),
        "gaussians": trainer.params().len(), "scored_views": scored.name(),
        "test_psnr": test.then_some(scores.psnr), "test_ssim": test.then_some(scores.ssim), "test_lpips": scores.lpips.filter(|_| test),
        "train_psnr": train.then_some(scores.psnr), "train_ssim": train.then_some(scores.ssim), "train_lpips": scores.lpips.filter(|_| train),
        "test_views": trainer.dataset().test.len(), "masked_scored_views": scores.masked,
        "adapter": ctx.info().name, "kernel_path": ctx.info().kernel_path(),
        "peak_gpu_total_bytes": report.total.peak_bytes,
        "peak_rss_bytes": wgsplat::gpu::ProcessMemory::sample().map(|m| m.peak_rss_bytes),
        "peak_gpu_bytes": report.by_category.iter().map(|(k, v)| (k.name().to_owned(), v.peak_bytes)).collect::<std::collections::BTreeMap<_, _>>(),
        "config": config,
    });
    super::bench::write_json_atomic(&args.out.join("metrics.json"), &summary)?;
    println!(
        "done: {} iterations in {seconds:.1} s ({:.2} it/s), {} Gaussians, {}",
        trainer.iteration(),
        iterations as f64 / seconds.max(1e-9),
        trainer.params().len(),
        scores.summary()
    );
    println!(
        "wrote {} and {}",
        ply.display(),
        args.out.join("metrics.json").display()
    );
    Ok(())
}

/// Writes the model saved at `ply` in each of `formats` beside it (`point_cloud.spz`, ...), SPZ
/// as `spz` says, printing what each format dropped.
fn export_model(
    ply: &Path,
    formats: &[String],
    spz: &super::convert::SpzArgs,
) -> anyhow::Result<()> {
    if formats.is_empty() {
        return Ok(());
    }
    let spz = spz.options()?;
    let model = wgsplat::io::read_ply(ply)?;
    for name in formats {
        let format = wgsplat::io::formats::ModelFormat::from_name(name)?;
        let path = ply.with_extension(format.extension());
        let progress = wgsplat::io::progress::Progress::new();
        let dropped = super::convert::write(&path, format, &model, &spz, &progress)
            .with_context(|| format!("exporting {}", path.display()))?;
        println!("wrote {}", path.display());
        for line in dropped {
            println!("  {}: {line}", format.name());
        }
    }
    Ok(())
}

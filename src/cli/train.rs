//! `wgsplat train`: one scene, or one block of a plan (`--plan`). SIGTERM, SIGINT or SIGUSR1
//! stop it after the current step with a checkpoint written (see [`super::signals`]); once the
//! model is written, they stop the exports, the final evaluation and the renders that follow.

use super::dataset::load_dataset;
use super::signals::{Interrupted, Signal, StopSignals, this_command};
use super::status::TrainProgress;
use anyhow::Context as _;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;
use wgsplat::GpuContext;
use wgsplat::data::Dataset;
use wgsplat::io::checkpoint::load_checkpoint;
use wgsplat::io::model::save_gpu_model_as_ply;
use wgsplat::train::init::initial_model;
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

/// Applies `--memory-budget` (when given) to `config` and prints the plan. A resume (`saved`: the
/// checkpoint's configuration) keeps the cap it was trained with, where the budget still holds it
/// ([`wgsplat::train::resume::resumed_cap`]). Returns the note, also printed on stderr, of an
/// LPIPS the budget cannot hold (for metrics.json's `lpips_skipped`).
fn apply_budget(
    ctx: &GpuContext,
    args: &TrainArgs,
    dataset: &Dataset,
    initial: u64,
    saved: Option<&TrainConfig>,
    config: &mut TrainConfig,
) -> anyhow::Result<Option<String>> {
    let explicit = config.max_gaussians;
    let context = || {
        format!(
            "applying --memory-budget {}",
            args.train.memory_budget.as_deref().unwrap_or_default()
        )
    };
    let plan = args
        .train
        .apply_memory_budget(ctx, dataset, initial, config)
        .with_context(context)?;
    let Some(plan) = plan else {
        return Ok(None);
    };
    let mut kept = String::new();
    if let Some(saved) = saved {
        config.max_gaussians = wgsplat::train::resume::resumed_cap(ctx, &plan, explicit, saved)
            .with_context(context)?;
        if config.max_gaussians != plan.max_gaussians && config.max_gaussians == saved.max_gaussians
        {
            kept = format!(
                ", the checkpoint's: a resume keeps the cap it was trained with (this budget alone \
                 would allow {})",
                plan.max_gaussians
            );
        }
    }
    println!(
        "memory budget {} bytes: {} for the training images' GPU cache ({} slots) + {} for one frame's buffers + {} per Gaussian; cap {} Gaussians{kept}",
        plan.budget,
        plan.images,
        plan.cache.slots,
        plan.frame,
        plan.per_gaussian,
        config.max_gaussians
    );
    let note = plan.lpips_note();
    if let Some(note) = &note {
        eprintln!("note: {note}");
    }
    Ok(note)
}

/// Runs `wgsplat train`.
pub fn train(ctx: &GpuContext, args: TrainArgs) -> anyhow::Result<()> {
    if let Some(plan) = args.plan.as_deref() {
        return super::plan::train_planned_block(ctx, plan, args.block, args.stop_at);
    }
    let config = args.train.build_config(args.data.as_deref())?;
    let background = setup::background_color(config.background);
    let dataset = load_dataset(args.data.as_deref(), &args.data_args, background)?;
    super::guard::refuse_output_among_images(&args.out, args.data.as_deref(), &dataset)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating the output folder {}", args.out.display()))?;
    let checkpoint_path = args.out.join("checkpoint.bin");
    let mut config = config;
    let lpips_skipped;
    let mut trainer = if args.resume {
        let checkpoint = load_checkpoint(ctx, &checkpoint_path).with_context(
            || "--resume needs OUT/checkpoint.bin from an earlier run with --save-every",
        )?;
        let saved = wgsplat::train::resume::saved_config(&checkpoint)?;
        let initial = checkpoint.params.len();
        lpips_skipped = apply_budget(ctx, &args, &dataset, initial, saved.as_ref(), &mut config)?;
        Trainer::resume(ctx, dataset, checkpoint, config.clone())?
    } else {
        let initial = initial_model(ctx, &dataset, &config)?;
        if let Some(sky) = &initial.sky {
            println!("{}", sky.summary());
        }
        lpips_skipped = apply_budget(
            ctx,
            &args,
            &dataset,
            initial.params.len(),
            None,
            &mut config,
        )?;
        Trainer::new(ctx, dataset, initial.params, config.clone())?
    };
    wgsplat::train::bounds::check_crop_box(ctx, trainer.params(), trainer.config())?;
    println!(
        "training {} train / {} test views, {} Gaussians, {} iterations on {}",
        trainer.dataset().train.len(),
        trainer.dataset().test.len(),
        trainer.params().len(),
        config.iterations,
        ctx.info().name
    );
    println!("{}", trainer.image_cache().summary());
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
    // From here on a signal stops training after the current step, with a checkpoint.
    let signals = StopSignals::install()?;
    let stop = || signals.requested();
    while trainer.iteration() < last {
        let pause = next_checkpoint_pause(trainer.iteration(), last, save_every);
        if let Err(err) = trainer.run_until(pause, &mut sink, &stop) {
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
        let interrupted = trainer.iteration() < last && signals.requested();
        if interrupted || (save_every > 0 && trainer.iteration() % save_every == 0) {
            trainer
                .save_checkpoint(&checkpoint_path, &json!({}))
                .with_context(|| {
                    format!("saving the checkpoint at iteration {}", trainer.iteration())
                })?;
        }
        if let Some(signal) = signals.received().filter(|_| interrupted) {
            bar.finish_and_clear();
            return Err(Interrupted {
                signal,
                message: format!(
                    "stopped by {} after iteration {} of {}; wrote the checkpoint {}. Continue \
                     with:\n  {}",
                    signal.name,
                    trainer.iteration(),
                    config.iterations,
                    checkpoint_path.display(),
                    this_command(true)
                ),
            }
            .into());
        }
    }
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    let ply = args.out.join("point_cloud.ply");
    // The last step cropped the model; one stopped earlier (`--stop-at`) is cropped here.
    trainer.crop_to_box_now()?;
    save_gpu_model_as_ply(ctx, trainer.params(), &ply, Some(trainer.near_plane()))?;
    let pose_summary = write_refined_cameras(&trainer, &args.out)?;
    // From here on the model is written: a signal stops what is left and says so.
    let stopped = |stage: &str| {
        signals
            .received()
            .map(|signal| stopped_after_model(signal, stage, &trainer, &ply))
    };
    if !args.export.is_empty() {
        export_model(&ply, &args.export, &args.spz, &stop)?;
        if let Some(err) = stopped("the export") {
            return Err(err);
        }
    }
    println!(
        "scoring {} {} views",
        trainer.scored_view_list().len(),
        trainer.scored_views().name()
    );
    let scores = trainer.evaluate_unless_stopped(&stop)?;
    let Some(scores) = scores.filter(|_| !signals.requested()) else {
        return Err(stopped("the final evaluation").unwrap_or_else(|| {
            anyhow::anyhow!("the final evaluation stopped without a signal; rerun the training")
        }));
    };
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
            &stop,
        )?;
        if let Some(err) = stopped("the test renders") {
            return Err(err);
        }
    }
    let report = ctx.memory_report();
    let iterations = trainer.iteration() - start_iteration;
    let summary = json!({
        "iterations": trainer.iteration(), "seconds": seconds, "iterations_per_second": iterations as f64 / seconds.max(1e-9),
        "gaussians": trainer.params().len(), "scored_views": scored.name(),
        "test_psnr": test.then_some(scores.psnr), "test_ssim": test.then_some(scores.ssim), "test_lpips": scores.lpips.filter(|_| test),
        "train_psnr": train.then_some(scores.psnr), "train_ssim": train.then_some(scores.ssim), "train_lpips": scores.lpips.filter(|_| train),
        "test_views": trainer.dataset().test.len(), "masked_scored_views": scores.masked,
        "exposure_fitted": scores.exposure_fitted, "lpips_skipped": lpips_skipped,
        "per_view": scores.per_view, "worst_view": scores.worst_view(),
        "pose_refinement": pose_summary, "near_plane": trainer.near_plane(),
        "adapter": ctx.info().name, "kernel_path": ctx.info().kernel_path(),
        "peak_gpu_total_bytes": report.total.peak_bytes,
        "peak_rss_bytes": wgsplat::gpu::ProcessMemory::sample().map(|m| m.peak_rss_bytes),
        "peak_gpu_bytes": report.by_category.iter().map(|(k, v)| (k.name().to_owned(), v.peak_bytes)).collect::<std::collections::BTreeMap<_, _>>(),
        "image_cache": trainer.image_cache().metrics(),
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

/// The error that ends a run `signal` stopped during `stage` (`the final evaluation`, ...), once
/// training was over and its model written to `ply`: the rest is skipped, metrics.json included,
/// and the process exits with the signal's status.
fn stopped_after_model(
    signal: Signal,
    stage: &str,
    trainer: &Trainer,
    ply: &Path,
) -> anyhow::Error {
    Interrupted {
        signal,
        message: format!(
            "stopped by {} during {stage}, after the last iteration ({}): the model was written \
             to {}; {stage} and what follows it were stopped, so metrics.json was not written. \
             Score the model with `wgsplat eval {}` and this run's dataset options",
            signal.name,
            trainer.iteration(),
            ply.display(),
            ply.display(),
        ),
    }
    .into()
}

/// With pose refinement: writes `refined_cameras.json` (each training view's corrected
/// world-to-camera pose and its correction) into `out`, prints the corrections' sizes and returns
/// them for `metrics.json`.
fn write_refined_cameras(
    trainer: &Trainer,
    out: &Path,
) -> anyhow::Result<Option<wgsplat::train::pose::PoseSummary>> {
    let Some(poses) = trainer.poses() else {
        return Ok(None);
    };
    let extent = f64::from(trainer.dataset().extent);
    let views: Vec<_> = trainer
        .dataset()
        .train
        .iter()
        .enumerate()
        .map(|(i, view)| {
            let camera = trainer.training_camera(i);
            let correction = poses.corrections[i];
            json!({
                "name": view.name,
                "rotation": camera.rotation,
                "translation": camera.translation,
                "correction_degrees": correction.angle_degrees(),
                "correction_shift": correction.shift(),
            })
        })
        .collect();
    let path = out.join("refined_cameras.json");
    super::bench::write_json_atomic(
        &path,
        &json!({ "world_to_camera": "row-major rotation, camera = R * world + t", "views": views }),
    )?;
    let summary = poses.summary(extent);
    println!(
        "pose refinement: corrections of {:.3}° on average (at most {:.3}°) and {:.3}% of the scene (at most {:.3}%); wrote {}",
        summary.mean_rotation_degrees,
        summary.max_rotation_degrees,
        100.0 * summary.mean_shift_extent,
        100.0 * summary.max_shift_extent,
        path.display()
    );
    Ok(Some(summary))
}

/// Writes the model saved at `ply` in each of `formats` beside it (`point_cloud.spz`, ...), SPZ
/// as `spz` says, printing what each format dropped; asks `stop` before each format.
fn export_model(
    ply: &Path,
    formats: &[String],
    spz: &super::convert::SpzArgs,
    stop: &dyn Fn() -> bool,
) -> anyhow::Result<()> {
    if formats.is_empty() {
        return Ok(());
    }
    let spz = spz.options()?;
    let model = wgsplat::io::read_ply(ply)?;
    for name in formats {
        if stop() {
            return Ok(());
        }
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

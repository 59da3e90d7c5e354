//! `wgsplat partition`, `wgsplat train --plan`, `wgsplat merge` and `wgsplat run-plan`.

use super::dataset::load_dataset;
use super::signals::{Interrupted, Signal, StopSignals, this_command};
use super::status::TrainProgress;
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::time::Instant;
use wgsplat::GpuContext;
use wgsplat::gpu::memory::format_bytes;
use wgsplat::io::formats::ModelFormat;
use wgsplat::plan::manifest::Cell;
use wgsplat::plan::{
    Balance, BlockOutcome, BlockStop, Grid, PartitionRequest, PartitionSettings, PlanData,
    PlanManifest,
};
use wgsplat::train::budget::{adapter_memory_bytes, parse_byte_budget, resolve_budget};
use wgsplat::train::options::{DataArgs, TrainOptions};
use wgsplat::train::setup;

/// Options of `wgsplat partition`.
#[derive(clap::Args)]
pub struct PartitionArgs {
    /// Dataset folder (COLMAP or NeRF / nerfstudio). Omit it for a built-in scene (--builtin).
    data: Option<PathBuf>,
    /// The plan folder to write (PLAN/plan.json, and later PLAN/blocks/K/).
    #[arg(long)]
    out: PathBuf,
    /// A fixed grid of blocks: R slabs along the ground's long axis, C cells across each.
    #[arg(long, value_name = "RxC")]
    blocks: Option<Grid>,
    /// The fewest blocks (nearly square cells) with at most N training views each. With neither
    /// this nor --blocks, the fewest blocks that each fit --memory-budget (default: 80% of this
    /// adapter's memory, where it is known).
    #[arg(long, value_name = "N", conflicts_with = "blocks")]
    max_views_per_block: Option<usize>,
    /// Widen each cell by this fraction of its size on each side for its training bounds.
    #[arg(long, default_value_t = wgsplat::plan::partition::DEFAULT_MARGIN)]
    margin: f64,
    /// A view outside a block's bounds still trains it when at least this fraction of the
    /// cell's sparse points project into its image (above 1: position only).
    #[arg(long, default_value_t = wgsplat::plan::partition::DEFAULT_VISIBILITY)]
    visibility: f64,
    /// Balance the cells' training-camera counts or sparse-point counts.
    #[arg(long, value_enum, default_value_t = Balance::Views)]
    balance: Balance,
    #[command(flatten)]
    data_args: DataArgs,
    #[command(flatten)]
    train: TrainOptions,
    #[command(flatten)]
    engines: wgsplat::plan::EngineArgs,
}

/// Options of `wgsplat merge`. The level-of-detail options need `--lod` (without it they would
/// change nothing).
#[derive(clap::Args)]
#[command(group(
    clap::ArgGroup::new("lod_options")
        .args(["page_nodes", "lossless", "refine_steps", "refine_size", "up", "refine_seed"])
        .multiple(true)
        .requires("lod")
))]
pub struct MergeArgs {
    /// The plan folder (or its plan.json).
    plan: PathBuf,
    /// The merged model (its extension picks the format, or --format).
    #[arg(long)]
    out: PathBuf,
    /// Output format: ply, compressed-ply, splat, spz or sog.
    #[arg(long)]
    format: Option<String>,
    /// Also write the merged model's level of detail into this folder (as `wgsplat lod` does).
    #[arg(long)]
    lod: Option<PathBuf>,
    #[command(flatten)]
    pages: super::lod::PageArgs,
    #[command(flatten)]
    refine: super::lod::RefineArgs,
}

/// Options of `wgsplat run-plan`.
#[derive(clap::Args)]
pub struct RunPlanArgs {
    /// The plan folder (or its plan.json).
    plan: PathBuf,
    /// The merged model (default: PLAN/merged.ply).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The plan folder of `path` (a plan folder, or a plan.json in one).
fn plan_dir(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("resolving {}", path.display()))
}

/// One side of a cell, e.g. `[-1.20, 3.05)` or `(-∞, 3.05)`.
fn range(lo: Option<f64>, hi: Option<f64>) -> String {
    let lo = lo.map_or_else(|| "(-inf".to_owned(), |b| format!("[{b:.2}"));
    let hi = hi.map_or_else(|| "+inf)".to_owned(), |b| format!("{b:.2})"));
    format!("{lo}, {hi}")
}

fn cell_text(cell: &Cell) -> String {
    format!(
        "u {} v {}",
        range(cell.u_min, cell.u_max),
        range(cell.v_min, cell.v_max)
    )
}

/// Prints the table of a plan's blocks.
fn print_blocks(plan: &PlanManifest) {
    println!(
        "{:>5}  {:<44} {:>6} {:>5} {:>8} {:>10}",
        "block", "core (ground u, v)", "views", "test", "points", "est. peak"
    );
    for b in &plan.blocks {
        println!(
            "{:>5}  {:<44} {:>6} {:>5} {:>8} {:>10}",
            b.index,
            cell_text(&b.core),
            b.views.len(),
            b.test_views.len(),
            b.points,
            format_bytes(b.estimated_peak_bytes)
        );
    }
    if plan.blocks.iter().any(|b| b.max_gaussians == 0) {
        println!(
            "est. peak: the blocks are uncapped, so the estimate assumes {}x their sparse points; \
             densification can grow a block far past it. Give --memory-budget (or \
             --max-gaussians) to cap every block and make the estimate a bound.",
            wgsplat::plan::create::DENSIFY_HEADROOM
        );
    }
}

/// Runs `wgsplat partition`.
pub fn partition(ctx: &GpuContext, args: PartitionArgs) -> anyhow::Result<()> {
    let config = args.train.build_config(args.data.as_deref())?;
    let background = setup::background_color(config.background);
    let dataset = load_dataset(args.data.as_deref(), &args.data_args, background)?;
    let memory_budget = args
        .train
        .memory_budget
        .as_deref()
        .map(|text| resolve_budget(parse_byte_budget(text)?, adapter_memory_bytes(ctx.info())))
        .transpose()?;
    // Without a size, blocks are sized to fit this adapter (when its memory is known).
    let memory_budget = match (memory_budget, args.blocks, args.max_views_per_block) {
        (None, None, None) => adapter_memory_bytes(ctx.info()).map(|bytes| {
            let budget = bytes / 10 * 8;
            println!(
                "no block size given: sizing blocks to fit 80% of this adapter's memory ({})",
                format_bytes(budget)
            );
            budget
        }),
        (budget, _, _) => budget,
    };
    let d = &args.data_args;
    let data = PlanData {
        path: args.data.as_deref().map(absolute).transpose()?,
        builtin: d.builtin,
        builtin_resolution: d.builtin_resolution,
        resolution: d.resolution,
        eval: d.eval || d.test_every.is_some() || d.test_list.is_some(),
        test_every: d.test_every,
        test_list: d.test_list.as_deref().map(absolute).transpose()?,
        alpha_as_mask: d.alpha_as_mask,
        undistort: d.undistort,
    };
    let request = PartitionRequest {
        grid: args.blocks,
        max_views_per_block: args.max_views_per_block,
        memory_budget,
        settings: PartitionSettings {
            margin: args.margin,
            visibility: args.visibility,
            balance: args.balance,
        },
    };
    anyhow::ensure!(
        args.margin.is_finite() && args.margin >= 0.0,
        "--margin {} must be a fraction of at least 0 (e.g. 0.2)",
        args.margin
    );
    let plan = wgsplat::plan::plan_partition(ctx, &dataset, data, config, &request)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating the plan folder {}", args.out.display()))?;
    plan.save(&args.out)?;
    let engine_options = args.engines.options()?;
    wgsplat::plan::write_engine_files(&args.out, &plan, &engine_options)?;
    println!(
        "{} blocks ({} grid) over {} training views and {} sparse points",
        plan.blocks.len(),
        plan.partition.grid,
        dataset.train.len(),
        dataset.points.as_ref().map_or(0, |p| p.len())
    );
    print_blocks(&plan);
    let out = args.out.display();
    println!(
        "wrote {}, the Slurm scripts in {out}/slurm/ (submit with {out}/slurm/submit.sh) and the \
         Kubernetes jobs in {out}/k8s/; train a block with `wgsplat train --plan {out} --block K`, \
         or all of them here with `wgsplat run-plan {out}`",
        args.out.join(wgsplat::plan::manifest::PLAN_FILE).display(),
    );
    Ok(())
}

/// Tells that block `index`, whose outputs are in `dir`, is already done.
fn say_already_done(index: usize, dir: &Path) {
    println!(
        "block {index} is already done ({}): nothing to do",
        dir.display()
    );
}

/// Trains one block with `train`'s progress display, stopping after `stop_at` or on one of
/// `signals` (then with an [`Interrupted`] error); returns what it did.
fn train_one(
    ctx: &GpuContext,
    dir: &Path,
    plan: &PlanManifest,
    index: usize,
    dataset: &wgsplat::data::Dataset,
    stop_at: Option<u64>,
    signals: &StopSignals,
) -> anyhow::Result<BlockOutcome> {
    let block = plan.block(index)?;
    println!(
        "block {index} of {}: {} train / {} test views, {} points, {} iterations on {}",
        plan.blocks.len(),
        block.views.len(),
        block.test_views.len(),
        block.points,
        plan.config.iterations,
        ctx.info().name
    );
    let mut progress = TrainProgress::new(plan.config.iterations, 0);
    let bar = progress.bar.clone();
    let requested = || signals.requested();
    let stop = BlockStop {
        at: stop_at,
        requested: Some(&requested),
    };
    let outcome = wgsplat::plan::train_block(ctx, dir, plan, index, dataset, stop, &mut |event| {
        progress.event(event);
    });
    bar.finish_and_clear();
    let outcome = outcome.with_context(|| format!("training block {index}"))?;
    let out = wgsplat::plan::outputs::block_dir(dir, index);
    match &outcome {
        BlockOutcome::AlreadyDone => say_already_done(index, &out),
        BlockOutcome::Stopped { iteration } => println!(
            "block {index} stopped at iteration {iteration}; its checkpoint is in {} (run the \
             same command to continue)",
            out.display()
        ),
        BlockOutcome::Interrupted { iteration } => {
            let signal = signals.received().unwrap_or(Signal {
                number: 15,
                name: "SIGTERM",
            });
            let checkpoint = out.join(wgsplat::plan::outputs::CHECKPOINT_FILE);
            return Err(Interrupted {
                signal,
                message: format!(
                    "block {index} stopped by {} after iteration {iteration} of {}; its \
                     checkpoint is {}. Continue with the same command (a requeued task does so \
                     by itself):\n  {}",
                    signal.name,
                    plan.config.iterations,
                    checkpoint.display(),
                    this_command(false)
                ),
            }
            .into());
        }
        BlockOutcome::Finished {
            gaussians, metrics, ..
        } => println!(
            "block {index} done: {gaussians} Gaussians, {} PSNR {:.2} dB, wrote {}",
            metrics["scored_views"].as_str().unwrap_or("scored"),
            metrics["psnr"].as_f64().unwrap_or(f64::NAN),
            out.display()
        ),
    }
    Ok(outcome)
}

/// Runs `wgsplat train --plan PLAN [--block K]`.
pub fn train_planned_block(
    ctx: &GpuContext,
    plan_path: &Path,
    block: Option<usize>,
    stop_at: Option<u64>,
) -> anyhow::Result<()> {
    let plan = PlanManifest::load(plan_path)?;
    let index = wgsplat::plan::block_from_env(block, |name| std::env::var(name).ok())?;
    plan.block(index)?;
    let dir = plan_dir(plan_path);
    let done = wgsplat::plan::outputs::block_dir(&dir, index);
    // A finished block needs no dataset: say so before loading it.
    if wgsplat::plan::outputs::verify_block(&done, index).is_ok() {
        say_already_done(index, &done);
        return Ok(());
    }
    let dataset = wgsplat::plan::load_plan_dataset(&plan).context("loading the plan's dataset")?;
    let signals = StopSignals::install()?;
    train_one(ctx, &dir, &plan, index, &dataset, stop_at, &signals)?;
    Ok(())
}

/// Runs `wgsplat merge`.
pub fn merge(args: MergeArgs) -> anyhow::Result<()> {
    let plan = PlanManifest::load(&args.plan)?;
    let format = args
        .format
        .as_deref()
        .map(ModelFormat::from_name)
        .transpose()?;
    merge_into(&plan_dir(&args.plan), &plan, &args.out, format)?;
    if let Some(lod) = &args.lod {
        let written = match format {
            Some(format) => format,
            None => ModelFormat::from_path(&args.out)?,
        };
        let model = wgsplat::io::formats::read_model(&args.out, written)
            .with_context(|| format!("reading back {}", args.out.display()))?;
        super::lod::write_lod_of(&model, lod, args.pages, args.refine)?;
    }
    Ok(())
}

fn merge_into(
    dir: &Path,
    plan: &PlanManifest,
    out: &Path,
    format: Option<ModelFormat>,
) -> anyhow::Result<()> {
    let report = wgsplat::plan::merge_plan(dir, plan, out, format)
        .with_context(|| format!("merging {} (nothing was written)", dir.display()))?;
    println!("{:>5} {:>10} {:>10}", "block", "trained", "kept");
    for (i, b) in report.blocks.iter().enumerate() {
        println!("{i:>5} {:>10} {:>10}", b.trained, b.kept);
    }
    for line in &report.dropped {
        println!("  {line}");
    }
    println!("wrote {} ({} Gaussians)", out.display(), report.total);
    Ok(())
}

/// Runs `wgsplat run-plan`: every block in turn, then the merge.
pub fn run_plan(ctx: &GpuContext, args: RunPlanArgs) -> anyhow::Result<()> {
    let plan = PlanManifest::load(&args.plan)?;
    let dir = plan_dir(&args.plan);
    let dataset = wgsplat::plan::load_plan_dataset(&plan).context("loading the plan's dataset")?;
    let started = Instant::now();
    let signals = StopSignals::install()?;
    for index in 0..plan.blocks.len() {
        train_one(ctx, &dir, &plan, index, &dataset, None, &signals)?;
    }
    println!(
        "trained {} blocks in {:.1} s",
        plan.blocks.len(),
        started.elapsed().as_secs_f64()
    );
    let out = args.out.unwrap_or_else(|| dir.join("merged.ply"));
    merge_into(&dir, &plan, &out, None)
}

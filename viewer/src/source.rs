//! What the viewer shows: a PLY opened for inspection, a level-of-detail folder drawn by its cut,
//! a dataset trained live, or a partition plan over its scene. Each comes with the dataset's
//! views (cameras and images) when there is one.

use crate::Args;
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wgsplat::GpuContext;
use wgsplat::data::Dataset;
use wgsplat::io::lod::{CutOptions, LodGpu, LodScene};
use wgsplat::io::model::load_model_to_gpu;
use wgsplat::plan::manifest::PLAN_FILE;
use wgsplat::plan::{PlanData, PlanManifest};
use wgsplat::splat::GaussianTensors;
use wgsplat::train::TrainConfig;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::setup::{self, DataOptions};
use wgsplat_viewer::lod::{LodStream, check_budget};

/// The model to show and where it comes from.
// One value per application: the size difference of the variants costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Source {
    /// A fixed model read from a PLY file.
    Model {
        /// The PLY's path.
        path: PathBuf,
        /// The Gaussians on the GPU.
        params: Arc<GaussianTensors>,
        /// Centre and radius of the Gaussians' means.
        bounds: ([f32; 3], f32),
        /// Cameras and images to snap to (from `--dataset`).
        dataset: Option<Dataset>,
    },
    /// A level-of-detail folder, drawn each frame by the cut for the camera.
    Lod {
        /// The folder.
        path: PathBuf,
        /// Its index, skeleton and page pool.
        stream: Box<LodStream>,
    },
    /// A dataset to train live.
    Training {
        /// Its folder; `None` for the built-in scene.
        folder: Option<PathBuf>,
        /// The data.
        dataset: Dataset,
        /// The training settings.
        config: TrainConfig,
    },
    /// A partition plan (`PLAN/plan.json`) over its scene, not trained.
    Plan {
        /// The plan file.
        file: PathBuf,
        /// The plan.
        plan: PlanManifest,
        /// The dataset the plan partitions.
        dataset: Dataset,
        /// The scene: `PLAN/merged.ply`, or the initial Gaussians from the sparse points.
        params: Arc<GaussianTensors>,
        /// What `params` are.
        model: String,
    },
}

/// Loads a dataset folder, or the built-in scene for `None`, with the command line's options.
fn load_dataset(
    folder: Option<&Path>,
    args: &Args,
    background: [f32; 3],
) -> anyhow::Result<Dataset> {
    let what = folder.map_or_else(
        || "the built-in scene".to_owned(),
        |p| format!("the dataset at {}", p.display()),
    );
    let dataset = setup::load_dataset(folder, &args.data.options(background))
        .with_context(|| format!("loading {what}"))?;
    for note in &dataset.notes {
        eprintln!("wgsplat-viewer: {note}");
    }
    Ok(dataset)
}

/// The training settings from `--config` and the command-line options.
fn train_config(args: &Args, data: Option<&Path>) -> anyhow::Result<TrainConfig> {
    let config = args.train.build_config(data)?;
    anyhow::ensure!(
        config.save_every == 0 || args.out.is_some(),
        "--save-every writes OUT/checkpoint.bin: give the folder with --out"
    );
    Ok(config)
}

/// Reads a PLY and uploads it; also returns the centre and radius of its means.
pub fn load_model(
    ctx: &GpuContext,
    path: &Path,
) -> anyhow::Result<(GaussianTensors, ([f32; 3], f32))> {
    let (params, model) = load_model_to_gpu(ctx, path, "viewer/model")
        .with_context(|| format!("reading {}", path.display()))?;
    Ok((
        params,
        wgsplat_viewer::scene::point_bounds(&model.gaussians.means),
    ))
}

/// The plan file `path` names: a plan folder's `plan.json`, or a file called `plan.json`.
fn plan_file(path: &Path) -> Option<PathBuf> {
    if path.is_dir() {
        Some(path.join(PLAN_FILE)).filter(|f| f.is_file())
    } else {
        (path.file_name().is_some_and(|n| n == PLAN_FILE) && path.is_file())
            .then(|| path.to_owned())
    }
}

/// The loader's options for a plan's data, as `wgsplat partition` recorded them.
fn plan_data_options(data: &PlanData, background: [f32; 3]) -> DataOptions {
    DataOptions {
        resolution: data.resolution,
        eval: data.eval,
        test_every: data.test_every.map(|n| n as usize),
        test_list: data.test_list.clone(),
        builtin: data.builtin,
        builtin_resolution: data.builtin_resolution,
        background,
        alpha_as_mask: data.alpha_as_mask,
        undistort: data.undistort,
        ..DataOptions::default()
    }
}

/// Reads the plan at `file`, its dataset, and the model to show under it: `merged.ply` beside
/// the plan when the blocks have been merged, otherwise the initial Gaussians (nothing trained).
fn open_plan(ctx: &GpuContext, file: &Path) -> anyhow::Result<Source> {
    let plan = PlanManifest::load(file)?;
    let background = setup::background_color(plan.config.background);
    let what = plan.data.path.as_ref().map_or_else(
        || format!("the built-in scene {:?}", plan.data.builtin),
        |p| format!("the dataset at {}", p.display()),
    );
    let dataset = setup::load_dataset(
        plan.data.path.as_deref(),
        &plan_data_options(&plan.data, background),
    )
    .with_context(|| {
        format!(
            "loading {what}, which the plan {} partitions",
            file.display()
        )
    })?;
    for note in &dataset.notes {
        eprintln!("wgsplat-viewer: {note}");
    }
    let merged = file.with_file_name("merged.ply");
    let (params, model) = if merged.is_file() {
        let (params, _) = load_model(ctx, &merged)?;
        (params, format!("the merged model {}", merged.display()))
    } else {
        let params = initial_gaussians(ctx, &dataset, &plan.config)
            .context("building the initial Gaussians of the plan's scene")?;
        let count = params.len();
        (
            params,
            format!("{count} initial Gaussians (untrained: no merged.ply beside the plan yet)"),
        )
    };
    Ok(Source::Plan {
        file: file.to_owned(),
        plan,
        dataset,
        params: Arc::new(params),
        model,
    })
}

/// Whether `path` is a level-of-detail folder (it holds `index.json`).
pub fn is_lod(path: &Path) -> bool {
    path.is_dir() && path.join("index.json").is_file()
}

/// Opens the level-of-detail folder `dir` with the command line's budget, threshold and memory.
fn open_lod(ctx: &GpuContext, dir: &Path, args: &Args) -> anyhow::Result<Source> {
    anyhow::ensure!(
        args.tau.is_finite() && args.tau > 0.0,
        "--tau {}: expected a positive number of pixels",
        args.tau
    );
    let budget = wgsplat::train::byte_size::parse_byte_size(
        &args.lod_memory,
        "level-of-detail memory",
        "the GPU memory for the level of detail's pages",
    )
    .map_err(|e| anyhow::anyhow!("--lod-memory {}: {e}", args.lod_memory))?;
    let scene = LodScene::open(dir).with_context(|| format!("opening {}", dir.display()))?;
    check_budget(&scene, budget)?;
    let gpu = LodGpu::new(ctx, &scene, budget)
        .with_context(|| format!("loading {} onto the GPU", dir.display()))?;
    let options = CutOptions {
        tau_pixels: args.tau,
        splat_budget: args.splat_budget.unwrap_or(u64::MAX).max(1),
    };
    let mut stream = LodStream::new(scene, gpu, options, budget);
    stream.loads_per_frame = args.lod_loads.max(1);
    Ok(Source::Lod {
        path: dir.to_owned(),
        stream: Box::new(stream),
    })
}

fn is_model_file(path: &Path) -> bool {
    wgsplat::io::formats::ModelFormat::from_path(path).is_ok()
}

impl Source {
    /// What the command line asks for.
    pub fn open(ctx: &GpuContext, args: &Args) -> anyhow::Result<Source> {
        anyhow::ensure!(
            args.input.as_deref().is_some_and(is_lod)
                || (args.splat_budget.is_none() && args.fly.is_none()),
            "--splat-budget and --fly are for a level-of-detail folder (make one with `wgsplat \
             lod MODEL --out SCENE.lod`)"
        );
        Self::open_path(ctx, args.input.as_deref(), args)
    }

    /// A PLY file, a dataset folder, or (for `None`) the built-in scene.
    pub fn open_path(
        ctx: &GpuContext,
        input: Option<&Path>,
        args: &Args,
    ) -> anyhow::Result<Source> {
        if let Some(dir) = input.filter(|p| is_lod(p)) {
            return open_lod(ctx, dir, args);
        }
        if let Some(file) = input.and_then(plan_file) {
            return open_plan(ctx, &file);
        }
        match input {
            Some(path) if path.is_file() || is_model_file(path) => {
                if !is_model_file(path) {
                    anyhow::bail!(
                        "{} is not a model file (.ply, .compressed.ply, .splat, .spz, .sog or a SOG meta.json); give a model, a dataset folder, or nothing for the built-in scene",
                        path.display()
                    );
                }
                let (params, bounds) = load_model(ctx, path)?;
                let params = Arc::new(params);
                let dataset = match args.dataset.as_deref() {
                    None => None,
                    Some("builtin") => Some(load_dataset(None, args, [0.0; 3])?),
                    Some(folder) => Some(load_dataset(Some(Path::new(folder)), args, [0.0; 3])?),
                };
                Ok(Source::Model {
                    path: path.to_owned(),
                    params,
                    bounds,
                    dataset,
                })
            }
            folder => {
                if let Some(f) = folder {
                    anyhow::ensure!(
                        f.is_dir(),
                        "{} is neither a PLY file nor a folder",
                        f.display()
                    );
                }
                let config = train_config(args, folder)?;
                let background = setup::background_color(config.background);
                let dataset = load_dataset(folder, args, background)?;
                Ok(Source::Training {
                    folder: folder.map(Path::to_owned),
                    dataset,
                    config,
                })
            }
        }
    }

    /// The near plane to draw this source with: `option` (`--near-plane`), else the one the
    /// model file records, else the training run's (its options', else its dataset's default,
    /// as the trainer resolves it), else the dataset's default, else
    /// [`wgsplat::data::DEFAULT_NEAR`].
    pub fn near_plane(&self, option: Option<f32>) -> anyhow::Result<f32> {
        if let Some(near) = option {
            return Ok(wgsplat::data::near_plane::check_near_plane(
                near,
                "--near-plane",
            )?);
        }
        let recorded = match self {
            Source::Model { path, .. } => wgsplat::io::model::recorded_near_plane(path)
                .with_context(|| format!("reading the near plane {} records", path.display()))?,
            Source::Training { config, .. } => config.near_plane,
            Source::Lod { .. } | Source::Plan { .. } => None,
        };
        Ok(recorded
            .or_else(|| self.dataset().map(Dataset::default_near_plane))
            .unwrap_or(wgsplat::data::DEFAULT_NEAR))
    }

    /// The dataset, if any.
    pub fn dataset(&self) -> Option<&Dataset> {
        match self {
            Source::Model { dataset, .. } => dataset.as_ref(),
            Source::Lod { .. } => None,
            Source::Training { dataset, .. } | Source::Plan { dataset, .. } => Some(dataset),
        }
    }

    /// Centre and radius of the scene.
    pub fn bounds(&self) -> ([f32; 3], f32) {
        match self {
            Source::Model { bounds, .. } => *bounds,
            Source::Lod { stream, .. } => stream.bounds(),
            Source::Training { dataset, .. } | Source::Plan { dataset, .. } => {
                (dataset.center, dataset.extent)
            }
        }
    }

    /// A short description for the title bar and log.
    pub fn describe(&self) -> String {
        match self {
            Source::Model { path, .. } => format!("model {}", path.display()),
            Source::Lod { path, stream } => format!(
                "level of detail {} ({} Gaussians, {} pages)",
                path.display(),
                stream.stats.leaves,
                stream.stats.pages_total
            ),
            Source::Training {
                folder: Some(f), ..
            } => format!("training on {}", f.display()),
            Source::Training { folder: None, .. } => "training the built-in scene".to_owned(),
            Source::Plan {
                file, plan, model, ..
            } => format!(
                "plan {} ({} blocks) over {model}",
                file.display(),
                plan.blocks.len()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan_view::overlay_tests::{builtin, quadrant_plan};
    use clap::Parser as _;
    use wgsplat::data::builtin::BuiltinOptions;

    fn describe_plan(source: &Source) -> (u64, String) {
        match source {
            Source::Plan {
                params, dataset, ..
            } => {
                assert_eq!(dataset.train.len(), BuiltinOptions::default().train_views);
                (params.len(), source.describe())
            }
            _ => panic!("not opened as a plan: {}", source.describe()),
        }
    }

    #[test]
    fn a_plan_folder_or_file_opens_its_scene_untrained_or_merged() {
        let ctx = GpuContext::from_env().expect("a GPU");
        let dir = std::env::temp_dir().join(format!("wgsplat-viewer-plan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        let dataset = builtin(16);
        let plan = quadrant_plan(&dataset, 16, 0.3);
        plan.save(&dir).expect("saving the plan");
        let args = crate::Args::try_parse_from(["wgsplat-viewer"]).expect("no arguments");

        // Without merged.ply: the initial Gaussians, one per sparse point.
        let points = dataset.points.as_ref().map_or(0, |p| p.len()) as u64;
        for path in [dir.clone(), dir.join(PLAN_FILE)] {
            let source = Source::open_path(&ctx, Some(&path), &args).expect("opening the plan");
            let (count, text) = describe_plan(&source);
            assert_eq!(count, points, "{text}");
            assert!(
                text.contains("4 blocks") && text.contains("untrained"),
                "{text}"
            );
        }

        // With merged.ply beside the plan: that model (here, the first 10 initial Gaussians).
        let (mut cpu, sh_degree) = match Source::open_path(&ctx, Some(&dir), &args) {
            Ok(Source::Plan { params, .. }) => (
                params.download(&ctx).expect("download"),
                params.max_sh_degree(),
            ),
            _ => panic!("not opened as a plan"),
        };
        cpu.means.truncate(10);
        cpu.log_scales.truncate(10);
        cpu.quats.truncate(10);
        cpu.opacity_logits.truncate(10);
        cpu.sh.truncate(10);
        wgsplat::io::ply::write_ply(&dir.join("merged.ply"), &cpu, sh_degree).expect("writing");
        let source = Source::open_path(&ctx, Some(&dir), &args).expect("opening the plan");
        let (count, text) = describe_plan(&source);
        assert_eq!(count, 10, "{text}");
        assert!(text.contains("merged.ply"), "{text}");
        std::fs::remove_dir_all(&dir).ok();
    }
}

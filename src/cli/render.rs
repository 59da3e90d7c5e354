//! `wgsplat render` and `wgsplat eval`: a saved model rendered from a dataset's cameras into PNG
//! files, or scored on its test views; also the renders `train --save-renders` writes.

use crate::cli::dataset::load_dataset_reporting;
use crate::cli::status::StatusTo;
use anyhow::Context as _;
use serde_json::json;
use std::path::{Path, PathBuf};
use wgsplat::GpuContext;
use wgsplat::data::{Dataset, View};
use wgsplat::io::lod::{CutOptions, LodRenderer, LodScene};
use wgsplat::io::model::load_model_to_gpu;
use wgsplat::show::Drawn;
use wgsplat::splat::{GaussianTensors, RasterMode};
use wgsplat::train::options::DataArgs;
use wgsplat::train::setup;
use wgsplat::train::{TrainConfig, Trainer};

/// A file stem for each view, unique within `views`: the view's name without its extension, with
/// path separators turned into `_` (NeRF-synthetic names such as `./test/r_0.png` become
/// `test_r_0`); a name that would still repeat gets its index appended.
fn render_file_stems(views: &[View]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    views
        .iter()
        .enumerate()
        .map(|(i, view)| {
            let path = Path::new(&view.name);
            let without_ext = path.with_extension("");
            let mut stem: String = without_ext
                .to_string_lossy()
                .trim_start_matches("./")
                .chars()
                .map(|c| if c == '/' || c == '\\' { '_' } else { c })
                .collect();
            if stem.is_empty() {
                stem = format!("view_{i}");
            }
            if !seen.insert(stem.clone()) {
                stem = format!("{stem}_{i}");
                seen.insert(stem.clone());
            }
            stem
        })
        .collect()
}

/// Renders `views` at full SH degree into `dir` as PNGs (one per view, names from
/// [`render_file_stems`]), asking `stop` before each; returns how many files were written.
pub(super) fn save_renders(
    ctx: &GpuContext,
    params: &GaussianTensors,
    views: &[View],
    background: [f32; 3],
    raster_mode: RasterMode,
    dir: &Path,
    stop: &dyn Fn() -> bool,
) -> anyhow::Result<usize> {
    let mut drawn = Drawn::Model(Box::new(params.clone()));
    let what = Outputs {
        raster_mode,
        depth: false,
        normals: false,
    };
    save_renders_of(ctx, &mut drawn, views, background, what, dir, stop)
}

/// What [`save_renders_of`] writes per view beside the colour.
#[derive(Clone, Copy)]
struct Outputs {
    raster_mode: RasterMode,
    /// `STEM.depth.npy` (expected depth, median depth, opacity) and `STEM.depth.png` (the median
    /// depth colour-mapped).
    depth: bool,
    /// `STEM.normals.npy` (unit camera-space normals) and `STEM.normals.png`.
    normals: bool,
}

/// [`save_renders`] of any [`Drawn`] model (a level of detail draws each view's own cut).
fn save_renders_of(
    ctx: &GpuContext,
    drawn: &mut Drawn,
    views: &[View],
    background: [f32; 3],
    what: Outputs,
    dir: &Path,
    stop: &dyn Fn() -> bool,
) -> anyhow::Result<usize> {
    let raster_mode = what.raster_mode;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let stems = render_file_stems(views);
    for (written, (view, stem)) in views.iter().zip(&stems).enumerate() {
        if stop() {
            return Ok(written);
        }
        let mut camera = view.camera.clone();
        camera.background = background;
        let params = drawn.gaussians_for(ctx, &camera)?;
        if !(what.depth || what.normals) {
            let image = wgsplat::show::render_rgba8(ctx, &params, &camera, raster_mode)?;
            image.write_png(&dir.join(format!("{stem}.png")))?;
        } else {
            // One render gives the colour and the maps.
            let surface = wgsplat::show::depth::render_surface(
                ctx,
                &params,
                &camera,
                raster_mode,
                what.normals,
            )?;
            surface.image.write_png(&dir.join(format!("{stem}.png")))?;
            if what.depth {
                let maps = surface.depth;
                maps.write_npy(&dir.join(format!("{stem}.depth.npy")))?;
                match maps.colour_mapped() {
                    Ok(image) => image.write_png(&dir.join(format!("{stem}.depth.png")))?,
                    Err(why) => eprintln!("warning: {stem}: no depth picture: {why}"),
                }
            }
            if let Some(normals) = surface.normals {
                normals.write_npy(&dir.join(format!("{stem}.normals.npy")))?;
                match normals.colour_mapped() {
                    Ok(image) => image.write_png(&dir.join(format!("{stem}.normals.png")))?,
                    Err(why) => eprintln!("warning: {stem}: no normals picture: {why}"),
                }
            }
        }
    }
    Ok(views.len())
}

/// Options of `wgsplat render` and `wgsplat eval`.
#[derive(clap::Args)]
pub struct RenderArgs {
    /// A 3DGS PLY file.
    ply: PathBuf,
    /// The dataset whose cameras to render (omit for the built-in scene).
    #[arg(long)]
    dataset: Option<PathBuf>,
    #[command(flatten)]
    data_args: DataArgs,
    /// Output folder (render only).
    #[arg(long, default_value = "renders")]
    out: PathBuf,
    /// Which views: test or train.
    #[arg(long, default_value = "test")]
    split: String,
    /// Print JSON (eval only).
    #[arg(long)]
    json: bool,
    /// Background to render and score on: black, white, a colour (#rrggbb or r,g,b), or the one
    /// the model was trained on (NeRF-synthetic models trained with `--background white` must be
    /// scored on white).
    #[arg(long, default_value = "black")]
    background: String,
    /// Skip LPIPS (eval only).
    #[arg(long)]
    no_lpips: bool,
    /// Score as a model trained with --exposure is scored (INRIA's protocol): each view's colour
    /// transform is fitted on its left half, and the right half is scored.
    #[arg(long)]
    exposure: bool,
    /// Render antialiased splats: for models trained with --antialiased.
    #[arg(long)]
    antialiased: bool,
    /// Also write each view's depth (render only): STEM.depth.npy, float32 [height, width, 3]
    /// of expected depth, median depth (0 where the opacity never reaches 0.5) and opacity, in
    /// the scene's units (camera z, or a fisheye's ray length), and STEM.depth.png, the median
    /// depth colour-mapped from near (yellow) to far (dark blue).
    #[arg(long)]
    depth: bool,
    /// Also write each view's normals (render only): STEM.normals.npy, float32 [height, width,
    /// 3] of unit camera-space normals (x right, y down, z along the view; zero where little is
    /// drawn), each pixel the colour-weighted mean of the Gaussians' shortest axes turned towards
    /// the camera, and STEM.normals.png in the normal-map convention (x right, y up, z towards
    /// the viewer).
    #[arg(long)]
    normals: bool,
    /// Do not draw Gaussians whose centre lies nearer a camera than DIST (a depth in the
    /// scene's units) [default: the near plane the PLY records, else 0.2 × the median spacing of
    /// neighbouring training cameras, at least 0.01].
    #[arg(long, value_name = "DIST")]
    near_plane: Option<f32>,
    #[command(flatten)]
    video: super::video::VideoArgs,
    #[command(flatten)]
    lod: LodDrawArgs,
}

/// How `render` draws a level-of-detail folder (SCENE.lod/ from `wgsplat lod`).
#[derive(clap::Args)]
pub struct LodDrawArgs {
    /// Most Gaussians drawn per frame from a level-of-detail folder: the threshold rises until
    /// the cut fits (default: no limit).
    #[arg(long)]
    splat_budget: Option<u64>,
    /// The level-of-detail threshold: a node whose projected radius (3σ) is under this many
    /// pixels is drawn in place of its children [default: 1].
    #[arg(long)]
    tau: Option<f32>,
    /// GPU memory for a level of detail's resident pages (e.g. 512MiB, 2GiB) [default: 1GiB].
    #[arg(long)]
    lod_memory: Option<String>,
}

impl LodDrawArgs {
    /// The first option given, by its flag: they only draw a level-of-detail folder.
    fn given(&self) -> Option<&'static str> {
        [
            (self.splat_budget.is_some(), "--splat-budget"),
            (self.tau.is_some(), "--tau"),
            (self.lod_memory.is_some(), "--lod-memory"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// The cut options and the page memory in bytes, checked.
    fn options(&self) -> anyhow::Result<(CutOptions, u64)> {
        let tau = self.tau.unwrap_or(1.0);
        if !(tau.is_finite() && tau > 0.0) {
            anyhow::bail!("--tau {tau}: expected a positive number of pixels");
        }
        if self.splat_budget == Some(0) {
            anyhow::bail!("--splat-budget 0: expected at least 1 Gaussian (omit it for no limit)");
        }
        let text = self.lod_memory.as_deref().unwrap_or("1GiB");
        let pool = wgsplat::train::byte_size::parse_byte_size(
            text,
            "level-of-detail memory",
            "the GPU memory for the level of detail's pages",
        )
        .with_context(|| format!("--lod-memory {text}"))?;
        let options = CutOptions {
            tau_pixels: tau,
            splat_budget: self.splat_budget.unwrap_or(u64::MAX),
        };
        Ok((options, pool))
    }
}

/// Whether `path` is a level-of-detail folder.
fn is_lod(path: &Path) -> bool {
    path.is_dir() && path.join("index.json").is_file()
}

/// The model of `render`: a model file, or a level-of-detail folder drawn by its cut.
fn open_drawn(ctx: &GpuContext, args: &RenderArgs) -> anyhow::Result<Drawn> {
    if !is_lod(&args.ply) {
        if args.ply.is_dir() {
            anyhow::bail!(
                "{} is a folder but not a level-of-detail folder (it has no index.json): give a \
                 model file, or a folder written by `wgsplat lod MODEL --out SCENE.lod`",
                args.ply.display()
            );
        }
        if let Some(flag) = args.lod.given() {
            anyhow::bail!(
                "{flag} draws a level-of-detail folder; {} is a model file (make one with \
                 `wgsplat lod {} --out SCENE.lod`, or leave {flag} out)",
                args.ply.display(),
                args.ply.display()
            );
        }
        return Ok(Drawn::Model(Box::new(load_model(ctx, &args.ply)?)));
    }
    let (options, pool) = args.lod.options()?;
    let scene =
        LodScene::open(&args.ply).with_context(|| format!("opening {}", args.ply.display()))?;
    wgsplat::io::lod::pool::check_budget(&scene, pool)?;
    let renderer = LodRenderer::open(ctx, &args.ply, pool)
        .with_context(|| format!("opening {}", args.ply.display()))?;
    Ok(Drawn::lod(renderer, options))
}

/// Refuses the options `render` would ignore: the path options without `--video` or
/// `--frames`.
fn refuse_ignored_render_options(args: &RenderArgs) -> anyhow::Result<()> {
    if let Some(flag) = args
        .video
        .path_option_given()
        .filter(|_| !args.video.wanted())
    {
        anyhow::bail!(
            "{flag} shapes a camera path's video or frames: give --video OUT.mp4 or --frames DIR \
             with it (without them `render` draws the dataset's --split views)"
        );
    }
    let surface = [(args.depth, "--depth"), (args.normals, "--normals")]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag));
    if let Some(flag) = surface.filter(|_| args.video.wanted()) {
        anyhow::bail!(
            "{flag} writes maps of the dataset's --split views; a camera path's video or frames \
             are colour only: leave {flag} out, or drop --video/--frames"
        );
    }
    Ok(())
}

/// Refuses the options `eval` would ignore: those of a video and of a level of detail.
fn refuse_ignored_eval_options(args: &RenderArgs) -> anyhow::Result<()> {
    let video = [
        (args.video.video.is_some(), "--video"),
        (args.video.frames.is_some(), "--frames"),
        (args.depth, "--depth"),
        (args.normals, "--normals"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag));
    if let Some(flag) = video
        .or_else(|| args.video.path_option_given())
        .or_else(|| args.lod.given())
    {
        anyhow::bail!("{flag} is an option of `render`; `eval` only scores a model file");
    }
    Ok(())
}

impl RenderArgs {
    fn raster_mode(&self) -> RasterMode {
        if self.antialiased {
            RasterMode::Antialiased
        } else {
            RasterMode::Classic
        }
    }
}

fn load_model(ctx: &GpuContext, path: &Path) -> anyhow::Result<GaussianTensors> {
    if path.exists() && !path.is_dir() {
        wgsplat::data::check_regular_file(path, "the model")?;
    }
    Ok(load_model_to_gpu(ctx, path, "model")?.0)
}

/// Loads the dataset of `wgsplat render` / `wgsplat eval` with its test views held out (the
/// dataset's own split, or `--test-list` / `--test-every`), whether or not `--eval` was given.
fn load_split_dataset(args: &RenderArgs, background: [f32; 3]) -> anyhow::Result<Dataset> {
    let mut data_args = args.data_args.clone();
    data_args.eval = true;
    load_dataset_reporting(
        args.dataset.as_deref(),
        &data_args,
        background,
        StatusTo::for_json(args.json),
    )
}

/// The near plane `render` and `eval` draw the model with: `--near-plane`, else the one the
/// model file records, else the dataset's default (which the training run used, when the
/// dataset is the one it trained on).
fn near_plane_of(args: &RenderArgs, dataset: &Dataset) -> anyhow::Result<f32> {
    if let Some(near) = args.near_plane {
        return Ok(wgsplat::data::near_plane::check_near_plane(
            near,
            "--near-plane",
        )?);
    }
    let recorded = match is_lod(&args.ply) {
        true => None,
        false => wgsplat::io::model::recorded_near_plane(&args.ply)
            .with_context(|| format!("reading the near plane {} records", args.ply.display()))?,
    };
    Ok(recorded.unwrap_or_else(|| dataset.default_near_plane()))
}

/// Warns on stderr when a level of detail drew frames without pages their cut wanted.
pub(crate) fn warn_of_shortfall(drawn: &Drawn) {
    if let Some(warning) = drawn.shortfall().and_then(|s| s.warning()) {
        eprintln!("warning: {warning}");
    }
}

/// Runs `wgsplat render`: the requested split's views, one PNG each.
pub fn render_ply(ctx: &GpuContext, args: RenderArgs) -> anyhow::Result<()> {
    refuse_ignored_render_options(&args)?;
    let mut drawn = open_drawn(ctx, &args)?;
    let background = setup::background_color(setup::parse_background(&args.background)?);
    let mut dataset = load_split_dataset(&args, background)?;
    dataset.set_near_plane(near_plane_of(&args, &dataset)?);
    if args.video.wanted() {
        if let Some(dir) = &args.video.frames {
            super::guard::refuse_output_among_images(dir, args.dataset.as_deref(), &dataset)?;
        }
        super::video::render_video(
            ctx,
            &args.ply,
            &mut drawn,
            &dataset,
            &args.video,
            background,
            args.raster_mode(),
        )?;
        warn_of_shortfall(&drawn);
        return Ok(());
    }
    let views = match args.split.as_str() {
        "test" => &dataset.test,
        "train" => &dataset.train,
        other => anyhow::bail!("--split {other:?}: expected test or train"),
    };
    if views.is_empty() {
        anyhow::bail!(
            "the dataset has no {} views to render (use --split train, or --test-every N)",
            args.split
        );
    }
    super::guard::refuse_output_among_images(&args.out, args.dataset.as_deref(), &dataset)?;
    let written = save_renders_of(
        ctx,
        &mut drawn,
        views,
        background,
        Outputs {
            raster_mode: args.raster_mode(),
            depth: args.depth,
            normals: args.normals,
        },
        &args.out,
        &|| false,
    )?;
    println!(
        "wrote renders of {written} {} views to {}",
        args.split,
        args.out.display()
    );
    warn_of_shortfall(&drawn);
    Ok(())
}

/// Runs `wgsplat eval`.
pub fn eval_ply(ctx: &GpuContext, args: RenderArgs) -> anyhow::Result<()> {
    refuse_ignored_eval_options(&args)?;
    if is_lod(&args.ply) {
        anyhow::bail!(
            "eval scores a model file; {} is a level-of-detail folder: score the model it was \
             built from, or `render` the folder and compare its images",
            args.ply.display()
        );
    }
    let params = load_model(ctx, &args.ply)?;
    let background = setup::parse_background(&args.background)?;
    let dataset = load_split_dataset(&args, setup::background_color(background))?;
    let near_plane = near_plane_of(&args, &dataset)?;
    let degree = params.max_sh_degree();
    let trainer = Trainer::new(
        ctx,
        dataset,
        params,
        TrainConfig {
            sh_degree: degree,
            sh_degree_interval: 1,
            background,
            lpips: !args.no_lpips,
            raster_mode: args.raster_mode(),
            exposure: args.exposure,
            near_plane: Some(near_plane),
            ..TrainConfig::default()
        },
    )?;
    let scores = trainer.evaluate_at_full_degree()?;
    // The views scored: those whose masks leave no pixel are not (the dataset's note says so).
    let views = scores.count;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "psnr": scores.psnr, "ssim": scores.ssim, "lpips": scores.lpips, "views": views,
                "masked_views": scores.masked, "exposure_fitted": scores.exposure_fitted,
                "per_view": scores.per_view, "worst_view": scores.worst_view(),
                "near_plane": near_plane
            }))?
        );
    } else {
        println!("{} over {views} views", scores.summary());
    }
    Ok(())
}

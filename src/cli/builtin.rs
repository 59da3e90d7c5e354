//! `wgsplat builtin SCENE --out DIR`: writes a built-in scene as a dataset folder, so that other
//! commands (and other tools) read it like a capture: the town as a COLMAP folder, the objects
//! scene as a NeRF-synthetic folder; with `--camera-model`, either scene photographed through a
//! lens of that model as a COLMAP folder with masks ([`wgsplat::data::lens_capture`]).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use wgsplat::data::Split;
use wgsplat::data::builtin::{BuiltinOptions, generate, write_nerf_synthetic};
use wgsplat::data::colmap_write::write_colmap_dataset;
use wgsplat::data::lens::CameraModel;
use wgsplat::data::lens_capture::{write_objects_through, write_town_through};
use wgsplat::data::lens_design::{FieldLens, design_lens};
use wgsplat::data::town::{self, TownOptions};
use wgsplat::train::setup::{BUILTIN_RESOLUTIONS, BuiltinScene};

/// Arguments of `wgsplat builtin`.
#[derive(clap::Args)]
pub struct BuiltinArgs {
    /// The scene: town (written as COLMAP: sparse/0/*.txt and images/*.png) or objects (written
    /// as NeRF-synthetic: transforms_{train,test}.json and PNGs).
    #[arg(value_enum)]
    scene: BuiltinScene,
    /// The folder to write (must not exist yet, or be empty).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Side of the images in pixels (their width, with --height), 16 to 4096.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(BUILTIN_RESOLUTIONS))]
    builtin_resolution: u32,
    /// Town: image height in pixels, 16 to 4096, for images that are not square (e.g. 1600 wide
    /// by 1200, a photograph's shape) [default: --builtin-resolution].
    #[arg(long, value_parser = clap::value_parser!(u32).range(BUILTIN_RESOLUTIONS))]
    height: Option<u32>,
    /// Town: rays per pixel, 4 (antialiased edges) or 1 (through each pixel's centre: four
    /// times faster, for captures of many large images) [default: 4].
    #[arg(long, value_enum)]
    rays_per_pixel: Option<RaysPerPixel>,
    /// Number of views (town: all views, every 8th a test view under --eval; objects: training
    /// views). Default: 256 for the town, 48 for the objects.
    #[arg(long)]
    views: Option<usize>,
    /// Town: blocks along each side [default: 8].
    #[arg(long)]
    blocks: Option<u32>,
    /// Points in the sparse cloud. Default: 16000 for the town, 4000 for the objects.
    #[arg(long)]
    points: Option<usize>,
    /// Town: seed of the layout, the flight jitter and the point sampling [default: 1].
    #[arg(long)]
    seed: Option<u64>,
    /// Photograph every view, training and test alike, through a lens of this COLMAP model with
    /// moderate barrel distortion (SIMPLE_PINHOLE, PINHOLE, SIMPLE_RADIAL, RADIAL, OPENCV,
    /// FULL_OPENCV, FOV, SIMPLE_RADIAL_FISHEYE, RADIAL_FISHEYE, OPENCV_FISHEYE,
    /// THIN_PRISM_FISHEYE) and write the scene as a COLMAP folder: that camera in
    /// sparse/0/cameras.txt, and masks/ (0 where the lens sees nothing: outside a fisheye's image
    /// circle, which spans the width). The objects are then named objects_NNNN.png, every 8th a
    /// test view under --eval (one per 7 training views).
    #[arg(long, value_name = "MODEL", value_parser = parse_camera_model)]
    camera_model: Option<CameraModel>,
    /// With --camera-model: the field of view across the image width, in degrees; fisheyes take
    /// up to 300, the other models less than 170. The objects' cameras move in so the scene fills
    /// the wider view (1.6 from its centre at 90°); wider than 120, they stand over the platform,
    /// low and looking a little up, so the rim of the view sees the scene too [default: the scene's
    /// own, 39.6 for the objects, 60 for the town].
    #[arg(long, value_name = "DEGREES")]
    fov: Option<f64>,
}

/// The COLMAP model named `name` (any case) that a built-in scene can be photographed through.
fn parse_camera_model(name: &str) -> Result<CameraModel, String> {
    match CameraModel::from_name(&name.to_ascii_uppercase()) {
        Some(CameraModel::RadTanThinPrismFisheye) => Err(
            "RAD_TAN_THIN_PRISM_FISHEYE (Project Aria) is not supported; choose another model"
                .into(),
        ),
        Some(model) => Ok(model),
        None => Err(format!(
            "unknown camera model {name:?}; use one of {}",
            CameraModel::ALL[..11]
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Rays traced through each pixel of the town's views.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RaysPerPixel {
    /// One, through the pixel's centre.
    #[value(name = "1")]
    One,
    /// Four, spread over the pixel: antialiased edges.
    #[value(name = "4")]
    Four,
}

/// Generates the scene and writes it.
pub fn write_builtin(args: BuiltinArgs) -> anyhow::Result<()> {
    let start = Instant::now();
    if args.scene == BuiltinScene::Objects
        && (args.blocks.is_some()
            || args.seed.is_some()
            || args.height.is_some()
            || args.rays_per_pixel.is_some())
    {
        anyhow::bail!(
            "--blocks, --seed, --height and --rays-per-pixel apply to the town only; \
             the objects scene has none of them"
        );
    }
    if let Some(model) = args.camera_model {
        return write_through_lens(&args, model, start);
    }
    if args.fov.is_some() {
        anyhow::bail!(
            "--fov sets the field of view of the lens given by --camera-model; add \
             --camera-model MODEL (e.g. OPENCV or OPENCV_FISHEYE), or leave --fov out"
        );
    }
    let dataset = match args.scene {
        BuiltinScene::Town => {
            let options = town_options(&args);
            town::generate(&options, &Split::AllTrain).context("generating the town")?
        }
        BuiltinScene::Objects => {
            let defaults = BuiltinOptions::default();
            generate(&BuiltinOptions {
                resolution: args.builtin_resolution,
                train_views: args.views.unwrap_or(defaults.train_views),
                points: args.points.unwrap_or(defaults.points),
                ..defaults
            })
            .context("generating the objects scene")?
        }
    };
    let generated = start.elapsed().as_secs_f64();
    let write = match args.scene {
        BuiltinScene::Town => write_colmap_dataset(&dataset, &args.out),
        BuiltinScene::Objects => write_nerf_synthetic(&dataset, &args.out),
    };
    write.with_context(|| format!("writing {}", args.out.display()))?;
    let points = dataset.points.as_ref().map_or(0, |p| p.len());
    let (width, height) = dataset
        .views()
        .next()
        .map_or((0, 0), |v| (v.camera.width, v.camera.height));
    eprintln!(
        "wrote {} views ({width}x{height}) and {points} points to {} (generated in {generated:.1} s, written in {:.1} s)",
        dataset.train.len() + dataset.test.len(),
        args.out.display(),
        start.elapsed().as_secs_f64() - generated,
    );
    Ok(())
}

/// The town's options from the arguments.
fn town_options(args: &BuiltinArgs) -> TownOptions {
    let defaults = TownOptions::default();
    TownOptions {
        blocks_per_side: args.blocks.unwrap_or(defaults.blocks_per_side),
        views: args.views.unwrap_or(defaults.views),
        resolution: args.builtin_resolution,
        height: args.height,
        supersampled: args.rays_per_pixel != Some(RaysPerPixel::One),
        points: args.points.unwrap_or(defaults.points),
        seed: args.seed.unwrap_or(defaults.seed),
        background: defaults.background,
    }
}

/// Writes the scene photographed through a lens of `model` (`--camera-model`, `--fov`).
fn write_through_lens(
    args: &BuiltinArgs,
    model: CameraModel,
    start: Instant,
) -> anyhow::Result<()> {
    let width = args.builtin_resolution;
    let (height, own_fov) = match args.scene {
        BuiltinScene::Town => (
            args.height.unwrap_or(width),
            f64::from(town::FIELD_OF_VIEW_DEGREES),
        ),
        BuiltinScene::Objects => (
            width,
            f64::from(wgsplat::data::builtin::CAMERA_ANGLE_X).to_degrees(),
        ),
    };
    let fov = args.fov.unwrap_or(own_fov);
    let field: FieldLens = design_lens(model, fov, width, height)
        .map_err(|why| anyhow::anyhow!("--camera-model {} --fov {fov}: {why}", model.name()))?;
    let capture = match args.scene {
        BuiltinScene::Town => write_town_through(&args.out, &town_options(args), &field),
        BuiltinScene::Objects => {
            let defaults = BuiltinOptions::default();
            let options = BuiltinOptions {
                resolution: width,
                train_views: args.views.unwrap_or(defaults.train_views),
                points: args.points.unwrap_or(defaults.points),
                ..defaults
            };
            write_objects_through(&args.out, &options, &field)
        }
    }
    .with_context(|| format!("writing {}", args.out.display()))?;
    let tests = capture.views.iter().filter(|(_, test)| *test).count();
    eprintln!(
        "wrote {} views ({width}x{height}, {tests} of them test views under --eval) through a lens of \
         model {} seeing {fov}° across (f = {:.3} px) and {} points to {} in {:.1} s",
        capture.views.len(),
        model.name(),
        field.lens.fx,
        capture.points,
        args.out.display(),
        start.elapsed().as_secs_f64(),
    );
    Ok(())
}

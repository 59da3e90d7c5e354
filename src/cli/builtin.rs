//! `wgsplat builtin SCENE --out DIR`: writes a built-in scene as a dataset folder, so that other
//! commands (and other tools) read it like a capture: the town as a COLMAP folder, the objects
//! scene as a NeRF-synthetic folder.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use wgsplat::data::Split;
use wgsplat::data::builtin::{BuiltinOptions, generate, write_nerf_synthetic};
use wgsplat::data::colmap_write::write_colmap_dataset;
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
    let dataset = match args.scene {
        BuiltinScene::Town => {
            let defaults = TownOptions::default();
            let options = TownOptions {
                blocks_per_side: args.blocks.unwrap_or(defaults.blocks_per_side),
                views: args.views.unwrap_or(defaults.views),
                resolution: args.builtin_resolution,
                height: args.height,
                supersampled: args.rays_per_pixel != Some(RaysPerPixel::One),
                points: args.points.unwrap_or(defaults.points),
                seed: args.seed.unwrap_or(defaults.seed),
                background: defaults.background,
            };
            town::generate(&options, &Split::AllTrain).context("generating the town")?
        }
        BuiltinScene::Objects => {
            if args.blocks.is_some()
                || args.seed.is_some()
                || args.height.is_some()
                || args.rays_per_pixel.is_some()
            {
                anyhow::bail!(
                    "--blocks, --seed, --height and --rays-per-pixel apply to the town only; \
                     the objects scene has none of them"
                );
            }
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

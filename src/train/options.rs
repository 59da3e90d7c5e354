//! The data and training options of every front end, declared once: `wgsplat train` and
//! `wgsplat-viewer` flatten the same two clap structs, so a flag that one accepts the other does
//! too, with the same meaning and help text.

use super::budget::{MemoryPlan, apply_memory_budget, parse_image_cache_size};
use super::config::{
    Background, CAPTURE_OPACITY_LR, CAPTURE_PATH_CLEARANCE, CAPTURE_PRUNE_OPACITY,
    DEFAULT_SKY_POINTS, StrategyKind, TrainConfig,
};
use super::setup::{
    BUILTIN_RESOLUTIONS, BuiltinScene, DOWNSCALE_FACTORS, DataOptions, apply_builtin_recipe,
    parse_background,
};
use crate::data::{Dataset, DatasetFormat};
use crate::error::Result;
use crate::splat::RasterMode;
use std::path::{Path, PathBuf};

/// Parses `-r`: a downscale factor of exactly 1, 2, 4 or 8 (the factors of INRIA's pre-scaled
/// `images_N` folders).
pub fn parse_downscale(text: &str) -> std::result::Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(factor) if DOWNSCALE_FACTORS.contains(&factor) => Ok(factor),
        _ => Err(format!(
            "{text:?} is not a downscale factor: use 1 (full size), 2, 4 or 8"
        )),
    }
}

/// The most iterations (and the longest period) the command line accepts: 300 times the 3DGS
/// schedule, beyond any run a person waits for.
pub const MAX_ITERATIONS: u64 = 10_000_000;

/// Where the data comes from and how it is read.
#[derive(clap::Args, Clone, Debug)]
pub struct DataArgs {
    /// Downscale images by 1, 2, 4 or 8. Without it images are used at full size, except those
    /// wider than 1600 px, which are used at 1600 px wide (INRIA's default for photographs);
    /// -r 1 keeps every image at full size.
    #[arg(short = 'r', long, value_parser = parse_downscale)]
    pub resolution: Option<u32>,
    /// Hold out test views (COLMAP: every 8th by name; NeRF: its test json). Without it, COLMAP
    /// scenes train on every view.
    #[arg(long)]
    pub eval: bool,
    /// Hold out every Nth view as a test view (COLMAP: by sorted name; NeRF: in file order);
    /// implies --eval.
    #[arg(long, conflicts_with = "test_list", value_parser = clap::value_parser!(u64).range(1..))]
    pub test_every: Option<u64>,
    /// Hold out the views named in FILE (one image name per line, e.g. a benchmark's own split
    /// such as duck_colmap/nerf_test_views.txt); implies --eval.
    #[arg(long, value_name = "FILE")]
    pub test_list: Option<PathBuf>,
    /// Which built-in scene to generate when no dataset is given.
    #[arg(long, value_enum, default_value_t = BuiltinScene::Objects)]
    pub builtin: BuiltinScene,
    /// Side of the built-in scene's square images in pixels, 16 to 4096 (used when no dataset is
    /// given).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(BUILTIN_RESOLUTIONS))]
    pub builtin_resolution: u32,
    /// Read the images' alpha channel as a loss mask (0 = ignore the pixel) instead of
    /// transparency. A masks/ folder beside images/ is used without this flag.
    #[arg(long)]
    pub alpha_as_mask: bool,
    /// Resample the images of distorted and fisheye cameras into pinhole images at load (cropped
    /// to 120° across) instead of rasterizing through their lens as they are.
    #[arg(long)]
    pub undistort: bool,
    /// Host memory kept for decoded training images (bytes with a unit, such as 8GiB, or a
    /// fraction of the machine's memory, such as 0.25); images past it are read from disk at each
    /// use. Default: half of the memory available at start.
    #[arg(long, value_name = "SIZE", value_parser = parse_host_image_memory)]
    pub host_image_memory: Option<u64>,
}

/// `--host-image-memory`: bytes, or a fraction of the machine's memory.
fn parse_host_image_memory(text: &str) -> std::result::Result<u64, String> {
    use crate::train::budget::{parse_byte_budget, resolve_budget};
    let total = super::setup::host_memory_bytes("MemTotal");
    parse_byte_budget(text)
        .and_then(|budget| resolve_budget(budget, total))
        .map_err(|e| e.to_string())
}

impl DataArgs {
    /// The loader's options, with ground truth composited on `background`.
    pub fn options(&self, background: [f32; 3]) -> DataOptions {
        DataOptions {
            resolution: self.resolution,
            eval: self.eval,
            test_every: self.test_every.map(|n| n as usize),
            test_list: self.test_list.clone(),
            builtin: self.builtin,
            builtin_resolution: self.builtin_resolution,
            background,
            alpha_as_mask: self.alpha_as_mask,
            undistort: self.undistort,
            host_image_budget: self
                .host_image_memory
                .or_else(super::setup::default_host_image_budget),
            progress: crate::data::LoadProgress::default(),
        }
    }
}

/// Training settings that override the configuration file (or the 3DGS defaults).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct TrainOptions {
    /// JSON file of TrainConfig fields; command-line options override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Iterations (default 30000; 300 for the built-in scene), 1 to 10,000,000.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_ITERATIONS))]
    pub iterations: Option<u64>,
    /// Background: black, white, random, or a colour as #rrggbb or r,g,b (0 to 255), such as a
    /// capture's plain backdrop (#808080 for mid grey), which Gaussians then need not model.
    /// Default: random (a new colour each step, scored on black) for a COLMAP model read from
    /// disk, black otherwise.
    #[arg(long)]
    pub background: Option<String>,
    /// Largest SH degree, 0 to 3.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=3))]
    pub sh_degree: Option<u32>,
    /// Cap on the number of Gaussians.
    #[arg(long)]
    pub max_gaussians: Option<u64>,
    /// Largest memory training may use (8GiB, 512MiB, or a fraction of the adapter's memory such
    /// as 0.5): the largest Gaussian count that fits becomes the cap.
    #[arg(long)]
    pub memory_budget: Option<String>,
    /// Most GPU memory the training images may take (e.g. 256MiB, 2GiB): they stay in host
    /// memory and this many bytes of the largest image's slots hold the most recently used ones
    /// (at least one). Default: all of them up to a quarter of --memory-budget, or up to 2 GiB
    /// without one. Results are the same whatever the size; a smaller cache uploads more often.
    #[arg(long, value_name = "SIZE")]
    pub image_cache: Option<String>,
    /// Densification strategy: default (3DGS) or mcmc (needs --max-gaussians or --memory-budget).
    #[arg(long)]
    pub strategy: Option<String>,
    /// Storage of Adam's moments: 16bit (the default: both moments in one 32-bit word per
    /// parameter, 488 B per Gaussian while training at SH 3), f32 (8 B per parameter: 724 B per
    /// Gaussian) or bf16 (the earlier 16-bit packing, for comparison and its checkpoints).
    #[arg(long, value_name = "16bit|f32|bf16")]
    pub optimizer_state: Option<String>,
    /// Save a checkpoint every N iterations (0: never), N at most 10,000,000.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_ITERATIONS))]
    pub save_every: Option<u64>,
    /// Evaluate on the test views every N iterations (0: never), N at most 10,000,000.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_ITERATIONS))]
    pub eval_every: Option<u64>,
    /// Random seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Densify by the mean per-pixel absolute gradient (gsplat's absgrad; threshold
    /// `absgrad_threshold`, 0.0008 by default).
    #[arg(long)]
    pub absgrad: bool,
    /// Score PSNR and SSIM only: skip LPIPS at evaluations (it costs about as much as a few
    /// training iterations per view on a software adapter).
    #[arg(long)]
    pub no_lpips: bool,
    /// Exposure compensation for photographs: learn an affine colour transform per training
    /// image (auto exposure, white balance); evaluation fits each test view's on its left half
    /// and scores the right half.
    #[arg(long)]
    pub exposure: bool,
    /// Camera pose refinement for captures whose poses are not exact: learn a rigid correction
    /// of each training view's camera from the projection's gradients (gsplat's pose_opt).
    #[arg(long)]
    pub pose_opt: bool,
    /// Far-field Gaussians for the sky and distant background of a reconstructed capture: this
    /// many directions on a sphere far outside the scene (default 10000 for a dataset read from
    /// disk, about 2 degrees apart; 0 for the built-in scenes and in a --config file that does not
    /// set sky_points), coloured from the photographs; directions no training view sees, or that
    /// show the background colour, are dropped. 0 adds none. Datasets without sparse points get
    /// none.
    #[arg(long, value_name = "N")]
    pub sky_points: Option<usize>,
    /// Prune Gaussians whose opacity falls below this at each densification (an opacity reset
    /// clamps to twice it): default 0.005 (3DGS's; with --strategy mcmc, the opacity at or below
    /// which a Gaussian is relocated). Splatfacto and OpenSplat use 0.1: fewer Gaussians, and
    /// better at 1,000 iterations on photographs, worse past 2,000.
    #[arg(long, value_name = "P")]
    pub prune_opacity: Option<f32>,
    /// Learning rate of the opacity logits: default 0.025 for a dataset read from disk with the
    /// default strategy (INRIA's; it scores higher on photographs), 0.05
    /// otherwise (gsplat's). A checkpoint trained before 0.025 became the capture default resumes
    /// with --opacity-lr 0.05.
    #[arg(long, value_name = "LR")]
    pub opacity_lr: Option<f64>,
    /// Keep the model inside this box, MINX,MINY,MINZ,MAXX,MAXY,MAXZ: at every densification the
    /// Gaussians whose centre left it are pruned (as LichtFeld Studio's crop box).
    #[arg(
        long,
        value_name = "MINX,MINY,MINZ,MAXX,MAXY,MAXZ",
        allow_hyphen_values = true
    )]
    pub crop_box: Option<String>,
    /// Prune, at every densification, the Gaussians whose centre fewer than K training cameras
    /// see (floaters; the count `convert --min-views` uses) [default: off].
    #[arg(long, value_name = "K")]
    pub prune_min_views: Option<u32>,
    /// Prune, at every densification, the Gaussians whose ellipsoid of SIGMAS standard
    /// deviations comes within 0.12 camera spacings of the path a camera moving between two
    /// neighbouring training cameras takes: the veils in front of views between the training
    /// views [captures: 3; otherwise off; 0: off].
    #[arg(long, value_name = "SIGMAS")]
    pub path_clearance: Option<f32>,
    /// Do not draw Gaussians whose centre lies nearer a camera than DIST (a depth in the
    /// scene's units), in training and in every render of the model, which records it [default:
    /// 0.2 × the median spacing of neighbouring training cameras, at least 0.01].
    #[arg(long, value_name = "DIST")]
    pub near_plane: Option<f32>,
    /// Antialiased splats (gsplat's `rasterize_mode="antialiased"`, Mip-Splatting's 2D filter).
    /// The PLY does not record it: render and evaluate such a model with --antialiased too.
    #[arg(long)]
    pub antialiased: bool,
    /// Train for surfaces (for `wgsplat mesh`): turns on the geometry recipe that meshed best,
    /// the flattening and depth–normal consistency regularisers at their measured weights, each
    /// unless its own flag names one.
    #[arg(long)]
    pub geometry: bool,
    /// Weight of the flattening regulariser, WEIGHT × the Gaussians' mean shortest scale, which
    /// flattens them into discs with a clear normal [default: off; with --geometry: 100].
    #[arg(long, value_name = "WEIGHT")]
    pub flatten: Option<f32>,
    /// Weight of the depth–normal consistency regulariser: the rendered normals against the
    /// normals of the rendered depth [default: off; with --geometry: 0.05].
    #[arg(long, value_name = "WEIGHT")]
    pub depth_normal: Option<f32>,
    /// Weight of the depth distortion regulariser: the spread of the depths each pixel blends
    /// [default: off, with --geometry too: it meshed no better; see docs/training.md].
    #[arg(long, value_name = "WEIGHT")]
    pub distortion: Option<f32>,
    /// The iteration the depth–normal and distortion regularisers start at [default: a fifth
    /// of the run].
    #[arg(long, value_name = "ITER")]
    pub geometry_from: Option<u64>,
}

impl TrainOptions {
    /// The configuration for training on `data` (`None`: the built-in scene): `--config` (or
    /// the 3DGS defaults; the built-in scene's short recipe when no file is given; the capture
    /// recipe for a dataset read from disk), then these options, validated.
    pub fn build_config(&self, data: Option<&Path>) -> Result<TrainConfig> {
        let builtin = data.is_none();
        let colmap = data.and_then(DatasetFormat::detect) == Some(DatasetFormat::Colmap);
        let mut config = match &self.config {
            Some(path) => {
                crate::data::check_regular_file(path, "the configuration file")?;
                TrainConfig::from_json_file(path)?
            }
            None => TrainConfig::default(),
        };
        if builtin && self.config.is_none() {
            apply_builtin_recipe(&mut config);
        }
        config.iterations = self.iterations.unwrap_or(config.iterations);
        config.sh_degree = self.sh_degree.unwrap_or(config.sh_degree);
        config.max_gaussians = self.max_gaussians.unwrap_or(config.max_gaussians);
        // Flags set a file's setting; they never clear it.
        config.absgrad |= self.absgrad;
        config.exposure |= self.exposure;
        config.pose_opt |= self.pose_opt;
        config.lpips &= !self.no_lpips;
        if self.antialiased {
            config.raster_mode = RasterMode::Antialiased;
        }
        if let Some(v) = &self.strategy {
            config.strategy = v.parse()?;
        }
        if let Some(v) = &self.optimizer_state {
            config.optimizer_state = v.parse()?;
        }
        config.save_every = self.save_every.unwrap_or(config.save_every);
        config.eval_every = self.eval_every.unwrap_or(config.eval_every);
        config.seed = self.seed.unwrap_or(config.seed);
        if self.geometry {
            let recipe = super::geometry::GeometryRecipe::MEASURED;
            let unset = |value: &mut f32, measured: f32| {
                if *value == 0.0 {
                    *value = measured;
                }
            };
            unset(&mut config.flatten, recipe.flatten);
            unset(&mut config.depth_normal, recipe.depth_normal);
            unset(&mut config.distortion, recipe.distortion);
        }
        config.flatten = self.flatten.unwrap_or(config.flatten);
        config.depth_normal = self.depth_normal.unwrap_or(config.depth_normal);
        config.distortion = self.distortion.unwrap_or(config.distortion);
        config.geometry_from = self.geometry_from.or(config.geometry_from);
        // The recipe of a dataset read from disk (a capture): far-field points, 3DGS's opacity
        // pruning, INRIA's opacity learning rate and a clear camera path (the last three with the
        // default strategy only: MCMC's relocation has its own threshold and was not measured
        // with them), and for a COLMAP model a random background each step (gsplat's and
        // Brush's). The generated scenes, the library's defaults and a --config file that leaves
        // them out keep 3DGS's and gsplat's.
        if !builtin && self.config.is_none() {
            config.sky_points = DEFAULT_SKY_POINTS;
            if colmap {
                config.background = Background::Random;
            }
            if config.strategy == StrategyKind::Default {
                config.prune_opacity = CAPTURE_PRUNE_OPACITY;
                config.opacity_lr = CAPTURE_OPACITY_LR;
                config.path_clearance = CAPTURE_PATH_CLEARANCE;
            }
        }
        if let Some(v) = &self.background {
            config.background = parse_background(v)?;
        }
        config.sky_points = self.sky_points.unwrap_or(config.sky_points);
        config.prune_opacity = self.prune_opacity.unwrap_or(config.prune_opacity);
        config.opacity_lr = self.opacity_lr.unwrap_or(config.opacity_lr);
        if let Some(text) = &self.crop_box {
            let b = crate::show::edit::CropBox::parse(text)?;
            config.crop_box = Some([b.min[0], b.min[1], b.min[2], b.max[0], b.max[1], b.max[2]]);
        }
        config.prune_min_views = self.prune_min_views.unwrap_or(config.prune_min_views);
        config.path_clearance = self.path_clearance.unwrap_or(config.path_clearance);
        config.near_plane = self.near_plane.or(config.near_plane);
        if let Some(text) = &self.image_cache {
            config.image_cache = Some(parse_image_cache_size(text)?);
        }
        config.validate()?;
        Ok(config)
    }

    /// Applies `--memory-budget`, when given, to `config` for a model starting at `initial`
    /// Gaussians: the cap becomes the largest count that fits. Returns the plan to report.
    pub fn apply_memory_budget(
        &self,
        ctx: &crate::gpu::GpuContext,
        dataset: &Dataset,
        initial: u64,
        config: &mut TrainConfig,
    ) -> Result<Option<MemoryPlan>> {
        self.memory_budget
            .as_deref()
            .map(|text| apply_memory_budget(text, ctx, dataset, initial, config))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        data: DataArgs,
        #[command(flatten)]
        train: TrainOptions,
    }

    /// `wgsplat train ARGS`' configuration, for a built-in scene or a (NeRF-synthetic) dataset
    /// read from disk.
    fn config_of(args: &[&str], builtin: bool) -> Result<TrainConfig> {
        let folder = std::env::temp_dir().join("wgsplat-options-not-colmap");
        config_for(args, (!builtin).then_some(folder.as_path()))
    }

    /// `wgsplat train ARGS DATA`' configuration.
    fn config_for(args: &[&str], data: Option<&Path>) -> Result<TrainConfig> {
        let cli = Cli::try_parse_from(std::iter::once("wgsplat").chain(args.iter().copied()))
            .expect("the arguments parse");
        cli.train.build_config(data)
    }

    #[test]
    fn colmap_captures_train_on_a_random_background_unless_told_otherwise() {
        let root =
            std::env::temp_dir().join(format!("wgsplat-options-colmap-{}", std::process::id()));
        let sparse = root.join("sparse").join("0");
        std::fs::create_dir_all(&sparse).unwrap();
        std::fs::write(sparse.join("cameras.txt"), "").unwrap();
        let colmap = Some(root.as_path());
        assert_eq!(
            config_for(&[], colmap).unwrap().background,
            Background::Random
        );
        // A NeRF-synthetic folder, the built-in scenes and a --config file keep black.
        assert_eq!(config_of(&[], false).unwrap().background, Background::Black);
        assert_eq!(config_of(&[], true).unwrap().background, Background::Black);
        let file = root.join("config.json");
        std::fs::write(&file, "{}").unwrap();
        let from_file = config_for(&["--config", file.to_str().unwrap()], colmap).unwrap();
        assert_eq!(from_file.background, Background::Black);
        for (flag, want) in [("black", Background::Black), ("white", Background::White)] {
            let chosen = config_for(&["--background", flag], colmap).unwrap();
            assert_eq!(chosen.background, want);
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn geometry_turns_on_the_measured_recipe_and_each_flag_overrides_it() {
        let recipe = crate::train::geometry::GeometryRecipe::MEASURED;
        let plain = config_of(&["--iterations", "1000"], true).unwrap();
        assert_eq!(
            (plain.flatten, plain.depth_normal, plain.distortion),
            (0.0, 0.0, 0.0)
        );
        let geometry = config_of(&["--geometry", "--iterations", "1000"], true).unwrap();
        let weights = (geometry.flatten, geometry.depth_normal, geometry.distortion);
        assert_eq!(
            weights,
            (recipe.flatten, recipe.depth_normal, recipe.distortion)
        );
        assert_eq!(
            geometry.geometry_from, None,
            "a fifth of the run, whatever it becomes"
        );
        let chosen = config_of(
            &[
                "--geometry",
                "--depth-normal",
                "0.2",
                "--distortion",
                "10",
                "--geometry-from",
                "7",
            ],
            true,
        )
        .unwrap();
        assert_eq!((chosen.depth_normal, chosen.distortion), (0.2, 10.0));
        assert_eq!(
            (chosen.flatten, chosen.geometry_from),
            (recipe.flatten, Some(7))
        );
        let err = config_of(&["--depth-normal=-1"], true).unwrap_err();
        assert!(err.to_string().contains("depth_normal"), "{err}");
    }

    #[test]
    fn captures_prune_at_3dgs_opacity_and_keep_their_camera_path_clear() {
        let library = TrainConfig::default().prune_opacity;
        assert_eq!(library, 0.005);
        let capture = config_of(&[], false).unwrap();
        assert_eq!(capture.prune_opacity, CAPTURE_PRUNE_OPACITY);
        assert_eq!(CAPTURE_PRUNE_OPACITY, library);
        assert_eq!(capture.sky_points, DEFAULT_SKY_POINTS);
        assert_eq!(config_of(&[], true).unwrap().prune_opacity, library);
        let mcmc = config_of(&["--strategy", "mcmc"], false).unwrap();
        assert_eq!(mcmc.prune_opacity, library);
        // The camera path's clearance goes with them, and can be turned off.
        assert_eq!(capture.path_clearance, CAPTURE_PATH_CLEARANCE);
        assert_eq!(config_of(&[], true).unwrap().path_clearance, 0.0);
        assert_eq!(mcmc.path_clearance, 0.0);
        let off = config_of(&["--path-clearance", "0"], false).unwrap();
        assert_eq!(off.path_clearance, 0.0);
        let err = config_of(&["--path-clearance", "11"], false).unwrap_err();
        assert!(err.to_string().contains("path_clearance"), "{err}");
        // The near plane: the dataset's unless given, checked.
        assert_eq!(capture.near_plane, None);
        let near = config_of(&["--near-plane", "0.3"], false).unwrap();
        assert_eq!(near.near_plane, Some(0.3));
        for bad in ["0", "-1", "NaN"] {
            let err = config_of(&[&format!("--near-plane={bad}")], true).unwrap_err();
            assert!(err.to_string().contains("near_plane"), "{bad}: {err}");
        }
        let chosen = config_of(&["--prune-opacity", "0.02"], false).unwrap();
        assert_eq!(chosen.prune_opacity, 0.02);
        assert_eq!(
            config_of(&["--prune-opacity", "0.02"], true)
                .unwrap()
                .prune_opacity,
            0.02
        );
        for outside in ["0", "0.5", "NaN"] {
            let err = config_of(&["--prune-opacity", outside], false).unwrap_err();
            assert!(
                err.to_string().contains("prune_opacity"),
                "{outside}: {err}"
            );
        }
    }

    #[test]
    fn captures_learn_opacity_at_inrias_rate_with_the_default_strategy_only() {
        let library = TrainConfig::default().opacity_lr;
        assert_eq!(library, 0.05);
        assert_eq!(
            config_of(&[], false).unwrap().opacity_lr,
            CAPTURE_OPACITY_LR
        );
        assert_eq!(config_of(&[], true).unwrap().opacity_lr, library);
        assert_eq!(
            config_of(&["--strategy", "mcmc"], false)
                .unwrap()
                .opacity_lr,
            library
        );
        for builtin in [false, true] {
            let chosen = config_of(&["--opacity-lr", "0.01"], builtin).unwrap();
            assert_eq!(chosen.opacity_lr, 0.01);
        }
        for outside in ["0", "-0.1", "NaN", "inf"] {
            let arg = format!("--opacity-lr={outside}");
            let err = config_of(&[&arg], false).unwrap_err();
            assert!(err.to_string().contains("opacity_lr"), "{outside}: {err}");
        }
    }

    #[test]
    fn an_opacity_reset_clamps_to_twice_the_pruning_opacity() {
        let logit = |p: f32| {
            TrainConfig {
                prune_opacity: p,
                ..TrainConfig::default()
            }
            .reset_opacity_logit()
        };
        let opacity = |l: f32| 1.0 / (1.0 + (-l).exp());
        // 3DGS's 0.01 at its 0.005.
        assert!(
            (logit(0.005) - (-4.595_12)).abs() < 1e-5,
            "{}",
            logit(0.005)
        );
        for p in [0.005, 0.05, 0.1, 0.3] {
            assert!(
                (opacity(logit(p)) - 2.0 * p).abs() < 1e-6,
                "{p}: {}",
                opacity(logit(p))
            );
        }
    }

    #[test]
    fn without_r_the_width_cap_applies_and_r_1_keeps_full_size() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("wgsplat").chain(args.iter().copied()))
                .map(|cli| cli.data.options([0.0; 3]).resolution)
        };
        assert_eq!(parse(&[]).unwrap(), None);
        assert_eq!(parse(&["-r", "1"]).unwrap(), Some(1));
        assert_eq!(parse(&["--resolution", "4"]).unwrap(), Some(4));
        assert!(parse(&["-r", "3"]).is_err());
    }
}

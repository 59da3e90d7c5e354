//! `wgsplat sfm`: photographs or videos to a dataset folder, by COLMAP.

use std::path::PathBuf;
use std::time::Instant;

use wgsplat::sfm::{self, Mapper, Matcher, SfmOptions};

/// Options of `wgsplat sfm`.
#[derive(clap::Args)]
pub struct SfmArgs {
    /// A folder of photographs (JPEG, PNG, WebP), or one or more video files.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// The dataset folder to write (images/, sparse/0/, sfm.log); rerunning continues there.
    #[arg(long, value_name = "DATA")]
    out: PathBuf,
    /// Long side of the images for SfM and training, in pixels (0: keep the full size).
    #[arg(long, default_value_t = sfm::DEFAULT_MAX_SIZE)]
    max_size: u32,
    /// Frames per second taken from videos (default: about 300 frames over all videos), never
    /// above a video's own rate; frames that repeat the one before are dropped.
    #[arg(long)]
    fps: Option<f64>,
    /// Of each run of this many neighbouring video frames, the blurriest is dropped (1: keep all).
    #[arg(long, default_value_t = sfm::video::DEFAULT_BLUR_RUN)]
    blur_run: usize,
    /// COLMAP camera model: OPENCV (default), PINHOLE, SIMPLE_RADIAL, OPENCV_FISHEYE, …
    #[arg(long, default_value = "OPENCV")]
    camera_model: String,
    /// One camera per image instead of one shared by all (photographs from several cameras or
    /// zoom settings).
    #[arg(long)]
    camera_per_image: bool,
    /// Pair selection: exhaustive or sequential (default: exhaustive up to 200 photographs,
    /// sequential for video frames and larger captures).
    #[arg(long, value_parser = ["exhaustive", "sequential"])]
    matcher: Option<String>,
    /// The mapper: colmap (incremental) or glomap (global; needs `glomap` installed).
    #[arg(long, default_value = "colmap", value_parser = ["colmap", "glomap"])]
    mapper: String,
    /// SIFT features per image at most.
    #[arg(long, default_value_t = sfm::DEFAULT_MAX_FEATURES)]
    max_features: u32,
    /// Also write INRIA's pre-scaled folders images_N for these factors (e.g. 2,4,8), read by
    /// `train -r N`.
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(2..=64))]
    downscales: Vec<u32>,
    /// Refuse the result when under this share of the images registered (0 keeps any model).
    #[arg(long, default_value_t = sfm::model::DEFAULT_MIN_REGISTERED)]
    min_registered: f64,
    /// COLMAP's executable (default: `colmap` on PATH).
    #[arg(long, value_name = "PATH")]
    colmap: Option<PathBuf>,
    /// GLOMAP's executable (default: `glomap` on PATH).
    #[arg(long, value_name = "PATH")]
    glomap: Option<PathBuf>,
    /// ffmpeg's executable (default: `ffmpeg` on PATH).
    #[arg(long, value_name = "PATH")]
    ffmpeg: Option<PathBuf>,
}

fn options(args: SfmArgs) -> anyhow::Result<SfmOptions> {
    if !(0.0..=1.0).contains(&args.min_registered) {
        anyhow::bail!(
            "--min-registered {} is not a share: give a number from 0 to 1 (0.5 = half of the images)",
            args.min_registered
        );
    }
    if let Some(fps) = args.fps.filter(|f| !(f.is_finite() && *f > 0.0)) {
        anyhow::bail!("--fps {fps} must be a positive number of frames per second (e.g. 2)");
    }
    let mut options = SfmOptions::new(args.inputs, args.out);
    options.max_size = args.max_size;
    options.fps = args.fps;
    options.blur_run = args.blur_run;
    options.camera_model = args.camera_model;
    options.single_camera = !args.camera_per_image;
    options.matcher = args.matcher.as_deref().map(|m| match m {
        "sequential" => Matcher::Sequential,
        _ => Matcher::Exhaustive,
    });
    options.mapper = match args.mapper.as_str() {
        "glomap" => Mapper::Glomap,
        _ => Mapper::Colmap,
    };
    options.max_features = args.max_features;
    options.downscales = args.downscales;
    options.min_registered = args.min_registered;
    options.colmap = args.colmap;
    options.glomap = args.glomap;
    options.ffmpeg = args.ffmpeg;
    Ok(options)
}

/// Runs `wgsplat sfm`.
pub fn sfm(args: SfmArgs) -> anyhow::Result<()> {
    let options = options(args)?;
    let start = Instant::now();
    let line = |text: &str| {
        let elapsed = start.elapsed().as_secs();
        println!("sfm [{:02}:{:02}] {text}", elapsed / 60, elapsed % 60);
    };
    let report = sfm::run(&options, &line)?;
    let r = &report.registration;
    line(&format!(
        "registered {} of {} images, {} points, mean reprojection error {:.3} px ({} camera{})",
        r.images_registered,
        r.images_given,
        r.points,
        r.mean_reprojection_error_px,
        r.cameras,
        if r.cameras == 1 { "" } else { "s" }
    ));
    if !r.unregistered.is_empty() {
        line(&format!("not registered: {}", r.unregistered.join(", ")));
    }
    let data = options.out.display();
    println!(
        "\nThe dataset is in {data} (COLMAP's output in {data}/sfm.log). Next:\n  \
         wgsplat view {data}              # check the cameras\n  \
         wgsplat train {data} --eval --out {data}/train"
    );
    Ok(())
}

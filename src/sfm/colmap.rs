//! COLMAP's (and GLOMAP's) command lines for the three stages: feature extraction, matching and
//! mapping.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use crate::error::{Error, Result};
use crate::external::{Tool, query};

/// The camera models `wgsplat train` can undistort (COLMAP's names).
pub const CAMERA_MODELS: &[&str] = &[
    "SIMPLE_PINHOLE",
    "PINHOLE",
    "SIMPLE_RADIAL",
    "RADIAL",
    "OPENCV",
    "OPENCV_FISHEYE",
    "FULL_OPENCV",
    "SIMPLE_RADIAL_FISHEYE",
    "RADIAL_FISHEYE",
    "THIN_PRISM_FISHEYE",
];

/// How image pairs are chosen for matching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Matcher {
    /// Every pair (best for unordered photographs, quadratic in their number).
    Exhaustive,
    /// Each image with its neighbours in name order (video frames, ordered captures).
    Sequential,
}

impl Matcher {
    /// Above this many photographs the automatic choice is sequential matching.
    pub const EXHAUSTIVE_UP_TO: usize = 200;

    /// The automatic choice: sequential for video frames or more than
    /// [`Matcher::EXHAUSTIVE_UP_TO`] photographs, exhaustive otherwise.
    pub fn automatic(images: usize, from_video: bool) -> Matcher {
        if from_video || images > Self::EXHAUSTIVE_UP_TO {
            Matcher::Sequential
        } else {
            Matcher::Exhaustive
        }
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Matcher::Exhaustive => "exhaustive",
            Matcher::Sequential => "sequential",
        }
    }
}

/// Which mapper turns matches into a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Mapper {
    /// COLMAP's incremental mapper.
    Colmap,
    /// GLOMAP's global mapper (faster on large captures).
    Glomap,
}

/// Settings of the COLMAP stages.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ColmapSettings {
    /// COLMAP camera model (one of [`CAMERA_MODELS`]).
    pub camera_model: String,
    /// One camera shared by every image (one phone or camera at one zoom).
    pub single_camera: bool,
    /// SIFT features per image at most.
    pub max_features: u32,
    /// Long side SIFT runs at.
    pub sift_size: u32,
    /// Pair selection.
    pub matcher: Matcher,
    /// The mapper.
    pub mapper: Mapper,
    /// Run SIFT extraction and matching on the GPU (only when COLMAP has CUDA).
    pub use_gpu: bool,
}

/// Checks `model` against [`CAMERA_MODELS`] (case-insensitively) and returns COLMAP's spelling.
pub fn camera_model(model: &str) -> Result<String> {
    let upper = model.to_ascii_uppercase();
    if CAMERA_MODELS.contains(&upper.as_str()) {
        return Ok(upper);
    }
    Err(Error::InvalidSetting {
        name: "--camera-model".into(),
        value: model.into(),
        expected: format!("one of {}", CAMERA_MODELS.join(", ")),
    })
}

/// Command-line arguments, kept as OS strings: a path reaches the program byte for byte, never
/// through a lossy UTF-8 conversion that could name another folder.
pub type Args = Vec<OsString>;

fn flag(args: &mut Args, name: &str, value: impl AsRef<OsStr>) {
    args.push(format!("--{name}").into());
    args.push(value.as_ref().to_owned());
}

fn number(value: impl ToString) -> OsString {
    value.to_string().into()
}

fn gpu(on: bool) -> &'static str {
    if on { "1" } else { "0" }
}

/// Images per block of exhaustive matching: COLMAP reports each block as it finishes, so smaller
/// blocks than its default of 50 give progress (and an estimate of the time left) every few pairs.
pub const EXHAUSTIVE_BLOCK_SIZE: u32 = 10;

/// `colmap feature_extractor` on `images` into `database`.
pub fn feature_extractor(settings: &ColmapSettings, database: &Path, images: &Path) -> Args {
    let mut args = vec![OsString::from("feature_extractor")];
    flag(&mut args, "database_path", database);
    flag(&mut args, "image_path", images);
    flag(
        &mut args,
        "ImageReader.camera_model",
        &settings.camera_model,
    );
    flag(
        &mut args,
        "ImageReader.single_camera",
        number(u8::from(settings.single_camera)),
    );
    flag(&mut args, "SiftExtraction.use_gpu", gpu(settings.use_gpu));
    flag(
        &mut args,
        "SiftExtraction.max_image_size",
        number(settings.sift_size),
    );
    flag(
        &mut args,
        "SiftExtraction.max_num_features",
        number(settings.max_features),
    );
    args
}

/// `colmap exhaustive_matcher` or `sequential_matcher` on `database`.
pub fn matcher(settings: &ColmapSettings, database: &Path) -> Args {
    let mut args = vec![OsString::from(format!(
        "{}_matcher",
        settings.matcher.name()
    ))];
    flag(&mut args, "database_path", database);
    flag(&mut args, "SiftMatching.use_gpu", gpu(settings.use_gpu));
    match settings.matcher {
        Matcher::Sequential => {
            // Neighbours up to 10 frames away, and 2^k further ones, so that slow pans still
            // link; loop detection needs a vocabulary tree file, which is not assumed.
            flag(&mut args, "SequentialMatching.overlap", "10");
            flag(&mut args, "SequentialMatching.quadratic_overlap", "1");
        }
        Matcher::Exhaustive => flag(
            &mut args,
            "ExhaustiveMatching.block_size",
            number(EXHAUSTIVE_BLOCK_SIZE),
        ),
    }
    args
}

/// The mapper's command line (COLMAP's `mapper` or GLOMAP's `mapper`), writing models `0/`,
/// `1/`, … under `output`.
pub fn mapper(mapper: Mapper, database: &Path, images: &Path, output: &Path) -> Args {
    let mut args = vec![OsString::from("mapper")];
    flag(&mut args, "database_path", database);
    flag(&mut args, "image_path", images);
    flag(&mut args, "output_path", output);
    if mapper == Mapper::Colmap {
        // Models of at least 3 images are written; smaller groups are no use for training.
        flag(&mut args, "Mapper.min_model_size", "3");
    }
    args
}

/// True when this COLMAP was built with CUDA (its banner says "with CUDA"): only then can its
/// SIFT run on the GPU.
pub fn colmap_has_cuda(colmap: &Tool) -> bool {
    query(colmap, &["-h"])
        .map(|banner| banner_has_cuda(&banner))
        .unwrap_or(false)
}

/// Reads COLMAP's banner: "(Commit … with CUDA)" or "… without CUDA".
pub fn banner_has_cuda(banner: &str) -> bool {
    banner.contains("with CUDA") && !banner.contains("without CUDA")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_is_read_from_the_banner() {
        assert!(!banner_has_cuda(
            "COLMAP 3.8 -- Structure-from-Motion\n (Commit Unknown on Unknown without CUDA)"
        ));
        assert!(banner_has_cuda(
            "COLMAP 3.9 -- Structure-from-Motion\n (Commit 1 on 2024-01-01 with CUDA)"
        ));
    }

    #[test]
    fn camera_models_are_checked() {
        assert_eq!(camera_model("opencv").unwrap(), "OPENCV");
        let err = camera_model("PANORAMA").unwrap_err().to_string();
        assert!(
            err.contains("--camera-model") && err.contains("SIMPLE_RADIAL"),
            "{err}"
        );
    }

    #[test]
    fn the_matcher_follows_the_capture() {
        assert_eq!(Matcher::automatic(150, false), Matcher::Exhaustive);
        assert_eq!(Matcher::automatic(201, false), Matcher::Sequential);
        assert_eq!(Matcher::automatic(50, true), Matcher::Sequential);
    }

    #[cfg(unix)]
    #[test]
    fn paths_reach_colmap_byte_for_byte() {
        use std::os::unix::ffi::OsStrExt as _;
        let odd = Path::new(OsStr::from_bytes(b"/tmp/out\xff/sfm/database.db"));
        let args = mapper(Mapper::Colmap, odd, Path::new("/i"), Path::new("/o"));
        let at = args.iter().position(|a| a == "--database_path").unwrap();
        assert_eq!(args[at + 1].as_bytes(), odd.as_os_str().as_bytes());
    }
}

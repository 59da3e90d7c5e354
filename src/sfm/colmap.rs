//! COLMAP's (and GLOMAP's) command lines for the three stages: feature extraction, matching and
//! mapping.

use std::path::Path;

use crate::error::{Error, Result};

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

fn flag(args: &mut Vec<String>, name: &str, value: impl ToString) {
    args.push(format!("--{name}"));
    args.push(value.to_string());
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn gpu(on: bool) -> &'static str {
    if on { "1" } else { "0" }
}

/// `colmap feature_extractor` on `images` into `database`.
pub fn feature_extractor(settings: &ColmapSettings, database: &Path, images: &Path) -> Vec<String> {
    let mut args = vec!["feature_extractor".to_owned()];
    flag(&mut args, "database_path", path_arg(database));
    flag(&mut args, "image_path", path_arg(images));
    flag(
        &mut args,
        "ImageReader.camera_model",
        &settings.camera_model,
    );
    flag(
        &mut args,
        "ImageReader.single_camera",
        u8::from(settings.single_camera),
    );
    flag(&mut args, "SiftExtraction.use_gpu", gpu(settings.use_gpu));
    flag(
        &mut args,
        "SiftExtraction.max_image_size",
        settings.sift_size,
    );
    flag(
        &mut args,
        "SiftExtraction.max_num_features",
        settings.max_features,
    );
    args
}

/// `colmap exhaustive_matcher` or `sequential_matcher` on `database`.
pub fn matcher(settings: &ColmapSettings, database: &Path) -> Vec<String> {
    let mut args = vec![format!("{}_matcher", settings.matcher.name())];
    flag(&mut args, "database_path", path_arg(database));
    flag(&mut args, "SiftMatching.use_gpu", gpu(settings.use_gpu));
    if settings.matcher == Matcher::Sequential {
        // Neighbours up to 10 frames away, and 2^k further ones, so that slow pans still link;
        // loop detection needs a vocabulary tree file, which is not assumed.
        flag(&mut args, "SequentialMatching.overlap", 10);
        flag(&mut args, "SequentialMatching.quadratic_overlap", 1);
    }
    args
}

/// The mapper's command line (COLMAP's `mapper` or GLOMAP's `mapper`), writing models `0/`,
/// `1/`, … under `output`.
pub fn mapper(mapper: Mapper, database: &Path, images: &Path, output: &Path) -> Vec<String> {
    let mut args = vec!["mapper".to_owned()];
    flag(&mut args, "database_path", path_arg(database));
    flag(&mut args, "image_path", path_arg(images));
    flag(&mut args, "output_path", path_arg(output));
    if mapper == Mapper::Colmap {
        // Models of at least 3 images are written; smaller groups are no use for training.
        flag(&mut args, "Mapper.min_model_size", 3);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

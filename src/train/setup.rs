//! Building a training run from front-end options: the dataset (a folder or the built-in scene),
//! the built-in scene's short recipe and the background colour. The CLI and the viewer share it.

use super::config::{Background, TrainConfig};
use crate::data::builtin::{BuiltinOptions, generate};
use crate::data::{Dataset, LoadOptions, LoadProgress, Resolution, Split};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// How to read the training data.
#[derive(Clone, Debug)]
pub struct DataOptions {
    /// Downscale factor for dataset images (1, 2, 4 or 8).
    pub resolution: u32,
    /// Hold out test views (COLMAP: every 8th; NeRF: its test json); otherwise train on all.
    pub eval: bool,
    /// Hold out every Nth view instead (COLMAP: by sorted name; NeRF: in file order). Implies
    /// `eval`.
    pub test_every: Option<usize>,
    /// Hold out the views named in this file instead (one image name per line; blank lines and
    /// lines starting with `#` are skipped). Implies `eval`.
    pub test_list: Option<PathBuf>,
    /// Side of the built-in scene's images (used when no folder is given).
    pub builtin_resolution: u32,
    /// Background the dataset's transparent pixels are composited on.
    pub background: [f32; 3],
    /// Read the images' alpha channel as a loss mask.
    pub alpha_as_mask: bool,
    /// Ticked once per loaded image.
    pub progress: LoadProgress,
}

impl Default for DataOptions {
    fn default() -> Self {
        DataOptions {
            resolution: 1,
            eval: false,
            test_every: None,
            test_list: None,
            builtin_resolution: BuiltinOptions::default().resolution,
            background: [0.0; 3],
            alpha_as_mask: false,
            progress: LoadProgress::default(),
        }
    }
}

/// The train/test split `options` ask for.
fn split_of(options: &DataOptions) -> Result<Split> {
    match (&options.test_list, options.test_every) {
        (Some(_), Some(_)) => Err(Error::InvalidSetting {
            name: "test split".into(),
            value: "both a test list and a test period".into(),
            expected: "at most one of --test-list and --test-every".into(),
        }),
        (Some(path), None) => Ok(Split::TestNames(read_test_list(path)?)),
        (None, Some(n)) => Ok(Split::HoldoutEvery(n)),
        (None, None) if options.eval => Ok(Split::Default),
        (None, None) => Ok(Split::AllTrain),
    }
}

/// The image names listed in `path`, one per line (blank lines and `#` comments skipped).
pub fn read_test_list(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
        path: path.display().to_string(),
        action: "read the test list".into(),
        message: e.to_string(),
    })?;
    let names: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    if names.is_empty() {
        return Err(Error::InvalidSetting {
            name: "test list".into(),
            value: path.display().to_string(),
            expected: "a file naming at least one test image, one name per line".into(),
        });
    }
    Ok(names)
}

/// Loads the dataset at `folder`, or generates the built-in scene when `folder` is `None`.
pub fn load_dataset(folder: Option<&Path>, options: &DataOptions) -> Result<Dataset> {
    match folder {
        None => generate(&BuiltinOptions {
            resolution: options.builtin_resolution,
            background: options.background,
            ..BuiltinOptions::default()
        }),
        Some(path) => {
            let resolution = if options.resolution <= 1 {
                Resolution::Full
            } else {
                Resolution::Factor(options.resolution)
            };
            let split = split_of(options)?;
            Dataset::load(
                path,
                &LoadOptions {
                    resolution,
                    split,
                    background: options.background,
                    alpha_as_mask: options.alpha_as_mask,
                    progress: options.progress.clone(),
                    ..LoadOptions::default()
                },
            )
        }
    }
}

/// Shortens `config` to the built-in scene's recipe: 300 iterations (about 5 minutes on a 2-core
/// software adapter) with densification scaled down to match and no periodic evaluation.
pub fn apply_builtin_recipe(config: &mut TrainConfig) {
    config.iterations = 300;
    config.densify_from = 100;
    config.densify_every = 50;
    config.densify_until = 250;
    config.opacity_reset_every = 100_000;
    config.sh_degree_interval = 100;
    config.eval_every = 0;
}

/// Parses a background name: black, white or random.
pub fn parse_background(text: &str) -> Result<Background> {
    match text {
        "black" => Ok(Background::Black),
        "white" => Ok(Background::White),
        "random" => Ok(Background::Random),
        other => Err(Error::InvalidArgument {
            op: "background",
            detail: format!("unknown background {other:?}: use black, white or random"),
        }),
    }
}

/// The colour transparent dataset pixels are composited on for `background` (black for random).
pub fn background_color(background: Background) -> [f32; 3] {
    match background {
        Background::White => [1.0; 3],
        Background::Color(c) => c,
        Background::Black | Background::Random => [0.0; 3],
    }
}

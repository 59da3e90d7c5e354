//! Building a training run from front-end options: the dataset (a folder or the built-in scene),
//! the built-in scene's short recipe and the background colour. The CLI and the viewer share it.

use super::config::{Background, TrainConfig};
use crate::data::builtin::{BuiltinOptions, generate};
use crate::data::{Dataset, LoadOptions, Resolution, Split};
use crate::error::{Error, Result};
use std::path::Path;

/// How to read the training data.
#[derive(Clone, Debug)]
pub struct DataOptions {
    /// Downscale factor for dataset images (1, 2, 4 or 8).
    pub resolution: u32,
    /// Hold out test views (COLMAP: every 8th; NeRF: its test json); otherwise train on all.
    pub eval: bool,
    /// Side of the built-in scene's images (used when no folder is given).
    pub builtin_resolution: u32,
    /// Background the dataset's transparent pixels are composited on.
    pub background: [f32; 3],
}

impl Default for DataOptions {
    fn default() -> Self {
        DataOptions {
            resolution: 1,
            eval: false,
            builtin_resolution: BuiltinOptions::default().resolution,
            background: [0.0; 3],
        }
    }
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
            let split = if options.eval {
                Split::Default
            } else {
                Split::AllTrain
            };
            Dataset::load(
                path,
                &LoadOptions {
                    resolution,
                    split,
                    background: options.background,
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

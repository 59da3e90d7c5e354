//! Layer 4, data: posed images for the trainer.
//!
//! A [`Dataset`] holds train and test [`View`]s (a [`Camera`] in wgsplat's OpenCV convention and an
//! 8-bit RGBA image), an optional sparse [`PointCloud`] and the scene extent. Readers:
//! - [`colmap`]: COLMAP `sparse/0/{cameras,images,points3D}` in binary or text, with `images/`;
//! - [`nerf`]: NeRF-synthetic `transforms_{train,test}.json` and nerfstudio `transforms.json`;
//! - [`builtin`]: the project's own scene, ray traced on the CPU, no files needed;
//! - [`town`]: the built-in town, a large scene seen by drone-like views (written as a COLMAP
//!   folder by [`colmap_write`]).
//!
//! Distorted cameras ([`lens`]: every COLMAP model with a closed-form projection, nerfstudio's
//! `OPENCV` / `OPENCV_FISHEYE`) are undistorted at load ([`undistort`]); masks (`masks/` beside
//! `images/`, nerfstudio's `mask_path`, or the alpha channel with
//! [`LoadOptions::alpha_as_mask`]) travel in the image's alpha channel ([`AlphaMeaning::Mask`]).
//!
//! [`init`] builds initial Gaussians from the points (or random points in a box).

pub mod builtin;
pub mod bvh;
pub mod camera_model;
pub mod capture;
pub mod colmap;
pub mod colmap_binary;
pub mod colmap_text;
pub mod colmap_write;
mod files;
pub mod image;
pub mod init;
pub mod lens;
pub mod nerf;
mod nerf_fields;
pub mod ply;
mod prepare;
pub mod raytrace;
pub mod resolution;
pub mod shape;
pub mod texture;
pub mod town;
pub mod undistort;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::splat::Camera;

pub use files::{check_regular_file, compact_number, read_regular_file, read_regular_text};
pub use image::RgbaImage;

/// Near plane given to every loaded camera unless [`LoadOptions::near`] says otherwise.
pub const DEFAULT_NEAR: f32 = 0.01;
/// Far plane given to every loaded camera unless [`LoadOptions::far`] says otherwise.
pub const DEFAULT_FAR: f32 = 1e10;
/// 3DGS's `llffhold`: with [`Split::Default`] on datasets without their own split, every 8th view
/// (by sorted name, starting with the first) is a test view.
pub const DEFAULT_HOLDOUT_EVERY: usize = 8;

/// Builds a [`Error::Dataset`] for `path`.
pub(crate) fn dataset_error(path: impl AsRef<Path>, message: impl Into<String>) -> Error {
    Error::Dataset {
        path: path.as_ref().to_path_buf(),
        message: message.into(),
    }
}

/// One posed image.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    /// The image's name in its dataset (COLMAP image name, or the NeRF `file_path`).
    pub name: String,
    /// The file it was read from (`None` for generated views).
    pub path: Option<PathBuf>,
    /// The camera, with intrinsics scaled to the image's (possibly downscaled) size.
    pub camera: Camera,
    /// The image, straight (not premultiplied) 8-bit RGBA.
    pub image: RgbaImage,
    /// What the image's alpha channel means.
    pub alpha: AlphaMeaning,
}

/// What the alpha channel of a [`View`]'s image means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AlphaMeaning {
    /// Coverage: transparent pixels show the background (NeRF-synthetic's RGBA images).
    #[default]
    Coverage,
    /// A loss mask: the weight of each pixel in the loss and the evaluation (0 = ignored,
    /// 255 = counts fully). The colour is opaque as it stands; under a 0 it may be anything.
    Mask,
}

impl View {
    /// RGB as f32 in [0, 1], `[height, width, 3]` row-major, composited on the camera's background
    /// (masked views: the colour as it is).
    pub fn rgb(&self) -> Vec<f32> {
        self.rgb_on(self.camera.background)
    }

    /// RGB as f32 in [0, 1], `[height, width, 3]`, composited on `background` (masked views: the
    /// colour as it is).
    pub fn rgb_on(&self, background: [f32; 3]) -> Vec<f32> {
        match self.alpha {
            AlphaMeaning::Coverage => self.image.rgb_on(background),
            AlphaMeaning::Mask => self
                .image
                .pixels
                .chunks_exact(4)
                .flat_map(|p| [0, 1, 2].map(|k| f32::from(p[k]) / 255.0))
                .collect(),
        }
    }

    /// True when some pixel of the view counts in the loss and the scores: always for unmasked
    /// views; for masked ones, when the mask keeps at least one pixel.
    pub fn has_valid_pixels(&self) -> bool {
        !self.is_masked() || self.image.pixels.chunks_exact(4).any(|p| p[3] > 0)
    }

    /// True when the view carries a loss mask.
    pub fn is_masked(&self) -> bool {
        self.alpha == AlphaMeaning::Mask
    }

    /// Alpha as f32 in [0, 1], `[height, width]` (all ones for images without alpha).
    pub fn alpha(&self) -> Vec<f32> {
        self.image.alpha()
    }
}

/// The note for views whose mask excludes every pixel (they add nothing to training and are left
/// out of the scores), or `None` when there are none.
pub(crate) fn empty_mask_note(views: &[View]) -> Option<String> {
    let empty: Vec<&str> = views
        .iter()
        .filter(|v| !v.has_valid_pixels())
        .map(|v| v.name.as_str())
        .collect();
    let first = empty.first()?;
    let more = match empty.len() {
        1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    Some(format!(
        "warning: the mask of view {first:?}{more} excludes every pixel: such views add nothing to training and \
         are left out of the scores; check the masks (0 = ignore the pixel)"
    ))
}

/// A sparse point cloud (structure-from-motion points, or sampled surface points).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PointCloud {
    /// World positions.
    pub positions: Vec<[f32; 3]>,
    /// Colours, RGB in [0, 1].
    pub colors: Vec<[f32; 3]>,
}

impl PointCloud {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// True when there are no points.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }
}

/// Posed train and test images of one scene.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    /// Views to train on.
    pub train: Vec<View>,
    /// Held-out views to evaluate on (may be empty).
    pub test: Vec<View>,
    /// The sparse point cloud, when the dataset has one.
    pub points: Option<PointCloud>,
    /// Mean of the training camera centres.
    pub center: [f32; 3],
    /// 3DGS's `cameras_extent`: 1.1 × the largest distance of a training camera centre from
    /// [`Dataset::center`] (`getNerfppNorm`).
    pub extent: f32,
    /// What loading did that a user should know (undistortion, masks, cropped fields of view),
    /// one line each; front ends print them.
    pub notes: Vec<String>,
}

impl Dataset {
    /// Builds a dataset from its views and points, computing centre and extent from the train views.
    pub fn new(train: Vec<View>, test: Vec<View>, points: Option<PointCloud>) -> Dataset {
        let cameras: Vec<&Camera> = train.iter().map(|v| &v.camera).collect();
        let (center, extent) = scene_extent(&cameras);
        Dataset {
            train,
            test,
            points,
            center,
            extent,
            notes: Vec::new(),
        }
    }

    /// Reads the dataset at `root`, detecting its format: COLMAP when `sparse/0/cameras.bin` or
    /// `cameras.txt` (also directly under `sparse/`) exists, NeRF/nerfstudio when `transforms.json`
    /// or `transforms_train.json` exists.
    pub fn load(root: impl AsRef<Path>, options: &LoadOptions) -> Result<Dataset> {
        let root = root.as_ref();
        if !root.is_dir() {
            return Err(dataset_error(
                root,
                "the dataset folder does not exist (or is not a folder); check the path",
            ));
        }
        if colmap::find_sparse_dir(root).is_some() {
            return colmap::load(root, options);
        }
        if root.join("transforms.json").is_file() || root.join("transforms_train.json").is_file() {
            return nerf::load(root, options);
        }
        Err(dataset_error(
            root,
            "no dataset found: expected a COLMAP model (sparse/0/cameras.bin or cameras.txt, with images/) or \
             a NeRF/nerfstudio folder (transforms_train.json or transforms.json)",
        ))
    }

    /// All views, train first then test.
    pub fn views(&self) -> impl Iterator<Item = &View> {
        self.train.iter().chain(self.test.iter())
    }
}

/// `getNerfppNorm` of 3DGS: the mean camera centre, and 1.1 × the largest distance from it. With
/// no cameras, or all at one point, the extent is 1.1 (as if the radius were 1) so that
/// extent-relative thresholds stay usable.
pub fn scene_extent(cameras: &[&Camera]) -> ([f32; 3], f32) {
    if cameras.is_empty() {
        return ([0.0; 3], 1.1);
    }
    let centres: Vec<[f64; 3]> = cameras
        .iter()
        .map(|c| c.position().map(f64::from))
        .collect();
    let mut mean = [0.0f64; 3];
    for c in &centres {
        for k in 0..3 {
            mean[k] += c[k] / centres.len() as f64;
        }
    }
    let radius = centres
        .iter()
        .map(|c| {
            ((c[0] - mean[0]).powi(2) + (c[1] - mean[1]).powi(2) + (c[2] - mean[2]).powi(2)).sqrt()
        })
        .fold(0.0f64, f64::max);
    let radius = if radius > 0.0 { radius } else { 1.0 };
    (mean.map(|m| m as f32), (radius * 1.1) as f32)
}

/// Image resolution to load at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Resolution {
    /// The files' own size.
    #[default]
    Full,
    /// Divide width and height by this factor (1, 2, 4, 8, ...; sizes are rounded).
    Factor(u32),
    /// Resize to this width, keeping the aspect ratio (never upscales past the file's size).
    Width(u32),
    /// The files' own size, but images wider than this are resized to it, keeping the aspect
    /// ratio, and the dataset's notes say so ([`resolution`]: the default for photographs).
    MaxWidth(u32),
}

impl Resolution {
    /// The size an image of `width` × `height` is loaded at.
    pub fn target_size(self, width: u32, height: u32) -> Result<(u32, u32)> {
        let scaled = |factor: f64| {
            let w = ((width as f64 / factor).round() as u32).max(1);
            let h = ((height as f64 / factor).round() as u32).max(1);
            (w, h)
        };
        match self {
            Resolution::Full => Ok((width, height)),
            Resolution::Factor(0) | Resolution::Width(0) => Err(Error::InvalidSetting {
                name: "resolution".into(),
                value: format!("{self:?}"),
                expected: "a downscale factor >= 1 (1, 2, 4 or 8) or a target width >= 1".into(),
            }),
            Resolution::Factor(f) => Ok(scaled(f as f64)),
            Resolution::MaxWidth(cap) => resolution::capped_size(cap, width, height),
            Resolution::Width(w) if w >= width => Ok((width, height)),
            Resolution::Width(w) => Ok(scaled(width as f64 / w as f64)),
        }
    }
}

/// How views are split into train and test.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Split {
    /// The dataset's own split (NeRF `transforms_test.json`, nerfstudio `test_filenames`); where it
    /// has none (COLMAP), every 8th view is held out (COLMAP: by sorted name, as 3DGS does with
    /// `--eval`).
    #[default]
    Default,
    /// Every view is a training view (3DGS without `--eval`).
    AllTrain,
    /// View `i` (COLMAP: by sorted name; NeRF: in file order) is a test view when `i % n == 0`.
    HoldoutEvery(usize),
    /// These view names (as in [`View::name`]) are the test views; all others train. Every name
    /// must exist.
    TestNames(Vec<String>),
}

/// Options shared by every dataset reader.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadOptions {
    /// Resolution to load the images at; intrinsics are scaled to match.
    pub resolution: Resolution,
    /// Train/test split.
    pub split: Split,
    /// Background colour given to every camera (RGBA images are composited on it by [`View::rgb`]).
    pub background: [f32; 3],
    /// Near plane of every camera.
    pub near: f32,
    /// Far plane of every camera.
    pub far: f32,
    /// Read the images' alpha channel as a loss mask (0 = ignore the pixel) instead of coverage.
    pub alpha_as_mask: bool,
    /// Reports images loaded (one tick per view) when set.
    pub progress: LoadProgress,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            resolution: Resolution::Full,
            split: Split::Default,
            background: [0.0; 3],
            near: DEFAULT_NEAR,
            far: DEFAULT_FAR,
            alpha_as_mask: false,
            progress: LoadProgress::default(),
        }
    }
}

/// A progress bar the loaders tick once per loaded view (hidden by default). Two progress
/// values always compare equal, so that [`LoadOptions`] compares by its settings.
#[derive(Clone, Debug, Default)]
pub struct LoadProgress(pub Option<indicatif::ProgressBar>);

impl PartialEq for LoadProgress {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl LoadProgress {
    /// Sets the number of views to load.
    pub(crate) fn start(&self, total: usize) {
        if let Some(bar) = &self.0 {
            bar.set_length(total as u64);
            bar.set_position(0);
        }
    }

    /// Counts one loaded view.
    pub(crate) fn tick(&self) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
        }
    }
}

/// Splits `views` by `split`, first sorting them by name when `sort_by_name` (COLMAP, as 3DGS;
/// NeRF datasets keep their file order). `own_test` is the dataset's own list of test names used
/// by [`Split::Default`] (`None`: hold out every 8th). Errors name `source` when a requested test
/// name does not exist.
pub(crate) fn split_views(
    mut views: Vec<View>,
    split: &Split,
    own_test: Option<&[String]>,
    source: &Path,
    sort_by_name: bool,
) -> Result<(Vec<View>, Vec<View>)> {
    if sort_by_name {
        views.sort_by(|a, b| a.name.cmp(&b.name));
    }
    let names: Vec<String> = match (split, own_test) {
        (Split::AllTrain, _) => return Ok((views, Vec::new())),
        (Split::HoldoutEvery(0), _) => {
            return Err(Error::InvalidSetting {
                name: "split".into(),
                value: "HoldoutEvery(0)".into(),
                expected: "a hold-out period >= 1 (3DGS uses 8)".into(),
            });
        }
        (Split::HoldoutEvery(n), _) => return Ok(holdout_every(views, *n)),
        (Split::Default, None) => return Ok(holdout_every(views, DEFAULT_HOLDOUT_EVERY)),
        (Split::Default, Some(names)) => names.to_vec(),
        (Split::TestNames(names), _) => names.clone(),
    };
    for name in &names {
        if !views.iter().any(|v| &v.name == name) {
            return Err(dataset_error(
                source,
                format!(
                    "test view {name:?} is not in the dataset; test names must match the image names exactly"
                ),
            ));
        }
    }
    Ok(views.into_iter().partition(|v| !names.contains(&v.name)))
}

fn holdout_every(views: Vec<View>, n: usize) -> (Vec<View>, Vec<View>) {
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for (i, view) in views.into_iter().enumerate() {
        if i % n == 0 {
            test.push(view)
        } else {
            train.push(view)
        }
    }
    (train, test)
}

/// Runs `work` on every item of `items` on up to `available_parallelism` threads, keeping order
/// and returning the first error.
pub(crate) fn parallel_map<T: Sync, U: Send>(
    items: &[T],
    work: impl Fn(&T) -> Result<U> + Sync,
) -> Result<Vec<U>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 16);
    if threads == 1 || items.len() < 2 {
        return items.iter().map(&work).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let results: Vec<Result<Vec<U>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(|| part.iter().map(&work).collect::<Result<Vec<U>>>()))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(dataset_error("", "a dataset worker thread panicked")))
            })
            .collect()
    });
    let mut out = Vec::with_capacity(items.len());
    for part in results {
        out.extend(part?);
    }
    Ok(out)
}

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
//! [`init`] builds initial Gaussians from the points (or random points in a box); [`sky`] adds
//! far-field points coloured from the photographs.

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
mod jpeg_check;
pub mod lens;
pub mod lens_capture;
pub mod lens_design;
pub mod near_plane;
pub mod nerf;
mod nerf_fields;
mod options;
mod parallel;
pub mod ply;
mod prepare;
pub mod raytrace;
pub mod resolution;
pub mod shape;
pub mod sky;
mod split;
pub mod texture;
pub mod town;
pub mod undistort;
mod view;

use std::path::Path;

use crate::error::{Error, Result};
use crate::splat::Camera;

pub use files::{check_regular_file, compact_number, read_regular_file, read_regular_text};
pub use image::RgbaImage;
pub use options::{DEFAULT_FAR, DEFAULT_NEAR, LoadOptions, LoadProgress};
pub(crate) use parallel::parallel_map;
pub(crate) use split::split_views;
pub use split::{DEFAULT_HOLDOUT_EVERY, Resolution, Split};
pub(crate) use view::empty_mask_note;
pub use view::{AlphaMeaning, ImageSource, View};

/// Builds a [`Error::Dataset`] for `path`.
pub(crate) fn dataset_error(path: impl AsRef<Path>, message: impl Into<String>) -> Error {
    Error::Dataset {
        path: path.as_ref().to_path_buf(),
        message: message.into(),
    }
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

/// The formats [`Dataset::load`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatasetFormat {
    /// A COLMAP model (`sparse/0/` or `sparse/`) with its images.
    Colmap,
    /// A NeRF-synthetic or nerfstudio folder (`transforms_train.json` or `transforms.json`).
    Nerf,
}

impl DatasetFormat {
    /// The format of the folder `root`, as [`Dataset::load`] tells them apart (a COLMAP model
    /// first); `None` when it holds neither.
    pub fn detect(root: &Path) -> Option<DatasetFormat> {
        if colmap::find_sparse_dir(root).is_some() {
            Some(DatasetFormat::Colmap)
        } else if root.join("transforms.json").is_file()
            || root.join("transforms_train.json").is_file()
        {
            Some(DatasetFormat::Nerf)
        } else {
            None
        }
    }
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
        match DatasetFormat::detect(root) {
            Some(DatasetFormat::Colmap) => return colmap::load(root, options),
            Some(DatasetFormat::Nerf) => return nerf::load(root, options),
            None => {}
        }
        if let Some(photos) = photographs_without_poses(root) {
            return Err(dataset_error(
                root,
                format!(
                    "no dataset found: {photos} photographs, but no camera poses (no COLMAP model in sparse/0/ \
                     and no transforms.json). Run structure from motion first: \
                     `wgsplat sfm {} --out DATA`, then `wgsplat train DATA`",
                    root.display()
                ),
            ));
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

/// The number of photographs in `root` (or in `root/images/`) when there are any: a folder of
/// plain photographs, which `wgsplat sfm` turns into a dataset.
fn photographs_without_poses(root: &Path) -> Option<usize> {
    let count = |dir: &Path| {
        std::fs::read_dir(dir).ok().map(|entries| {
            entries
                .flatten()
                .filter(|e| {
                    e.path()
                        .extension()
                        .and_then(|x| x.to_str())
                        .is_some_and(|x| {
                            ["jpg", "jpeg", "png", "webp"]
                                .iter()
                                .any(|k| k.eq_ignore_ascii_case(x))
                        })
                })
                .count()
        })
    };
    [root.to_path_buf(), root.join("images")]
        .iter()
        .filter_map(|dir| count(dir))
        .find(|&n| n > 0)
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

//! The options every dataset reader takes ([`LoadOptions`]) and its progress bar.

use super::{Resolution, Split};

/// Near plane given to every loaded camera unless [`LoadOptions::near`] says otherwise.
pub const DEFAULT_NEAR: f32 = 0.01;
/// Far plane given to every loaded camera unless [`LoadOptions::far`] says otherwise.
pub const DEFAULT_FAR: f32 = 1e10;

/// Options shared by every dataset reader.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadOptions {
    /// Resolution to load the images at; intrinsics are scaled to match.
    pub resolution: Resolution,
    /// Train/test split.
    pub split: Split,
    /// Background colour given to every camera (RGBA images are composited on it by
    /// [`View::rgb`](super::View::rgb)).
    pub background: [f32; 3],
    /// Near plane of every camera.
    pub near: f32,
    /// Far plane of every camera.
    pub far: f32,
    /// Read the images' alpha channel as a loss mask (0 = ignore the pixel) instead of coverage.
    pub alpha_as_mask: bool,
    /// Resample distorted and fisheye cameras' images into pinhole images (cropped to
    /// [`MAX_HALF_FOV_DEGREES`](super::undistort::MAX_HALF_FOV_DEGREES) from the axis) instead
    /// of keeping them as they are, with the lens on the camera.
    pub undistort: bool,
    /// Bytes of decoded images (RGBA8) kept in host memory; the views loaded past it keep no
    /// pixels and read them from disk at each use ([`View::resident`](super::View::resident)).
    /// `None` keeps every image.
    pub host_image_budget: Option<u64>,
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
            undistort: false,
            host_image_budget: None,
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

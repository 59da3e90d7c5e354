//! One posed image ([`View`]) and what its alpha channel means.

use super::image::RgbaImage;
use crate::splat::Camera;
use std::path::PathBuf;

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

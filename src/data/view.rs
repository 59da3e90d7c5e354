//! One posed image ([`View`]), what its alpha channel means, and where its pixels come from when
//! they are not kept in host memory ([`ImageSource`]).

use super::image::RgbaImage;
use crate::error::{Error, Result};
use crate::splat::Camera;
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

/// Reads a view's image again (from its file, through the same steps as at loading): for views
/// whose pixels are not kept in host memory (a capture larger than the host budget, see
/// [`LoadOptions::host_image_budget`](super::LoadOptions::host_image_budget)).
#[derive(Clone)]
pub struct ImageSource(Arc<dyn Fn() -> Result<RgbaImage> + Send + Sync>);

impl ImageSource {
    /// A source that calls `read` for the image.
    pub fn new(read: impl Fn() -> Result<RgbaImage> + Send + Sync + 'static) -> ImageSource {
        ImageSource(Arc::new(read))
    }
}

impl std::fmt::Debug for ImageSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ImageSource")
    }
}

/// Sources compare equal: views compare by their settings and pixels.
impl PartialEq for ImageSource {
    fn eq(&self, _: &Self) -> bool {
        true
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
    /// Set when the pixels are read from disk at each use instead of kept in host memory: then
    /// `image` has its size but no pixels, and [`View::resident`] reads them.
    pub source: Option<ImageSource>,
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
    /// True when the pixels are not in host memory but read at each use ([`View::resident`]).
    pub fn is_streamed(&self) -> bool {
        self.source.is_some() && self.image.pixels.is_empty()
    }

    /// The view with its pixels: itself, or for a streamed view a copy whose image was just
    /// read (an error names the file when it cannot be read or no longer has the view's size).
    pub fn resident(&self) -> Result<Cow<'_, View>> {
        let Some(source) = self.source.as_ref().filter(|_| self.is_streamed()) else {
            return Ok(Cow::Borrowed(self));
        };
        let image = (source.0)()?;
        if (image.width, image.height) != (self.image.width, self.image.height) {
            return Err(Error::Dataset {
                path: self.path.clone().unwrap_or_default(),
                message: format!(
                    "view {:?} was {}x{} when the dataset was loaded but reads as {}x{} now; the images must \
                     not change while training",
                    self.name, self.image.width, self.image.height, image.width, image.height
                ),
            });
        }
        Ok(Cow::Owned(View {
            image,
            source: None,
            ..self.clone()
        }))
    }

    /// Drops the pixels from host memory: from now on [`View::resident`] reads them from
    /// `source` at each use.
    pub fn stream_from(&mut self, source: ImageSource) {
        self.image.pixels = Vec::new();
        self.source = Some(source);
    }

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
        if !self.is_masked() {
            return true;
        }
        // A streamed view is read for the check (an unreadable one counts as valid: its use
        // reports the error).
        match self.resident() {
            Ok(view) => view.image.pixels.chunks_exact(4).any(|p| p[3] > 0),
            Err(_) => true,
        }
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

//! The normal map of a model from a camera ([`NormalMap`]): per pixel the mean of the drawn
//! Gaussians' normals (each its shortest axis, turned towards the camera) weighted as the colour
//! is, in camera space; saved as a NumPy `.npy` array of floats and as a PNG to look at.

use std::path::Path;

use crate::data::image::RgbaImage;
use crate::error::{Error, Result};

/// Pixels whose accumulated opacity is below this carry no normal (too little was drawn there
/// for its direction to mean anything).
pub const MIN_NORMAL_ALPHA: f32 = 0.05;

/// Unit camera-space normals, row-major `[height, width]`: x right, y down, z along the view
/// (a surface facing the camera has z < 0); zero where the opacity is below
/// [`MIN_NORMAL_ALPHA`] or the drawn normals cancel.
#[derive(Clone, Debug, PartialEq)]
pub struct NormalMap {
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// One unit (or zero) normal per pixel.
    pub normals: Vec<[f32; 3]>,
}

impl NormalMap {
    /// The map from the rasterizer's alpha-weighted sums (`[H, W, 3]`) and the accumulated
    /// opacity per pixel.
    pub fn from_sums(width: u32, height: u32, sums: &[f32], alpha: &[f32]) -> NormalMap {
        let normals = sums
            .chunks_exact(3)
            .zip(alpha)
            .map(|(n, &a)| {
                let length = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
                if a >= MIN_NORMAL_ALPHA && length > 1e-6 * a {
                    [n[0] / length, n[1] / length, n[2] / length]
                } else {
                    [0.0; 3]
                }
            })
            .collect();
        NormalMap {
            width,
            height,
            normals,
        }
    }

    /// Writes `[height, width, 3]` float32 camera-space normals as a NumPy `.npy` file,
    /// atomically.
    pub fn write_npy(&self, path: &Path) -> Result<()> {
        let shape = [self.height as usize, self.width as usize, 3];
        super::npy::write_npy_f32(path, &shape, self.normals.iter().flatten().copied())
    }

    /// The normals as colours in the usual normal-map convention (x right, y up, z towards the
    /// viewer, each mapped from [-1, 1] to [0, 255]: a surface facing the camera is light blue),
    /// transparent where there is no normal.
    pub fn colour_mapped(&self) -> Result<RgbaImage> {
        if self.normals.iter().all(|n| *n == [0.0; 3]) {
            return Err(Error::InvalidArgument {
                op: "colour_mapped",
                detail: "no pixel carries a normal: the model draws nothing from this camera"
                    .into(),
            });
        }
        let byte = |v: f32| ((0.5 + 0.5 * v).clamp(0.0, 1.0) * 255.0).round() as u8;
        let pixels = self
            .normals
            .iter()
            .flat_map(|n| match *n == [0.0; 3] {
                true => [0, 0, 0, 0],
                false => [byte(n[0]), byte(-n[1]), byte(-n[2]), 255],
            })
            .collect();
        Ok(RgbaImage {
            width: self.width,
            height: self.height,
            pixels,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_become_unit_normals_and_thin_or_cancelled_pixels_none() {
        let sums = [
            0.0, 0.0, -0.8, 0.3, 0.0, 0.4, 0.0, 0.0, -0.01, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0,
        ];
        let alpha = [0.8, 0.5, 0.01, 1.0, 1.0];
        let map = NormalMap::from_sums(5, 1, &sums, &alpha);
        assert_eq!(map.normals[0], [0.0, 0.0, -1.0]);
        let n = map.normals[1];
        assert!(
            (n[0] - 0.6).abs() < 1e-6 && (n[2] - 0.8).abs() < 1e-6,
            "{n:?}"
        );
        assert_eq!(map.normals[2], [0.0; 3], "below the opacity floor");
        assert_eq!(map.normals[3], [1.0, 0.0, 0.0]);
        assert_eq!(map.normals[4], [0.0; 3], "normals that cancel");
    }

    #[test]
    fn a_facing_surface_is_light_blue_and_empty_pixels_clear() {
        let map = NormalMap {
            width: 2,
            height: 1,
            normals: vec![[0.0, 0.0, -1.0], [0.0; 3]],
        };
        let image = map.colour_mapped().unwrap();
        assert_eq!(&image.pixels[..4], &[128, 128, 255, 255]);
        assert_eq!(image.pixels[7], 0);
        let up = NormalMap {
            normals: vec![[0.0, -1.0, 0.0], [0.0; 3]],
            ..map.clone()
        };
        assert_eq!(
            &up.colour_mapped().unwrap().pixels[..3],
            &[128, 255, 128],
            "y up is green"
        );
        let empty = NormalMap {
            normals: vec![[0.0; 3]; 2],
            ..map
        };
        assert!(empty.colour_mapped().is_err());
    }
}

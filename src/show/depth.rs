//! Depth maps of a model from a camera ([`DepthMaps`]): the expected depth (alpha-weighted,
//! divided by the accumulated opacity), the median depth (of the splat at which the accumulated
//! opacity reaches 0.5) and the accumulated opacity, as the rasterizer writes them; saved as a
//! NumPy `.npy` array of floats and a colour-mapped PNG to look at. The same render can carry the
//! normals ([`super::normals`]).

use std::path::Path;

use super::normals::NormalMap;
use crate::data::image::RgbaImage;
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::splat::forward::{RenderOptions, render};
use crate::splat::{Camera, GaussianTensors, RasterMode};

/// The depth outputs of one render, row-major `[height, width]`.
#[derive(Clone, Debug, PartialEq)]
pub struct DepthMaps {
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// Expected depth (0 where nothing was drawn). Depth is camera-space z, or for a fisheye
    /// lens the ray's length.
    pub expected: Vec<f32>,
    /// Median depth (0 where the accumulated opacity never reaches 0.5).
    pub median: Vec<f32>,
    /// Accumulated opacity in [0, 1].
    pub alpha: Vec<f32>,
    /// The colour at the model's full SH degree, composited on the camera's background, as
    /// bytes.
    pub colour: Vec<[u8; 3]>,
}

/// Renders the depth maps of `params` from `camera`.
pub fn render_depth(
    ctx: &GpuContext,
    params: &GaussianTensors,
    camera: &Camera,
    raster_mode: RasterMode,
) -> Result<DepthMaps> {
    Ok(render_surface(ctx, params, camera, raster_mode, false)?.depth)
}

/// One render's colour image, depth maps and (when asked for) normal map.
pub struct SurfaceRender {
    /// The colour as [`super::render_rgba8`] gives it.
    pub image: RgbaImage,
    /// The depth maps.
    pub depth: DepthMaps,
    /// The normal map, when asked for.
    pub normals: Option<NormalMap>,
}

/// Renders `params` from `camera` once: its colour, its depth maps and, with `normals`, its
/// normal map.
pub fn render_surface(
    ctx: &GpuContext,
    params: &GaussianTensors,
    camera: &Camera,
    raster_mode: RasterMode,
    normals: bool,
) -> Result<SurfaceRender> {
    let forward = render(
        ctx,
        params,
        camera,
        RenderOptions {
            sh_degree: params.max_sh_degree(),
            raster_mode,
            normals,
            ..Default::default()
        },
    )?;
    let depth = forward.depth.read::<f32>(ctx)?;
    let rgba = forward.image.read::<f32>(ctx)?;
    let alpha: Vec<f32> = rgba.chunks_exact(4).map(|p| p[3]).collect();
    let byte = |v: f32| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
    let colour = rgba
        .chunks_exact(4)
        .map(|p| [byte(p[0]), byte(p[1]), byte(p[2])])
        .collect();
    let expected = depth
        .chunks_exact(2)
        .zip(&alpha)
        .map(|(d, &a)| if a > 1e-6 { d[0] / a } else { 0.0 })
        .collect();
    let median = depth.chunks_exact(2).map(|d| d[1]).collect();
    let normal_map = match &forward.normals {
        Some(sums) => Some(NormalMap::from_sums(
            camera.width,
            camera.height,
            &sums.read::<f32>(ctx)?,
            &alpha,
        )),
        None => None,
    };
    let depth = DepthMaps {
        width: camera.width,
        height: camera.height,
        expected,
        median,
        alpha,
        colour,
    };
    Ok(SurfaceRender {
        image: super::rgba8_of(&rgba, camera),
        depth,
        normals: normal_map,
    })
}

impl DepthMaps {
    /// Writes `[height, width, 3]` float32 (expected depth, median depth, opacity) as a NumPy
    /// `.npy` file (version 1.0, little endian), atomically.
    pub fn write_npy(&self, path: &Path) -> Result<()> {
        let values = self
            .expected
            .iter()
            .zip(&self.median)
            .zip(&self.alpha)
            .flat_map(|((&e, &m), &a)| [e, m, a]);
        let shape = [self.height as usize, self.width as usize, 3];
        super::npy::write_npy_f32(path, &shape, values)
    }

    /// The median depth colour-mapped from near (yellow) to far (dark blue) over the drawn
    /// pixels' range, transparent where nothing reaches half opacity.
    pub fn colour_mapped(&self) -> Result<RgbaImage> {
        let drawn = self.median.iter().copied().filter(|&d| d > 0.0);
        let (near, far) = drawn.fold((f32::INFINITY, 0f32), |(lo, hi), d| (lo.min(d), hi.max(d)));
        if !(near.is_finite() && far >= near) {
            return Err(Error::InvalidArgument {
                op: "colour_mapped",
                detail: "no pixel reaches half opacity: the model draws nothing from this camera"
                    .into(),
            });
        }
        let span = (far - near).max(1e-12);
        let pixels = self
            .median
            .iter()
            .flat_map(|&d| {
                if d > 0.0 {
                    let [r, g, b] = depth_colour((d - near) / span);
                    [r, g, b, 255]
                } else {
                    [0, 0, 0, 0]
                }
            })
            .collect();
        Ok(RgbaImage {
            width: self.width,
            height: self.height,
            pixels,
        })
    }
}

/// A colour for `t` in [0, 1] (0 near, 1 far): yellow, orange, magenta, violet, dark blue,
/// interpolated linearly (monotonic in lightness, readable without colour vision).
fn depth_colour(t: f32) -> [u8; 3] {
    const STOPS: [[f32; 3]; 5] = [
        [250.0, 230.0, 80.0],
        [240.0, 140.0, 50.0],
        [200.0, 60.0, 120.0],
        [110.0, 40.0, 150.0],
        [20.0, 15.0, 70.0],
    ];
    let x = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f32;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f32;
    std::array::from_fn(|k| (STOPS[i][k] * (1.0 - f) + STOPS[i + 1][k] * f).round() as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn maps() -> DepthMaps {
        DepthMaps {
            width: 3,
            height: 2,
            expected: vec![1.0, 2.0, 0.0, 4.0, 5.0, 6.0],
            median: vec![1.0, 2.5, 0.0, 4.0, 5.0, 6.0],
            alpha: vec![1.0, 0.9, 0.0, 1.0, 1.0, 0.7],
            colour: vec![[0; 3]; 6],
        }
    }

    #[test]
    fn the_npy_file_has_numpys_header_and_the_values_in_order() {
        let dir = std::env::temp_dir().join(format!("wgsplat-depth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.npy");
        maps().write_npy(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0, "the data starts 64-byte aligned");
        let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
        assert!(header.contains("'shape': (2, 3, 3)"), "{header}");
        assert!(header.ends_with('\n'));
        let data: Vec<f32> = bytes[10 + header_len..]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(data.len(), 18);
        assert_eq!(&data[3..6], &[2.0, 2.5, 0.9]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_colour_map_runs_from_near_to_far_and_leaves_empty_pixels_clear() {
        let image = maps().colour_mapped().unwrap();
        let px = |i: usize| &image.pixels[4 * i..4 * i + 4];
        assert_eq!(px(0)[..3], depth_colour(0.0));
        assert_eq!(px(5)[..3], depth_colour(1.0));
        assert_eq!(px(2)[3], 0, "no depth: transparent");
        let lightness = |c: [u8; 3]| u32::from(c[0]) + u32::from(c[1]) + u32::from(c[2]);
        let steps: Vec<u32> = (0..=10)
            .map(|k| lightness(depth_colour(k as f32 / 10.0)))
            .collect();
        assert!(
            steps.windows(2).all(|w| w[1] < w[0]),
            "darker with depth: {steps:?}"
        );
        let empty = DepthMaps {
            median: vec![0.0; 6],
            ..maps()
        };
        assert!(empty.colour_mapped().is_err());
    }
}

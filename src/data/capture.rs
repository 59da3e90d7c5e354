//! Captures made from data whose truth is known, for the tests and for trying the loaders: the
//! built-in scene photographed through a distorted lens (ray traced, so no resampling), with
//! garbage under masks; and an existing pinhole dataset's images re-photographed through a
//! distorted lens. Both are written as COLMAP text folders (`sparse/0`, `images/`, `masks/`),
//! the form a real capture arrives in.

use crate::linalg::matrix_to_quaternion;
use std::path::Path;

use super::builtin::{BuiltinOptions, cameras, sample_points, scene};
use super::image::RgbaImage;
use super::lens::{CameraModel, Distortion, Lens};
use super::undistort::sample_bicubic;
use super::{Dataset, PointCloud, dataset_error, parallel_map};
use crate::error::Result;
use crate::rng::SplitMix64;
use crate::splat::Camera;

/// One camera of a written model.
#[derive(Clone, Debug)]
pub struct CaptureCamera {
    /// COLMAP camera id.
    pub id: u32,
    /// The lens (written with [`Lens::colmap_params`]).
    pub lens: Lens,
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
}

/// One image of a written model.
#[derive(Clone, Debug)]
pub struct CaptureImage {
    /// File name under `images/` (and `masks/`).
    pub name: String,
    /// Its camera's id.
    pub camera_id: u32,
    /// The pose (world-to-camera, OpenCV).
    pub camera: Camera,
    /// The pixels.
    pub image: RgbaImage,
    /// A mask (0 = ignore), written to `masks/NAME` as a PNG.
    pub mask: Option<Vec<u8>>,
}

/// Writes a COLMAP text model with its images (and masks) under `dir`.
pub fn write_colmap_text(
    dir: &Path,
    cameras: &[CaptureCamera],
    images: &[CaptureImage],
    points: Option<&PointCloud>,
) -> Result<()> {
    let sparse = dir.join("sparse/0");
    for folder in [sparse.clone(), dir.join("images"), dir.join("masks")] {
        std::fs::create_dir_all(&folder)
            .map_err(|e| dataset_error(&folder, format!("could not create the folder: {e}")))?;
    }
    let mut text = String::from("# CAMERA_ID MODEL WIDTH HEIGHT PARAMS[]\n");
    for c in cameras {
        let params: Vec<String> = c
            .lens
            .colmap_params()
            .iter()
            .map(|v| format!("{v:.17}"))
            .collect();
        text += &format!(
            "{} {} {} {} {}\n",
            c.id,
            c.lens.model.name(),
            c.width,
            c.height,
            params.join(" ")
        );
    }
    write_text(&sparse.join("cameras.txt"), &text)?;
    let mut text = String::from("# IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME, then POINTS2D\n");
    for (i, image) in images.iter().enumerate() {
        let q = matrix_to_quaternion(&image.camera.rotation.map(|r| r.map(f64::from)));
        let t = image.camera.translation;
        text += &format!(
            "{} {} {} {} {} {} {} {} {} {}\n\n",
            i + 1,
            q[0],
            q[1],
            q[2],
            q[3],
            t[0],
            t[1],
            t[2],
            image.camera_id,
            image.name
        );
    }
    // PNG encoding dominates the write of a large capture: one image per core.
    parallel_map(images, |image| {
        image
            .image
            .write_png(&dir.join("images").join(&image.name))?;
        if let Some(mask) = &image.mask {
            let pixels = mask.iter().flat_map(|&m| [m, m, m, 255]).collect();
            let png = RgbaImage {
                width: image.image.width,
                height: image.image.height,
                pixels,
            };
            png.write_png(&dir.join("masks").join(&image.name))?;
        }
        Ok(())
    })?;
    write_text(&sparse.join("images.txt"), &text)?;
    let mut text = String::from("# POINT3D_ID X Y Z R G B ERROR TRACK[]\n");
    for (i, (p, c)) in points
        .iter()
        .flat_map(|p| p.positions.iter().zip(&p.colors))
        .enumerate()
    {
        let rgb = c.map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8);
        text += &format!(
            "{} {} {} {} {} {} {} 0\n",
            i + 1,
            p[0],
            p[1],
            p[2],
            rgb[0],
            rgb[1],
            rgb[2]
        );
    }
    write_text(&sparse.join("points3D.txt"), &text)
}

fn write_text(path: &Path, text: &str) -> Result<()> {
    super::image::write_atomically(path, text.as_bytes())
}

/// The built-in scene as a capture: its train views photographed through `train_lens` (model
/// and distortion; focal length and principal point are the built-in pinhole's) as camera 1,
/// its test views through the pinhole as camera 2. With `garbage_masks`, half of every train
/// image (a checkerboard of blocks, flipped between views) is overwritten with noise and masked
/// out. Returns the test view names.
pub fn write_builtin_capture(
    dir: &Path,
    options: &BuiltinOptions,
    train_lens: (CameraModel, Distortion),
    garbage_masks: bool,
) -> Result<Vec<String>> {
    let scene = scene();
    let (train, test) = cameras(options);
    let pinhole = |c: &Camera| {
        Lens::pinhole(
            f64::from(c.fx),
            f64::from(c.fy),
            f64::from(c.cx),
            f64::from(c.cy),
        )
    };
    let lens = Lens {
        model: train_lens.0,
        distortion: train_lens.1,
        ..pinhole(&train[0])
    };
    let jobs: Vec<(usize, &Camera)> = train.iter().chain(&test).enumerate().collect();
    let images = parallel_map(&jobs, |&(i, camera)| {
        let is_train = i < train.len();
        let name = if is_train {
            format!("train_{i:03}.png")
        } else {
            format!("test_{:03}.png", i - train.len())
        };
        let mut image = if is_train {
            scene.render_through(camera, &lens)
        } else {
            scene.render(camera)
        };
        let mut mask = None;
        if garbage_masks && is_train {
            // A checkerboard of blocks a sixteenth of the image wide, flipped from view to view:
            // every view loses half its pixels, and every part of the scene stays seen.
            let mut rng = SplitMix64::new(0xBAD ^ i as u64);
            let block = (image.width / 16).max(2) as usize;
            let width = image.width as usize;
            let mut m = vec![255u8; image.pixel_count()];
            for (p, pixel) in image.pixels.chunks_exact_mut(4).enumerate() {
                if ((p % width) / block + (p / width) / block + i).is_multiple_of(2) {
                    pixel.copy_from_slice(&(rng.next_u32() | 0xFF00_0000).to_le_bytes());
                    m[p] = 0;
                }
            }
            mask = Some(m);
        }
        Ok(CaptureImage {
            name,
            camera_id: if is_train { 1 } else { 2 },
            camera: camera.clone(),
            image,
            mask,
        })
    })?;
    let size = options.resolution;
    let capture_cameras = [
        CaptureCamera {
            id: 1,
            lens,
            width: size,
            height: size,
        },
        CaptureCamera {
            id: 2,
            lens: pinhole(&test[0]),
            width: size,
            height: size,
        },
    ];
    let points = sample_points(&scene, &train, options.points, 0x5EED);
    write_colmap_text(dir, &capture_cameras, &images, Some(&points))?;
    Ok(images[train.len()..]
        .iter()
        .map(|i| i.name.clone())
        .collect())
}

/// Re-photographs the train views of a pinhole `dataset` through a lens with `model` and
/// `distortion` (each source view's own pinhole intrinsics, with the focal length raised until
/// the whole distorted image sees inside the source image), resampling bicubically; the test
/// views stay pinhole. Writes the capture to `dir`: camera `i + 1` per train view's lens,
/// then one pinhole camera per test view.
pub fn write_distorted_copy(
    dataset: &Dataset,
    dir: &Path,
    model: CameraModel,
    distortion: Distortion,
) -> Result<()> {
    let mut cameras = Vec::new();
    let mut images = Vec::new();
    for (i, view) in dataset.train.iter().enumerate() {
        let c = &view.camera;
        let source = Lens::pinhole(
            f64::from(c.fx),
            f64::from(c.fy),
            f64::from(c.cx),
            f64::from(c.cy),
        );
        let (w, h) = (c.width, c.height);
        let mut lens = Lens {
            model,
            distortion,
            ..source
        };
        while !sees_inside(&lens, &source, w, h) {
            lens.fx *= 1.02;
            lens.fy *= 1.02;
            if lens.fx > 100.0 * source.fx {
                return Err(dataset_error(
                    dir,
                    format!(
                        "no focal length makes {} see inside view {}",
                        model.name(),
                        view.name
                    ),
                ));
            }
        }
        let mut image = RgbaImage::new(w, h);
        for y in 0..h {
            for x in 0..w {
                let Some([nx, ny]) = lens.unproject([f64::from(x) + 0.5, f64::from(y) + 0.5])
                else {
                    continue;
                };
                let [sx, sy] = source.project([nx, ny]);
                if let Some(rgba) = sample_bicubic(&view.image, sx as f32, sy as f32) {
                    let i = (y as usize * w as usize + x as usize) * 4;
                    image.pixels[i..i + 4].copy_from_slice(&rgba);
                }
            }
        }
        cameras.push(CaptureCamera {
            id: i as u32 + 1,
            lens,
            width: w,
            height: h,
        });
        images.push(CaptureImage {
            name: view.name.clone(),
            camera_id: i as u32 + 1,
            camera: c.clone(),
            image,
            mask: None,
        });
    }
    for view in &dataset.test {
        let c = &view.camera;
        let id = cameras.len() as u32 + 1;
        let lens = Lens::pinhole(
            f64::from(c.fx),
            f64::from(c.fy),
            f64::from(c.cx),
            f64::from(c.cy),
        );
        cameras.push(CaptureCamera {
            id,
            lens,
            width: c.width,
            height: c.height,
        });
        images.push(CaptureImage {
            name: view.name.clone(),
            camera_id: id,
            camera: c.clone(),
            image: view.image.clone(),
            mask: None,
        });
    }
    write_colmap_text(dir, &cameras, &images, dataset.points.as_ref())
}

/// True when every border pixel of `lens`'s image looks at a point inside `source`'s image.
fn sees_inside(lens: &Lens, source: &Lens, width: u32, height: u32) -> bool {
    let (w, h) = (f64::from(width), f64::from(height));
    let border = (0..width)
        .flat_map(|x| [[f64::from(x) + 0.5, 0.5], [f64::from(x) + 0.5, h - 0.5]])
        .chain(
            (0..height).flat_map(|y| [[0.5, f64::from(y) + 0.5], [w - 0.5, f64::from(y) + 0.5]]),
        );
    for pixel in border {
        let Some(n) = lens.unproject(pixel) else {
            return false;
        };
        let [sx, sy] = source.project(n);
        if !(sx >= 0.0 && sy >= 0.0 && sx <= w && sy <= h) {
            return false;
        }
    }
    true
}

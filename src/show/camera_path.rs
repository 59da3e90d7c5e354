//! Camera paths in nerfstudio's `camera_path.json`, the format its viewer exports and other tools
//! read: per frame a camera-to-world 4 × 4 matrix (row-major, 16 numbers) in the OpenGL
//! convention (x right, y up, the camera looking down −z), the vertical field of view in degrees
//! and the aspect ratio; for the whole path the render size, frames per second, duration and
//! `camera_type`: `"perspective"` or nerfstudio's `"fisheye"` ([`CameraType`], whose module says
//! how nerfstudio draws one). Frames convert to and from the splatting [`Camera`] (OpenCV
//! convention, world-to-camera).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::camera_type::CameraType;
use crate::error::{Error, Result};
use crate::splat::Camera;

/// One frame of a path: where the camera is and how wide it sees.
#[derive(Clone, Debug, PartialEq)]
pub struct PathFrame {
    /// Camera-to-world rotation, row-major, OpenGL convention (columns: right, up, backward).
    pub rotation: [[f64; 3]; 3],
    /// Camera centre in world space.
    pub position: [f64; 3],
    /// Vertical field of view in degrees: for a fisheye path, the field of view of the
    /// perspective camera with its focal length (as nerfstudio reads it; [`CameraType`]).
    pub fov_y_degrees: f64,
}

/// A camera path: its frames in order, with the size and rate they are rendered at.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraPath {
    /// Render width in pixels.
    pub width: u32,
    /// Render height in pixels.
    pub height: u32,
    /// Frames per second.
    pub fps: f64,
    /// The frames.
    pub frames: Vec<PathFrame>,
    /// The near plane of the cameras the frames are drawn with (the model's; not in the file:
    /// a path read from one gets [`NEAR`] until its user sets the model's).
    pub near: f32,
    /// The projection of every frame (`camera_type`).
    pub camera_type: CameraType,
}

/// The highest frame rate a path is rendered at, frames per second: a path file's rate and
/// `render --fps` are held to it.
pub const MAX_FPS: f64 = 100_000.0;

/// Whether `fps` is a frame rate a path can have: finite, above 0 and at most [`MAX_FPS`].
pub fn valid_fps(fps: f64) -> bool {
    fps.is_finite() && fps > 0.0 && fps <= MAX_FPS
}

/// The near plane of a path made without a model's ([`crate::data::DEFAULT_NEAR`]).
pub const NEAR: f32 = crate::data::DEFAULT_NEAR;
/// The far plane of every camera made from a path.
const FAR: f32 = 1.0e4;

fn path_error(path: &Path, message: String) -> Error {
    crate::data::dataset_error(path, message)
}

impl PathFrame {
    /// The frame of a splatting camera (its vertical field of view from `fy` and its height,
    /// which gives a path frame of either [`CameraType`] the camera's `fy` again).
    pub fn from_camera(camera: &Camera) -> PathFrame {
        let r = camera.rotation.map(|row| row.map(f64::from));
        // OpenCV camera-to-world is Rᵀ; OpenGL's flips the y and z axes.
        let mut rotation = [[0.0; 3]; 3];
        for (i, row) in rotation.iter_mut().enumerate() {
            *row = [r[0][i], -r[1][i], -r[2][i]];
        }
        let fov = 2.0 * (0.5 * f64::from(camera.height) / f64::from(camera.fy)).atan();
        PathFrame {
            rotation,
            position: camera.position().map(f64::from),
            fov_y_degrees: fov.to_degrees(),
        }
    }

    /// The splatting camera of this frame at `width` × `height`, square pixels, principal point
    /// at the centre, through `camera_type`'s lens, on `background`.
    pub fn to_camera(
        &self,
        camera_type: CameraType,
        width: u32,
        height: u32,
        background: [f32; 3],
    ) -> Camera {
        let f = 0.5 * f64::from(height) / (0.5 * self.fov_y_degrees.to_radians()).tan();
        // World-to-camera (OpenCV): rows are the OpenGL columns right, −up, −backward.
        let c = &self.rotation;
        let rows = [
            [c[0][0], c[1][0], c[2][0]],
            [-c[0][1], -c[1][1], -c[2][1]],
            [-c[0][2], -c[1][2], -c[2][2]],
        ];
        Camera {
            lens: camera_type.lens(),
            background,
            ..Camera::centred(rows, self.position, f, [width, height], [NEAR, FAR])
        }
    }
}

/// The JSON document, as nerfstudio writes it (fields wgsplat does not use are kept on read and
/// ignored).
#[derive(Serialize, Deserialize)]
struct Document {
    camera_type: Option<String>,
    render_height: Value,
    render_width: Value,
    camera_path: Vec<FrameJson>,
    fps: Value,
    seconds: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    smoothness_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_cycle: Option<bool>,
}

#[derive(Serialize, Deserialize)]
struct FrameJson {
    camera_to_world: Vec<f64>,
    fov: f64,
    aspect: f64,
}

/// A positive whole number of pixels from a JSON field.
fn pixels(value: &Value, field: &str, path: &Path) -> Result<u32> {
    value
        .as_u64()
        .filter(|v| (1..=16384).contains(v))
        .map(|v| v as u32)
        .ok_or_else(|| {
            path_error(
                path,
                format!("`{field}` is {value}: it must be a whole number of pixels, 1 to 16384"),
            )
        })
}

/// A positive finite number from a JSON field.
fn positive(value: &Value, field: &str, path: &Path) -> Result<f64> {
    value
        .as_f64()
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or_else(|| {
            path_error(
                path,
                format!("`{field}` is {value}: it must be a number above 0"),
            )
        })
}

/// Checks that `m` (row-major 4 × 4) is rigid: an orthonormal, right-handed rotation (to 1e-3),
/// a finite translation and a last row of (0, 0, 0, 1).
fn rigid_frame(m: &[f64], index: usize, path: &Path) -> Result<([[f64; 3]; 3], [f64; 3])> {
    let fail = |why: &str| {
        path_error(
            path,
            format!(
                "frame {index}: `camera_to_world` {why}; it must be a rigid 4x4 camera-to-world matrix, 16 numbers row by row"
            ),
        )
    };
    if m.len() != 16 {
        return Err(fail(&format!("has {} numbers", m.len())));
    }
    if m.iter().any(|v| !v.is_finite()) {
        return Err(fail("holds a number that is not finite"));
    }
    let rotation = [0, 1, 2].map(|i| [m[4 * i], m[4 * i + 1], m[4 * i + 2]]);
    let position = [m[3], m[7], m[11]];
    let last = [m[12], m[13], m[14], m[15]];
    if last
        .iter()
        .zip([0.0, 0.0, 0.0, 1.0])
        .any(|(a, b)| (a - b).abs() > 1e-6)
    {
        return Err(fail(&format!("ends in the row {last:?}, not (0, 0, 0, 1)")));
    }
    for a in 0..3 {
        for b in 0..3 {
            let dot: f64 = (0..3).map(|k| rotation[k][a] * rotation[k][b]).sum();
            let expected = if a == b { 1.0 } else { 0.0 };
            if (dot - expected).abs() > 1e-3 {
                return Err(fail(
                    "is not a rotation (its columns are not orthonormal: scaled or sheared)",
                ));
            }
        }
    }
    let r = &rotation;
    let det = r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1])
        - r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0])
        + r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0]);
    if det < 0.0 {
        return Err(fail("is a reflection, not a rotation"));
    }
    Ok((rotation, position))
}

impl CameraPath {
    /// Reads a nerfstudio `camera_path.json`; a missing field, a matrix that is not rigid, a
    /// field of view that is not between 0 and 180 degrees, or a `camera_type` other than
    /// `"perspective"` (also when absent) and `"fisheye"` is an error naming the frame or field. The
    /// frames are played over the file's `seconds`, as nerfstudio renders them: the rate is the
    /// frames ÷ `seconds` (a file nerfstudio or wgsplat wrote has `fps` × `seconds` frames, so
    /// the two agree); a rate above [`MAX_FPS`] is an error.
    pub fn read(path: &Path) -> Result<CameraPath> {
        let text = crate::data::read_regular_text(path, "the camera path")?;
        let document: Document = serde_json::from_str(&text).map_err(|e| {
            path_error(
                path,
                format!("not a nerfstudio camera path ({e}); it needs render_width, render_height, fps, seconds and camera_path with camera_to_world, fov and aspect per frame"),
            )
        })?;
        let camera_type = CameraType::parse(document.camera_type.as_deref())
            .map_err(|message| path_error(path, message))?;
        let width = pixels(&document.render_width, "render_width", path)?;
        let height = pixels(&document.render_height, "render_height", path)?;
        let written_fps = positive(&document.fps, "fps", path)?;
        if !valid_fps(written_fps) {
            return Err(path_error(
                path,
                format!("`fps` is {written_fps}: it must be at most {MAX_FPS} frames per second"),
            ));
        }
        let seconds = positive(&document.seconds, "seconds", path)?;
        if document.camera_path.is_empty() {
            return Err(path_error(path, "`camera_path` has no frames".into()));
        }
        let frames_per_second = document.camera_path.len() as f64 / seconds;
        // The written rate where the two agree but for rounding (a file this module wrote).
        let fps = if (frames_per_second - written_fps).abs() <= 1e-9 * written_fps {
            written_fps
        } else {
            frames_per_second
        };
        if !valid_fps(fps) {
            return Err(path_error(
                path,
                format!(
                    "{} frames in `seconds` {seconds} play at {fps} frames per second: the rate \
                     (frames / seconds) must be at most {MAX_FPS}",
                    document.camera_path.len()
                ),
            ));
        }
        let mut frames = Vec::with_capacity(document.camera_path.len());
        for (index, frame) in document.camera_path.iter().enumerate() {
            let (rotation, position) = rigid_frame(&frame.camera_to_world, index, path)?;
            if !(frame.fov.is_finite() && frame.fov > 0.0 && frame.fov < 180.0) {
                return Err(path_error(
                    path,
                    format!(
                        "frame {index}: `fov` is {}: the vertical field of view must be between 0 and 180 degrees",
                        frame.fov
                    ),
                ));
            }
            frames.push(PathFrame {
                rotation,
                position,
                fov_y_degrees: frame.fov,
            });
        }
        Ok(CameraPath {
            width,
            height,
            fps,
            frames,
            near: NEAR,
            camera_type,
        })
    }

    /// The splatting camera of frame `index` on `background`, with the path's size, near plane
    /// and lens; `None` past the last frame.
    pub fn camera(&self, index: usize, background: [f32; 3]) -> Option<Camera> {
        let frame = self.frames.get(index)?;
        Some(Camera {
            near: self.near,
            ..frame.to_camera(self.camera_type, self.width, self.height, background)
        })
    }

    /// Writes the path as a nerfstudio `camera_path.json` (atomically), with its `camera_type`.
    pub fn write(&self, path: &Path) -> Result<()> {
        let aspect = f64::from(self.width) / f64::from(self.height);
        let document = Document {
            camera_type: Some(self.camera_type.name().into()),
            render_height: self.height.into(),
            render_width: self.width.into(),
            camera_path: (self.frames.iter())
                .map(|f| {
                    let (r, p) = (&f.rotation, &f.position);
                    let mut m = Vec::with_capacity(16);
                    for i in 0..3 {
                        m.extend([r[i][0], r[i][1], r[i][2], p[i]]);
                    }
                    m.extend([0.0, 0.0, 0.0, 1.0]);
                    FrameJson {
                        camera_to_world: m,
                        fov: f.fov_y_degrees,
                        aspect,
                    }
                })
                .collect(),
            fps: self.fps.into(),
            seconds: (self.frames.len() as f64 / self.fps).into(),
            smoothness_value: None,
            is_cycle: None,
        };
        crate::io::write_json_atomically(path, &document)
    }
}

#[cfg(test)]
#[path = "camera_path_tests.rs"]
mod tests;

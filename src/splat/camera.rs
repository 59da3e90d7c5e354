//! The camera of the splatting pipeline, in gsplat's conventions (OpenCV: x right, y down,
//! z forward; pixel centres at +0.5): a pose, pinhole intrinsics and the lens they go through.

use serde::{Deserialize, Serialize};

use super::lens::CameraLens;

/// A camera with a world-to-camera rigid transform, intrinsics and lens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Camera {
    /// Row-major world-to-camera rotation.
    pub rotation: [[f32; 3]; 3],
    /// World-to-camera translation (camera = R * world + t).
    pub translation: [f32; 3],
    /// Focal length in pixels along x.
    pub fx: f32,
    /// Focal length in pixels along y.
    pub fy: f32,
    /// Principal point x in pixels.
    pub cx: f32,
    /// Principal point y in pixels.
    pub cy: f32,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Near plane (camera-space z).
    pub near: f32,
    /// Far plane (camera-space z).
    pub far: f32,
    /// Background colour composited behind the splats.
    pub background: [f32; 3],
    /// The lens the focal lengths and principal point apply through ([`CameraLens::PINHOLE`]
    /// for an ideal pinhole).
    #[serde(default)]
    pub lens: CameraLens,
}

impl Camera {
    /// A camera on the -z axis, `distance` from the origin and looking along +z, with a 60-degree
    /// horizontal field of view, near 0.01 and far 100 (tests and benchmarks).
    pub fn facing_origin(width: u32, height: u32, distance: f32, background: [f32; 3]) -> Camera {
        let fx = 0.5 * width as f32 / 30f32.to_radians().tan();
        Camera {
            rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            translation: [0.0, 0.0, distance],
            fx,
            fy: fx,
            cx: 0.5 * width as f32,
            cy: 0.5 * height as f32,
            width,
            height,
            near: 0.01,
            far: 100.0,
            background,
            lens: CameraLens::PINHOLE,
        }
    }

    /// A pinhole camera at `eye` whose world-to-camera rotation has rows `rows` (right, down,
    /// forward), with focal length `focal` pixels on both axes, the principal point at the
    /// centre of its `size` (width, height), planes `planes` (near, far), on black.
    pub fn centred(
        rows: [[f64; 3]; 3],
        eye: [f64; 3],
        focal: f64,
        size: [u32; 2],
        planes: [f32; 2],
    ) -> Camera {
        let translation =
            rows.map(|row| -(row[0] * eye[0] + row[1] * eye[1] + row[2] * eye[2]) as f32);
        Camera {
            rotation: rows.map(|row| row.map(|v| v as f32)),
            translation,
            fx: focal as f32,
            fy: focal as f32,
            cx: 0.5 * size[0] as f32,
            cy: 0.5 * size[1] as f32,
            width: size[0],
            height: size[1],
            near: planes[0],
            far: planes[1],
            background: [0.0; 3],
            lens: CameraLens::PINHOLE,
        }
    }

    /// Transforms a world point into camera space.
    pub fn to_camera(&self, p: [f32; 3]) -> [f32; 3] {
        let r = &self.rotation;
        let t = &self.translation;
        [
            r[0][0] * p[0] + r[0][1] * p[1] + r[0][2] * p[2] + t[0],
            r[1][0] * p[0] + r[1][1] * p[1] + r[1][2] * p[2] + t[1],
            r[2][0] * p[0] + r[2][1] * p[1] + r[2][2] * p[2] + t[2],
        ]
    }

    /// The camera centre in world space, `-Rᵀ t`.
    pub fn position(&self) -> [f32; 3] {
        let r = &self.rotation;
        let t = &self.translation;
        [
            -(r[0][0] * t[0] + r[1][0] * t[1] + r[2][0] * t[2]),
            -(r[0][1] * t[0] + r[1][1] * t[1] + r[2][1] * t[2]),
            -(r[0][2] * t[0] + r[1][2] * t[1] + r[2][2] * t[2]),
        ]
    }
}

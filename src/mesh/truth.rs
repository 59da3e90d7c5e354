//! The true geometry of ray-traced scenes ([`Scene`]), to prove and score meshes against:
//! exact depth maps (one ray through each pixel's centre) and points sampled uniformly by area
//! on the surfaces the cameras see.
//!
//! The true surface is every object's surface ([`Shape::sample_surface`]: a sphere's sphere, a
//! box's six faces, a cylinder's side and both discs) less what no camera can see: points buried
//! inside another object (the faces of a box resting on the platform where they touch it) and
//! points that no camera sees unoccluded inside its image (the bottom of the platform, the
//! lower halves of spheres hidden by what they rest on). A mesh fused from those cameras can
//! only reconstruct that surface, so it is what completeness and recall are measured on.
//!
//! [`Shape::sample_surface`]: crate::data::shape::Shape::sample_surface

use glam::{Mat3, Vec3};

use crate::data::builtin::sample_points;
use crate::data::raytrace::{Scene, to_u8};
use crate::splat::Camera;

/// A depth map with a colour per pixel.
#[derive(Clone, Debug, PartialEq)]
pub struct DepthMap {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Distance along the camera's z per pixel (row-major); 0 where the ray hits nothing.
    pub depth: Vec<f32>,
    /// The scene's radiance where the ray hits (black where it misses).
    pub colour: Vec<[u8; 3]>,
}

/// The exact depth map of `scene` seen by the pinhole `camera`: for each pixel, the ray through
/// its centre, and the camera-space z of its nearest hit.
pub fn exact_depth(scene: &Scene, camera: &Camera) -> DepthMap {
    let origin = camera.position();
    let to_world = Mat3::from_cols_array_2d(&camera.rotation);
    let pixels = camera.width as usize * camera.height as usize;
    let (mut depth, mut colour) = (Vec::with_capacity(pixels), Vec::with_capacity(pixels));
    for y in 0..camera.height {
        for x in 0..camera.width {
            let local = Vec3::new(
                (x as f32 + 0.5 - camera.cx) / camera.fx,
                (y as f32 + 0.5 - camera.cy) / camera.fy,
                1.0,
            );
            let direction = (to_world * local).normalize().to_array();
            match scene.intersect(origin, direction) {
                Some(hit) => {
                    depth.push(hit.t / local.length());
                    let rgb = scene.radiance(hit.object, hit.position, hit.normal);
                    colour.push(rgb.map(to_u8));
                }
                None => {
                    depth.push(0.0);
                    colour.push([0; 3]);
                }
            }
        }
    }
    DepthMap {
        width: camera.width,
        height: camera.height,
        depth,
        colour,
    }
}

/// `count` points (fewer if the visible surface is very small) on the surfaces of `scene` that
/// some camera of `cameras` sees (module docs), uniform by area, deterministic in `seed`.
pub fn surface_points(scene: &Scene, cameras: &[Camera], count: usize, seed: u64) -> Vec<[f32; 3]> {
    sample_points(scene, cameras, count, seed).positions
}

/// The smallest and largest corner of the box around every object of `scene` (`None` for a
/// scene without objects).
pub fn scene_bounds(scene: &Scene) -> Option<([f32; 3], [f32; 3])> {
    scene
        .objects()
        .iter()
        .map(|o| o.shape.bounds())
        .fold(None, |acc, b| {
            Some(match acc {
                None => (b.min, b.max),
                Some((lo, hi)) => (
                    [0, 1, 2].map(|k| f32::min(lo[k], b.min[k])),
                    [0, 1, 2].map(|k| f32::max(hi[k], b.max[k])),
                ),
            })
        })
}

//! Moving and resizing the crop box in the scene view: seven handles, one at the centre of each
//! face and one at the box's centre. A face handle slides its face along its axis to the point
//! of that axis nearest the ray under the pointer (the face follows the pointer wherever the
//! axis runs on screen, perspective included); the centre handle moves the whole box in the
//! plane facing the camera at its depth. Everything here works in the scene image's pixels, so
//! scripted runs (`crop-drag:X0,Y0,X1,Y1`) and the mouse take one path.

use glam::{Mat3, Vec3};
use wgsplat::show::edit::project_centre;
use wgsplat::splat::Camera;

/// The handles: faces `2 · axis + side` (side 0 the minimum, 1 the maximum), then the centre.
pub const HANDLES: usize = 7;
/// The centre handle's index.
pub const CENTRE: usize = 6;
/// Smallest extent a drag leaves the box along an axis.
const MIN_EXTENT: f32 = 1e-4;

/// The world position of handle `handle` of the box `crop` (min x, y, z, max x, y, z).
pub fn handle_point(crop: &[f32; 6], handle: usize) -> [f32; 3] {
    let centre = [0, 1, 2].map(|k| 0.5 * (crop[k] + crop[k + 3]));
    if handle >= CENTRE {
        return centre;
    }
    let (axis, side) = (handle / 2, handle % 2);
    let mut p = centre;
    p[axis] = crop[axis + 3 * side];
    p
}

/// The handle drawn nearest `at` (image pixels) within `radius` pixels, if any; faces win over
/// the centre at equal distance.
pub fn pick(camera: &Camera, crop: &[f32; 6], at: [f32; 2], radius: f32) -> Option<usize> {
    (0..HANDLES)
        .filter_map(|h| {
            let p = project_centre(camera, handle_point(crop, h))?;
            let d = ((p[0] - at[0]).powi(2) + (p[1] - at[1]).powi(2)).sqrt();
            (d <= radius).then_some((d, h))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, h)| h)
}

/// The box `start` with handle `handle` dragged from image point `from` to `to`. A drag the
/// camera cannot resolve (an axis pointing at the camera, a point behind it) leaves it as it was.
pub fn dragged(
    camera: &Camera,
    start: &[f32; 6],
    handle: usize,
    from: [f32; 2],
    to: [f32; 2],
) -> [f32; 6] {
    let mut crop = *start;
    let origin = Vec3::from(camera.position());
    let anchor = Vec3::from(handle_point(start, handle));
    if handle >= CENTRE {
        // The plane through the centre facing the camera: depth along the optical axis.
        let axis = world_direction(camera, Vec3::Z);
        let depth = (anchor - origin).dot(axis);
        let (Some(a), Some(b)) = (
            ray_at_depth(camera, from, depth),
            ray_at_depth(camera, to, depth),
        ) else {
            return crop;
        };
        for k in 0..3 {
            crop[k] += b[k] - a[k];
            crop[k + 3] += b[k] - a[k];
        }
        return crop;
    }
    let (axis, side) = (handle / 2, handle % 2);
    let unit = Vec3::AXES[axis];
    let along = |at: [f32; 2]| nearest_on_line(anchor, unit, origin, pixel_ray(camera, at));
    let (Some(a), Some(b)) = (along(from), along(to)) else {
        return crop;
    };
    crop[axis + 3 * side] += b - a;
    if crop[axis + 3] - crop[axis] < MIN_EXTENT {
        // A face dragged past the opposite one stops just short of it.
        crop[axis + 3 * side] = match side {
            0 => crop[axis + 3] - MIN_EXTENT,
            _ => crop[axis] + MIN_EXTENT,
        };
    }
    crop
}

/// The world direction of the ray through image point `at` (not normalised).
fn pixel_ray(camera: &Camera, at: [f32; 2]) -> Vec3 {
    world_direction(
        camera,
        Vec3::new(
            (at[0] - camera.cx) / camera.fx,
            (at[1] - camera.cy) / camera.fy,
            1.0,
        ),
    )
}

/// A camera-space direction in world space (the rotation's transpose: its rows as columns).
fn world_direction(camera: &Camera, d: Vec3) -> Vec3 {
    Mat3::from_cols_array_2d(&camera.rotation) * d
}

/// Where the ray through image point `at` reaches optical depth `depth` (`None` at or behind the
/// camera).
fn ray_at_depth(camera: &Camera, at: [f32; 2], depth: f32) -> Option<Vec3> {
    if depth.is_nan() || depth <= 0.0 {
        return None;
    }
    // The ray's camera-space z is 1 per unit of `pixel_ray`, so depth scales it directly.
    Some(Vec3::from(camera.position()) + depth * pixel_ray(camera, at))
}

/// The parameter `t` of the point `p + t·e` nearest the ray `o + s·d` (s > 0), or `None` when the
/// line runs along the ray or the nearest point lies behind the camera.
fn nearest_on_line(p: Vec3, e: Vec3, o: Vec3, d: Vec3) -> Option<f32> {
    let w = p - o;
    let (a, b, c) = (e.dot(e), e.dot(d), d.dot(d));
    let (dd, ee) = (e.dot(w), d.dot(w));
    let denom = a * c - b * b;
    if denom <= 1e-6 * a * c {
        return None;
    }
    let t = (b * ee - c * dd) / denom;
    let s = (a * ee - b * dd) / denom;
    (s > 0.0 && t.is_finite()).then_some(t)
}

#[cfg(test)]
#[path = "crop_handles_tests.rs"]
mod tests;

//! The camera paths `wgsplat render --video` makes from a dataset's cameras: an orbit around the
//! scene's centre, and a smooth path through the training cameras in their order (a Catmull-Rom
//! spline through the positions, spherical interpolation between the rotations, the field of view
//! interpolated linearly), as gsplat's and nerfstudio's interpolated paths are.

use glam::{DVec3, DVec4};

use super::camera_path::PathFrame;
use crate::data::colmap::quaternion_to_matrix;
use crate::linalg::unit;

type Vec3 = [f64; 3];

/// The column `k` of a row-major matrix.
fn column(m: &[[f64; 3]; 3], k: usize) -> DVec3 {
    DVec3::new(m[0][k], m[1][k], m[2][k])
}

/// A camera-to-world rotation (OpenGL: columns right, up, backward) for a camera at `eye`
/// looking at `target` with `up` as the world's up; `None` when the view is along `up`.
pub fn look_at(eye: Vec3, target: Vec3, up: Vec3) -> Option<[[f64; 3]; 3]> {
    let backward = unit(DVec3::from(eye) - DVec3::from(target))?;
    let right = unit(DVec3::from(up).cross(backward))?;
    let true_up = backward.cross(right);
    Some([0, 1, 2].map(|i| [right[i], true_up[i], backward[i]]))
}

/// The world's up as the cameras see it: the mean of their up axes (OpenGL's second column).
pub fn mean_up(frames: &[PathFrame]) -> Option<Vec3> {
    let sum = frames
        .iter()
        .fold(DVec3::ZERO, |acc, f| acc + column(&f.rotation, 1));
    unit(sum).map(|v| v.to_array())
}

/// The point nearest to every camera's optical axis (least squares), where cameras pointed at
/// one subject look; the mean of the centres when the axes are parallel.
pub fn look_centre(frames: &[PathFrame]) -> Vec3 {
    let mut a = [[0.0; 3]; 3];
    let mut b = [0.0; 3];
    for frame in frames {
        let d = -column(&frame.rotation, 2);
        // (I − d dᵀ) x = (I − d dᵀ) p, summed.
        for i in 0..3 {
            for j in 0..3 {
                let m = f64::from(u8::from(i == j)) - d[i] * d[j];
                a[i][j] += m;
                b[i] += m * frame.position[j];
            }
        }
    }
    solve3(a, b).unwrap_or_else(|| {
        let sum = frames
            .iter()
            .fold(DVec3::ZERO, |acc, f| acc + DVec3::from(f.position));
        (sum * (1.0 / frames.len().max(1) as f64)).to_array()
    })
}

/// Solves `a x = b` by Cramer's rule; `None` when `a` is near singular.
fn solve3(a: [[f64; 3]; 3], b: Vec3) -> Option<Vec3> {
    let det = |m: &[[f64; 3]; 3]| DVec3::from(m[0]).dot(DVec3::from(m[1]).cross(DVec3::from(m[2])));
    let d = det(&a);
    let size = a.iter().flatten().map(|v| v.abs()).fold(0.0, f64::max);
    if d.abs() <= 1e-9 * size.powi(3).max(1e-300) {
        return None;
    }
    let mut x = [0.0; 3];
    for (k, xk) in x.iter_mut().enumerate() {
        let mut m = a;
        for row in 0..3 {
            m[row][k] = b[row];
        }
        *xk = det(&m) / d;
    }
    Some(x)
}

/// `count` frames on a circle around the cameras' centre of attention ([`look_centre`]), in the
/// plane at right angles to their mean up, at their mean distance from it and their mean height
/// above it, each looking at the centre, with the mean field of view. Starts at the first
/// camera's bearing.
pub fn orbit(cameras: &[PathFrame], count: usize) -> Option<Vec<PathFrame>> {
    let up = DVec3::from(mean_up(cameras)?);
    let centre = DVec3::from(look_centre(cameras));
    let n = cameras.len() as f64;
    let (mut height, mut radius) = (0.0, 0.0);
    for camera in cameras {
        let offset = DVec3::from(camera.position) - centre;
        let h = offset.dot(up);
        height += h / n;
        radius += (offset - up * h).length() / n;
    }
    let first = DVec3::from(cameras[0].position) - centre;
    let e1 = unit(first - up * first.dot(up))
        .or_else(|| unit(up.cross(DVec3::X)))
        .or_else(|| unit(up.cross(DVec3::Y)))?;
    let e2 = up.cross(e1);
    let fov = cameras.iter().map(|c| c.fov_y_degrees).sum::<f64>() / n;
    (0..count)
        .map(|i| {
            let angle = std::f64::consts::TAU * i as f64 / count as f64;
            let around = e1 * angle.cos() + e2 * angle.sin();
            let eye = (centre + (around * radius + up * height)).to_array();
            Some(PathFrame {
                rotation: look_at(eye, centre.to_array(), up.to_array())?,
                position: eye,
                fov_y_degrees: fov,
            })
        })
        .collect()
}

/// A unit quaternion (w, x, y, z) of a rotation matrix.
pub fn quaternion(m: &[[f64; 3]; 3]) -> [f64; 4] {
    crate::linalg::matrix_to_quaternion(m)
}

/// Spherical linear interpolation between unit quaternions, along the shorter arc.
pub fn slerp(a: [f64; 4], b: [f64; 4], t: f64) -> [f64; 4] {
    let (a, b) = (DVec4::from(a), DVec4::from(b));
    let mut cos = a.dot(b);
    let b = if cos < 0.0 {
        cos = -cos;
        -b
    } else {
        b
    };
    let (wa, wb) = if cos > 0.9995 {
        (1.0 - t, t)
    } else {
        let theta = cos.acos();
        let sin = theta.sin();
        (((1.0 - t) * theta).sin() / sin, (t * theta).sin() / sin)
    };
    let q = a * wa + b * wb;
    (q / q.length()).to_array()
}

/// The centripetal-free (uniform) Catmull-Rom point between `p1` and `p2` at `t` in [0, 1].
fn catmull_rom(p0: Vec3, p1: Vec3, p2: Vec3, p3: Vec3, t: f64) -> Vec3 {
    let (t2, t3) = (t * t, t * t * t);
    let [p0, p1, p2, p3] = [p0, p1, p2, p3].map(DVec3::from);
    let point = 0.5
        * (2.0 * p1
            + (p2 - p0) * t
            + (2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3) * t2
            + (3.0 * p1 - p0 - 3.0 * p2 + p3) * t3);
    point.to_array()
}

/// `count` frames through `keys` in order, equally spaced in time from the first key to the last:
/// positions on a Catmull-Rom spline (it passes through every key), rotations by slerp between
/// neighbouring keys, the field of view linearly. One key gives it `count` times.
pub fn through(keys: &[PathFrame], count: usize) -> Vec<PathFrame> {
    if keys.len() < 2 || count < 2 {
        return keys.iter().cycle().take(count).cloned().collect();
    }
    let quaternions: Vec<[f64; 4]> = keys.iter().map(|k| quaternion(&k.rotation)).collect();
    let segments = keys.len() - 1;
    (0..count)
        .map(|i| {
            let s = i as f64 * segments as f64 / (count - 1) as f64;
            let segment = (s.floor() as usize).min(segments - 1);
            let t = s - segment as f64;
            let at = |k: isize| &keys[(segment as isize + k).clamp(0, segments as isize) as usize];
            PathFrame {
                position: catmull_rom(
                    at(-1).position,
                    at(0).position,
                    at(1).position,
                    at(2).position,
                    t,
                ),
                rotation: quaternion_to_matrix(slerp(
                    quaternions[segment],
                    quaternions[segment + 1],
                    t,
                )),
                fov_y_degrees: at(0).fov_y_degrees * (1.0 - t) + at(1).fov_y_degrees * t,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A camera at `eye` looking at `target`, y up.
    fn key(eye: Vec3, target: Vec3) -> PathFrame {
        PathFrame {
            rotation: look_at(eye, target, [0.0, 1.0, 0.0]).unwrap(),
            position: eye,
            fov_y_degrees: 50.0,
        }
    }

    #[test]
    fn an_orbit_looks_at_the_centre_at_the_cameras_distance_and_height() {
        let centre = [1.0, 0.5, -2.0];
        let keys: Vec<PathFrame> = (0..5)
            .map(|i| {
                let a = i as f64 * std::f64::consts::TAU / 5.0;
                let eye = DVec3::from(centre) + DVec3::new(3.0 * a.cos(), 1.0, 3.0 * a.sin());
                key(eye.to_array(), centre)
            })
            .collect();
        let found = look_centre(&keys);
        assert!(
            DVec3::from(found).distance(DVec3::from(centre)) < 1e-9,
            "{found:?}"
        );
        let frames = orbit(&keys, 12).unwrap();
        assert_eq!(frames.len(), 12);
        for frame in &frames {
            let to_centre = unit(DVec3::from(centre) - DVec3::from(frame.position)).unwrap();
            let forward = -column(&frame.rotation, 2);
            assert!(to_centre.dot(forward) > 1.0 - 1e-9, "{frame:?}");
            let offset = DVec3::from(frame.position) - DVec3::from(centre);
            assert!((offset[1] - 1.0).abs() < 1e-9);
            assert!(((offset[0].powi(2) + offset[2].powi(2)).sqrt() - 3.0).abs() < 1e-9);
        }
    }

    #[test]
    fn a_path_through_the_cameras_passes_through_each_and_turns_smoothly() {
        let keys: Vec<PathFrame> = (0..4)
            .map(|i| key([i as f64, 0.0, 5.0], [i as f64 * 0.5, 0.0, 0.0]))
            .collect();
        // 3 segments of 4 steps: every 4th frame is a key.
        let frames = through(&keys, 13);
        for (k, frame) in keys.iter().enumerate() {
            let at = &frames[4 * k];
            let step = DVec3::from(at.position) - DVec3::from(frame.position);
            assert!(step.length_squared() < 1e-18);
            for (a, b) in at
                .rotation
                .iter()
                .flatten()
                .zip(frame.rotation.iter().flatten())
            {
                assert!((a - b).abs() < 1e-9);
            }
        }
        // Halfway between two keys the rotation is the halfway rotation.
        let half = slerp(
            quaternion(&keys[1].rotation),
            quaternion(&keys[2].rotation),
            0.5,
        );
        let mid = quaternion(&frames[6].rotation);
        let cos: f64 = half.iter().zip(&mid).map(|(a, b)| a * b).sum();
        assert!(cos.abs() > 1.0 - 1e-12);
    }
}

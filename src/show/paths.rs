//! The camera paths `wgsplat render --video` makes from a dataset's cameras: an orbit around the
//! scene's centre, and a smooth path through the training cameras in their order (a Catmull-Rom
//! spline through the positions, spherical interpolation between the rotations, the field of view
//! interpolated linearly), as gsplat's and nerfstudio's interpolated paths are.

use super::camera_path::PathFrame;
use crate::data::colmap::quaternion_to_matrix;

type Vec3 = [f64; 3];

fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn add(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
fn scale(a: Vec3, s: f64) -> Vec3 {
    a.map(|v| v * s)
}
fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
pub(crate) fn cross(a: Vec3, b: Vec3) -> Vec3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
pub(crate) fn normalised(a: Vec3) -> Option<Vec3> {
    let length = dot(a, a).sqrt();
    (length > 1e-12 && length.is_finite()).then(|| scale(a, 1.0 / length))
}

/// The column `k` of a row-major matrix.
fn column(m: &[[f64; 3]; 3], k: usize) -> Vec3 {
    [m[0][k], m[1][k], m[2][k]]
}

/// A camera-to-world rotation (OpenGL: columns right, up, backward) for a camera at `eye`
/// looking at `target` with `up` as the world's up; `None` when the view is along `up`.
pub fn look_at(eye: Vec3, target: Vec3, up: Vec3) -> Option<[[f64; 3]; 3]> {
    let backward = normalised(sub(eye, target))?;
    let right = normalised(cross(up, backward))?;
    let true_up = cross(backward, right);
    Some([0, 1, 2].map(|i| [right[i], true_up[i], backward[i]]))
}

/// The world's up as the cameras see it: the mean of their up axes (OpenGL's second column).
pub fn mean_up(frames: &[PathFrame]) -> Option<Vec3> {
    let sum = frames
        .iter()
        .fold([0.0; 3], |acc, f| add(acc, column(&f.rotation, 1)));
    normalised(sum)
}

/// The point nearest to every camera's optical axis (least squares), where cameras pointed at
/// one subject look; the mean of the centres when the axes are parallel.
pub fn look_centre(frames: &[PathFrame]) -> Vec3 {
    let mut a = [[0.0; 3]; 3];
    let mut b = [0.0; 3];
    for frame in frames {
        let d = scale(column(&frame.rotation, 2), -1.0);
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
        let sum = frames.iter().fold([0.0; 3], |acc, f| add(acc, f.position));
        scale(sum, 1.0 / frames.len().max(1) as f64)
    })
}

/// Solves `a x = b` by Cramer's rule; `None` when `a` is near singular.
fn solve3(a: [[f64; 3]; 3], b: Vec3) -> Option<Vec3> {
    let det = |m: &[[f64; 3]; 3]| dot(m[0], cross(m[1], m[2]));
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
    let up = mean_up(cameras)?;
    let centre = look_centre(cameras);
    let n = cameras.len() as f64;
    let (mut height, mut radius) = (0.0, 0.0);
    for camera in cameras {
        let offset = sub(camera.position, centre);
        let h = dot(offset, up);
        height += h / n;
        radius += dot(sub(offset, scale(up, h)), sub(offset, scale(up, h))).sqrt() / n;
    }
    let first = sub(cameras[0].position, centre);
    let e1 = normalised(sub(first, scale(up, dot(first, up))))
        .or_else(|| normalised(cross(up, [1.0, 0.0, 0.0])))
        .or_else(|| normalised(cross(up, [0.0, 1.0, 0.0])))?;
    let e2 = cross(up, e1);
    let fov = cameras.iter().map(|c| c.fov_y_degrees).sum::<f64>() / n;
    (0..count)
        .map(|i| {
            let angle = std::f64::consts::TAU * i as f64 / count as f64;
            let around = add(scale(e1, angle.cos()), scale(e2, angle.sin()));
            let eye = add(centre, add(scale(around, radius), scale(up, height)));
            Some(PathFrame {
                rotation: look_at(eye, centre, up)?,
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
    let mut cos = a.iter().zip(&b).map(|(x, y)| x * y).sum::<f64>();
    let b = if cos < 0.0 {
        cos = -cos;
        b.map(|v| -v)
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
    let q: Vec<f64> = a.iter().zip(&b).map(|(x, y)| wa * x + wb * y).collect();
    let length = q.iter().map(|v| v * v).sum::<f64>().sqrt();
    [q[0] / length, q[1] / length, q[2] / length, q[3] / length]
}

/// The centripetal-free (uniform) Catmull-Rom point between `p1` and `p2` at `t` in [0, 1].
fn catmull_rom(p0: Vec3, p1: Vec3, p2: Vec3, p3: Vec3, t: f64) -> Vec3 {
    let (t2, t3) = (t * t, t * t * t);
    [0, 1, 2].map(|k| {
        0.5 * (2.0 * p1[k]
            + (p2[k] - p0[k]) * t
            + (2.0 * p0[k] - 5.0 * p1[k] + 4.0 * p2[k] - p3[k]) * t2
            + (3.0 * p1[k] - p0[k] - 3.0 * p2[k] + p3[k]) * t3)
    })
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
                key(add(centre, [3.0 * a.cos(), 1.0, 3.0 * a.sin()]), centre)
            })
            .collect();
        let found = look_centre(&keys);
        assert!(
            dot(sub(found, centre), sub(found, centre)).sqrt() < 1e-9,
            "{found:?}"
        );
        let frames = orbit(&keys, 12).unwrap();
        assert_eq!(frames.len(), 12);
        for frame in &frames {
            let to_centre = normalised(sub(centre, frame.position)).unwrap();
            let forward = scale(column(&frame.rotation, 2), -1.0);
            assert!(dot(to_centre, forward) > 1.0 - 1e-9, "{frame:?}");
            let offset = sub(frame.position, centre);
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
            assert!(
                dot(
                    sub(at.position, frame.position),
                    sub(at.position, frame.position)
                ) < 1e-18
            );
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

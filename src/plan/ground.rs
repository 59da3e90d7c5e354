//! The ground frame of a capture: the plane the partition is drawn on, found from the camera
//! centres and the cameras' up direction.
//!
//! - Up: when the camera centres lie close to a plane (a drone survey at one height, an orbit's
//!   cap), its normal, oriented by the cameras; otherwise the cameras' mean of image-up plus
//!   backward direction (OpenCV cameras look along +z with y down: a camera's image up in the
//!   world is minus the second row of its world-to-camera rotation, its backward direction minus
//!   the third), which is near the world's up for upright cameras looking from level to straight
//!   down. The plane's normal must agree with that hint within 60°.
//! - Axes on the plane: the principal directions of the centres projected onto it (`u` the
//!   longest), so quantile splits along `u` then `v` follow the capture's own layout.
//! - Origin: the mean centre, lowered along up to the median height of the sparse points (the
//!   ground, roughly); ground coordinates do not depend on it, only the recorded heights do.

use super::manifest::GroundFrame;
use crate::error::{Error, Result};
use crate::linalg::symmetric_eigen;
use crate::splat::Camera;

type V3 = [f64; 3];

fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn scale(a: V3, s: f64) -> V3 {
    a.map(|x| x * s)
}

fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn normalize(a: V3) -> Option<V3> {
    let n = dot(a, a).sqrt();
    (n > 1e-12 && n.is_finite()).then(|| scale(a, 1.0 / n))
}

fn widen(p: [f32; 3]) -> V3 {
    p.map(f64::from)
}

/// A camera's up direction in the world (minus its image's y axis).
pub fn camera_up(camera: &Camera) -> [f64; 3] {
    scale(widen(camera.rotation[1]), -1.0)
}

fn covariance(points: &[V3], mean: V3) -> [[f64; 3]; 3] {
    let mut c = [[0.0; 3]; 3];
    for p in points {
        let d = sub(*p, mean);
        for i in 0..3 {
            for j in 0..3 {
                c[i][j] += d[i] * d[j];
            }
        }
    }
    let n = points.len().max(1) as f64;
    c.map(|row| row.map(|x| x / n))
}

/// Fits the ground frame of `cameras` (the training cameras), with `points` (the sparse points,
/// possibly empty) placing the origin's height. Fails when there are no cameras or their up
/// vectors cancel out.
pub fn fit_ground_frame(cameras: &[&Camera], points: &[[f32; 3]]) -> Result<GroundFrame> {
    let fail = |why: &str| Error::InvalidArgument {
        op: "partition",
        detail: format!("cannot find the ground plane: {why}"),
    };
    if cameras.is_empty() {
        return Err(fail("the dataset has no training cameras"));
    }
    let centres: Vec<V3> = cameras.iter().map(|c| widen(c.position())).collect();
    let n = centres.len() as f64;
    let mean = centres
        .iter()
        .fold([0.0; 3], |acc, c| {
            [acc[0] + c[0], acc[1] + c[1], acc[2] + c[2]]
        })
        .map(|x| x / n);
    // A hint of up that holds for upright cameras looking anywhere from level to straight down:
    // their image up plus their backward direction (a nadir camera's image up is level, a
    // level camera's backward direction is).
    let hint_sum = cameras
        .iter()
        .fold([0.0; 3], |acc, c| {
            let u = camera_up(c);
            let back = scale(widen(c.rotation[2]), -1.0);
            [0, 1, 2].map(|k| acc[k] + u[k] + back[k])
        })
        .map(|x| x / n);
    let hint = normalize(hint_sum).ok_or_else(|| {
        fail("the cameras' up directions cancel out; give a capture whose images are upright")
    })?;
    let (values, vectors) = symmetric_eigen(covariance(&centres, mean));
    // Centres clearly on a plane (a survey at one height, an orbit's cap) whose normal is
    // within 60° of the hint: the plane's normal is up. Otherwise the hint is.
    let normal = vectors[0];
    let planar = values[0] < 0.25 * values[1];
    let up = if planar && dot(normal, hint).abs() > 60f64.to_radians().cos() {
        scale(normal, dot(normal, hint).signum())
    } else {
        hint
    };
    // The principal direction of the centres on the plane: the largest eigenvector of the
    // covariance projected onto it (falling back to any direction on the plane).
    let projected: Vec<V3> = centres
        .iter()
        .map(|c| {
            let d = sub(*c, mean);
            sub(d, scale(up, dot(d, up)))
        })
        .collect();
    let (_, plane_vectors) = symmetric_eigen(covariance(&projected, [0.0; 3]));
    let helper = if up[0].abs() < 0.9 {
        [1.0, 0.0, 0.0]
    } else {
        [0.0, 1.0, 0.0]
    };
    let u = plane_vectors
        .iter()
        .rev()
        .find_map(|&e| normalize(sub(e, scale(up, dot(e, up)))))
        .or_else(|| normalize(cross(up, helper)))
        .ok_or_else(|| fail("degenerate camera layout"))?;
    let v = cross(up, u);
    let mut heights: Vec<f64> = points
        .iter()
        .map(|p| dot(sub(widen(*p), mean), up))
        .filter(|h| h.is_finite())
        .collect();
    heights.sort_by(f64::total_cmp);
    let ground_height = heights.get(heights.len() / 2).copied().unwrap_or(0.0);
    Ok(GroundFrame {
        origin: [0, 1, 2].map(|k| mean[k] + up[k] * ground_height),
        u,
        v,
        up,
    })
}

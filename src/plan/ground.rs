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

use glam::DVec3;

use super::manifest::GroundFrame;
use crate::error::{Error, Result};
use crate::linalg::{symmetric_eigen, unit};
use crate::splat::Camera;

fn widen(p: [f32; 3]) -> DVec3 {
    DVec3::from(p.map(f64::from))
}

/// A camera's up direction in the world (minus its image's y axis).
pub fn camera_up(camera: &Camera) -> [f64; 3] {
    (-widen(camera.rotation[1])).to_array()
}

fn covariance(points: &[DVec3], mean: DVec3) -> [[f64; 3]; 3] {
    let mut c = [[0.0; 3]; 3];
    for p in points {
        let d = *p - mean;
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
    let centres: Vec<DVec3> = cameras.iter().map(|c| widen(c.position())).collect();
    let n = centres.len() as f64;
    let mean = centres.iter().fold(DVec3::ZERO, |acc, c| acc + *c) / n;
    // A hint of up that holds for upright cameras looking anywhere from level to straight down:
    // their image up plus their backward direction (a nadir camera's image up is level, a
    // level camera's backward direction is).
    let hint_sum = cameras.iter().fold(DVec3::ZERO, |acc, c| {
        acc + DVec3::from(camera_up(c)) - widen(c.rotation[2])
    }) / n;
    let hint = unit(hint_sum).ok_or_else(|| {
        fail("the cameras' up directions cancel out; give a capture whose images are upright")
    })?;
    let (values, vectors) = symmetric_eigen(covariance(&centres, mean));
    // Centres clearly on a plane (a survey at one height, an orbit's cap) whose normal is
    // within 60° of the hint: the plane's normal is up. Otherwise the hint is.
    let normal = DVec3::from(vectors[0]);
    let planar = values[0] < 0.25 * values[1];
    let up = if planar && normal.dot(hint).abs() > 60f64.to_radians().cos() {
        normal * normal.dot(hint).signum()
    } else {
        hint
    };
    // The principal direction of the centres on the plane: the largest eigenvector of the
    // covariance projected onto it (falling back to any direction on the plane).
    let projected: Vec<DVec3> = centres
        .iter()
        .map(|c| {
            let d = *c - mean;
            d - up * d.dot(up)
        })
        .collect();
    let (_, plane_vectors) = symmetric_eigen(covariance(&projected, DVec3::ZERO));
    let helper = if up.x.abs() < 0.9 { DVec3::X } else { DVec3::Y };
    let u = plane_vectors
        .iter()
        .rev()
        .map(|&e| DVec3::from(e))
        .find_map(|e| unit(e - up * e.dot(up)))
        .or_else(|| unit(up.cross(helper)))
        .ok_or_else(|| fail("degenerate camera layout"))?;
    let v = up.cross(u);
    let mut heights: Vec<f64> = points
        .iter()
        .map(|p| (widen(*p) - mean).dot(up))
        .filter(|h| h.is_finite())
        .collect();
    heights.sort_by(f64::total_cmp);
    let ground_height = heights.get(heights.len() / 2).copied().unwrap_or(0.0);
    Ok(GroundFrame {
        origin: (mean + up * ground_height).to_array(),
        u: u.to_array(),
        v: v.to_array(),
        up: up.to_array(),
    })
}

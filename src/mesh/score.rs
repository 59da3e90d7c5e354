//! How close a mesh is to a true surface given as points sampled on it: points are sampled on
//! the mesh uniformly by area ([`sample_surface`]), and each set's nearest-point distances to the
//! other (through [`PointTree`]) give the accuracy (mesh → truth), completeness (truth → mesh),
//! their mean (the Chamfer distance), and, at a distance threshold, the precision (mesh points
//! near the truth), recall (true points near the mesh) and their harmonic mean, the F-score.
//!
//! Sampled points stand for the surfaces, so even a perfect mesh scores a small positive Chamfer
//! distance of the order of the samples' spacing; sample densely against thresholds near it.

use super::{Mesh, triangle_area};
use crate::error::{Error, Result};
use crate::geometry::PointTree;
use crate::rng::SplitMix64;

/// The comparison of a mesh with a true surface ([`score`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeshScore {
    /// Mean distance from the mesh's samples to the nearest true point.
    pub accuracy: f64,
    /// Mean distance from the true points to the nearest mesh sample.
    pub completeness: f64,
    /// (accuracy + completeness) / 2.
    pub chamfer: f64,
    /// The distance threshold of the three below.
    pub threshold: f32,
    /// Fraction of mesh samples within `threshold` of the truth.
    pub precision: f64,
    /// Fraction of true points within `threshold` of the mesh's samples.
    pub recall: f64,
    /// 2 · precision · recall / (precision + recall) (0 when both are 0).
    pub f_score: f64,
    /// Points sampled on the mesh.
    pub mesh_samples: usize,
}

/// `count` points on the triangles of `mesh`, uniform by area, deterministic in `seed`.
pub fn sample_surface(mesh: &Mesh, count: usize, seed: u64) -> Vec<[f32; 3]> {
    let mut cumulative = Vec::with_capacity(mesh.triangles.len());
    let mut total = 0.0;
    for t in &mesh.triangles {
        total += triangle_area(mesh, *t);
        cumulative.push(total);
    }
    if total <= 0.0 || !total.is_finite() {
        return Vec::new();
    }
    let mut rng = SplitMix64::new(seed);
    (0..count)
        .map(|_| {
            let pick = f64::from(rng.unit()) * total;
            let k = cumulative
                .partition_point(|&c| c <= pick)
                .min(mesh.triangles.len() - 1);
            let p = mesh.triangles[k].map(|i| glam::Vec3::from(mesh.positions[i as usize]));
            let (mut a, mut b) = (rng.unit(), rng.unit());
            if a + b > 1.0 {
                (a, b) = (1.0 - a, 1.0 - b);
            }
            (p[0] + (p[1] - p[0]) * a + (p[2] - p[0]) * b).to_array()
        })
        .collect()
}

/// Scores `mesh` against `truth` (points sampled on the true surface) at `threshold`: as many
/// points are sampled on the mesh as `truth` holds (at least 1000). Errors for an empty mesh or
/// truth, or a threshold that is not positive and finite.
pub fn score(mesh: &Mesh, truth: &[[f32; 3]], threshold: f32) -> Result<MeshScore> {
    let invalid = |detail: String| Error::InvalidArgument {
        op: "mesh score",
        detail,
    };
    if !(threshold.is_finite() && threshold > 0.0) {
        return Err(invalid(format!(
            "threshold {threshold} must be positive and finite"
        )));
    }
    let truth: Vec<[f32; 3]> = truth
        .iter()
        .copied()
        .filter(|p| p.iter().all(|v| v.is_finite()))
        .collect();
    if truth.is_empty() {
        return Err(invalid(
            "no finite true surface point to compare with".into(),
        ));
    }
    let samples = sample_surface(mesh, truth.len().max(1000), 0x6d65_7368);
    if samples.is_empty() || samples.iter().any(|p| p.iter().any(|v| !v.is_finite())) {
        return Err(invalid(format!(
            "the mesh ({} triangles, area {}) has no finite surface to sample",
            mesh.triangles.len(),
            mesh.area()
        )));
    }
    let (accuracy, precision) = distances(&samples, &PointTree::new(&truth), threshold);
    let (completeness, recall) = distances(&truth, &PointTree::new(&samples), threshold);
    let f_score = match precision + recall {
        s if s > 0.0 => 2.0 * precision * recall / s,
        _ => 0.0,
    };
    Ok(MeshScore {
        accuracy,
        completeness,
        chamfer: 0.5 * (accuracy + completeness),
        threshold,
        precision,
        recall,
        f_score,
        mesh_samples: samples.len(),
    })
}

/// The mean distance from `from` to the nearest point in `to`, and the fraction within
/// `threshold`.
fn distances(from: &[[f32; 3]], to: &PointTree, threshold: f32) -> (f64, f64) {
    let (mut sum, mut within) = (0.0, 0usize);
    for &p in from {
        let d = to.nearest(p).map_or(f32::INFINITY, |(d, _)| d);
        sum += f64::from(d);
        within += usize::from(d <= threshold);
    }
    let n = from.len() as f64;
    (sum / n, within as f64 / n)
}

/// The least-squares sphere through `points` (|p|² = 2 c·p + r² − |c|², solved in double
/// precision): (centre, radius), or `None` for fewer than four points or points on one plane.
pub fn fit_sphere(points: &[[f32; 3]]) -> Option<([f64; 3], f64)> {
    if points.len() < 4 {
        return None;
    }
    let (mut a, mut b) = (glam::DMat4::ZERO, glam::DVec4::ZERO);
    for p in points {
        let p = p.map(f64::from);
        let row = glam::DVec4::new(2.0 * p[0], 2.0 * p[1], 2.0 * p[2], 1.0);
        a += glam::DMat4::from_cols(row * row.x, row * row.y, row * row.z, row * row.w);
        b += row * (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
    }
    let det = a.determinant();
    if det == 0.0 || !det.is_finite() {
        return None;
    }
    let x = a.inverse() * b;
    let c = [x.x, x.y, x.z];
    let r2 = x.w + c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
    (r2 > 0.0 && r2.is_finite()).then(|| (c, r2.sqrt()))
}

/// [`fit_sphere`] through the points within `band` × `radius` of the surface of the sphere
/// (`centre`, `radius`) that also pass `keep` (to leave out where other objects touch it): how
/// a known sphere in a scene is measured in a mesh. `None` with fewer than 100 such points.
pub fn fit_sphere_near(
    points: &[[f32; 3]],
    centre: [f32; 3],
    radius: f32,
    band: f32,
    keep: impl Fn(&[f32; 3]) -> bool,
) -> Option<([f64; 3], f64)> {
    let near: Vec<[f32; 3]> = points
        .iter()
        .filter(|p| {
            let d = (0..3)
                .map(|k| (p[k] - centre[k]).powi(2))
                .sum::<f32>()
                .sqrt();
            (d - radius).abs() <= band * radius && keep(p)
        })
        .copied()
        .collect();
    if near.len() < 100 {
        return None;
    }
    fit_sphere(&near)
}

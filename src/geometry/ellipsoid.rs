//! Distances between segments and a Gaussian's ellipsoid: the Mahalanobis distance of a segment
//! under the Gaussian's covariance ([`whitened_distance`]) and the Euclidean gap between a segment
//! and the ellipsoid of a number of standard deviations ([`segment_ellipsoid_distance`]).

use glam::Vec3;

/// The Mahalanobis distance from `mean` to the segment `a`–`b` under the covariance of scales
/// `scales` and rotation `rotation` (row-major, columns the axes): the segment mapped into the
/// Gaussian's whitened frame, where its distance to the origin is a plain point-to-segment
/// distance (a linear map keeps a segment a segment).
pub fn whitened_distance(
    mean: [f32; 3],
    scales: [f32; 3],
    rotation: [[f32; 3]; 3],
    a: [f32; 3],
    b: [f32; 3],
) -> f32 {
    let whiten = |p: [f32; 3]| {
        let local = local(mean, rotation, p);
        [0, 1, 2].map(|k| local[k] / scales[k].max(f32::MIN_POSITIVE))
    };
    segment_distance([0.0; 3], whiten(a), whiten(b))
}

/// The Euclidean distance from `p` to the segment `a`–`b`.
pub fn segment_distance(p: [f32; 3], a: [f32; 3], b: [f32; 3]) -> f32 {
    let (p, a, b) = (Vec3::from(p), Vec3::from(a), Vec3::from(b));
    let ab = b - a;
    let length2 = ab.dot(ab);
    let t = match length2 > 0.0 {
        true => ((p - a).dot(ab) / length2).clamp(0.0, 1.0),
        false => 0.0,
    };
    (p - (a + t * ab)).length()
}

/// The Euclidean distance between the segment `a`–`b` and the ellipsoid of `sigmas` standard
/// deviations of the Gaussian at `mean` with scales `scales` and rotation `rotation`: 0 when
/// they meet. The distance from a moving point to a convex set is convex along a segment, so a
/// golden-section search over the segment finds it, each point's distance to the ellipsoid from
/// the root of its Lagrange condition.
pub fn segment_ellipsoid_distance(
    mean: [f32; 3],
    scales: [f32; 3],
    rotation: [[f32; 3]; 3],
    sigmas: f32,
    a: [f32; 3],
    b: [f32; 3],
) -> f32 {
    let axes = scales.map(|s| f64::from(sigmas) * f64::from(s.max(f32::MIN_POSITIVE)));
    let (la, lb) = (local(mean, rotation, a), local(mean, rotation, b));
    let at = |t: f64| {
        let p = [0, 1, 2].map(|k| f64::from(la[k]) + t * (f64::from(lb[k]) - f64::from(la[k])));
        point_ellipsoid_distance(p, axes)
    };
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    let (mut x1, mut x2) = (hi - ratio * (hi - lo), lo + ratio * (hi - lo));
    let (mut f1, mut f2) = (at(x1), at(x2));
    let mut best = at(0.0).min(at(1.0)).min(f1).min(f2);
    for _ in 0..60 {
        if best == 0.0 {
            break;
        }
        if f1 <= f2 {
            hi = x2;
            (x2, f2) = (x1, f1);
            x1 = hi - ratio * (hi - lo);
            f1 = at(x1);
            best = best.min(f1);
        } else {
            lo = x1;
            (x1, f1) = (x2, f2);
            x2 = lo + ratio * (hi - lo);
            f2 = at(x2);
            best = best.min(f2);
        }
    }
    best as f32
}

/// The distance from `p` to the axis-aligned ellipsoid of semi-axes `axes` centred at the origin
/// (0 inside): the nearest point is `axes² p / (axes² + λ)` for the λ ≥ 0 that puts it on the
/// surface, found by Newton's method, which approaches the root from below without passing it
/// (the condition is convex and decreasing in λ).
fn point_ellipsoid_distance(p: [f64; 3], axes: [f64; 3]) -> f64 {
    if !p.iter().chain(&axes).all(|v| v.is_finite()) {
        return f64::INFINITY;
    }
    // Infinite for a point off a zero-width axis: outside.
    let inside: f64 = (0..3).map(|k| (p[k] / axes[k]).powi(2)).sum();
    if inside <= 1.0 {
        return 0.0;
    }
    // The root lies past each axis's own: a term alone reaches 1 at `a |p| − a²`.
    let mut lambda = (0..3)
        .map(|k| axes[k] * p[k].abs() - axes[k] * axes[k])
        .fold(0.0f64, f64::max);
    for _ in 0..200 {
        let (mut g, mut dg) = (-1.0f64, 0.0f64);
        for k in 0..3 {
            let a2 = axes[k] * axes[k];
            let term = axes[k] * p[k] / (a2 + lambda);
            g += term * term;
            dg -= 2.0 * term * term / (a2 + lambda);
        }
        if g <= 1e-12 || dg >= 0.0 {
            break;
        }
        let step = -g / dg;
        lambda += step;
        if step <= 1e-15 * lambda {
            break;
        }
    }
    let nearest = [0, 1, 2].map(|k| {
        let a2 = axes[k] * axes[k];
        a2 * p[k] / (a2 + lambda)
    });
    (0..3)
        .map(|k| (p[k] - nearest[k]).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// `p` in the frame of the Gaussian at `mean` with rotation `rotation`: `Rᵀ (p − mean)`.
fn local(mean: [f32; 3], rotation: [[f32; 3]; 3], p: [f32; 3]) -> [f32; 3] {
    let d = Vec3::from(p) - Vec3::from(mean);
    [0, 1, 2].map(|k| rotation[0][k] * d[0] + rotation[1][k] * d[1] + rotation[2][k] * d[2])
}

#[cfg(test)]
#[path = "ellipsoid_tests.rs"]
mod tests;

//! CPU references for [`mean_sq_dist_3nn`](super::mean_sq_dist_3nn): the exact f32 expressions the
//! kernels use, and an O(N²) brute force for tests.

use super::{MIN_MEAN_SQ_DIST, NEIGHBOURS};

/// Squared distance `dx*dx + dy*dy + dz*dz` in f32, evaluated in the same order as the kernels.
pub fn squared_distance(a: [f32; 3], b: [f32; 3]) -> f32 {
    let (dx, dy, dz) = (b[0] - a[0], b[1] - a[1], b[2] - a[2]);
    dx * dx + dy * dy + dz * dz
}

/// The result for one point from the squared distances to its nearest other points, ascending
/// (at most [`NEIGHBOURS`] are used): their mean, summed and scaled exactly as the kernel does,
/// clamped below at [`MIN_MEAN_SQ_DIST`]. With no other point the mean is 0, so the clamp gives
/// [`MIN_MEAN_SQ_DIST`].
pub fn mean_of_nearest(ascending: &[f32]) -> f32 {
    let used = &ascending[..ascending.len().min(NEIGHBOURS)];
    let inv = if used.is_empty() {
        0.0
    } else {
        1.0 / used.len() as f32
    };
    let sum = used.iter().fold(0.0f32, |acc, &d| acc + d);
    (sum * inv).max(MIN_MEAN_SQ_DIST)
}

/// The 3 smallest squared distances from point `query` to every other point, ascending.
pub fn nearest_squared_distances(points: &[[f32; 3]], query: usize) -> Vec<f32> {
    let mut best = [f32::INFINITY; NEIGHBOURS];
    let mut found = 0;
    for (j, &p) in points.iter().enumerate() {
        if j == query {
            continue;
        }
        found += 1;
        let d = squared_distance(points[query], p);
        if d < best[NEIGHBOURS - 1] {
            let mut k = NEIGHBOURS - 1;
            while k > 0 && best[k - 1] > d {
                best[k] = best[k - 1];
                k -= 1;
            }
            best[k] = d;
        }
    }
    best[..found.min(NEIGHBOURS)].to_vec()
}

/// Brute-force [`mean_sq_dist_3nn`](super::mean_sq_dist_3nn) on the CPU: O(N²), for tests.
pub fn mean_sq_dist_3nn_brute_force(points: &[[f32; 3]]) -> Vec<f32> {
    (0..points.len())
        .map(|i| mean_of_nearest(&nearest_squared_distances(points, i)))
        .collect()
}

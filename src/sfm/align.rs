//! Similarity alignment of two point sets (Horn's closed form with unit quaternions, the scale as
//! Umeyama's): two reconstructions of one capture agree only up to scale, rotation and
//! translation, so their camera centres are compared after aligning one onto the other.

use crate::data::colmap::quaternion_to_matrix;

/// `target ≈ scale · rotation · source + translation`.
#[derive(Clone, Debug, PartialEq)]
pub struct Similarity {
    /// Uniform scale.
    pub scale: f64,
    /// Rotation, row-major.
    pub rotation: [[f64; 3]; 3],
    /// Translation.
    pub translation: [f64; 3],
}

impl Similarity {
    /// Applies the transform to `p`.
    pub fn apply(&self, p: [f64; 3]) -> [f64; 3] {
        let r = &self.rotation;
        std::array::from_fn(|i| {
            self.scale * (r[i][0] * p[0] + r[i][1] * p[1] + r[i][2] * p[2]) + self.translation[i]
        })
    }
}

fn centroid(points: &[[f64; 3]]) -> [f64; 3] {
    let n = points.len().max(1) as f64;
    std::array::from_fn(|k| points.iter().map(|p| p[k]).sum::<f64>() / n)
}

/// Eigen-decomposition of a symmetric 4×4 matrix by cyclic Jacobi rotations: the eigenvalues and
/// the eigenvectors (as columns of the second value).
fn jacobi_eigen(mut a: [[f64; 4]; 4]) -> ([f64; 4], [[f64; 4]; 4]) {
    let mut v = [[0.0; 4]; 4];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for _sweep in 0..64 {
        let off: f64 = (0..4)
            .flat_map(|i| (0..4).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..3 {
            for q in p + 1..4 {
                if a[p][q].abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for row in a.iter_mut() {
                    let (akp, akq) = (row[p], row[q]);
                    row[p] = c * akp - s * akq;
                    row[q] = s * akp + c * akq;
                }
                let (row_p, row_q) = (a[p], a[q]);
                for (k, (apk, aqk)) in row_p.into_iter().zip(row_q).enumerate() {
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for row in v.iter_mut() {
                    let (vp, vq) = (row[p], row[q]);
                    row[p] = c * vp - s * vq;
                    row[q] = s * vp + c * vq;
                }
            }
        }
    }
    ([a[0][0], a[1][1], a[2][2], a[3][3]], v)
}

/// The similarity that best maps `source` onto `target` (least squares over corresponding
/// points), or `None` with fewer than 3 pairs, unequal lengths or a degenerate source.
pub fn align(source: &[[f64; 3]], target: &[[f64; 3]]) -> Option<Similarity> {
    if source.len() != target.len() || source.len() < 3 {
        return None;
    }
    let (ca, cb) = (centroid(source), centroid(target));
    let mut s = [[0.0f64; 3]; 3];
    let mut source_norm = 0.0;
    for (a, b) in source.iter().zip(target) {
        let a: [f64; 3] = std::array::from_fn(|k| a[k] - ca[k]);
        let b: [f64; 3] = std::array::from_fn(|k| b[k] - cb[k]);
        source_norm += a.iter().map(|x| x * x).sum::<f64>();
        for i in 0..3 {
            for j in 0..3 {
                s[i][j] += a[i] * b[j];
            }
        }
    }
    if source_norm <= 0.0 {
        return None;
    }
    let [[sxx, sxy, sxz], [syx, syy, syz], [szx, szy, szz]] = s;
    let n = [
        [sxx + syy + szz, syz - szy, szx - sxz, sxy - syx],
        [syz - szy, sxx - syy - szz, sxy + syx, szx + sxz],
        [szx - sxz, sxy + syx, -sxx + syy - szz, syz + szy],
        [sxy - syx, szx + sxz, syz + szy, -sxx - syy + szz],
    ];
    let (values, vectors) = jacobi_eigen(n);
    let best = (0..4).max_by(|&i, &j| values[i].total_cmp(&values[j]))?;
    let q = [
        vectors[0][best],
        vectors[1][best],
        vectors[2][best],
        vectors[3][best],
    ];
    let rotation = quaternion_to_matrix(q);
    let mut dot = 0.0;
    for (a, b) in source.iter().zip(target) {
        let a: [f64; 3] = std::array::from_fn(|k| a[k] - ca[k]);
        let ra: [f64; 3] = std::array::from_fn(|i| (0..3).map(|k| rotation[i][k] * a[k]).sum());
        dot += (0..3).map(|k| ra[k] * (b[k] - cb[k])).sum::<f64>();
    }
    let scale = dot / source_norm;
    let rca: [f64; 3] = std::array::from_fn(|i| (0..3).map(|k| rotation[i][k] * ca[k]).sum());
    let translation = std::array::from_fn(|k| cb[k] - scale * rca[k]);
    Some(Similarity {
        scale,
        rotation,
        translation,
    })
}

/// The root-mean-square distance between `transform(source)` and `target`.
pub fn rms_residual(transform: &Similarity, source: &[[f64; 3]], target: &[[f64; 3]]) -> f64 {
    let n = source.len().max(1) as f64;
    let sum: f64 = source
        .iter()
        .zip(target)
        .map(|(a, b)| {
            let m = transform.apply(*a);
            (0..3).map(|k| (m[k] - b[k]).powi(2)).sum::<f64>()
        })
        .sum();
    (sum / n).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_similarity_is_recovered() {
        let source: Vec<[f64; 3]> = (0..12)
            .map(|i| {
                let t = i as f64;
                [t.sin() * 3.0, (t * 0.7).cos() * 2.0, t * 0.25 - 1.0]
            })
            .collect();
        let truth = Similarity {
            scale: 2.5,
            rotation: quaternion_to_matrix({
                let q: [f64; 4] = [0.8, 0.1, -0.5, 0.3];
                let n = q.iter().map(|x| x * x).sum::<f64>().sqrt();
                q.map(|x| x / n)
            }),
            translation: [4.0, -2.0, 7.5],
        };
        let target: Vec<[f64; 3]> = source.iter().map(|p| truth.apply(*p)).collect();
        let found = align(&source, &target).unwrap();
        assert!((found.scale - truth.scale).abs() < 1e-9, "{found:?}");
        assert!(rms_residual(&found, &source, &target) < 1e-9);
        // A moved point shows in the residual: the check can fail.
        let mut moved = target.clone();
        moved[3][0] += 1.0;
        let refit = align(&source, &moved).unwrap();
        assert!(rms_residual(&refit, &source, &moved) > 0.1);
        assert!(align(&source[..2], &target[..2]).is_none());
    }
}

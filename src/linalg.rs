//! Small dense linear algebra in f64 beyond what [glam] (the vectors and matrices all host-side
//! maths uses) offers, shared by the ground frame of a partition plan, the merged Gaussians of a
//! level-of-detail tree, camera paths and captures.

use glam::DVec3;

/// `v` scaled to unit length; `None` when its length is at most 1e-12 or not finite, a direction
/// rounding could have made up (glam's `try_normalize` takes any non-zero length).
pub fn unit(v: DVec3) -> Option<DVec3> {
    (v.length() > 1e-12).then(|| v.try_normalize()).flatten()
}

/// Eigenvalues (ascending) and unit eigenvectors of a symmetric 3×3 matrix, by Jacobi rotations.
pub fn symmetric_eigen(mut a: [[f64; 3]; 3]) -> ([f64; 3], [[f64; 3]; 3]) {
    let mut v = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    for _ in 0..50 {
        let (p, q) = [(0, 1), (0, 2), (1, 2)]
            .into_iter()
            .max_by(|&(i, j), &(k, l)| a[i][j].abs().total_cmp(&a[k][l].abs()))
            .unwrap_or((0, 1));
        if a[p][q].abs() < 1e-15 * (a[p][p].abs() + a[q][q].abs()).max(1e-300) {
            break;
        }
        let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
        let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
        let t = if theta == 0.0 { 1.0 } else { t };
        let c = 1.0 / (t * t + 1.0).sqrt();
        let s = t * c;
        for row in &mut a {
            let (akp, akq) = (row[p], row[q]);
            row[p] = c * akp - s * akq;
            row[q] = s * akp + c * akq;
        }
        let (row_p, row_q) = (a[p], a[q]);
        a[p] = std::array::from_fn(|k| c * row_p[k] - s * row_q[k]);
        a[q] = std::array::from_fn(|k| s * row_p[k] + c * row_q[k]);
        for row in &mut v {
            let (vp, vq) = (row[p], row[q]);
            row[p] = c * vp - s * vq;
            row[q] = s * vp + c * vq;
        }
    }
    let mut order = [0, 1, 2];
    order.sort_by(|&i, &j| a[i][i].total_cmp(&a[j][j]));
    let values = order.map(|i| a[i][i]);
    let vectors = order.map(|i| [v[0][i], v[1][i], v[2][i]]);
    (values, vectors)
}

/// Hamilton quaternion (w, x, y, z) of a rotation matrix (Shepperd's method).
pub fn matrix_to_quaternion(m: &[[f64; 3]; 3]) -> [f64; 4] {
    let trace = m[0][0] + m[1][1] + m[2][2];
    let q = if trace > 0.0 {
        let s = 2.0 * (trace + 1.0).sqrt();
        [
            0.25 * s,
            (m[2][1] - m[1][2]) / s,
            (m[0][2] - m[2][0]) / s,
            (m[1][0] - m[0][1]) / s,
        ]
    } else if m[0][0] > m[1][1] && m[0][0] > m[2][2] {
        let s = 2.0 * (1.0 + m[0][0] - m[1][1] - m[2][2]).sqrt();
        [
            (m[2][1] - m[1][2]) / s,
            0.25 * s,
            (m[0][1] + m[1][0]) / s,
            (m[0][2] + m[2][0]) / s,
        ]
    } else if m[1][1] > m[2][2] {
        let s = 2.0 * (1.0 + m[1][1] - m[0][0] - m[2][2]).sqrt();
        [
            (m[0][2] - m[2][0]) / s,
            (m[0][1] + m[1][0]) / s,
            0.25 * s,
            (m[1][2] + m[2][1]) / s,
        ]
    } else {
        let s = 2.0 * (1.0 + m[2][2] - m[0][0] - m[1][1]).sqrt();
        [
            (m[1][0] - m[0][1]) / s,
            (m[0][2] + m[2][0]) / s,
            (m[1][2] + m[2][1]) / s,
            0.25 * s,
        ]
    };
    let norm = q.iter().map(|v| v * v).sum::<f64>().sqrt();
    q.map(|v| v / norm)
}

/// The world-to-camera rotation (rows: right, down, forward; OpenCV's axes) of a camera at `eye`
/// looking at `target` with `up` upwards in its image; `None` when the view runs along `up` or
/// `eye` is `target`.
pub fn look_at_rows(eye: [f64; 3], target: [f64; 3], up: [f64; 3]) -> Option<[[f64; 3]; 3]> {
    let forward = unit(DVec3::from(target) - DVec3::from(eye))?;
    let right = unit(forward.cross(DVec3::from(up)))?;
    let down = forward.cross(right);
    Some([right.to_array(), down.to_array(), forward.to_array()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eigen_of_a_diagonal_and_a_rotated_matrix() {
        let (values, vectors) =
            symmetric_eigen([[3.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]]);
        assert_eq!(values, [1.0, 2.0, 3.0]);
        assert!((vectors[0][1].abs() - 1.0).abs() < 1e-12);
        // [[2, 1], [1, 2]] ⊕ [5]: eigenvalues 1, 3, 5.
        let (values, vectors) =
            symmetric_eigen([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 5.0]]);
        for (got, want) in values.iter().zip([1.0, 3.0, 5.0]) {
            assert!((got - want).abs() < 1e-9, "{values:?}");
        }
        let s = 0.5f64.sqrt();
        let dot = DVec3::from(vectors[0]).dot(DVec3::new(s, -s, 0.0));
        assert!((dot.abs() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn unit_refuses_vectors_too_short_or_not_finite() {
        let v = unit(DVec3::new(3.0, 0.0, 4.0)).unwrap();
        assert!(
            (v - DVec3::new(0.6, 0.0, 0.8)).abs().max_element() < 1e-15,
            "{v}"
        );
        assert_eq!(unit(DVec3::new(1e-13, 0.0, 0.0)), None);
        assert_eq!(unit(DVec3::new(f64::INFINITY, 0.0, 0.0)), None);
        assert_eq!(unit(DVec3::new(f64::NAN, 1.0, 0.0)), None);
        assert!(unit(DVec3::new(2e-12, 0.0, 0.0)).is_some());
    }
}

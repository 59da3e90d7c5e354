//! The merged Gaussian that stands in for a group of Gaussians in a level-of-detail tree
//! (Hierarchical 3DGS's merge, Kerbl et al. 2024):
//!
//! - each member weighs `w = α · π · s₁ · s₂`, its opacity times the area of its largest cross
//!   section (s₁ ≥ s₂ its two largest scales), the view-independent stand-in for its projected area;
//! - mean and covariance are moment-matched: `μ = Σ wᵢ μᵢ / Σ wᵢ`,
//!   `Σ = Σ wᵢ (Σᵢ + (μᵢ − μ)(μᵢ − μ)ᵀ) / Σ wᵢ`, then split into scales and a rotation;
//! - colour and SH are the weighted means of the members';
//! - opacity keeps the covered area: `α = min(Σ αᵢ Aᵢ / A, 0.99)` with `A = π s₁ s₂` of the merged
//!   Gaussian, so a group of faint or small members does not become one opaque blob.
//!
//! Everything is computed in f64 and stored in the pre-activation form of [`CpuGaussians`].

use crate::linalg::{matrix_to_quaternion, symmetric_eigen};
use crate::splat::reference::{CpuGaussians, quat_to_matrix};

/// Most opacity a merged Gaussian takes.
pub const MAX_MERGED_OPACITY: f64 = 0.99;
/// Smallest scale a merged Gaussian takes (a group of coincident points has zero spread).
const MIN_SCALE: f64 = 1e-7;

/// A Gaussian in activated form, f64: what the merge reads and writes.
#[derive(Clone, Debug, PartialEq)]
pub struct Moments {
    /// Centre.
    pub mean: [f64; 3],
    /// Covariance `R S² Rᵀ`.
    pub covariance: [[f64; 3]; 3],
    /// Opacity in `[0, 1]`.
    pub opacity: f64,
    /// SH coefficients, index 0 = DC.
    pub sh: [[f64; 3]; 16],
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn logit(p: f64) -> f64 {
    let p = p.clamp(1e-6, 1.0 - 1e-6);
    (p / (1.0 - p)).ln()
}

/// The two largest of three scales' product times π: a Gaussian's largest cross-section area.
fn cross_section(scales: [f64; 3]) -> f64 {
    let mut s = scales;
    s.sort_by(|a, b| b.total_cmp(a));
    std::f64::consts::PI * s[0] * s[1]
}

/// Gaussian `i` of `g` in activated form.
pub fn moments_of(g: &CpuGaussians, i: usize) -> Moments {
    let scales = g.log_scales[i].map(|v| f64::from(v).exp());
    let r = quat_to_matrix(g.quats[i]).map(|row| row.map(f64::from));
    let mut covariance = [[0.0; 3]; 3];
    for (a, row) in covariance.iter_mut().enumerate() {
        for (b, value) in row.iter_mut().enumerate() {
            *value = (0..3)
                .map(|k| r[a][k] * scales[k] * scales[k] * r[b][k])
                .sum();
        }
    }
    Moments {
        mean: g.means[i].map(f64::from),
        covariance,
        opacity: sigmoid(f64::from(g.opacity_logits[i])),
        sh: g.sh[i].map(|c| c.map(f64::from)),
    }
}

/// The scales (ascending eigenvalues' square roots) and unit rotation (w, x, y, z) of a
/// covariance matrix.
pub fn scales_and_rotation(covariance: &[[f64; 3]; 3]) -> ([f64; 3], [f64; 4]) {
    let (values, vectors) = symmetric_eigen(*covariance);
    let scales = values.map(|v| v.max(MIN_SCALE * MIN_SCALE).sqrt());
    // Columns of R are the eigenvectors; make it a rotation (determinant +1).
    let [a, b, mut c] = vectors;
    let det = a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
        + a[2] * (b[0] * c[1] - b[1] * c[0]);
    if det < 0.0 {
        c = c.map(|v| -v);
    }
    let m = [[a[0], b[0], c[0]], [a[1], b[1], c[1]], [a[2], b[2], c[2]]];
    (scales, matrix_to_quaternion(&m))
}

/// The merged Gaussian of `members` (at least one), in activated form.
pub fn merge_moments(members: &[Moments]) -> Moments {
    let weights: Vec<f64> = members
        .iter()
        .map(|m| {
            let (scales, _) = scales_and_rotation(&m.covariance);
            (m.opacity * cross_section(scales)).max(1e-30)
        })
        .collect();
    let total: f64 = weights.iter().sum();
    let mut mean = [0.0; 3];
    for (m, w) in members.iter().zip(&weights) {
        for (acc, v) in mean.iter_mut().zip(m.mean) {
            *acc += w * v / total;
        }
    }
    let mut covariance = [[0.0; 3]; 3];
    let mut sh = [[0.0; 3]; 16];
    let mut covered = 0.0;
    for (m, w) in members.iter().zip(&weights) {
        let d = [0, 1, 2].map(|k| m.mean[k] - mean[k]);
        for a in 0..3 {
            for b in 0..3 {
                covariance[a][b] += w * (m.covariance[a][b] + d[a] * d[b]) / total;
            }
        }
        for (acc, c) in sh.iter_mut().zip(&m.sh) {
            for (a, v) in acc.iter_mut().zip(c) {
                *a += w * v / total;
            }
        }
        covered += w;
    }
    let (scales, _) = scales_and_rotation(&covariance);
    let opacity = (covered / cross_section(scales)).min(MAX_MERGED_OPACITY);
    Moments {
        mean,
        covariance,
        opacity,
        sh,
    }
}

/// Appends `m` to `out` in the pre-activation form (log scales, unit quaternion, logit opacity).
pub fn push_moments(out: &mut CpuGaussians, m: &Moments) {
    let (scales, q) = scales_and_rotation(&m.covariance);
    out.means.push(m.mean.map(|v| v as f32));
    out.log_scales.push(scales.map(|s| s.ln() as f32));
    out.quats.push(q.map(|v| v as f32));
    out.opacity_logits.push(logit(m.opacity) as f32);
    out.sh.push(m.sh.map(|c| c.map(|v| v as f32)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(mean: [f32; 3], log_scales: [f32; 3], quat: [f32; 4], logit: f32) -> CpuGaussians {
        let mut sh = [[0.0f32; 3]; 16];
        sh[0] = [mean[0], 0.5, -0.25];
        CpuGaussians {
            means: vec![mean],
            log_scales: vec![log_scales],
            quats: vec![quat],
            opacity_logits: vec![logit],
            sh: vec![sh],
        }
    }

    #[test]
    fn a_covariance_survives_the_split_into_scales_and_rotation() {
        let g = one([0.0; 3], [-1.0, 0.3, -2.0], [0.9, 0.2, -0.3, 0.4], 0.0);
        let m = moments_of(&g, 0);
        let mut again = CpuGaussians::default();
        push_moments(&mut again, &m);
        let back = moments_of(&again, 0);
        for a in 0..3 {
            for b in 0..3 {
                let (x, y) = (m.covariance[a][b], back.covariance[a][b]);
                assert!(
                    (x - y).abs() < 1e-6 * (1.0 + x.abs()),
                    "[{a}][{b}] {x} vs {y}"
                );
            }
        }
    }

    #[test]
    fn the_merge_matches_the_weighted_moments_computed_directly() {
        // Two Gaussians with known closed-form weights: isotropic scales, so w = α π s².
        let a = one([1.0, 0.0, 0.0], [0.0; 3], [1.0, 0.0, 0.0, 0.0], 0.0); // α 0.5, s 1
        let b = one([-1.0, 2.0, 0.0], [2f32.ln(); 3], [1.0, 0.0, 0.0, 0.0], 2.0);
        let (ma, mb) = (moments_of(&a, 0), moments_of(&b, 0));
        let alpha_b = 1.0 / (1.0 + (-2.0f64).exp());
        let (wa, wb) = (
            0.5 * std::f64::consts::PI,
            alpha_b * std::f64::consts::PI * 4.0,
        );
        let mean = [0, 1, 2].map(|k| (wa * ma.mean[k] + wb * mb.mean[k]) / (wa + wb));
        let merged = merge_moments(&[ma.clone(), mb.clone()]);
        for (k, (got, want)) in merged.mean.iter().zip(mean).enumerate() {
            assert!((got - want).abs() < 1e-9, "mean {k}");
        }
        // Σ = Σ w (σ² I + d dᵀ) / Σ w.
        for r in 0..3 {
            for c in 0..3 {
                let term = |m: &Moments, s2: f64, w: f64| {
                    let d = [0, 1, 2].map(|k| m.mean[k] - mean[k]);
                    w * (if r == c { s2 } else { 0.0 } + d[r] * d[c])
                };
                let want = (term(&ma, 1.0, wa) + term(&mb, 4.0, wb)) / (wa + wb);
                let got = merged.covariance[r][c];
                // The scales went through f32 log scales.
                assert!((got - want).abs() < 1e-6, "cov[{r}][{c}] {got} vs {want}");
            }
        }
        let dc = (wa * ma.sh[0][0] + wb * mb.sh[0][0]) / (wa + wb);
        assert!((merged.sh[0][0] - dc).abs() < 1e-9);
        assert!(merged.opacity > 0.0 && merged.opacity <= MAX_MERGED_OPACITY);
    }

    #[test]
    fn one_member_merges_to_itself() {
        let g = one(
            [0.5, -2.0, 3.0],
            [-1.0, -0.5, -3.0],
            [0.7, -0.1, 0.5, 0.2],
            1.5,
        );
        let m = moments_of(&g, 0);
        let merged = merge_moments(std::slice::from_ref(&m));
        assert!((merged.opacity - m.opacity).abs() < 1e-9);
        assert_eq!(merged.mean, m.mean);
    }
}

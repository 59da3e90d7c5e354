//! The CPU reference of `shaders/pose_gradient.wgsl`: the world-space sums in f64.

use glam::DVec3;

use super::WorldPoseGradient;

/// `Σ g` and `Σ (x × g + ½ (q_w h_v − h_w q_v + q_v × h_v))` over the Gaussians whose gradients
/// are not all zero (`means`, `v_means`: 3 floats each; `quats`, `v_quats`: 4, `(w, x, y, z)`).
pub fn world_pose_gradient(
    means: &[f32],
    quats: &[f32],
    v_means: &[f32],
    v_quats: &[f32],
) -> WorldPoseGradient {
    let mut out = WorldPoseGradient::default();
    let rows = means.len() / 3;
    for i in 0..rows {
        let g: [f64; 3] = std::array::from_fn(|k| f64::from(v_means[3 * i + k]));
        let h: [f64; 4] = std::array::from_fn(|k| f64::from(v_quats[4 * i + k]));
        if g.iter().chain(&h).all(|&v| v == 0.0) {
            continue;
        }
        let x: [f64; 3] = std::array::from_fn(|k| f64::from(means[3 * i + k]));
        let q: [f64; 4] = std::array::from_fn(|k| f64::from(quats[4 * i + k]));
        let (qv, hv) = ([q[1], q[2], q[3]], [h[1], h[2], h[3]]);
        let xg = DVec3::from(x).cross(DVec3::from(g));
        let qh = DVec3::from(qv).cross(DVec3::from(hv));
        for k in 0..3 {
            out.shift[k] += g[k];
            out.rotation[k] += xg[k] + 0.5 * (q[0] * hv[k] - h[0] * qv[k] + qh[k]);
        }
    }
    out
}

//! A city made of one model: copies of it laid edge to edge on its ground, the large model the
//! level-of-detail benchmark (`wgsplat bench lod`) and tests draw from a small trained scene.

use crate::io::ply::PlyModel;

/// The model's bounding box of centres: (min, max).
pub fn centre_bounds(model: &PlyModel) -> ([f32; 3], [f32; 3]) {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for m in &model.gaussians.means {
        for k in 0..3 {
            lo[k] = lo[k].min(m[k]);
            hi[k] = hi[k].max(m[k]);
        }
    }
    (lo, hi)
}

/// `model` tiled `columns` × `rows` times along its two widest axes (of its centres' box), edge
/// to edge; returns the city and its up axis (the narrowest).
pub fn tiled(model: &PlyModel, columns: usize, rows: usize) -> (PlyModel, usize) {
    let (lo, hi) = centre_bounds(model);
    let extent = [0, 1, 2].map(|k| hi[k] - lo[k]);
    let mut axes = [0usize, 1, 2];
    axes.sort_by(|&a, &b| extent[b].total_cmp(&extent[a]));
    let (u, v, up) = (axes[0], axes[1], axes[2]);
    let g = &model.gaussians;
    let mut out = PlyModel {
        gaussians: Default::default(),
        sh_degree: model.sh_degree,
    };
    let copies = columns * rows;
    let o = &mut out.gaussians;
    o.means.reserve(copies * g.means.len());
    o.log_scales.reserve(copies * g.means.len());
    o.quats.reserve(copies * g.means.len());
    o.opacity_logits.reserve(copies * g.means.len());
    o.sh.reserve(copies * g.means.len());
    for i in 0..columns {
        for j in 0..rows {
            let mut offset = [0f32; 3];
            offset[u] = i as f32 * extent[u];
            offset[v] = j as f32 * extent[v];
            o.means
                .extend(g.means.iter().map(|m| [0, 1, 2].map(|k| m[k] + offset[k])));
            o.log_scales.extend_from_slice(&g.log_scales);
            o.quats.extend_from_slice(&g.quats);
            o.opacity_logits.extend_from_slice(&g.opacity_logits);
            o.sh.extend_from_slice(&g.sh);
        }
    }
    (out, up)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::splat::reference::CpuGaussians;

    #[test]
    fn copies_lie_edge_to_edge_on_the_two_widest_axes() {
        let gaussians = CpuGaussians {
            means: vec![[0.0, 0.0, 0.0], [2.0, 0.5, 1.0]],
            log_scales: vec![[0.0; 3]; 2],
            quats: vec![[1.0, 0.0, 0.0, 0.0]; 2],
            opacity_logits: vec![0.0; 2],
            sh: vec![[[0.0; 3]; 16]; 2],
        };
        let model = PlyModel {
            gaussians,
            sh_degree: 0,
        };
        let (city, up) = tiled(&model, 3, 2);
        assert_eq!(up, 1);
        assert_eq!(city.gaussians.means.len(), 12);
        let (lo, hi) = centre_bounds(&city);
        assert_eq!((lo, hi), ([0.0, 0.0, 0.0], [6.0, 0.5, 2.0]));
        assert_eq!(city.gaussians.means[11], [6.0, 0.5, 2.0]);
    }
}

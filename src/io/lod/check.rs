//! What a level of detail refuses before it is built or written: a Gaussian no tree can hold (a
//! value that is not finite, a zero rotation, a scale whose bounding sphere f32 cannot store) and
//! bounding spheres that are not finite, each named, so that `wgsplat lod` never writes a folder
//! that `render` then refuses.

use super::tree::{SPHERE_SIGMAS, Skeleton};
use crate::error::{Error, Result};
use crate::io::ply::PlyModel;
use crate::splat::reference::CpuGaussians;

/// A value of Gaussian `i` that no level of detail can hold, as (attribute, value, why).
fn unusable(
    g: &CpuGaussians,
    i: usize,
    sh_coeffs: usize,
) -> Option<(String, String, &'static str)> {
    let not_finite = "which is not finite";
    if g.means[i].iter().any(|v| !v.is_finite()) {
        return Some(("position".into(), format!("{:?}", g.means[i]), not_finite));
    }
    if g.log_scales[i].iter().any(|v| !v.is_finite()) {
        return Some((
            "log scale".into(),
            format!("{:?}", g.log_scales[i]),
            not_finite,
        ));
    }
    if let Some(axis) = (0..3).find(|&k| {
        let radius = SPHERE_SIGMAS * f64::from(g.log_scales[i][k]).exp();
        radius > f64::from(f32::MAX)
    }) {
        return Some((
            format!("log scale on axis {axis}"),
            g.log_scales[i][axis].to_string(),
            "whose 3σ bounding sphere is larger than f32 holds",
        ));
    }
    let q = g.quats[i];
    if q.iter().any(|v| !v.is_finite()) || q.iter().all(|&v| v == 0.0) {
        return Some((
            "rotation".into(),
            format!("{q:?}"),
            "which is not a finite, non-zero quaternion",
        ));
    }
    if !g.opacity_logits[i].is_finite() {
        return Some((
            "opacity logit".into(),
            g.opacity_logits[i].to_string(),
            not_finite,
        ));
    }
    if let Some(c) = g.sh[i][..sh_coeffs]
        .iter()
        .position(|c| c.iter().any(|v| !v.is_finite()))
    {
        return Some((
            format!("SH coefficient {c}"),
            format!("{:?}", g.sh[i][c]),
            not_finite,
        ));
    }
    None
}

/// Fails on the first Gaussian of `model` that a level of detail cannot hold (a value that is
/// not finite, or a scale whose bounding sphere f32 cannot store), naming it.
pub fn check_gaussians(model: &PlyModel) -> Result<()> {
    let g = &model.gaussians;
    let coeffs = ((model.sh_degree + 1) * (model.sh_degree + 1)).min(16) as usize;
    for i in 0..g.means.len() {
        if let Some((attribute, value, why)) = unusable(g, i, coeffs) {
            return Err(Error::InvalidArgument {
                op: "lod",
                detail: format!(
                    "Gaussian {i} of the model has the {attribute} {value}, {why}: no level of \
                     detail can draw it. Nothing was written; remove or repair that Gaussian \
                     (`wgsplat convert MODEL CLEAN.ply --max-scale S` drops Gaussians larger \
                     than S)"
                ),
            });
        }
    }
    Ok(())
}

/// Fails when a node's bounding sphere is not finite in f32 (the model spans more than f32
/// holds), naming the node; [`super::write::write_lod`] checks it before writing anything.
pub fn check_spheres(s: &Skeleton) -> Result<()> {
    match s
        .spheres
        .iter()
        .position(|v| v.iter().any(|x| !x.is_finite()))
    {
        None => Ok(()),
        Some(n) => Err(Error::InvalidArgument {
            op: "lod",
            detail: format!(
                "node {n}'s bounding sphere {:?} is not finite: the model's Gaussians span more \
                 than f32 holds (crop it, e.g. `wgsplat convert MODEL CLEAN.ply --crop-box ...`)",
                s.spheres[n]
            ),
        }),
    }
}

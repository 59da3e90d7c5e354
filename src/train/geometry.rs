//! Regularisers that shape the Gaussians for surfaces (`train --geometry`): the flattening term,
//! λ · mean over the Gaussians of their shortest scale (PGSR's), which pulls each Gaussian towards
//! a disc whose normal, its shortest axis, is well defined (the normals `render --normals` and the
//! mesh read). Its gradient is added to each chunk's gradients before the optimizer step
//! (`shaders/flatten.wgsl`).

use super::strategy::ChunkRows;
use crate::error::Result;
use crate::gpu::Encoder;
use crate::gpu::kernels::flatten;
use crate::splat::GaussianTensors;

/// The flattening weight `train --geometry` uses unless `--flatten` names another (measured on
/// the built-in scene: docs/measurements.md, "Surfaces").
pub const GEOMETRY_FLATTEN: f32 = 100.0;

/// Records the flattening term's gradient, `weight` · mean over all N Gaussians of the shortest
/// scale, for rows `chunks.model` of `g`, added to rows `chunks.grads` of `grads`' log scales.
/// Nothing is recorded for a zero weight.
pub fn record_flatten(
    enc: &mut Encoder,
    g: &GaussianTensors,
    grads: &GaussianTensors,
    chunks: ChunkRows,
    weight: f32,
) -> Result<()> {
    if weight == 0.0 {
        return Ok(());
    }
    let n = g.len().max(1) as f32;
    let (rows, at) = (&chunks.model, &chunks.grads);
    let params = flatten::FlattenParams {
        weight: weight / n,
        count: rows.rows as u32,
        ..Default::default()
    };
    let kernel = enc.ctx().typed::<flatten::Flatten>()?;
    let grid = crate::ops::grid(enc, rows.rows, kernel.threads())?;
    let bindings = flatten::FlattenBindings {
        log_scales: g.log_scales.rows_arg(rows)?,
        grad_log_scales: grads.log_scales.rows_arg(at)?,
    };
    enc.run(&kernel, &params, bindings, grid)
}

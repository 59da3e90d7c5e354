//! The gradient half of a training step: the backward pass, the strategy's regularisers and
//! Adam, chunk by chunk. Each chunk's gradients are written into one chunk-sized scratch
//! ([`ModelState::gradient_chunk_rows`] rows, about a thirty-second of the model) and consumed by
//! Adam at once, so the model never has a gradient buffer of its own: the persistent state is the
//! parameters, the moments and the statistics. The result is bit for bit that of a model-sized
//! gradient, since gradients are written, never accumulated, and Adam is element-wise. A step with
//! geometry regularisers runs one more backward pass per geometry render, whose gradients each
//! chunk adds to the colour's before the strategy's terms and Adam see them.

use super::geometry::GeometryGradient;
use super::state::ModelState;
use super::strategy::{ChunkRows, StepInfo, Strategy};
use crate::error::Result;
use crate::gpu::kernels::row_chunks;
use crate::gpu::{Encoder, MemoryCategory};
use crate::splat::GaussianTensors;
use crate::splat::backward::{BackwardOptions, prepare_backward};
use crate::splat::forward::ForwardOutput;
use crate::splat::pose::PoseGradientPass;
use crate::tensor::Tensor;

/// What a gradient step computes besides the gradients Adam consumes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GradientWants {
    /// Accumulate the densification statistics.
    pub statistics: bool,
    /// Sum the step's world-space pose gradient (pose refinement).
    pub pose: bool,
}

/// Records the backward pass of `fwd` with image gradient `v_image`, the strategy's gradient
/// terms and one Adam step of every chunk of `state`, then counts the step. With `wants.statistics`,
/// the densification statistics accumulate too (from the colour's gradients only). `geometry`
/// holds the step's geometry renders and their image gradients (none without the depth–normal
/// and distortion regularisers). `fwd` is released once the rasterizer's backward is recorded:
/// only its splat rows are needed after it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record_gradient_step(
    enc: &mut Encoder,
    strategy: &dyn Strategy,
    state: &mut ModelState,
    step: &StepInfo,
    fwd: ForwardOutput,
    v_image: &Tensor,
    geometry: Vec<GeometryGradient>,
    wants: GradientWants,
) -> Result<Option<Tensor>> {
    let GradientWants { statistics, pose } = wants;
    let mut pose_gradient = None;
    {
        let params = &state.params;
        let n = params.len();
        let stats = statistics.then_some(&state.stats);
        let mut pass = prepare_backward(
            enc,
            params,
            &fwd,
            v_image,
            stats,
            BackwardOptions::default(),
        )?;
        drop(fwd);
        let mut geometry_passes = Vec::with_capacity(geometry.len());
        for render in geometry {
            let options = BackwardOptions {
                colour: render.colour,
                accumulate: true,
                ..BackwardOptions::default()
            };
            geometry_passes.push(prepare_backward(
                enc,
                params,
                &render.fwd,
                &render.v_image,
                None,
                options,
            )?);
        }
        let chunk_rows = ModelState::gradient_chunk_rows(n, params.rows_per_page);
        let scratch = GaussianTensors::uninit(
            enc,
            chunk_rows.min(n) as usize,
            params.max_sh_degree(),
            MemoryCategory::Gradients,
            "grads.chunk",
        )?;
        if pose {
            pose_gradient = Some(PoseGradientPass::new(
                enc,
                row_chunks(n, params.rows_per_page, chunk_rows),
            )?);
        }
        for model in row_chunks(n, params.rows_per_page, chunk_rows) {
            let chunks = ChunkRows {
                model,
                grads: model.at_start(),
            };
            pass.record_chunk(enc, &model, &scratch, &chunks.grads)?;
            for geometry_pass in &mut geometry_passes {
                geometry_pass.record_chunk(enc, &model, &scratch, &chunks.grads)?;
            }
            if let Some(pose) = &mut pose_gradient {
                pose.record_chunk(enc, params, &model, &scratch, &chunks.grads)?;
            }
            strategy.before_optimizer(enc, params, &scratch, chunks, step)?;
            super::geometry::record_flatten(enc, params, &scratch, chunks, step.config.flatten)?;
            state.optimizer.record_chunk(
                enc,
                params,
                &scratch,
                &chunks.grads,
                &model,
                step.learning_rates,
            )?;
        }
    }
    state.optimizer.complete_step();
    pose_gradient.map(|pose| pose.finish(enc)).transpose()
}

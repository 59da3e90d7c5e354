//! [`ModelState`]: everything an iteration changes on the GPU — the parameters, their gradients,
//! the optimizer's moments and the densification statistics — paged alike, so a strategy that
//! changes the Gaussian set changes all four together.

use crate::error::Result;
use crate::gpu::{Encoder, MemoryCategory};
use crate::optim::adam::{AdamConfig, GaussianOptimizer};
use crate::splat::GaussianTensors;
use crate::splat::backward::STATS_STRIDE;
use crate::tensor::{DType, Tensor};

/// The model being trained and the state that moves with its rows.
pub struct ModelState {
    /// The parameters.
    pub params: GaussianTensors,
    /// One gradient per parameter, written by the backward pass (and MCMC's regularisers).
    pub grads: GaussianTensors,
    /// Adam's moments, one pair per parameter.
    pub optimizer: GaussianOptimizer,
    /// `[N, 4]` densification statistics: screen-space gradient-norm sum, absgrad-norm sum,
    /// views seen, largest screen radius (px).
    pub stats: Tensor,
}

/// A zeroed `[N, STATS_STRIDE]` statistics tensor paged like `params`.
fn new_stats(enc: &mut Encoder, params: &GaussianTensors) -> Result<Tensor> {
    let n = params.len() as usize;
    let t = Tensor::uninit_rows(
        enc,
        STATS_DTYPE,
        &[n, STATS_STRIDE as usize],
        params.rows_per_page,
        MemoryCategory::OptimizerState,
        "densify/stats",
    )?;
    for page in 0..t.num_pages() {
        enc.clear(t.page(page).raw(), 0, t.page_len(page) * 4);
    }
    Ok(t)
}

/// Element type of the densification statistics.
const STATS_DTYPE: DType = DType::F32;

impl ModelState {
    /// Device bytes a state of `n` Gaussians at SH degree `max_sh_degree` holds in `ctx`:
    /// parameters, gradients, both Adam moments and the statistics, each rounded as the allocator
    /// rounds it. The memory plan's persistent part; `tests/memory.rs` (module `plan`) holds it to the
    /// allocator's live bytes.
    pub fn planned_bytes(ctx: &crate::gpu::GpuContext, n: u64, max_sh_degree: u32) -> u64 {
        let set = GaussianTensors::planned_bytes(ctx, n, max_sh_degree);
        let rows = ctx.rows_per_page(crate::splat::gaussians::MAX_ROW_WIDTH);
        (2 + GaussianOptimizer::MOMENT_SETS) * set
            + Tensor::planned_rows_bytes(STATS_DTYPE, n, STATS_STRIDE, rows)
    }

    /// `params` with zeroed gradients, moments and statistics.
    pub fn new(enc: &mut Encoder, params: GaussianTensors, adam: AdamConfig) -> Result<Self> {
        let grads = GaussianTensors::zeros_like(enc, &params, MemoryCategory::Gradients, "grads")?;
        let optimizer = GaussianOptimizer::new(enc, &params, adam)?;
        let stats = new_stats(enc, &params)?;
        Ok(ModelState {
            params,
            grads,
            optimizer,
            stats,
        })
    }

    /// Gaussians in the model.
    pub fn len(&self) -> u64 {
        self.params.len()
    }

    /// Whether the model has no Gaussians.
    pub fn is_empty(&self) -> bool {
        self.params.len() == 0
    }

    /// Releases the gradients and densification statistics before the Gaussian set changes
    /// shape, and flushes `enc` so their memory is really free before the rows are rebuilt.
    pub fn release_gradients(&mut self, enc: &mut Encoder) -> Result<()> {
        let degree = self.params.max_sh_degree();
        self.grads = GaussianTensors::uninit(enc, 0, degree, MemoryCategory::Gradients, "grads")?;
        self.stats = new_stats(enc, &self.grads)?;
        enc.flush_and_wait()
    }

    /// Zeroed gradients and statistics shaped like the current parameters (after a change of
    /// the Gaussian set).
    pub fn rebuild_gradients(&mut self, enc: &mut Encoder) -> Result<()> {
        self.grads =
            GaussianTensors::zeros_like(enc, &self.params, MemoryCategory::Gradients, "grads")?;
        self.stats = new_stats(enc, &self.params)?;
        Ok(())
    }
}

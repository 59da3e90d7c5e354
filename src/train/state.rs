//! [`ModelState`]: everything an iteration changes on the GPU that outlives it — the parameters,
//! the optimizer's moments and the densification statistics — paged alike, so a strategy that
//! changes the Gaussian set changes all three together. Gradients are not part of it: a step
//! computes them chunk by chunk into a scratch the size of one chunk
//! ([`ModelState::gradient_chunk_rows`]) and applies Adam to the chunk at once.

use crate::error::Result;
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::optim::GaussianOptimizer;
use crate::optim::adam::{AdamConfig, MomentStorage};
use crate::splat::GaussianTensors;
use crate::splat::backward::STATS_STRIDE;
use crate::tensor::{DType, Tensor};

/// The model being trained and the state that moves with its rows.
pub struct ModelState {
    /// The parameters.
    pub params: GaussianTensors,
    /// Adam's moments, one pair per parameter.
    pub optimizer: GaussianOptimizer,
    /// `[N, 4]` densification statistics: screen-space gradient-norm sum, absgrad-norm sum,
    /// views seen, largest screen radius (px).
    pub stats: Tensor,
}

/// A zeroed `[N, STATS_STRIDE]` statistics tensor of `n` rows paged `rows_per_page`.
fn new_stats(enc: &mut Encoder, n: u64, rows_per_page: u64) -> Result<Tensor> {
    let t = Tensor::uninit_rows(
        enc,
        STATS_DTYPE,
        &[n as usize, STATS_STRIDE as usize],
        rows_per_page,
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

/// Fewest rows of a gradient chunk: models up to this size take one chunk.
const MIN_CHUNK_ROWS: u64 = 1 << 14;

/// A gradient chunk is about this fraction of the model (one thirty-second: 7.4 B per Gaussian of
/// scratch at SH degree 3, against 236 B for a model-sized gradient).
const CHUNKS_PER_MODEL: u64 = 32;

impl ModelState {
    /// Device bytes a state of `n` Gaussians at SH degree `max_sh_degree` holds in `ctx` with
    /// moments stored as `moments`: parameters, moments and the statistics, each rounded as the
    /// allocator rounds it. The memory plan's persistent part; `tests/suite/memory/mod.rs`
    /// (module `plan`) holds it to the allocator's live bytes.
    pub fn planned_bytes(
        ctx: &GpuContext,
        n: u64,
        max_sh_degree: u32,
        moments: MomentStorage,
    ) -> u64 {
        let rows = ctx.rows_per_page(crate::splat::gaussians::MAX_ROW_WIDTH);
        let stats_category = MemoryCategory::OptimizerState;
        GaussianTensors::planned_bytes(ctx, MemoryCategory::Parameters, n, max_sh_degree)
            + GaussianOptimizer::planned_bytes(ctx, moments, n, max_sh_degree)
            + Tensor::planned_rows_bytes(stats_category, STATS_DTYPE, n, STATS_STRIDE, rows)
    }

    /// Rows of the gradient scratch a step of `n` Gaussians paged `rows_per_page` uses: a power
    /// of two of about `n / 32`, at least 16,384 and at most a page.
    pub fn gradient_chunk_rows(n: u64, rows_per_page: u64) -> u64 {
        n.div_ceil(CHUNKS_PER_MODEL)
            .next_power_of_two()
            .max(MIN_CHUNK_ROWS)
            .min(rows_per_page.max(1))
    }

    /// Device bytes of the gradient scratch of a step of `n` Gaussians (part of the frame plan).
    pub fn planned_gradient_bytes(ctx: &GpuContext, n: u64, max_sh_degree: u32) -> u64 {
        let rows = ctx.rows_per_page(crate::splat::gaussians::MAX_ROW_WIDTH);
        let chunk = Self::gradient_chunk_rows(n, rows).min(n);
        GaussianTensors::planned_bytes(ctx, MemoryCategory::Gradients, chunk, max_sh_degree)
    }

    /// `params` with zeroed moments (stored as `adam.moments` says) and statistics.
    pub fn new(enc: &mut Encoder, params: GaussianTensors, adam: AdamConfig) -> Result<Self> {
        let optimizer = GaussianOptimizer::new(enc, &params, adam)?;
        let stats = new_stats(enc, params.len(), params.rows_per_page)?;
        Ok(ModelState {
            params,
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

    /// Releases the densification statistics before the Gaussian set changes shape, and flushes
    /// `enc` so their memory is really free before the rows are rebuilt.
    pub fn release_statistics(&mut self, enc: &mut Encoder) -> Result<()> {
        self.stats = new_stats(enc, 0, self.params.rows_per_page)?;
        enc.flush_and_wait()
    }

    /// Zeroed statistics shaped like the current parameters (after a change of the Gaussian set).
    pub fn rebuild_statistics(&mut self, enc: &mut Encoder) -> Result<()> {
        self.stats = new_stats(enc, self.params.len(), self.params.rows_per_page)?;
        Ok(())
    }
}

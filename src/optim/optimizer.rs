//! [`GaussianOptimizer`]: Adam over the six attributes of a set of Gaussians, its moments stored
//! as [`MomentStorage`] says, kept aligned with the parameters through densification.
//!
//! A training step applies it chunk by chunk ([`GaussianOptimizer::record_chunk`]), right after
//! the backward pass wrote that chunk's gradients into a chunk-sized scratch, so no gradient the
//! size of the model ever exists.

use super::adam::{AdamConfig, ChunkMoments, LearningRates, MomentStorage, adam_chunk};
use super::rows::{RowSource, rebuild_in_place};
use crate::error::{Error, Result};
use crate::gpu::kernels::{RowChunk, row_chunks};
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::splat::GaussianTensors;
use crate::splat::gaussians::Attribute;
use crate::tensor::{DType, Tensor};

/// The moments of every attribute, in one of the two storages. (One lives per optimizer, so the
/// f32 variant's second set is not boxed.)
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Moments {
    /// f32 first and second moments.
    F32 {
        /// First moments.
        m: GaussianTensors,
        /// Second moments.
        v: GaussianTensors,
    },
    /// The 16-bit state: both moments of each element in one u32 ([`super::packed`]).
    Packed(GaussianTensors),
    /// Both moments of each element as bfloat16 in one u32 (m high, v low).
    Bf16(GaussianTensors),
}

impl Moments {
    /// The tensor sets that hold them (two for f32, one packed).
    pub fn sets(&self) -> Vec<&GaussianTensors> {
        match self {
            Moments::F32 { m, v } => vec![m, v],
            Moments::Packed(mv) | Moments::Bf16(mv) => vec![mv],
        }
    }

    fn sets_mut(&mut self) -> Vec<(&mut GaussianTensors, &'static str)> {
        match self {
            Moments::F32 { m, v } => vec![(m, "adam.m"), (v, "adam.v")],
            Moments::Packed(mv) | Moments::Bf16(mv) => vec![(mv, "adam.mv")],
        }
    }

    /// The storage.
    pub fn storage(&self) -> MomentStorage {
        match self {
            Moments::F32 { .. } => MomentStorage::F32,
            Moments::Packed(_) => MomentStorage::Packed,
            Moments::Bf16(_) => MomentStorage::Bf16,
        }
    }

    fn first(&self) -> &GaussianTensors {
        match self {
            Moments::F32 { m, .. } => m,
            Moments::Packed(mv) | Moments::Bf16(mv) => mv,
        }
    }
}

/// Adam over the six attributes of a set of Gaussians. The moments live in
/// [`MemoryCategory::OptimizerState`] and page exactly like the parameters; one step count is
/// shared by all groups (as in 3DGS, densification does not reset it).
pub struct GaussianOptimizer {
    /// Hyper-parameters and the moments' storage.
    pub config: AdamConfig,
    moments: Moments,
    step: u64,
}

impl GaussianOptimizer {
    /// Device bytes the moments of `n` Gaussians at SH degree `max_sh_degree` take in `ctx`.
    pub fn planned_bytes(ctx: &GpuContext, storage: MomentStorage, n: u64, degree: u32) -> u64 {
        let set = GaussianTensors::planned_bytes(ctx, MemoryCategory::OptimizerState, n, degree);
        match storage {
            MomentStorage::F32 => 2 * set,
            MomentStorage::Packed | MomentStorage::Bf16 => set,
        }
    }

    /// Zero moments for `params` in `config.moments` storage, step count 0.
    pub fn new(enc: &mut Encoder, params: &GaussianTensors, config: AdamConfig) -> Result<Self> {
        config.check()?;
        let category = MemoryCategory::OptimizerState;
        let zeroed = |enc: &mut Encoder, dtype, label| {
            GaussianTensors::zeros_like_typed(enc, params, dtype, category, label)
        };
        let moments = match config.moments {
            MomentStorage::F32 => Moments::F32 {
                m: zeroed(enc, DType::F32, "adam.m")?,
                v: zeroed(enc, DType::F32, "adam.v")?,
            },
            MomentStorage::Packed => Moments::Packed(zeroed(enc, DType::U32, "adam.mv")?),
            MomentStorage::Bf16 => Moments::Bf16(zeroed(enc, DType::U32, "adam.mv")?),
        };
        Ok(GaussianOptimizer {
            config,
            moments,
            step: 0,
        })
    }

    /// An optimizer from saved moments (for checkpoints); `step` is the number of steps taken.
    /// `config.moments` is set to the storage of `moments`.
    pub fn from_moments(mut config: AdamConfig, moments: Moments, step: u64) -> Result<Self> {
        config.check()?;
        if let Moments::F32 { m, v } = &moments {
            check_aligned("GaussianOptimizer::from_moments", m, v)?;
        }
        let dtype = match moments.storage() {
            MomentStorage::F32 => DType::F32,
            MomentStorage::Packed | MomentStorage::Bf16 => DType::U32,
        };
        for set in moments.sets() {
            for t in set.attributes() {
                t.expect_dtype("GaussianOptimizer::from_moments", dtype)?;
            }
        }
        config.moments = moments.storage();
        Ok(GaussianOptimizer {
            config,
            moments,
            step,
        })
    }

    /// The moments.
    pub fn moments(&self) -> &Moments {
        &self.moments
    }

    /// Steps taken so far (the next step uses `step_count() + 1` for its bias correction).
    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// Number of Gaussians the moments cover.
    pub fn len(&self) -> u64 {
        self.moments.first().len()
    }

    /// Whether the moments cover no Gaussians.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records one Adam step of every attribute of `params` with full-size gradients `grads`
    /// (same shapes and layout as the parameters) and the per-group rates `lrs`.
    pub fn step(
        &mut self,
        enc: &mut Encoder,
        params: &GaussianTensors,
        grads: &GaussianTensors,
        lrs: &LearningRates,
    ) -> Result<()> {
        const OP: &str = "GaussianOptimizer::step";
        check_aligned(OP, params, self.moments.first())?;
        check_aligned(OP, grads, self.moments.first())?;
        for chunk in row_chunks(params.len(), params.rows_per_page, params.rows_per_page) {
            self.record_chunk(enc, params, grads, &chunk, &chunk, lrs)?;
        }
        self.complete_step();
        Ok(())
    }

    /// Records the next step's update of rows `chunk` of `params`, with their gradients at rows
    /// `grad_rows` of `grads`. A step is every chunk of the model, then [`Self::complete_step`].
    pub fn record_chunk(
        &self,
        enc: &mut Encoder,
        params: &GaussianTensors,
        grads: &GaussianTensors,
        grad_rows: &RowChunk,
        chunk: &RowChunk,
        lrs: &LearningRates,
    ) -> Result<()> {
        const OP: &str = "GaussianOptimizer::record_chunk";
        check_aligned(OP, params, self.moments.first())?;
        if grads.sh_rest_count() != params.sh_rest_count() {
            return Err(Error::Shape {
                op: OP,
                detail: "gradients and parameters differ in SH coefficients".into(),
            });
        }
        let step = self.step + 1;
        for attribute in Attribute::ALL {
            let a = attribute.index();
            let param = params.attributes()[a];
            if param.row_elems() == 0 || param.is_empty() {
                continue;
            }
            let base = self.config.params(step, lrs.as_array()[a])?;
            let moments = match &self.moments {
                Moments::F32 { m, v } => ChunkMoments::F32(m.attributes()[a], v.attributes()[a]),
                Moments::Packed(mv) | Moments::Bf16(mv) => ChunkMoments::Packed(mv.attributes()[a]),
            };
            let grad = grads.attributes()[a];
            adam_chunk(enc, param, grad, grad_rows, moments, chunk, &base, a, step)?;
        }
        Ok(())
    }

    /// Counts the step whose chunks were recorded.
    pub fn complete_step(&mut self) {
        self.step += 1;
    }

    /// Keeps the Gaussians `index` names (a u32 tensor of row indices, in the order given) in
    /// `params` and in the moments, so they stay aligned. Out-of-range indices give zero rows.
    pub fn select_rows(
        &mut self,
        enc: &mut Encoder,
        params: &mut GaussianTensors,
        index: &Tensor,
    ) -> Result<()> {
        self.gather_rows(enc, params, index, index)
    }

    /// Rebuilds `params` as rows `params_index[i]` and the moments as rows `moments_index[i]`
    /// (indices of equal length; an out-of-range index gives a zero row, as new Gaussians'
    /// moments need), one attribute tensor at a time, widest first.
    pub fn gather_rows(
        &mut self,
        enc: &mut Encoder,
        params: &mut GaussianTensors,
        params_index: &Tensor,
        moments_index: &Tensor,
    ) -> Result<()> {
        const OP: &str = "GaussianOptimizer::gather_rows";
        check_aligned(OP, params, self.moments.first())?;
        params_index.expect_same_len(OP, moments_index)?;
        let mut sets = vec![(params, RowSource::Gather(params_index), "params")];
        for (set, label) in self.moments.sets_mut() {
            sets.push((set, RowSource::Gather(moments_index), label));
        }
        rebuild_in_place(enc, &mut sets)
    }

    /// Appends the Gaussians `new_rows` to `params` and zero rows to the moments.
    pub fn append_rows(
        &mut self,
        enc: &mut Encoder,
        params: &mut GaussianTensors,
        new_rows: &GaussianTensors,
    ) -> Result<()> {
        check_aligned(
            "GaussianOptimizer::append_rows",
            params,
            self.moments.first(),
        )?;
        let (added, zeros) = (Some(new_rows), new_rows.len());
        let mut sets = vec![(
            params,
            RowSource::Append {
                rows: added,
                zero_rows: 0,
            },
            "params",
        )];
        for (set, label) in self.moments.sets_mut() {
            sets.push((
                set,
                RowSource::Append {
                    rows: None,
                    zero_rows: zeros,
                },
                label,
            ));
        }
        rebuild_in_place(enc, &mut sets)
    }

    /// Zeroes both moments of one attribute, as 3DGS does for the opacities when it resets them.
    pub fn clear_group_moments(&mut self, enc: &mut Encoder, group: Attribute) -> Result<()> {
        for set in self.moments.sets() {
            let t = set.attributes()[group.index()];
            for page in 0..t.num_pages() {
                enc.clear(t.page(page).raw(), 0, t.page_len(page) * 4);
            }
        }
        Ok(())
    }

    /// Both moments of every attribute widened to f32 on the host (`[m, v]`, each in
    /// [`Attribute::ALL`] order), whatever the storage: for tests, tools and conversions.
    pub fn read_moments(&self, ctx: &GpuContext) -> Result<[Vec<Vec<f32>>; 2]> {
        match &self.moments {
            Moments::F32 { m, v } => {
                let read = |set: &GaussianTensors| {
                    set.attributes()
                        .into_iter()
                        .map(|t| t.read::<f32>(ctx))
                        .collect::<Result<Vec<_>>>()
                };
                Ok([read(m)?, read(v)?])
            }
            Moments::Packed(mv) | Moments::Bf16(mv) => {
                let ratio_step = self.config.ratio_step();
                let storage = self.moments.storage();
                let (mut m, mut v) = (Vec::new(), Vec::new());
                for t in mv.attributes() {
                    let words = t.read::<u32>(ctx)?;
                    let (a, b): (Vec<f32>, Vec<f32>) = words
                        .into_iter()
                        .map(|w| match storage {
                            MomentStorage::Packed => super::packed::unpack(w, ratio_step),
                            _ => super::bf16::unpack(w),
                        })
                        .unzip();
                    m.push(a);
                    v.push(b);
                }
                Ok([m, v])
            }
        }
    }

    /// This optimizer with its moments converted to `storage` through the host: widening a packed
    /// state to f32 is exact, narrowing rounds to the nearest word. Resuming a checkpoint in
    /// another storage.
    pub fn converted(self, ctx: &GpuContext, storage: MomentStorage) -> Result<Self> {
        if storage == self.moments.storage() {
            return Ok(self);
        }
        let [m, v] = self.read_moments(ctx)?;
        let template = self.moments.first().clone();
        let mut enc = ctx.encoder("convert moments");
        let moments = match storage {
            MomentStorage::F32 => Moments::F32 {
                m: template.with_rows(&mut enc, "adam.m", &m)?,
                v: template.with_rows(&mut enc, "adam.v", &v)?,
            },
            MomentStorage::Packed | MomentStorage::Bf16 => {
                let ratio_step = self.config.ratio_step();
                let nearest = |x: f32, y: f32| match storage {
                    MomentStorage::Packed => super::packed::pack_nearest(x, y, ratio_step),
                    _ => {
                        let narrow = super::bf16::f32_to_bf16_nearest;
                        super::bf16::pack(narrow(x), narrow(y))
                    }
                };
                let words: Vec<Vec<u32>> = m
                    .iter()
                    .zip(&v)
                    .map(|(ma, va)| ma.iter().zip(va).map(|(&x, &y)| nearest(x, y)).collect())
                    .collect();
                let words = template.with_rows(&mut enc, "adam.mv", &words)?;
                match storage {
                    MomentStorage::Packed => Moments::Packed(words),
                    _ => Moments::Bf16(words),
                }
            }
        };
        ctx.submit(enc)?;
        let config = AdamConfig {
            moments: storage,
            ..self.config
        };
        GaussianOptimizer::from_moments(config, moments, self.step)
    }
}

/// Checks that two Gaussian sets have the same count, SH size and rows per page.
pub(crate) fn check_aligned(
    op: &'static str,
    a: &GaussianTensors,
    b: &GaussianTensors,
) -> Result<()> {
    if a.len() != b.len()
        || a.sh_rest_count() != b.sh_rest_count()
        || a.rows_per_page != b.rows_per_page
    {
        return Err(Error::Shape {
            op,
            detail: format!(
                "{} Gaussians with {} SH rest coefficients and {} rows per page vs {} with {} and {}; \
                 apply row surgery through the optimizer so parameters, gradients and moments stay aligned",
                a.len(),
                a.sh_rest_count(),
                a.rows_per_page,
                b.len(),
                b.sh_rest_count(),
                b.rows_per_page
            ),
        });
    }
    Ok(())
}

//! Adam (shaders/adam.wgsl): one fused kernel per parameter tensor and chunk of rows that
//! updates both moments and the parameter in place, with the moments stored as f32 or packed
//! into one word per element ([`MomentStorage`]). [`super::GaussianOptimizer`] applies it to the six attributes.

use crate::error::{Error, Result};
use crate::gpu::Encoder;
use crate::gpu::kernels::{Arg, RowChunk, adam};
use crate::tensor::{DType, Tensor};
use serde::{Deserialize, Serialize};

/// How Adam's two moments are stored on the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MomentStorage {
    /// Two f32 tensors per parameter: 8 bytes per parameter element, for comparison.
    F32,
    /// The 16-bit state (the default): one u32 per parameter element, v in 19 bits (12
    /// significant) and m in 13 bits as a fixed-point fraction of sqrt(v) ([`super::packed`]),
    /// updated in f32 and narrowed with unbiased stochastic rounding: 4 bytes per element. It
    /// scores as f32 moments do (duck_colmap on its backdrop's grey, 16 seeds: docs/measurements.md).
    #[default]
    Packed,
    /// One u32 per parameter element holding both moments as bfloat16, narrowed with stochastic
    /// rounding: 4 bytes per element. The earlier 16-bit packing, kept for its checkpoints and for
    /// comparison; its 8-bit v drifts about ten times further from f32 Adam than
    /// [`MomentStorage::Packed`] (tests/suite/fitting/adam_packed.rs).
    Bf16,
}

impl MomentStorage {
    /// Bytes per parameter element.
    pub fn bytes_per_element(self) -> u64 {
        match self {
            MomentStorage::F32 => 8,
            MomentStorage::Packed | MomentStorage::Bf16 => 4,
        }
    }

    /// The name the CLI and the files use (`f32`, `packed`, `bf16`).
    pub fn name(self) -> &'static str {
        match self {
            MomentStorage::F32 => "f32",
            MomentStorage::Packed => "packed",
            MomentStorage::Bf16 => "bf16",
        }
    }

    /// Whether both moments share one u32 per element.
    pub fn is_packed(self) -> bool {
        self != MomentStorage::F32
    }
}

impl std::str::FromStr for MomentStorage {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text {
            "f32" | "32bit" => Ok(MomentStorage::F32),
            "16bit" | "packed" => Ok(MomentStorage::Packed),
            "bf16" => Ok(MomentStorage::Bf16),
            other => Err(Error::InvalidSetting {
                name: "optimizer state".into(),
                value: other.into(),
                expected: "16bit (the default: both moments in one 32-bit word), f32 or bf16 \
                           (the earlier bfloat16 packing)"
                    .into(),
            }),
        }
    }
}

/// Adam's hyper-parameters (3DGS: β = (0.9, 0.999), ε = 1e-15) and the moments' storage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamConfig {
    /// Decay of the first moment.
    pub beta1: f64,
    /// Decay of the second moment.
    pub beta2: f64,
    /// Added to the bias-corrected square root of the second moment.
    pub eps: f64,
    /// How the moments are stored.
    pub moments: MomentStorage,
}

impl Default for AdamConfig {
    fn default() -> Self {
        AdamConfig {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-15,
            moments: MomentStorage::default(),
        }
    }
}

impl AdamConfig {
    pub(crate) fn check(&self) -> Result<()> {
        let valid = (0.0..1.0).contains(&self.beta1)
            && (0.0..1.0).contains(&self.beta2)
            && self.eps.is_finite()
            && self.eps >= 0.0;
        if !valid {
            return Err(Error::InvalidArgument {
                op: "adam",
                detail: format!(
                    "betas must lie in [0, 1) and eps be finite and >= 0, got {self:?}"
                ),
            });
        }
        if self.moments == MomentStorage::Packed && self.ratio_bound().is_none() {
            return Err(Error::InvalidArgument {
                op: "adam",
                detail: format!(
                    "the 16-bit optimizer state needs beta1^2 < beta2 (so that |m| / sqrt(v) is \
                     bounded), got beta1 {} and beta2 {}; use the f32 state or smaller beta1",
                    self.beta1, self.beta2
                ),
            });
        }
        Ok(())
    }

    /// The bound of |m| / sqrt(v) that Adam's moving sums obey (Cauchy-Schwarz):
    /// `(1 - β1) / sqrt((1 - β2) (1 - β1² / β2))`, 7.27 for the default betas; `None` when
    /// β1² ≥ β2 leaves it unbounded.
    pub fn ratio_bound(&self) -> Option<f64> {
        let tail = 1.0 - self.beta1 * self.beta1 / self.beta2;
        (tail > 0.0 && self.beta2 < 1.0)
            .then(|| (1.0 - self.beta1) / ((1.0 - self.beta2) * tail).sqrt())
    }

    /// The unit of the packed state's 13-bit m, in multiples of sqrt(v): the smallest power of two
    /// whose [`super::packed::RATIO_MAX`] multiple exceeds [`Self::ratio_bound`] by 5% (2^-9 for
    /// the default betas), so that scaling by it is exact.
    pub fn ratio_step(&self) -> f32 {
        let bound = self.ratio_bound().unwrap_or(f64::MAX).min(1e30) * 1.05;
        let exponent = (bound / f64::from(super::packed::RATIO_MAX)).log2().ceil() as i32;
        2f32.powi(exponent.clamp(-100, 100))
    }

    /// The bias corrections folded into the kernel's two factors for `step` (1-based) and
    /// learning rate `lr`, computed in f64: `lr / (1 - β1^t)` and `1 / sqrt(1 - β2^t)`.
    pub fn folded_factors(&self, step: u64, lr: f32) -> Result<(f32, f32)> {
        self.check()?;
        if step == 0 {
            return Err(Error::InvalidArgument {
                op: "adam",
                detail: "steps are counted from 1 (step 0 has no bias correction)".into(),
            });
        }
        let exponent = i32::try_from(step).unwrap_or(i32::MAX);
        let bias_correction1 = 1.0 - self.beta1.powi(exponent);
        let bias_correction2 = 1.0 - self.beta2.powi(exponent);
        Ok((
            (f64::from(lr) / bias_correction1) as f32,
            (1.0 / bias_correction2.sqrt()) as f32,
        ))
    }

    /// The kernel's uniform for `step` (1-based) and learning rate `lr`, bias corrections in f64.
    pub(crate) fn params(&self, step: u64, lr: f32) -> Result<adam::AdamParams> {
        let (step_size, inv_sqrt_bias_correction2) = self.folded_factors(step, lr)?;
        Ok(adam::AdamParams {
            n: 0,
            step_size,
            inv_sqrt_bias_correction2,
            eps: self.eps as f32,
            beta1: self.beta1 as f32,
            one_minus_beta1: (1.0 - self.beta1) as f32,
            beta2: self.beta2 as f32,
            one_minus_beta2: (1.0 - self.beta2) as f32,
            element_offset: 0,
            seed: 0,
            ratio_step: self.ratio_step(),
            packing: match self.moments {
                MomentStorage::Bf16 => adam::PACKING_BF16,
                MomentStorage::F32 | MomentStorage::Packed => adam::PACKING_RATIO,
            },
        })
    }
}

/// Records one Adam update of `param` with gradient `grad` and f32 moments `moment1`, `moment2`
/// (all f32 with the same page layout), at 1-based step `step` with learning rate `lr`.
#[allow(clippy::too_many_arguments)]
pub fn adam_step(
    enc: &mut Encoder,
    param: &Tensor,
    grad: &Tensor,
    moment1: &Tensor,
    moment2: &Tensor,
    lr: f32,
    step: u64,
    config: &AdamConfig,
) -> Result<()> {
    const OP: &str = "adam_step";
    for t in [param, grad, moment1, moment2] {
        t.expect_dtype(OP, DType::F32)?;
        param.expect_same_layout(OP, t)?;
    }
    let storages = [param, grad, moment1, moment2];
    for (i, a) in storages.iter().enumerate() {
        if storages[i + 1..].iter().any(|b| a.shares_storage_with(b)) {
            return Err(Error::InvalidArgument {
                op: OP,
                detail: "parameter, gradient and moments must be distinct tensors".into(),
            });
        }
    }
    let base = config.params(step, lr)?;
    let kernel = enc.ctx().typed::<adam::AdamStep>()?;
    for page in 0..param.num_pages() {
        let n = param.page_len(page);
        if n == 0 {
            continue;
        }
        let params = adam::AdamParams {
            n: n as u32,
            ..base
        };
        let grid = crate::ops::grid(enc, n.div_ceil(4), kernel.threads())?;
        let bindings = adam::AdamStepBindings {
            param: vec4_page(param, page)?,
            grad: vec4_page(grad, page)?,
            moment1: vec4_page(moment1, page)?,
            moment2: vec4_page(moment2, page)?,
        };
        enc.run(&kernel, &params, bindings, grid)?;
    }
    Ok(())
}

/// Where one attribute's Adam state lives for one chunk of rows.
pub(crate) enum ChunkMoments<'a> {
    /// f32 first and second moments.
    F32(&'a Tensor, &'a Tensor),
    /// Both moments in one u32 per element, packed as the kernel's uniform says.
    Packed(&'a Tensor),
}

/// Records the Adam update of rows `chunk` of one attribute: `param` and the moments at `chunk`,
/// the gradient at `grad_rows` of `grad` (a chunk-sized scratch tensor, or the same rows of a
/// full-size one). `attribute` is the attribute's index (a key of the bfloat16 rounding).
#[allow(clippy::too_many_arguments)]
pub(crate) fn adam_chunk(
    enc: &mut Encoder,
    param: &Tensor,
    grad: &Tensor,
    grad_rows: &RowChunk,
    moments: ChunkMoments<'_>,
    chunk: &RowChunk,
    base: &adam::AdamParams,
    attribute: usize,
    step: u64,
) -> Result<()> {
    let width = param.row_elems();
    let n = chunk.rows * width;
    if n == 0 {
        return Ok(());
    }
    let params = adam::AdamParams {
        n: u32::try_from(n).map_err(|_| Error::Overflow {
            what: format!(
                "elements of one Adam chunk ({} rows of {width})",
                chunk.rows
            ),
            needed: n,
            max: u64::from(u32::MAX),
            hint: "use smaller chunks".into(),
        })?,
        element_offset: (chunk.first_row.wrapping_mul(width)) as u32,
        seed: super::bf16::rounding_seed(step, attribute),
        ..*base
    };
    let grid = crate::ops::grid(enc, n.div_ceil(4), 256)?;
    match moments {
        ChunkMoments::F32(m, v) => {
            let kernel = enc.ctx().typed::<adam::AdamStep>()?;
            let bindings = adam::AdamStepBindings {
                param: vec4_rows(param, chunk)?,
                grad: vec4_rows(grad, grad_rows)?,
                moment1: vec4_rows(m, chunk)?,
                moment2: vec4_rows(v, chunk)?,
            };
            enc.run(&kernel, &params, bindings, grid)
        }
        ChunkMoments::Packed(mv) => {
            let kernel = enc.ctx().typed::<adam::AdamStepPacked>()?;
            let bindings = adam::AdamStepPackedBindings {
                param: vec4_rows(param, chunk)?,
                grad: vec4_rows(grad, grad_rows)?,
                moments_packed: vec4_rows(mv, chunk)?,
            };
            enc.run(&kernel, &params, bindings, grid)
        }
    }
}

/// Page `page` of `t` seen as vec4s: its elements rounded up to 16 bytes. Buffers are whole size
/// classes (multiples of [`crate::gpu::memory::MIN_BUFFER_BYTES`]), so the rounded range lies inside
/// the page's buffer; the kernel leaves the padding as it found it.
fn vec4_page(t: &Tensor, page: usize) -> Result<Arg<'_>> {
    let binding = t.page_binding(page);
    let bytes = binding.size.map_or(0, |s| s.get());
    vec4_binding(t, binding, bytes)
}

/// Rows `chunk` of `t` seen as vec4s, rounded up to 16 bytes like [`vec4_page`].
fn vec4_rows<'a>(t: &'a Tensor, chunk: &RowChunk) -> Result<Arg<'a>> {
    let binding = t.rows_binding(chunk)?;
    let bytes = binding.size.map_or(0, |s| s.get());
    vec4_binding(t, binding, bytes)
}

fn vec4_binding<'a>(
    t: &'a Tensor,
    binding: wgpu::BufferBinding<'a>,
    bytes: u64,
) -> Result<Arg<'a>> {
    let bytes = bytes.div_ceil(16) * 16;
    if binding.offset + bytes > binding.buffer.size() {
        return Err(Error::InvalidArgument {
            op: "adam_step",
            detail: format!(
                "{bytes} bytes at offset {} (rounded to 16) exceed the {}-byte buffer",
                binding.offset,
                binding.buffer.size()
            ),
        });
    }
    let binding = wgpu::BufferBinding {
        size: std::num::NonZeroU64::new(bytes),
        ..binding
    };
    Ok(Arg::Typed(binding, t.dtype()))
}

/// One learning rate per parameter group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LearningRates {
    /// Positions.
    pub means: f32,
    /// Log scales.
    pub log_scales: f32,
    /// Rotations.
    pub quats: f32,
    /// Opacity logits.
    pub opacity_logits: f32,
    /// SH DC terms.
    pub sh_dc: f32,
    /// SH coefficients past DC.
    pub sh_rest: f32,
}

impl LearningRates {
    /// The rates in [`Attribute::ALL`] order.
    pub fn as_array(&self) -> [f32; 6] {
        [
            self.means,
            self.log_scales,
            self.quats,
            self.opacity_logits,
            self.sh_dc,
            self.sh_rest,
        ]
    }
}

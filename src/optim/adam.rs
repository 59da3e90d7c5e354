//! Adam (shaders/adam.wgsl): one fused kernel per parameter tensor and page that updates both
//! moments and the parameter in place, and [`GaussianOptimizer`], which holds the moments of all
//! six Gaussian attributes and keeps them aligned with the parameters through densification.

use super::rows::{append_rows_in_place, keep_rows_in_place};
use crate::error::{Error, Result};
use crate::gpu::kernels::{Arg, adam::AdamParams, adam::AdamStep, adam::AdamStepBindings};
use crate::gpu::{Encoder, MemoryCategory};
use crate::splat::GaussianTensors;
use crate::splat::gaussians::Attribute;
use crate::tensor::{DType, Tensor};

/// Adam's hyper-parameters (3DGS: β = (0.9, 0.999), ε = 1e-15).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamConfig {
    /// Decay of the first moment.
    pub beta1: f64,
    /// Decay of the second moment.
    pub beta2: f64,
    /// Added to the bias-corrected square root of the second moment.
    pub eps: f64,
}

impl Default for AdamConfig {
    fn default() -> Self {
        AdamConfig {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-15,
        }
    }
}

impl AdamConfig {
    fn check(&self) -> Result<()> {
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
        Ok(())
    }

    /// The kernel's uniform for `step` (1-based) and learning rate `lr`, bias corrections in f64.
    fn params(&self, step: u64, lr: f32) -> Result<AdamParams> {
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
        Ok(AdamParams {
            n: 0,
            step_size: (f64::from(lr) / bias_correction1) as f32,
            inv_sqrt_bias_correction2: (1.0 / bias_correction2.sqrt()) as f32,
            eps: self.eps as f32,
            beta1: self.beta1 as f32,
            one_minus_beta1: (1.0 - self.beta1) as f32,
            beta2: self.beta2 as f32,
            one_minus_beta2: (1.0 - self.beta2) as f32,
        })
    }
}

/// Records one Adam update of `param` with gradient `grad` and moments `moment1`, `moment2`
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
    let kernel = enc.ctx().typed::<AdamStep>()?;
    for page in 0..param.num_pages() {
        let n = param.page_len(page);
        if n == 0 {
            continue;
        }
        let params = AdamParams {
            n: n as u32,
            ..base
        };
        let grid = crate::ops::grid(enc, n.div_ceil(4), kernel.threads())?;
        let bindings = AdamStepBindings {
            param: vec4_arg(param, page)?,
            grad: vec4_arg(grad, page)?,
            moment1: vec4_arg(moment1, page)?,
            moment2: vec4_arg(moment2, page)?,
        };
        enc.run(&kernel, &params, bindings, grid)?;
    }
    Ok(())
}

/// Page `page` of `t` seen as vec4s: its elements rounded up to 16 bytes. Buffers are whole size
/// classes (multiples of [`crate::gpu::memory::MIN_BUFFER_BYTES`]), so the rounded range lies inside
/// the page's buffer; the kernel leaves the padding as it found it.
fn vec4_arg(t: &Tensor, page: usize) -> Result<Arg<'_>> {
    let binding = t.page_binding(page);
    let bytes = binding.size.map_or(0, |s| s.get()).div_ceil(16) * 16;
    if bytes > binding.buffer.size() {
        return Err(Error::InvalidArgument {
            op: "adam_step",
            detail: format!(
                "page {page} of {bytes} bytes (rounded to 16) exceeds its {}-byte buffer",
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

/// Adam over the six attributes of a set of Gaussians. The moments live in
/// [`MemoryCategory::OptimizerState`] and page exactly like the parameters; one step count is
/// shared by all groups (as in 3DGS, densification does not reset it).
pub struct GaussianOptimizer {
    /// Hyper-parameters.
    pub config: AdamConfig,
    moment1: GaussianTensors,
    moment2: GaussianTensors,
    step: u64,
}

impl GaussianOptimizer {
    /// Tensors per parameter it keeps: the first and second moments.
    pub const MOMENT_SETS: u64 = 2;

    /// Zero moments for `params`, step count 0.
    pub fn new(enc: &mut Encoder, params: &GaussianTensors, config: AdamConfig) -> Result<Self> {
        config.check()?;
        let moment1 =
            GaussianTensors::zeros_like(enc, params, MemoryCategory::OptimizerState, "adam.m")?;
        let moment2 =
            GaussianTensors::zeros_like(enc, params, MemoryCategory::OptimizerState, "adam.v")?;
        Ok(GaussianOptimizer {
            config,
            moment1,
            moment2,
            step: 0,
        })
    }

    /// An optimizer from saved moments (for checkpoints); `step` is the number of steps taken.
    pub fn from_parts(
        config: AdamConfig,
        moment1: GaussianTensors,
        moment2: GaussianTensors,
        step: u64,
    ) -> Result<Self> {
        config.check()?;
        check_aligned("GaussianOptimizer::from_parts", &moment1, &moment2)?;
        Ok(GaussianOptimizer {
            config,
            moment1,
            moment2,
            step,
        })
    }

    /// First moments, one tensor per attribute.
    pub fn moment1(&self) -> &GaussianTensors {
        &self.moment1
    }

    /// Second moments, one tensor per attribute.
    pub fn moment2(&self) -> &GaussianTensors {
        &self.moment2
    }

    /// Steps taken so far (the next step uses `step_count() + 1` for its bias correction).
    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// Number of Gaussians the moments cover.
    pub fn len(&self) -> u64 {
        self.moment1.len()
    }

    /// Whether the moments cover no Gaussians.
    pub fn is_empty(&self) -> bool {
        self.moment1.is_empty()
    }

    /// Records one Adam step of every attribute of `params` with gradients `grads` (same shapes
    /// and layout as the moments) and the per-group rates `lrs`.
    pub fn step(
        &mut self,
        enc: &mut Encoder,
        params: &GaussianTensors,
        grads: &GaussianTensors,
        lrs: &LearningRates,
    ) -> Result<()> {
        const OP: &str = "GaussianOptimizer::step";
        check_aligned(OP, params, &self.moment1)?;
        check_aligned(OP, grads, &self.moment1)?;
        let step = self.step + 1;
        let groups = params
            .attributes()
            .into_iter()
            .zip(grads.attributes())
            .zip(self.moment1.attributes())
            .zip(self.moment2.attributes());
        for ((((param, grad), m), v), lr) in groups.zip(lrs.as_array()) {
            adam_step(enc, param, grad, m, v, lr, step, &self.config)?;
        }
        self.step = step;
        Ok(())
    }

    /// Keeps the Gaussians `index` names (a u32 tensor of row indices, in the order given) in
    /// `params` and in both moments, so they stay aligned. Out-of-range indices give zero rows.
    pub fn select_rows(
        &mut self,
        enc: &mut Encoder,
        params: &mut GaussianTensors,
        index: &Tensor,
    ) -> Result<()> {
        check_aligned("GaussianOptimizer::select_rows", params, &self.moment1)?;
        keep_rows_in_place(enc, params, index, "params")?;
        keep_rows_in_place(enc, &mut self.moment1, index, "adam.m")?;
        keep_rows_in_place(enc, &mut self.moment2, index, "adam.v")
    }

    /// Appends the Gaussians `new_rows` to `params` and zero rows to both moments.
    pub fn append_rows(
        &mut self,
        enc: &mut Encoder,
        params: &mut GaussianTensors,
        new_rows: &GaussianTensors,
    ) -> Result<()> {
        check_aligned("GaussianOptimizer::append_rows", params, &self.moment1)?;
        append_rows_in_place(enc, params, Some(new_rows), 0, "params")?;
        append_rows_in_place(enc, &mut self.moment1, None, new_rows.len(), "adam.m")?;
        append_rows_in_place(enc, &mut self.moment2, None, new_rows.len(), "adam.v")
    }

    /// Zeroes both moments of one attribute, as 3DGS does for the opacities when it resets them.
    pub fn clear_group_moments(&mut self, enc: &mut Encoder, group: Attribute) -> Result<()> {
        for t in [
            self.moment1.attributes()[group.index()],
            self.moment2.attributes()[group.index()],
        ] {
            for page in 0..t.num_pages() {
                enc.clear(t.page(page).raw(), 0, t.page_len(page) * 4);
            }
        }
        Ok(())
    }
}

/// Checks that two Gaussian sets have the same count, SH size and rows per page.
fn check_aligned(op: &'static str, a: &GaussianTensors, b: &GaussianTensors) -> Result<()> {
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

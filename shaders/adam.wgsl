// One fused Adam step over one page of a parameter tensor: updates the first and second moments
// in place and applies the bias-corrected update to the parameter, in the same arithmetic order as
// PyTorch's Adam (`param -= step_size * m / (sqrt(v) / sqrt(bc2) + eps)`). Bias corrections are
// computed on the CPU in f64 from the step count and arrive folded into `step_size` and
// `inv_sqrt_bias_correction2`.
#import "shared/dispatch.wgsl"

struct AdamParams {
    // Elements in this page.
    n: u32,
    // lr / (1 - beta1^t).
    step_size: f32,
    // 1 / sqrt(1 - beta2^t).
    inv_sqrt_bias_correction2: f32,
    // Added to the bias-corrected sqrt(v).
    eps: f32,
    beta1: f32,
    one_minus_beta1: f32,
    beta2: f32,
    one_minus_beta2: f32,
}

@group(0) @binding(0) var<uniform> params_uniform: AdamParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: AdamParams;
@group(0) @binding(1) var<storage, read_write> param: array<f32>;
@group(0) @binding(2) var<storage, read> grad: array<f32>;
@group(0) @binding(3) var<storage, read_write> moment1: array<f32>;
@group(0) @binding(4) var<storage, read_write> moment2: array<f32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn adam_step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.n {
        return;
    }
    let g = grad[i];
    let m = params.beta1 * moment1[i] + params.one_minus_beta1 * g;
    let v = params.beta2 * moment2[i] + params.one_minus_beta2 * (g * g);
    moment1[i] = m;
    moment2[i] = v;
    let denom = sqrt(v) * params.inv_sqrt_bias_correction2 + params.eps;
    param[i] = param[i] - params.step_size * (m / denom);
}

// One fused Adam step over one page of a parameter tensor: updates the first and second moments
// in place and applies the bias-corrected update to the parameter, in the same arithmetic order as
// PyTorch's Adam (`param -= step_size * m / (sqrt(v) / sqrt(bc2) + eps)`). Bias corrections are
// computed on the CPU in f64 from the step count and arrive folded into `step_size` and
// `inv_sqrt_bias_correction2`.
// Each invocation updates four consecutive elements through vec4 loads and stores (on lavapipe
// every load with a varying address is a loop over the lanes, so a vec4 serves four elements for
// about the cost of one; GPUs also prefer 16-byte accesses). The bindings cover the page rounded
// up to 16 bytes (buffers are whole size classes, multiples of 256 bytes); the elements past `n` in
// the last vec4 are written back unchanged.
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
@group(0) @binding(1) var<storage, read_write> param: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> grad: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> moment1: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> moment2: array<vec4<f32>>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn adam_step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i * 4u >= params.n {
        return;
    }
    let live = vec4<u32>(i * 4u) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(params.n);
    let g = grad[i];
    let m_old = moment1[i];
    let v_old = moment2[i];
    let p_old = param[i];
    let m = params.beta1 * m_old + params.one_minus_beta1 * g;
    let v = params.beta2 * v_old + params.one_minus_beta2 * (g * g);
    let denom = sqrt(v) * params.inv_sqrt_bias_correction2 + params.eps;
    moment1[i] = select(m_old, m, live);
    moment2[i] = select(v_old, v, live);
    param[i] = select(p_old, p_old - params.step_size * (m / denom), live);
}

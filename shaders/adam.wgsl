// One fused Adam step over one chunk of a parameter tensor: updates the first and second moments
// and applies the bias-corrected update to the parameter, in the same arithmetic order as
// PyTorch's Adam (`param -= step_size * m / (sqrt(v) / sqrt(bc2) + eps)`). Bias corrections are
// computed on the CPU in f64 from the step count and arrive folded into `step_size` and
// `inv_sqrt_bias_correction2`.
//
// Two storages of the moments:
// - `adam_step`: two f32 tensors;
// - `adam_step_packed`: one u32 per element holding both moments as bfloat16 (m in the high half,
//   v in the low half). They are widened to f32, updated in f32 registers exactly as above, and
//   narrowed with stochastic rounding: a counter-based random 16-bit value, keyed by the element's
//   global index and `seed` (the step and the attribute), is added to the low half of the f32
//   before truncating. Rounding to nearest would freeze v: its per-step decay (0.1%) is below
//   half a bfloat16 step (at least 0.2%); stochastic rounding is unbiased, so v decays and grows
//   at its true rate on average, and the result depends only on the element and the step.
//
// Each invocation updates four consecutive elements through vec4 loads and stores (on lavapipe
// every load with a varying address is a loop over the lanes, so a vec4 serves four elements for
// about the cost of one; GPUs also prefer 16-byte accesses). The bindings cover the chunk rounded
// up to 16 bytes (buffers are whole size classes, multiples of 256 bytes); the elements past `n` in
// the last vec4 are written back unchanged.
#import "shared/dispatch.wgsl"
#import "shared/random.wgsl"

struct AdamParams {
    // Elements in this chunk.
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
    // Global index of the chunk's first element, modulo 2^32 (a key of the rounding only).
    element_offset: u32,
    // Mixes the step and the attribute into the rounding's key.
    seed: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: AdamParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: AdamParams;
@group(0) @binding(1) var<storage, read_write> param: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> grad: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> moment1: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> moment2: array<vec4<f32>>;
// bfloat16 m (high half) and v (low half) of each element.
@group(0) @binding(5) var<storage, read_write> moments_bf16: array<vec4<u32>>;

const WG: u32 = 256u;

struct AdamUpdate {
    m: vec4<f32>,
    v: vec4<f32>,
    param: vec4<f32>,
}

fn adam_update(g: vec4<f32>, m_old: vec4<f32>, v_old: vec4<f32>, p_old: vec4<f32>) -> AdamUpdate {
    let m = params.beta1 * m_old + params.one_minus_beta1 * g;
    let v = params.beta2 * v_old + params.one_minus_beta2 * (g * g);
    let denom = sqrt(v) * params.inv_sqrt_bias_correction2 + params.eps;
    return AdamUpdate(m, v, p_old - params.step_size * (m / denom));
}

// The bfloat16 of `x` rounded stochastically by the 16 random bits `r`: truncation of x plus r in
// units of its last dropped bit, so the upper neighbour is taken with probability (dropped / 2^16).
// Infinities and NaN are truncated, and a finite value never rounds to infinity.
fn bf16_stochastic(x: f32, r: u32) -> u32 {
    let bits = bitcast<u32>(x);
    let rounded = (bits + (r & 0xffffu)) >> 16u;
    let truncated = bits >> 16u;
    let exponent_max = (bits & 0x7f800000u) == 0x7f800000u || (rounded & 0x7f80u) == 0x7f80u;
    return select(rounded, truncated, exponent_max);
}

fn bf16_to_f32(h: u32) -> f32 {
    return bitcast<f32>(h << 16u);
}

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
    let m_old = moment1[i];
    let v_old = moment2[i];
    let p_old = param[i];
    let up = adam_update(grad[i], m_old, v_old, p_old);
    moment1[i] = select(m_old, up.m, live);
    moment2[i] = select(v_old, up.v, live);
    param[i] = select(p_old, up.param, live);
}

@compute @workgroup_size(256)
fn adam_step_packed(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i * 4u >= params.n {
        return;
    }
    let lanes = vec4<u32>(i * 4u) + vec4<u32>(0u, 1u, 2u, 3u);
    let live = lanes < vec4<u32>(params.n);
    let packed_old = moments_bf16[i];
    let m_old = vec4<f32>(bf16_to_f32(packed_old.x >> 16u), bf16_to_f32(packed_old.y >> 16u), bf16_to_f32(packed_old.z >> 16u), bf16_to_f32(packed_old.w >> 16u));
    let v_old = vec4<f32>(bf16_to_f32(packed_old.x & 0xffffu), bf16_to_f32(packed_old.y & 0xffffu), bf16_to_f32(packed_old.z & 0xffffu), bf16_to_f32(packed_old.w & 0xffffu));
    let p_old = param[i];
    let up = adam_update(grad[i], m_old, v_old, p_old);
    var packed = packed_old;
    for (var k = 0u; k < 4u; k++) {
        // 32 random bits per element: the high 16 round m, the low 16 round v.
        let r = pcg(pcg(params.element_offset + lanes[k]) ^ params.seed);
        packed[k] = (bf16_stochastic(up.m[k], r >> 16u) << 16u) | bf16_stochastic(up.v[k], r);
    }
    moments_bf16[i] = select(packed_old, packed, live);
    param[i] = select(p_old, up.param, live);
}

// One fused Adam step over one chunk of a parameter tensor: updates the first and second moments
// and applies the bias-corrected update to the parameter, in the same arithmetic order as
// PyTorch's Adam (`param -= step_size * m / (sqrt(v) / sqrt(bc2) + eps)`). Bias corrections are
// computed on the CPU in f64 from the step count and arrive folded into `step_size` and
// `inv_sqrt_bias_correction2`.
//
// Two kernels for three storages of the moments:
// - `adam_step`: two f32 tensors;
// - `adam_step_packed` with `packing` PACKING_RATIO (the 16-bit state): one u32 per element, v in the high 19 bits (an f32
//   without its sign and its 12 lowest mantissa bits: 11 explicit mantissa bits) and m in the low
//   13 bits as a signed multiple of `ratio_step * sqrt(v)`. Adam bounds |m| / sqrt(v) by
//   (1 - b1) / sqrt((1 - b2) (1 - b1^2 / b2)) (7.3 for the default betas; Cauchy-Schwarz over the
//   two moving sums), so 13 bits cover it with a step of 2^-9 of the update's unit. The error of
//   v persists for ~1/(1 - b2) steps and the error of m for ~1/(1 - b1), so v gets the bits.
// - `adam_step_packed` with PACKING_BF16: one u32 per element holding both moments as bfloat16
//   (m in the high half, v in the low half); the earlier packing, kept for its checkpoints and for
//   comparison.
// Packed moments are widened to f32, updated in f32 registers exactly as above, and narrowed with
// stochastic rounding: counter-based random bits, keyed by the element's global index and `seed`
// (the step and the attribute), decide between the two neighbours with probability proportional
// to the distance. Rounding to nearest would freeze a bfloat16 v: its per-step decay (0.1%) is
// below half a bfloat16 step; stochastic rounding is unbiased, so v decays and grows at its true
// rate on average, and the result depends only on the element and the step.
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
    // The unit of the packed m's 13-bit integer, in multiples of sqrt(v): a power of two.
    ratio_step: f32,
    // How `adam_step_packed` packs the moments: PACKING_RATIO or PACKING_BF16.
    packing: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: AdamParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: AdamParams;
@group(0) @binding(1) var<storage, read_write> param: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> grad: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> moment1: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> moment2: array<vec4<f32>>;
// Both moments of each element in one word, packed as `packing` says.
@group(0) @binding(5) var<storage, read_write> moments_packed: array<vec4<u32>>;

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

// Largest magnitude of the packed m's integer (13-bit two's complement, symmetric).
const RATIO_MAX: i32 = 4095;

// The two packings of `adam_step_packed`.
const PACKING_RATIO: u32 = 0u;
const PACKING_BF16: u32 = 1u;

// The 19-bit v of `x` >= 0 (f32 bits 30..12) rounded stochastically by the 12 random bits `r`.
// Infinities and NaN are truncated, a finite value never rounds to infinity, and -0 becomes 0.
fn v19_stochastic(x: f32, r: u32) -> u32 {
    let bits = bitcast<u32>(x) & 0x7fffffffu;
    let rounded = (bits + (r & 0xfffu)) >> 12u;
    let truncated = bits >> 12u;
    let exponent_max = (bits & 0x7f800000u) == 0x7f800000u || (rounded & 0x7f800u) == 0x7f800u;
    return select(rounded, truncated, exponent_max);
}

fn v19_to_f32(word: u32) -> f32 {
    return bitcast<f32>((word >> 13u) << 12u);
}

// The signed 13-bit integer of a word (its low bits).
fn ratio_of(word: u32) -> i32 {
    return bitcast<i32>(word << 19u) >> 19u;
}

// `m / s` in units of `ratio_step`, rounded stochastically by the 16 random bits `r` and clamped
// to +-RATIO_MAX; 0 where s is 0 (then every gradient so far was 0 or underflowed).
fn ratio_stochastic(m: f32, s: f32, r: u32) -> u32 {
    let q = select(0.0, clamp(m / s / params.ratio_step, -f32(RATIO_MAX), f32(RATIO_MAX)), s > 0.0);
    let below = floor(q);
    // `q - below` is exact, and so is the scaling by 2^16: the draw is exactly unbiased.
    let up = (q - below) * 65536.0 > f32(r & 0xffffu);
    let k = clamp(i32(below) + select(0, 1, up), -RATIO_MAX, RATIO_MAX);
    return bitcast<u32>(k) & 0x1fffu;
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

// Both moments of a packed word, widened to f32: (m, v).
fn unpack_moments(word: u32) -> vec2<f32> {
    if params.packing == PACKING_BF16 {
        return vec2<f32>(bf16_to_f32(word >> 16u), bf16_to_f32(word & 0xffffu));
    }
    let v = v19_to_f32(word);
    return vec2<f32>((f32(ratio_of(word)) * params.ratio_step) * sqrt(v), v);
}

// The packed word of (m, v), rounded by the 32 random bits `r`: bfloat16 takes the high 16 for m
// and the low 16 for v; the 16-bit state rounds v first by the low 12, then m against the rounded
// v's square root by the high 16.
fn pack_moments(m: f32, v: f32, r: u32) -> u32 {
    if params.packing == PACKING_BF16 {
        return (bf16_stochastic(m, r >> 16u) << 16u) | bf16_stochastic(v, r);
    }
    let v_bits = v19_stochastic(v, r);
    let s = sqrt(v19_to_f32(v_bits << 13u));
    return (v_bits << 13u) | ratio_stochastic(m, s, r >> 16u);
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
    let packed_old = moments_packed[i];
    var m_old: vec4<f32>;
    var v_old: vec4<f32>;
    for (var k = 0u; k < 4u; k++) {
        let mv = unpack_moments(packed_old[k]);
        m_old[k] = mv.x;
        v_old[k] = mv.y;
    }
    let p_old = param[i];
    let up = adam_update(grad[i], m_old, v_old, p_old);
    var packed = packed_old;
    for (var k = 0u; k < 4u; k++) {
        let r = pcg(pcg(params.element_offset + lanes[k]) ^ params.seed);
        packed[k] = pack_moments(up.m[k], up.v[k], r);
    }
    moments_packed[i] = select(packed_old, packed, live);
    param[i] = select(p_old, up.param, live);
}

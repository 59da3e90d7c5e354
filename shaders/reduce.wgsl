// One reduction pass: each workgroup combines ITEMS_PER_WORKGROUP consecutive elements of `src`
// (one page, or a page of partials) into partials[params.out_offset + workgroup index].
//
// Summation order, which the error bound in src/ops/reduce.rs relies on: each invocation loads 4
// elements (strided by WG) and combines them pairwise, (x0 + x1) + (x2 + x3); the 256 invocation
// values are then combined by a binary tree in workgroup memory (portable), or by a subgroup
// reduction followed by a tree over the per-subgroup results (SUBGROUPS; the order inside
// subgroupAdd is the hardware's). Values travel as u32 bit patterns; the op code says how to
// interpret them.
#import "shared/dispatch.wgsl"

struct ReduceParams {
    // Elements of `src` in this binding.
    n: u32,
    // Operation code (OP_* below), generated into Rust and chosen by `op_code` in src/ops/reduce.rs.
    op: u32,
    // Index in `partials` of this dispatch's first workgroup result.
    out_offset: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: ReduceParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: ReduceParams;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> partials: array<u32>;

const WG: u32 = 256u;
const ITEMS_PER_WORKGROUP: u32 = 1024u;

const OP_F32_SUM: u32 = 0u;
const OP_F32_MIN: u32 = 1u;
const OP_F32_MAX: u32 = 2u;
const OP_U32_SUM: u32 = 3u;
const OP_U32_MIN: u32 = 4u;
const OP_U32_MAX: u32 = 5u;
const OP_I32_MIN: u32 = 6u;
const OP_I32_MAX: u32 = 7u;

// 0.0, +inf, -inf, 0, u32::MAX, 0, i32::MAX, i32::MIN.
fn identity(op: u32) -> u32 {
    switch op {
        case OP_F32_MIN: { return 0x7f800000u; }
        case OP_F32_MAX: { return 0xff800000u; }
        case OP_U32_MIN: { return 0xffffffffu; }
        case OP_I32_MIN: { return 0x7fffffffu; }
        case OP_I32_MAX: { return 0x80000000u; }
        default: { return 0u; }
    }
}

fn is_nan_bits(bits: u32) -> bool {
    return (bits & 0x7fffffffu) > 0x7f800000u;
}

// Combines two values; f32 min/max return a NaN operand if there is one.
fn combine(op: u32, a: u32, b: u32) -> u32 {
    switch op {
        case OP_F32_SUM: { return bitcast<u32>(bitcast<f32>(a) + bitcast<f32>(b)); }
        case OP_F32_MIN, OP_F32_MAX: {
            if is_nan_bits(a) {
                return a;
            }
            if is_nan_bits(b) {
                return b;
            }
            if op == OP_F32_MIN {
                return bitcast<u32>(min(bitcast<f32>(a), bitcast<f32>(b)));
            }
            return bitcast<u32>(max(bitcast<f32>(a), bitcast<f32>(b)));
        }
        case OP_U32_SUM: { return a + b; }
        case OP_U32_MIN: { return min(a, b); }
        case OP_U32_MAX: { return max(a, b); }
        case OP_I32_MIN: { return bitcast<u32>(min(bitcast<i32>(a), bitcast<i32>(b))); }
        case OP_I32_MAX: { return bitcast<u32>(max(bitcast<i32>(a), bitcast<i32>(b))); }
        default: { return a; }
    }
}

fn load(i: u32, id: u32) -> u32 {
    if i < params.n {
        return src[i];
    }
    return id;
}

var<workgroup> scratch: array<u32, WG>;
#if SUBGROUPS
var<workgroup> subgroup_count: u32;

// Reduction across the subgroup. Must be reached by every invocation (uniform control flow: `op`
// is a uniform). NaN propagation for f32 min/max is done with a separate subgroupMax over a flag,
// because the hardware min/max of NaN is unspecified.
fn subgroup_combine(op: u32, v: u32) -> u32 {
    let nan_seen = subgroupMax(select(0u, v, is_nan_bits(v)));
    switch op {
        case OP_F32_SUM: { return bitcast<u32>(subgroupAdd(bitcast<f32>(v))); }
        case OP_F32_MIN: { return select(bitcast<u32>(subgroupMin(bitcast<f32>(v))), nan_seen, nan_seen != 0u); }
        case OP_F32_MAX: { return select(bitcast<u32>(subgroupMax(bitcast<f32>(v))), nan_seen, nan_seen != 0u); }
        case OP_U32_SUM: { return subgroupAdd(v); }
        case OP_U32_MIN: { return subgroupMin(v); }
        case OP_U32_MAX: { return subgroupMax(v); }
        case OP_I32_MIN: { return bitcast<u32>(subgroupMin(bitcast<i32>(v))); }
        case OP_I32_MAX: { return bitcast<u32>(subgroupMax(bitcast<i32>(v))); }
        default: { return v; }
    }
}
#endif

@compute @workgroup_size(256)
fn reduce_pass(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(num_subgroups) sg_count: u32,
#endif
) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let wg = workgroup_index(wid, nwg);
    // Past the requested workgroups (2D grid padding): the whole workgroup leaves together.
    if wg * ITEMS_PER_WORKGROUP >= uniform_vec4u(lid, vec4<u32>(params.n)).x {
        return;
    }
    let op = params.op;
    let id = identity(op);
    let base = wg * ITEMS_PER_WORKGROUP + lid;
    let pair0 = combine(op, load(base, id), load(base + WG, id));
    let pair1 = combine(op, load(base + 2u * WG, id), load(base + 3u * WG, id));
    let v = combine(op, pair0, pair1);
#if SUBGROUPS
    let r = subgroup_combine(op, v);
    if lane == 0u {
        scratch[sg_id] = r;
    }
    if lid == 0u {
        subgroup_count = sg_count;
    }
    // Uniform across the workgroup by construction, so the loop below may contain barriers.
    var remaining = workgroupUniformLoad(&subgroup_count);
    while remaining > 1u {
        let half = (remaining + 1u) / 2u;
        if lid + half < remaining {
            scratch[lid] = combine(op, scratch[lid], scratch[lid + half]);
        }
        workgroupBarrier();
        remaining = half;
    }
#else
    scratch[lid] = v;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if lid < stride {
            scratch[lid] = combine(op, scratch[lid], scratch[lid + stride]);
        }
        workgroupBarrier();
    }
#endif
    if lid == 0u {
        partials[params.out_offset + wg] = scratch[0];
    }
}

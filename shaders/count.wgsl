// Exact count of nonzero u32 flags, with 64-bit totals kept as (lo, hi) u32 pairs; never floats.
//   count_blocks: the number of nonzero flags in each block of COUNT_BLOCK -> pair (count, 0);
//   reduce_pairs: the 64-bit sum of each block of COUNT_BLOCK pairs -> one pair, or, with
//                 `accumulate` set (single-workgroup dispatches), added with carry into output[0..2].
// src/ops/count.rs reduces each page to one pair and accumulates every page into the result.
// Workgroup totals go through workgroup atomics on values that cannot overflow: per-block counts
// are at most COUNT_BLOCK, and 64-bit sums are split into 16-bit, 16-bit and high parts.
#import "shared/dispatch.wgsl"

struct CountParams {
    // Flags (count_blocks) or pairs (reduce_pairs) in `input`.
    n: u32,
    // 1: add the result into output[0..2] instead of storing output[2 * block ..].
    accumulate: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: CountParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: CountParams;
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read_write> output: array<u32>;

const COUNT_WG: u32 = 256u;
const COUNT_ITEMS: u32 = 16u;
const COUNT_BLOCK: u32 = COUNT_WG * COUNT_ITEMS;

var<workgroup> wg_low16: atomic<u32>;
var<workgroup> wg_high16: atomic<u32>;
var<workgroup> wg_hi: atomic<u32>;

// Adds two 64-bit values held as (lo, hi).
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + u32(lo < a.x));
}

// Adds this invocation's 64-bit value into the workgroup accumulators, as parts that cannot
// overflow (each part below 2^16 per invocation, at most 2^8 invocations).
fn accumulate_parts(low16: u32, high16: u32, hi: u32) {
    if low16 != 0u {
        atomicAdd(&wg_low16, low16);
    }
    if high16 != 0u {
        atomicAdd(&wg_high16, high16);
    }
    if hi != 0u {
        atomicAdd(&wg_hi, hi);
    }
}

@compute @workgroup_size(256)
fn count_blocks(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
#endif
) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    // No early return for the padding workgroups of a 2D grid (CPU drivers slow down every
    // workgroup of a kernel that may return before a barrier): they count nothing, store nothing.
    let blocks = (params.n + COUNT_BLOCK - 1u) / COUNT_BLOCK;
    let block = min(workgroup_index(wid, nwg), blocks);
    // Strided so neighbouring invocations read neighbouring flags.
    let first = block * COUNT_BLOCK + lid;
    var count = 0u;
    for (var k = 0u; k < COUNT_ITEMS; k++) {
        let i = first + k * COUNT_WG;
        count += select(0u, 1u, (input[min(i, params.n - 1u)] != 0u) & (i < params.n));
    }
#if SUBGROUPS
    // Exact: at most COUNT_BLOCK per subgroup. One atomic per subgroup.
    let subgroup_count = subgroupAdd(count);
    if lane == 0u {
        accumulate_parts(subgroup_count, 0u, 0u);
    }
#else
    accumulate_parts(count, 0u, 0u);
#endif
    workgroupBarrier();
    if lid == 0u && block < blocks {
        output[2u * block] = atomicLoad(&wg_low16);
        output[2u * block + 1u] = 0u;
    }
}

@compute @workgroup_size(256)
fn reduce_pairs(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
#endif
) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    // No early return for the padding workgroups of a 2D grid (CPU drivers slow down every
    // workgroup of a kernel that may return before a barrier): they count nothing, store nothing.
    let blocks = (params.n + COUNT_BLOCK - 1u) / COUNT_BLOCK;
    let block = min(workgroup_index(wid, nwg), blocks);
    let first = block * COUNT_BLOCK + lid;
    var sum = vec2<u32>(0u, 0u);
    for (var k = 0u; k < COUNT_ITEMS; k++) {
        let i = first + k * COUNT_WG;
        let j = min(i, params.n - 1u);
        sum = add64(sum, select(vec2<u32>(0u), vec2<u32>(input[2u * j], input[2u * j + 1u]), i < params.n));
    }
    var low16 = sum.x & 0xFFFFu;
    var high16 = sum.x >> 16u;
    var hi = sum.y;
#if SUBGROUPS
    // Exact: the 16-bit parts stay below 2^23 for subgroups of up to 128 invocations, and the high
    // words cannot overflow because no count reaches 2^64.
    low16 = subgroupAdd(low16);
    high16 = subgroupAdd(high16);
    hi = subgroupAdd(hi);
    if lane == 0u {
        accumulate_parts(low16, high16, hi);
    }
#else
    accumulate_parts(low16, high16, hi);
#endif
    workgroupBarrier();
    if lid == 0u && block < blocks {
        // low16 + high16 * 2^16 as a 64-bit value, plus the high words.
        let high16_total = atomicLoad(&wg_high16);
        let parts = add64(vec2<u32>(atomicLoad(&wg_low16), 0u), vec2<u32>(high16_total << 16u, high16_total >> 16u));
        let total = add64(parts, vec2<u32>(0u, atomicLoad(&wg_hi)));
        if params.accumulate != 0u {
            let result = add64(vec2<u32>(output[0], output[1]), total);
            output[0] = result.x;
            output[1] = result.y;
        } else {
            output[2u * block] = total.x;
            output[2u * block + 1u] = total.y;
        }
    }
}

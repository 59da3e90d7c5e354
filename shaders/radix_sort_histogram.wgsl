// Radix sort, step 1 of a pass: the digit histogram of every block of one source page, written
// bin-major into the digit table: block_counts[bin * num_blocks + global block].
#import "shared/dispatch.wgsl"
#import "radix_sort_common.wgsl"

@group(0) @binding(0) var<uniform> params_uniform: RadixPassParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: RadixPassParams;
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> block_counts: array<u32>;

var<workgroup> digit_totals: array<atomic<u32>, RADIX>;

@compute @workgroup_size(128)
fn count_digits(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let block = workgroup_index(wid, nwg);
    if block >= (uniform_vec4u(lid, vec4<u32>(params.n)).x + BLOCK - 1u) / BLOCK {
        return;
    }
    if lid < RADIX {
        atomicStore(&digit_totals[lid], 0u);
    }
    workgroupBarrier();
    let first = block * BLOCK;
    // Strided so neighbouring invocations read neighbouring keys; counts ignore order.
    for (var i = 0u; i < ITEMS; i += 1u) {
        let index = first + i * WG + lid;
        if index < params.n {
            atomicAdd(&digit_totals[digit_of(keys[index], params.shift, params.digit_mask)], 1u);
        }
    }
    workgroupBarrier();
    if lid < RADIX {
        block_counts[lid * params.num_blocks + params.block_base + block] = atomicLoad(&digit_totals[lid]);
    }
}

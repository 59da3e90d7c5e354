// Reduces the per-workgroup records of the loss kernels in one workgroup, on the GPU (no
// readback): `finalize_sums` writes the column sums of the records, `finalize_loss` turns
// them into (loss, L1 mean, SSIM mean, MSE) using the normalisers in `norm`.
//
// Summation order: invocation i adds records i, i + 256, i + 512, ... in sequence, then the 256
// invocation sums are combined by a binary tree (depth 8).
#import "shared/dispatch.wgsl"

struct FinalizeParams {
    // Records to reduce.
    count: u32,
    // lambda: weight of (1 - SSIM) in the loss.
    ssim_weight: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: FinalizeParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: FinalizeParams;
@group(0) @binding(1) var<storage, read> records: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
// (W_l1, W_ssim, 0, 0); read by finalize_loss only.
@group(0) @binding(3) var<storage, read> norm: array<f32>;

const WG: u32 = 256u;

var<workgroup> sums: array<vec4<f32>, WG>;

// Column sums of all records; every invocation must call it (it has barriers).
fn column_sums(lid: u32) -> vec4<f32> {
    var acc = vec4<f32>(0.0);
    for (var i = lid; i < params.count; i += WG) {
        acc += records[i];
    }
    sums[lid] = acc;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if lid < stride {
            sums[lid] += sums[lid + stride];
        }
        workgroupBarrier();
    }
    return sums[0];
}

@compute @workgroup_size(256)
fn finalize_sums(@builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let total = column_sums(lid);
    if lid == 0u {
        for (var k = 0u; k < 4u; k++) {
            out[k] = total[k];
        }
    }
}

@compute @workgroup_size(256)
fn finalize_loss(@builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let total = column_sums(lid);
    if lid == 0u {
        let w_l1 = norm[0];
        let w_ssim = norm[1];
        // An all-zero mask: nothing to compare, so L1 = MSE = 0 and SSIM = 1 (loss 0).
        let l1 = select(0.0, total.x / (3.0 * w_l1), w_l1 > 0.0);
        let ssim = select(1.0, total.y / (3.0 * w_ssim), w_ssim > 0.0);
        let mse = select(0.0, total.z / (3.0 * w_l1), w_l1 > 0.0);
        let lambda = params.ssim_weight;
        out[0] = (1.0 - lambda) * l1 + lambda * (1.0 - ssim);
        out[1] = l1;
        out[2] = ssim;
        out[3] = mse;
    }
}

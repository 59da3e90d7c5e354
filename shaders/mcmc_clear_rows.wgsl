// MCMC, stage 5: zeroes the rows (width `p.width`) of one optimizer-moment tensor whose `reset`
// flag is set.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/mcmc.wgsl"

@group(0) @binding(0) var<uniform> p_uniform: McmcParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> p: McmcParams;
@group(0) @binding(1) var<storage, read> reset: array<u32>;
@group(0) @binding(2) var<storage, read_write> rows: array<f32>;

@compute @workgroup_size(256)
fn clear_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        p = p_uniform;
    }
    let i = mcmc_item(wid, nwg, lid);
    if i >= p.count || reset[i] == 0u {
        return;
    }
    for (var k = 0u; k < p.width; k++) {
        rows[i * p.width + k] = 0.0;
    }
}

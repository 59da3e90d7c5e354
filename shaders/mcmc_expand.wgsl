// MCMC, stage 3: the list of drawn Gaussians (global indices), each repeated as often as it was
// drawn, from the draws and their exclusive scan.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/mcmc.wgsl"

@group(0) @binding(0) var<uniform> p_uniform: McmcParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> p: McmcParams;
@group(0) @binding(1) var<storage, read> draws: array<u32>;
@group(0) @binding(2) var<storage, read> first_slot: array<u32>;
@group(0) @binding(3) var<storage, read_write> source_from_draw: array<u32>;

@compute @workgroup_size(256)
fn expand(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        p = p_uniform;
    }
    let i = mcmc_item(wid, nwg, lid);
    if i >= p.count {
        return;
    }
    let first = first_slot[i];
    let end = min(first + draws[i], arrayLength(&source_from_draw));
    for (var slot = first; slot < end; slot++) {
        source_from_draw[slot] = p.page_offset + i;
    }
}

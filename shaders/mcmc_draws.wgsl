// MCMC, stage 2: how many of the K draws land on each Gaussian (see shared/mcmc.wgsl), from the
// weights, their inclusive scan and its total.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/mcmc.wgsl"

@group(0) @binding(0) var<uniform> p_uniform: McmcParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> p: McmcParams;
@group(0) @binding(1) var<storage, read> weights: array<u32>;
@group(0) @binding(2) var<storage, read> cdf: array<u32>;
@group(0) @binding(3) var<storage, read> total: array<u32>;
@group(0) @binding(4) var<storage, read_write> draws: array<u32>;

fn draws_below(c: u32) -> u32 {
    let t = total[0];
    if t == 0u {
        return 0u;
    }
    let position = floor(f32(c) / f32(t) * f32(p.samples) + p.offset);
    return min(p.samples, u32(position));
}

@compute @workgroup_size(256)
fn multiplicity(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        p = p_uniform;
    }
    let i = mcmc_item(wid, nwg, lid);
    if i >= p.count {
        return;
    }
    let upper = cdf[i];
    draws[i] = draws_below(upper) - draws_below(upper - weights[i]);
}

// MCMC, stage 1: quantised opacity weights (0 for ineligible Gaussians) and dead flags.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/mcmc.wgsl"

@group(0) @binding(0) var<uniform> p_uniform: McmcParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> p: McmcParams;
@group(0) @binding(1) var<storage, read> opacity_logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> weights: array<u32>;
@group(0) @binding(3) var<storage, read_write> dead: array<u32>;

@compute @workgroup_size(256)
fn weigh(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        p = p_uniform;
    }
    let i = mcmc_item(wid, nwg, lid);
    if i >= p.count {
        return;
    }
    let logit = opacity_logits[i];
    let is_dead = mcmc_is_dead(logit, p.min_opacity);
    let eligible = is_finite_f32(logit) && (p.mode != MODE_RELOCATE || !is_dead);
    let level = max(1u, u32(sigmoid(logit) * p.weight_scale));
    weights[i] = select(0u, level, eligible);
    dead[i] = select(0u, 1u, is_dead);
}

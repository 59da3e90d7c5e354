// MCMC's regularisers, added to the gradients before the optimizer step:
// λ_o · mean(opacity) and λ_s · mean(scale), through the sigmoid and exp activations.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/mcmc_noise.wgsl"

@group(0) @binding(0) var<uniform> p_uniform: NoiseParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> p: NoiseParams;
@group(0) @binding(1) var<storage, read> opacity_logits: array<f32>;
@group(0) @binding(2) var<storage, read> log_scales: array<f32>;
@group(0) @binding(3) var<storage, read_write> grad_opacity_logits: array<f32>;
@group(0) @binding(4) var<storage, read_write> grad_log_scales: array<f32>;

@compute @workgroup_size(256)
fn regularize(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        p = p_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= p.count {
        return;
    }
    let o = sigmoid(opacity_logits[i]);
    grad_opacity_logits[i] += p.opacity_reg * o * (1.0 - o);
    for (var k = 0u; k < 3u; k++) {
        grad_log_scales[3u * i + k] += p.scale_reg * exp(log_scales[3u * i + k]);
    }
}

// MCMC's exploration noise, after the optimizer step: each mean moves by Σ ε · gate(o) · scale,
// where Σ = R S² Rᵀ is the Gaussian's covariance, ε ~ N(0, I) from a counter-based hash of
// (seed, global index), and gate(o) = 1 / (1 + exp(-100 ((1 - o) - 0.995))) leaves opaque
// Gaussians in place and moves nearly transparent ones freely.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/random.wgsl"
#import "shared/mcmc_noise.wgsl"

@group(0) @binding(0) var<uniform> p_uniform: NoiseParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> p: NoiseParams;
@group(0) @binding(1) var<storage, read> opacity_logits: array<f32>;
@group(0) @binding(2) var<storage, read> log_scales: array<f32>;
@group(0) @binding(3) var<storage, read> quats: array<f32>;
@group(0) @binding(4) var<storage, read_write> means: array<f32>;

@compute @workgroup_size(256)
fn perturb(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        p = p_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= p.count {
        return;
    }
    let o = sigmoid(opacity_logits[i]);
    let gate = 1.0 / (1.0 + exp(-100.0 * ((1.0 - o) - 0.995)));
    let s = exp(vec3<f32>(log_scales[3u * i], log_scales[3u * i + 1u], log_scales[3u * i + 2u]));
    let r = quat_to_mat(vec4<f32>(quats[4u * i], quats[4u * i + 1u], quats[4u * i + 2u], quats[4u * i + 3u]));
    let base = pcg(p.seed ^ pcg(p.page_offset + i));
    let eps = vec3<f32>(normal(base), normal(base + 1u), normal(base + 2u));
    // Σ ε = R (S² (Rᵀ ε)).
    let step = r * (s * s * (transpose(r) * eps)) * (gate * p.noise_scale);
    if all(step == step) {
        for (var k = 0u; k < 3u; k++) {
            means[3u * i + k] += step[k];
        }
    }
}

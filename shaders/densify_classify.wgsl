// 3DGS densification decisions for one page of Gaussians: clone (large gradient, small),
// split (large gradient, large), prune (transparent, or too big on screen or in the world).
#import "shared/dispatch.wgsl"

struct DensifyParams {
    count: u32,
    prune_big: u32,
    grad_threshold: f32,
    scale_threshold: f32,
    prune_opacity: f32,
    max_screen_radius: f32,
    max_world_scale: f32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> p_uniform: DensifyParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> p: DensifyParams;
@group(0) @binding(1) var<storage, read> stats: array<f32>;
@group(0) @binding(2) var<storage, read> log_scales: array<f32>;
@group(0) @binding(3) var<storage, read> opacity_logits: array<f32>;
@group(0) @binding(4) var<storage, read_write> keep_flags: array<u32>;
@group(0) @binding(5) var<storage, read_write> clone_flags: array<u32>;
@group(0) @binding(6) var<storage, read_write> split_flags: array<u32>;

@compute @workgroup_size(256)
fn classify(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        p = p_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= p.count {
        return;
    }
    let seen = stats[4u * i + 2u];
    let average_grad = select(0.0, stats[4u * i] / seen, seen > 0.0);
    let largest = exp(max(log_scales[3u * i], max(log_scales[3u * i + 1u], log_scales[3u * i + 2u])));
    let selected = average_grad >= p.grad_threshold;
    let clone = selected && largest <= p.scale_threshold;
    let split = selected && largest > p.scale_threshold;
    let opacity = 1.0 / (1.0 + exp(-opacity_logits[i]));
    // NaN opacity or scale compares false everywhere: prune it.
    let finite = opacity == opacity && largest == largest;
    var prune = !(opacity >= p.prune_opacity) || !finite;
    if p.prune_big != 0u {
        prune = prune || stats[4u * i + 3u] > p.max_screen_radius || largest > p.max_world_scale;
    }
    keep_flags[i] = select(0u, 1u, !prune && !split);
    clone_flags[i] = select(0u, 1u, clone && !prune);
    split_flags[i] = select(0u, 1u, split && finite);
}

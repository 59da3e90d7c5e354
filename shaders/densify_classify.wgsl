// 3DGS densification decisions for one page of Gaussians: clone (large gradient, small),
// split (large gradient, large), prune (transparent; too big in the world; after the first opacity
// reset, when enabled, too big on screen). "Too big in the world" is relative to the Gaussian's
// reach, the larger of the scene extent and its distance from the scene centre (so far-field
// Gaussians may be as large as their distance makes them look): a largest scale above
// `world_scale_fraction` of it, 0.1 after the first opacity reset as in 3DGS, and before it a
// looser bound that only catches a Gaussian grown to envelop the scene (it would veil any view
// from inside it). As in INRIA's and gsplat's code the prune applies to
// the grown model: a clone or split child inherits its parent's opacity, so the children of a
// parent pruned for its opacity die with it; split children (scales / split_scale_divisor) die
// when still too big in the world; the screen test applies to parents only (a new Gaussian has no
// screen radius yet).
#import "shared/dispatch.wgsl"

struct DensifyParams {
    count: u32,
    prune_big: u32,
    grad_threshold: f32,
    scale_threshold: f32,
    prune_opacity: f32,
    max_screen_radius: f32,
    world_scale_fraction: f32,
    split_scale_divisor: f32,
    // Statistics column of the gradient-norm sums: 0 = summed gradient, 1 = absgrad.
    grad_column: u32,
    extent: f32,
    center_x: f32,
    center_y: f32,
    center_z: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
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
@group(0) @binding(7) var<storage, read> means: array<f32>;

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
    let average_grad = select(0.0, stats[4u * i + p.grad_column] / seen, seen > 0.0);
    let largest = exp(max(log_scales[3u * i], max(log_scales[3u * i + 1u], log_scales[3u * i + 2u])));
    let selected = average_grad >= p.grad_threshold;
    let clone = selected && largest <= p.scale_threshold;
    let split = selected && largest > p.scale_threshold;
    let opacity = 1.0 / (1.0 + exp(-opacity_logits[i]));
    // NaN opacity or scale compares false everywhere: prune it.
    let finite = opacity == opacity && largest == largest;
    let transparent = !(opacity >= p.prune_opacity) || !finite;
    let offset = vec3<f32>(means[3u * i], means[3u * i + 1u], means[3u * i + 2u]) - vec3<f32>(p.center_x, p.center_y, p.center_z);
    let max_world_scale = p.world_scale_fraction * max(p.extent, length(offset));
    // A NaN mean makes the bound NaN; the opacity test above already prunes non-finite scales.
    let world_big = largest > max_world_scale;
    let child_world_big = largest / p.split_scale_divisor > max_world_scale;
    var screen_big = false;
    if p.prune_big != 0u {
        screen_big = p.max_screen_radius > 0.0 && stats[4u * i + 3u] > p.max_screen_radius;
    }
    let prune = transparent || world_big || screen_big;
    keep_flags[i] = select(0u, 1u, !prune && !split);
    clone_flags[i] = select(0u, 1u, clone && !transparent && !world_big);
    split_flags[i] = select(0u, 1u, split && !transparent && !child_world_big);
}

// The flattening regulariser of geometry training (PGSR's): λ · mean over the Gaussians of
// their shortest scale, which pulls each Gaussian towards a disc whose normal (its shortest axis,
// splat_normals.wgsl) is well defined. Its gradient, through the exp activation, goes to the
// shortest axis's log scale only (the first of equal ones, as the normals pick it), added to the
// chunk's gradients before the optimizer step.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"

struct FlattenParams {
    // λ / N, N counting every Gaussian of the model.
    weight: f32,
    // Gaussians in this dispatch.
    count: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p_uniform: FlattenParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> p: FlattenParams;
@group(0) @binding(1) var<storage, read> log_scales: array<f32>;
@group(0) @binding(2) var<storage, read_write> grad_log_scales: array<f32>;

@compute @workgroup_size(256)
fn flatten(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        p = p_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= p.count {
        return;
    }
    let s = vec3<f32>(log_scales[3u * i], log_scales[3u * i + 1u], log_scales[3u * i + 2u]);
    let axis = shortest_axis(s);
    grad_log_scales[3u * i + axis] += p.weight * exp(s[axis]);
}

// After the tile sort, whose values are the intersections' emission indices ("orig", see
// map_intersections.wgsl): for each tile-sorted intersection i, its splat, and for each emission
// index its sorted position. Emission order groups each splat's intersections together (splats in
// depth order, tiles row-major), so `isect_from_orig` lets the backward pass sum a splat's
// per-intersection gradient rows in a fixed order (rasterize_backward_sum.wgsl). `count` = I.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> orig_from_isect: array<u32>;
@group(0) @binding(2) var<storage, read> splat_from_orig: array<u32>;
@group(0) @binding(3) var<storage, read_write> splat_from_isect: array<u32>;
@group(0) @binding(4) var<storage, read_write> isect_from_orig: array<u32>;

@compute @workgroup_size(256)
fn index_isects(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let isect = workgroup_index(wid, nwg) * 256u + lid;
    if isect >= u.count {
        return;
    }
    let orig = orig_from_isect[isect];
    splat_from_isect[isect] = splat_from_orig[orig];
    isect_from_orig[orig] = isect;
}

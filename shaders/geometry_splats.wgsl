// Geometry as colour in depth order, for one chunk of visible splats: copies each splat row and
// replaces its colour by its depth, (depth, 0, 0), with MOMENTS by (depth, depth², 1), or with
// NORMAL by its camera-space normal (the rows splat_normals.wgsl wrote, gathered into depth
// order). A geometry regulariser's render thus shares the colour render's projection and sorts:
// its rows are bit for bit those geometry_colour.wgsl gives a separate projection.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"

override NORMAL: bool = false;
override MOMENTS: bool = false;

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
// This chunk's splat rows (`page_offset` is its first splat).
@group(0) @binding(1) var<storage, read> splats: array<f32>;
// Every visible splat's normal, [V, 3], indexed by splat (NORMAL only).
@group(0) @binding(2) var<storage, read> splat_normals: array<f32>;
@group(0) @binding(3) var<storage, read_write> rows: array<f32>;

@compute @workgroup_size(256)
fn geometry_splats(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= u.count {
        return;
    }
    let base = i * SPLAT_STRIDE;
    for (var k = 0u; k < SPLAT_STRIDE; k++) {
        rows[base + k] = splats[base + k];
    }
    let depth = splats[base + SPLAT_DEPTH];
    var colour = depth_colour(depth, MOMENTS);
    if NORMAL {
        let s = 3u * (u.page_offset + i);
        colour = vec3<f32>(splat_normals[s], splat_normals[s + 1u], splat_normals[s + 2u]);
    }
    rows[base + SPLAT_R] = colour.x;
    rows[base + SPLAT_G] = colour.y;
    rows[base + SPLAT_B] = colour.z;
}

// Start and end of each tile's run in the tile-sorted intersection list. `ranges` holds
// (start, end) pairs and must be zeroed first, so empty tiles read as (0, 0).
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> tile_keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> ranges: array<u32>;

@compute @workgroup_size(256)
fn ranges_from_keys(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= u.count {
        return;
    }
    let key = tile_keys[i];
    if i == 0u || tile_keys[i - 1u] != key {
        ranges[2u * key] = i;
    }
    if i + 1u == u.count || tile_keys[i + 1u] != key {
        ranges[2u * key + 1u] = i + 1u;
    }
}

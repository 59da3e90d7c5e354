// Emits one (tile, splat) intersection per tile that each visible splat's footprint touches.
// Splats arrive in depth order, so a later stable sort by tile keeps each tile's list in depth
// order. `offsets` is the exclusive scan of the tile counts (exactly V entries), so writes never
// collide. Each intersection's index in this emission order ("orig") goes to `isect_ids`, the
// values of the tile sort, so that the backward pass can find a splat's intersections after it
// (index_isects.wgsl). One dispatch per page of splats: `count` splats from `page_offset`;
// `aux` = I.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> splats: array<f32>;
@group(0) @binding(2) var<storage, read> offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> tile_keys: array<u32>;
@group(0) @binding(4) var<storage, read_write> splat_from_isect: array<u32>;
@group(0) @binding(5) var<storage, read_write> isect_ids: array<u32>;

@compute @workgroup_size(256)
fn emit(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let local = workgroup_index(wid, nwg) * 256u + lid;
    if local >= u.count {
        return;
    }
    let v = u.page_offset + local;
    let base = local * SPLAT_STRIDE;
    let xy = vec2<f32>(splats[base + SPLAT_X], splats[base + SPLAT_Y]);
    let radius = vec2<f32>(splats[base + SPLAT_RADIUS_X], splats[base + SPLAT_RADIUS_Y]);
    let tiles = vec2<i32>(u.tile_counts);
    let tile_min = clamp(vec2<i32>(floor((xy - radius) / f32(TILE_SIZE))), vec2<i32>(0), tiles);
    let tile_max = clamp(vec2<i32>(ceil((xy + radius) / f32(TILE_SIZE))), vec2<i32>(0), tiles);
    var at = offsets[v];
    let end = select(offsets[v + 1u], u.aux, v + 1u >= arrayLength(&offsets));
    for (var ty = tile_min.y; ty < tile_max.y; ty++) {
        for (var tx = tile_min.x; tx < tile_max.x; tx++) {
            if at < end {
                tile_keys[at] = u32(ty) * u.tile_counts.x + u32(tx);
                splat_from_isect[at] = v;
                isect_ids[at] = at;
            }
            at++;
        }
    }
}

// For each node of a level-of-detail cut (compacted by src/io/lod/cut.rs after lod_cut.wgsl's
// cut_select): its row in the page pool, its parent's, and its blend weight towards the parent,
// which lod_emit.wgsl applies.
#import "shared/dispatch.wgsl"
#import "shared/lod.wgsl"

@group(0) @binding(0) var<uniform> params_uniform: CutParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: CutParams;
// Two per node: its own bounding sphere, then its parent's.
@group(0) @binding(1) var<storage, read> spheres: array<vec4<f32>>;
// Per node: parent, page, the page of its children, number of children.
@group(0) @binding(2) var<storage, read> links: array<vec4<u32>>;
// Per page: first node, and its slot in the pool.
@group(0) @binding(3) var<storage, read> pages_info: array<vec2<u32>>;
// The cut's state (lod_cut.wgsl's cut_state): the threshold in fine steps at index 5.
@group(0) @binding(4) var<storage, read> cut_state: array<u32>;
// The cut's nodes, ascending.
@group(0) @binding(5) var<storage, read> cut_nodes: array<u32>;
// Per cut node: its pool row, its parent's pool row (NO_ROW when not blended), the blend weight
// (f32 bits) and the parent's number of children.
@group(0) @binding(6) var<storage, read_write> records: array<vec4<u32>>;

const WG: u32 = 256u;
const NO_ROW: u32 = 0xffffffffu;
// Bins over which a node fades from its parent's look to its own (a quarter of a doubling).
const BLEND_BINS: f32 = 4.0;

fn pool_row(node: u32, page: u32) -> u32 {
    let info = pages_info[page];
    return info.y * params.page_nodes + (node - info.x);
}

@compute @workgroup_size(256)
fn cut_resolve(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = gid.x + gid.y * nwg.x * WG;
    if i >= params.cut_count {
        return;
    }
    let n = cut_nodes[i];
    let link = links[n];
    let row = pool_row(n, link.y);
    let b = f32(cut_state[5]) / f32(FINE);
    var weight = 0.0;
    var parent_row = NO_ROW;
    var family = 1u;
    if link.x != NO_NODE {
        // Blend towards the parent in log size: all parent when the parent has just been
        // refined, none once the parent is BLEND_BINS above the threshold, and none when this
        // node is about to be refined itself (whichever comes first).
        let own_level = size_level(spheres[2u * n]);
        let parent_level = size_level(spheres[2u * n + 1u]);
        if parent_level > own_level {
            let fade = 1.0 - (parent_level - b) / BLEND_BINS;
            let before_split = (b - own_level) / (parent_level - own_level);
            weight = clamp(min(fade, before_split), 0.0, 1.0);
        }
        if weight > 0.0 {
            let parent_link = links[link.x];
            parent_row = pool_row(link.x, parent_link.y);
            family = parent_link.w;
        }
    }
    records[i] = vec4<u32>(row, parent_row, bitcast<u32>(weight), family);
}

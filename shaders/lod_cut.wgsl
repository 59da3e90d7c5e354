// The cut of a level-of-detail tree for one camera (src/io/lod/cut.rs), computed per node in
// parallel, never by walking the tree:
//   cut_histogram: for every node, the range of size bins b for which it is in the cut, added
//                  into a histogram of range starts and ends;
//   cut_threshold: one workgroup: the cut's size at each bin, and the smallest bin at or above
//                  the asked threshold whose cut fits the splat budget;
//   cut_select:    each node's flag at that bin, and the pages the cut reads or wants;
//   cut_resolve:   for each node of the cut (compacted), its row in the page pool, its parent's,
//                  and its blend weight towards the parent.
//
// A node's size is its bounding sphere's projected radius in pixels, binned on a log scale
// (BINS_PER_OCTAVE bins per doubling; bin BIN_ONE_PIXEL holds 1 px). A node is *refined* (its
// children drawn instead) when its bin is above the threshold b, it is in view, it has children
// and their page is resident. Children's spheres lie inside their parent's, so a child's size,
// visibility and refinement never exceed its parent's; a node is in the cut when its parent is
// refined (or it is the root) and it is not, which each node decides from its own record alone
// (its parent's sphere is stored beside its own). CPU reference: src/io/lod/cut_reference.rs.
#import "shared/dispatch.wgsl"

struct CutParams {
    // World-to-camera rotation rows, with the translation in w.
    rot0: vec4<f32>,
    rot1: vec4<f32>,
    rot2: vec4<f32>,
    // fx, fy, cx, cy.
    focal: vec4<f32>,
    // width, height, near plane, asked threshold in pixels.
    view: vec4<f32>,
    // Nodes in the tree.
    nodes: u32,
    // Pages in the tree.
    pages: u32,
    // Most nodes the cut may hold.
    budget: u32,
    // Nodes in the cut (cut_resolve only).
    cut_count: u32,
    // Nodes per page in the pool.
    page_nodes: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: CutParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: CutParams;
// Two per node: its own bounding sphere (centre, radius), then its parent's (the root's is
// unused).
@group(0) @binding(1) var<storage, read> spheres: array<vec4<f32>>;
// Per node: parent, page, the page of its children, number of children.
@group(0) @binding(2) var<storage, read> links: array<vec4<u32>>;
// Per page: first node, and its slot in the pool (NOT_RESIDENT when absent).
@group(0) @binding(3) var<storage, read> pages_info: array<vec2<u32>>;
// Starts (BINS) then ends (BINS) of the nodes' bin ranges.
@group(0) @binding(4) var<storage, read_write> histogram: array<atomic<u32>>;
// The chosen bin, the cut's size at it, the threshold in pixels (f32 bits), and 1 when the
// budget raised the threshold.
@group(0) @binding(5) var<storage, read_write> cut_state: array<u32>;
// Per node: 1 when in the cut.
@group(0) @binding(6) var<storage, read_write> flags: array<u32>;
// Per page: wanted (the cut would refine into it), then used (the cut reads it).
@group(0) @binding(7) var<storage, read_write> page_marks: array<u32>;
// The cut's nodes, ascending (cut_resolve).
@group(0) @binding(8) var<storage, read> cut_nodes: array<u32>;
// Per cut node: its pool row, its parent's pool row (NO_ROW when not blended), the blend weight
// (f32 bits) and the parent's number of children.
@group(0) @binding(9) var<storage, read_write> records: array<vec4<u32>>;

const WG: u32 = 256u;
const ITEMS: u32 = 8u;
const BINS: u32 = 256u;
const BIN_ONE_PIXEL: f32 = 128.0;
const BINS_PER_OCTAVE: f32 = 16.0;
// Bins over which a node fades from its parent's look to its own (a quarter of a doubling).
const BLEND_BINS: f32 = 4.0;
const NOT_RESIDENT: u32 = 0xffffffffu;
const NO_NODE: u32 = 0xffffffffu;
const NO_ROW: u32 = 0xffffffffu;

var<workgroup> wg_starts: array<atomic<u32>, BINS>;
var<workgroup> wg_ends: array<atomic<u32>, BINS>;

fn to_camera(p: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(
        dot(params.rot0.xyz, p) + params.rot0.w,
        dot(params.rot1.xyz, p) + params.rot1.w,
        dot(params.rot2.xyz, p) + params.rot2.w,
    );
}

// Whether a sphere reaches into the view frustum (near plane and the four image edges).
fn in_view(s: vec4<f32>) -> bool {
    let c = to_camera(s.xyz);
    let r = s.w;
    let right = (params.view.x - params.focal.z) / params.focal.x;
    let left = params.focal.z / params.focal.x;
    let down = (params.view.y - params.focal.w) / params.focal.y;
    let up = params.focal.w / params.focal.y;
    return c.z + r > params.view.z
        && (c.x - right * c.z) * inverseSqrt(1.0 + right * right) <= r
        && (-c.x - left * c.z) * inverseSqrt(1.0 + left * left) <= r
        && (c.y - down * c.z) * inverseSqrt(1.0 + down * down) <= r
        && (-c.y - up * c.z) * inverseSqrt(1.0 + up * up) <= r;
}

// The projected radius of a sphere in bins (continuous): the radius over the distance to its
// nearest point, at least the near plane.
fn size_level(s: vec4<f32>) -> f32 {
    let c = to_camera(s.xyz);
    let d = max(length(c) - s.w, params.view.z);
    let px = max(params.focal.x, params.focal.y) * s.w / d;
    return log2(max(px, 1e-30)) * BINS_PER_OCTAVE + BIN_ONE_PIXEL;
}

// The smallest bin at or above a continuous level, clamped to 0..=BINS.
fn level_bin(level: f32) -> u32 {
    return u32(clamp(ceil(level), 0.0, f32(BINS)));
}

// A node's bin range [lo, hi) in the cut, as (lo, hi); empty (hi <= lo) when it never is.
fn node_range(n: u32) -> vec2<u32> {
    let own = spheres[2u * n];
    let link = links[n];
    if !in_view(own) {
        return vec2<u32>(0u, 0u);
    }
    let refinable = link.w > 0u && pages_info[link.z].y != NOT_RESIDENT;
    let lo = select(0u, level_bin(size_level(own)), refinable);
    var hi = BINS;
    if link.x != NO_NODE {
        let parent = spheres[2u * n + 1u];
        let parent_refinable = in_view(parent) && pages_info[link.y].y != NOT_RESIDENT;
        hi = select(0u, level_bin(size_level(parent)), parent_refinable);
    }
    return vec2<u32>(lo, hi);
}

@compute @workgroup_size(256)
fn cut_histogram(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    atomicStore(&wg_starts[lid], 0u);
    atomicStore(&wg_ends[lid], 0u);
    workgroupBarrier();
    let first = workgroup_index(wid, nwg) * WG * ITEMS + lid;
    for (var k = 0u; k < ITEMS; k++) {
        let n = first + k * WG;
        if n < params.nodes {
            let range = node_range(n);
            if range.x < range.y {
                atomicAdd(&wg_starts[range.x], 1u);
                if range.y < BINS {
                    atomicAdd(&wg_ends[range.y], 1u);
                }
            }
        }
    }
    workgroupBarrier();
    let starts = atomicLoad(&wg_starts[lid]);
    let ends = atomicLoad(&wg_ends[lid]);
    if starts != 0u {
        atomicAdd(&histogram[lid], starts);
    }
    if ends != 0u {
        atomicAdd(&histogram[BINS + lid], ends);
    }
}

@compute @workgroup_size(1)
fn cut_threshold(@builtin(num_workgroups) nwg: vec3<u32>) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let asked = level_bin(log2(max(params.view.w, 1e-30)) * BINS_PER_OCTAVE + BIN_ONE_PIXEL);
    var count = 0u;
    var chosen = BINS - 1u;
    var chosen_count = 0u;
    var found = false;
    for (var b = 0u; b < BINS; b++) {
        count = count + atomicLoad(&histogram[b]) - atomicLoad(&histogram[BINS + b]);
        if !found && b >= asked && count <= params.budget {
            chosen = b;
            chosen_count = count;
            found = true;
        }
    }
    if !found {
        chosen_count = count;
    }
    cut_state[0] = chosen;
    cut_state[1] = chosen_count;
    cut_state[2] = bitcast<u32>(exp2((f32(chosen) - BIN_ONE_PIXEL) / BINS_PER_OCTAVE));
    cut_state[3] = u32(chosen > asked);
}

@compute @workgroup_size(256)
fn cut_select(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let n = gid.x + gid.y * nwg.x * WG;
    if n >= params.nodes {
        return;
    }
    let b = cut_state[0];
    let range = node_range(n);
    let reached = range.x < range.y && b < range.y;
    flags[n] = u32(reached && range.x <= b);
    if reached {
        let link = links[n];
        page_marks[params.pages + link.y] = 1u;
        // In view and above the threshold with children: the cut reads their page when it is
        // resident (even where every child is out of view, so it is not evicted and wanted
        // again), and wants it when it is not.
        let above = link.w > 0u && level_bin(size_level(spheres[2u * n])) > b;
        if above {
            if pages_info[link.z].y == NOT_RESIDENT {
                page_marks[link.z] = 1u;
            } else {
                page_marks[params.pages + link.z] = 1u;
            }
        }
    }
}

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
    let b = f32(cut_state[0]);
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

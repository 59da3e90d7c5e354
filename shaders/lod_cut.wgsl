// The cut of a level-of-detail tree for one camera (src/io/lod/cut.rs), computed per node in
// parallel, never by walking the tree:
//   cut_histogram: for every node, the range of size bins b for which it is in the cut, added
//                  into a histogram of range starts and ends;
//   cut_threshold: one workgroup: the cut's size at each bin, and the smallest bin at or above
//                  the asked threshold whose cut fits the splat budget;
//   cut_select:    each node's flag at that bin, and the pages the cut reads or wants
// (then lod_resolve.wgsl, for each node of the compacted cut, its pool rows and blend weight).
//
// A node's size is its bounding sphere's projected radius in pixels, binned on a log scale
// (BINS_PER_OCTAVE bins per doubling; bin BIN_ONE_PIXEL holds 1 px). A node is *refined* (its
// children drawn instead) when its bin is above the threshold b, it is in view, it has children
// and their page is resident. Children's spheres lie inside their parent's, so a child's size,
// visibility and refinement never exceed its parent's; a node is in the cut when its parent is
// refined (or it is the root) and it is not, which each node decides from its own record alone
// (its parent's sphere is stored beside its own). CPU reference: src/io/lod/cut_reference.rs.
#import "shared/dispatch.wgsl"
#import "shared/lod.wgsl"

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

const WG: u32 = 256u;
const ITEMS: u32 = 8u;

var<workgroup> wg_starts: array<atomic<u32>, BINS>;
var<workgroup> wg_ends: array<atomic<u32>, BINS>;

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

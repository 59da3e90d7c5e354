// The cut of a level-of-detail tree for one camera (src/io/lod/cut.rs), computed per node in
// parallel, never by walking the tree:
//   cut_histogram: for every node, the range of size bins b for which it is in the cut, added
//                  into a histogram of range starts and ends;
//   cut_threshold: one workgroup: the cut's size at each bin, and the smallest bin at or above
//                  the asked threshold whose cut fits the splat budget;
//   cut_fine_histogram, cut_fine_threshold: when the budget raised the threshold to bin b, the
//                  same within bin b in FINE steps, so that the budget refines the nodes of that
//                  bin largest first (by their exact projected size) instead of none of them;
//   cut_select:    each node's flag at that threshold, and the pages the cut reads or wants
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
// The chosen bin, the cut's size at the threshold, the threshold in pixels (f32 bits), 1 when the
// budget raised the threshold, the cut's size at the bin below the chosen one, and the threshold
// in fine steps (bin * FINE when the budget did not raise it).
@group(0) @binding(5) var<storage, read_write> cut_state: array<u32>;
// Per node: 1 when in the cut.
@group(0) @binding(6) var<storage, read_write> flags: array<u32>;
// Per page: wanted (the cut would refine into it), then used (the cut reads it).
@group(0) @binding(7) var<storage, read_write> page_marks: array<u32>;
// Starts (FINE) then ends (FINE) of the nodes' fine ranges within the chosen bin.
@group(0) @binding(8) var<storage, read_write> fine_histogram: array<atomic<u32>>;

const WG: u32 = 256u;
const ITEMS: u32 = 8u;

var<workgroup> wg_starts: array<atomic<u32>, BINS>;
var<workgroup> wg_ends: array<atomic<u32>, BINS>;

// A node's range [lo, hi) of fine steps in the cut, as (lo, hi); empty (hi <= lo) when it never
// is. Its bin range is fine_to_bin of both.
fn node_range(n: u32) -> vec2<u32> {
    let own = spheres[2u * n];
    let link = links[n];
    if !in_view(own) {
        return vec2<u32>(0u, 0u);
    }
    let refinable = link.w > 0u && pages_info[link.z].y != NOT_RESIDENT;
    let lo = select(0u, level_fine(size_level(own)), refinable);
    var hi = BINS * FINE;
    if link.x != NO_NODE {
        let parent = spheres[2u * n + 1u];
        let parent_refinable = in_view(parent) && pages_info[link.y].y != NOT_RESIDENT;
        hi = select(0u, level_fine(size_level(parent)), parent_refinable);
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
            let fine = node_range(n);
            let range = vec2<u32>(fine_to_bin(fine.x), fine_to_bin(fine.y));
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
    var below = 0u;
    var chosen = BINS - 1u;
    var chosen_count = 0u;
    var found = false;
    for (var b = 0u; b < BINS; b++) {
        let before = count;
        count = count + atomicLoad(&histogram[b]) - atomicLoad(&histogram[BINS + b]);
        if !found && b >= asked && count <= params.budget {
            chosen = b;
            chosen_count = count;
            below = before;
            found = true;
        }
    }
    if !found {
        chosen_count = count;
    }
    cut_state[0] = chosen;
    cut_state[1] = chosen_count;
    cut_state[2] = bitcast<u32>(exp2((f32(chosen) - BIN_ONE_PIXEL) / BINS_PER_OCTAVE));
    cut_state[3] = u32(found && chosen > asked);
    cut_state[4] = below;
    cut_state[5] = chosen * FINE;
}

// Whether the threshold is refined within its bin: the budget raised it to a bin b > 0.
fn fine_search() -> bool {
    return cut_state[3] != 0u && cut_state[0] > 0u;
}

var<workgroup> wg_fine_starts: array<atomic<u32>, FINE>;
var<workgroup> wg_fine_ends: array<atomic<u32>, FINE>;

@compute @workgroup_size(256)
fn cut_fine_histogram(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let search = fine_search();
    let base = (cut_state[0] - 1u) * FINE;
    atomicStore(&wg_fine_starts[lid], 0u);
    atomicStore(&wg_fine_ends[lid], 0u);
    workgroupBarrier();
    let first = workgroup_index(wid, nwg) * WG * ITEMS + lid;
    for (var k = 0u; k < ITEMS; k++) {
        let n = first + k * WG;
        if search && n < params.nodes {
            // Fine step base + j (j in 1..=FINE) counts at index j - 1.
            let range = node_range(n);
            if range.x < range.y {
                if range.x > base && range.x <= base + FINE {
                    atomicAdd(&wg_fine_starts[range.x - base - 1u], 1u);
                }
                if range.y > base && range.y <= base + FINE {
                    atomicAdd(&wg_fine_ends[range.y - base - 1u], 1u);
                }
            }
        }
    }
    workgroupBarrier();
    let starts = atomicLoad(&wg_fine_starts[lid]);
    let ends = atomicLoad(&wg_fine_ends[lid]);
    if starts != 0u {
        atomicAdd(&fine_histogram[lid], starts);
    }
    if ends != 0u {
        atomicAdd(&fine_histogram[FINE + lid], ends);
    }
}

@compute @workgroup_size(1)
fn cut_fine_threshold(@builtin(num_workgroups) nwg: vec3<u32>) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    if !fine_search() {
        return;
    }
    // The bin below the chosen one did not fit; the chosen one does, so some step fits.
    let base = (cut_state[0] - 1u) * FINE;
    var count = cut_state[4];
    for (var j = 1u; j <= FINE; j++) {
        count = count + atomicLoad(&fine_histogram[j - 1u]) - atomicLoad(&fine_histogram[FINE + j - 1u]);
        if count <= params.budget {
            let t = base + j;
            cut_state[1] = count;
            cut_state[2] = bitcast<u32>(exp2((f32(t) / f32(FINE) - BIN_ONE_PIXEL) / BINS_PER_OCTAVE));
            cut_state[5] = t;
            return;
        }
    }
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
    let t = cut_state[5];
    let range = node_range(n);
    let reached = range.x < range.y && t < range.y;
    flags[n] = u32(reached && range.x <= t);
    if reached {
        let link = links[n];
        page_marks[params.pages + link.y] = 1u;
        // In view and above the threshold with children: the cut reads their page when it is
        // resident (even where every child is out of view, so it is not evicted and wanted
        // again), and wants it when it is not.
        let above = link.w > 0u && level_fine(size_level(spheres[2u * n])) > t;
        if above {
            if pages_info[link.z].y == NOT_RESIDENT {
                page_marks[link.z] = 1u;
            } else {
                page_marks[params.pages + link.z] = 1u;
            }
        }
    }
}

// k-NN initialisation, step 5: for each point (in sorted order) the mean squared distance to
// its 3 nearest other points, by a depth-first search of the box hierarchy (knn_boxes.wgsl).
//
// Each invocation keeps its 3 best squared distances in registers. It first scans its own leaf
// (its neighbours in key order, which gives a good bound at once), then walks the hierarchy from the
// single top box: a box is opened only if its squared distance to the query is below the current
// 3rd best, and the nearest child is visited first so close boxes tighten the bound early. Pruning is
// exact: the box distance is computed with the same f32 expression as the point distance, and
// f32 subtraction, squaring and addition are monotone, so no point in a pruned box can be closer.
#import "shared/dispatch.wgsl"

struct KnnSearchParams {
    // Number of points.
    num_points: u32,
    // Sorted position of the bound result page's first entry, and the page's length.
    page_start: u32,
    page_len: u32,
    // Neighbours averaged: min(3, num_points - 1).
    neighbours: u32,
    // Levels of the box hierarchy (the top level holds one box).
    num_levels: u32,
    // Bit pattern of +infinity (WGSL has no infinity literal): the distance of "no neighbour yet".
    infinity_bits: u32,
    // 1 / neighbours (0 when there are none), and the lower clamp of the result.
    inv_neighbours: f32,
    min_value: f32,
    // First box of level l at [l / 4][l % 4]; entry num_levels is the total box count.
    level_offset: array<vec4<u32>, 4>,
}

@group(0) @binding(0) var<uniform> params_uniform: KnnSearchParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: KnnSearchParams;
@group(0) @binding(1) var<storage, read> x_from_position: array<f32>;
@group(0) @binding(2) var<storage, read> y_from_position: array<f32>;
@group(0) @binding(3) var<storage, read> z_from_position: array<f32>;
@group(0) @binding(4) var<storage, read> box_lo: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> box_hi: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> result_page: array<f32>;

const WG: u32 = 64u;
// Points per leaf box and children per inner box (LEAF_SIZE and FANOUT in src/knn/tree.rs).
const LEAF_SIZE: u32 = 8u;
const FANOUT: u32 = 8u;
// Depth-first stack entries: enough for (levels - 1) * (FANOUT - 1) + 1 (checked on the Rust side).
const STACK: u32 = 64u;
// A stack entry packs the level above bit 27 and the box index within its level below.
const LEVEL_SHIFT: u32 = 27u;
const INDEX_MASK: u32 = 0x07ffffffu;

// The 3 smallest squared distances seen so far, ascending.
var<private> best: vec3<f32>;

fn level_offset(level: u32) -> u32 {
    return params.level_offset[level / 4u][level % 4u];
}

fn point_at(position: u32) -> vec3<f32> {
    return vec3<f32>(x_from_position[position], y_from_position[position], z_from_position[position]);
}

// dx*dx + dy*dy + dz*dz, in this order (the CPU references use the same expression).
fn squared_length(v: vec3<f32>) -> f32 {
    return v.x * v.x + v.y * v.y + v.z * v.z;
}

// Inserts a candidate squared distance into `best` (a branch-free sorted insert).
fn offer(d: f32) {
    let b0 = min(best.x, d);
    let r0 = max(best.x, d);
    let b1 = min(best.y, r0);
    let r1 = max(best.y, r0);
    best = vec3<f32>(b0, b1, min(best.z, r1));
}

// Offers every point of leaf `leaf` except the query itself (duplicates of it do count).
fn scan_leaf(leaf: u32, query_position: u32, query: vec3<f32>) {
    let first = leaf * LEAF_SIZE;
    let end = min(first + LEAF_SIZE, params.num_points);
    for (var j = first; j < end; j++) {
        if j != query_position {
            offer(squared_length(point_at(j) - query));
        }
    }
}

// Squared distance from `query` to box `index` (global), never above that of any point inside.
fn box_distance(index: u32, query: vec3<f32>) -> f32 {
    let gap = max(max(box_lo[index].xyz - query, query - box_hi[index].xyz), vec3<f32>(0.0));
    return squared_length(gap);
}

@compute @workgroup_size(64)
fn search(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.page_len {
        return;
    }
    let position = params.page_start + i;
    let query = point_at(position);
    best = vec3<f32>(bitcast<f32>(params.infinity_bits));
    let own_leaf = position / LEAF_SIZE;
    scan_leaf(own_leaf, position, query);

    var stack_entry: array<u32, STACK>;
    var stack_distance: array<f32, STACK>;
    stack_entry[0] = (params.num_levels - 1u) << LEVEL_SHIFT;
    stack_distance[0] = 0.0;
    // With a single level the top box is the own leaf, already scanned.
    var depth = select(1u, 0u, params.num_levels == 1u);
    while depth > 0u {
        depth -= 1u;
        if stack_distance[depth] >= best.z {
            continue;
        }
        let level = stack_entry[depth] >> LEVEL_SHIFT;
        let index = stack_entry[depth] & INDEX_MASK;
        if level == 0u {
            scan_leaf(index, position, query);
            continue;
        }
        let child_level = level - 1u;
        let child_base = level_offset(child_level);
        let child_count = level_offset(level) - child_base;
        let first = index * FANOUT;
        let end = min(first + FANOUT, child_count);
        // The own leaf was scanned first; never push it again.
        let skipped = select(0xffffffffu, own_leaf, child_level == 0u);
        let segment = depth;
        var nearest_slot = depth;
        var nearest = best.z;
        for (var c = first; c < end; c++) {
            let d = box_distance(child_base + c, query);
            if d < best.z && c != skipped {
                stack_entry[depth] = (child_level << LEVEL_SHIFT) | c;
                stack_distance[depth] = d;
                if d < nearest {
                    nearest = d;
                    nearest_slot = depth;
                }
                depth += 1u;
            }
        }
        // Visit the nearest child first: swap it to the top of the stack.
        if depth > segment {
            let top = depth - 1u;
            let entry = stack_entry[top];
            stack_entry[top] = stack_entry[nearest_slot];
            stack_entry[nearest_slot] = entry;
            stack_distance[nearest_slot] = stack_distance[top];
            stack_distance[top] = nearest;
        }
    }

    var sum = 0.0;
    if params.neighbours >= 1u {
        sum += best.x;
    }
    if params.neighbours >= 2u {
        sum += best.y;
    }
    if params.neighbours >= 3u {
        sum += best.z;
    }
    result_page[i] = max(sum * params.inv_neighbours, params.min_value);
}

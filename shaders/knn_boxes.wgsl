// k-NN initialisation, step 4: the bounding-box hierarchy over the sorted points. Level 0
// boxes (leaves) bound LEAF_SIZE consecutive sorted points; a box of level l > 0 bounds FANOUT
// consecutive boxes of level l - 1. All levels live in one pair of arrays (lower and upper
// corners), level after level; one dispatch builds one level.
#import "shared/dispatch.wgsl"

struct KnnBoxParams {
    // 0: build leaves from points; otherwise build from the boxes of the level below.
    level: u32,
    // Number of points.
    num_points: u32,
    // First box and number of boxes of the level being built.
    node_offset: u32,
    node_count: u32,
    // First box and number of boxes of the level below (unused for leaves).
    child_offset: u32,
    child_count: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: KnnBoxParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: KnnBoxParams;
@group(0) @binding(1) var<storage, read> x_from_position: array<f32>;
@group(0) @binding(2) var<storage, read> y_from_position: array<f32>;
@group(0) @binding(3) var<storage, read> z_from_position: array<f32>;
@group(0) @binding(4) var<storage, read_write> box_lo: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> box_hi: array<vec4<f32>>;

const WG: u32 = 64u;
// Points per leaf box and children per inner box (LEAF_SIZE and FANOUT in src/knn/tree.rs).
const LEAF_SIZE: u32 = 8u;
const FANOUT: u32 = 8u;

@compute @workgroup_size(64)
fn build_boxes(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let node = workgroup_index(wid, nwg) * WG + lid;
    if node >= params.node_count {
        return;
    }
    var lo: vec3<f32>;
    var hi: vec3<f32>;
    if params.level == 0u {
        let first = node * LEAF_SIZE;
        let end = min(first + LEAF_SIZE, params.num_points);
        lo = vec3<f32>(x_from_position[first], y_from_position[first], z_from_position[first]);
        hi = lo;
        for (var j = first + 1u; j < end; j++) {
            let p = vec3<f32>(x_from_position[j], y_from_position[j], z_from_position[j]);
            lo = min(lo, p);
            hi = max(hi, p);
        }
    } else {
        let first = node * FANOUT;
        let end = min(first + FANOUT, params.child_count);
        lo = box_lo[params.child_offset + first].xyz;
        hi = box_hi[params.child_offset + first].xyz;
        for (var c = first + 1u; c < end; c++) {
            lo = min(lo, box_lo[params.child_offset + c].xyz);
            hi = max(hi, box_hi[params.child_offset + c].xyz);
        }
    }
    box_lo[params.node_offset + node] = vec4<f32>(lo, 0.0);
    box_hi[params.node_offset + node] = vec4<f32>(hi, 0.0);
}

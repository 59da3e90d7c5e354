// k-NN initialisation, step 3: the coordinates in sorted (key) order, for the positions of one
// page of the final permutation. Values move as bit patterns.
#import "shared/dispatch.wgsl"

struct KnnGatherParams {
    // Positions in the bound permutation page.
    page_len: u32,
    // Global sorted position of the page's first entry.
    page_start: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: KnnGatherParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: KnnGatherParams;
@group(0) @binding(1) var<storage, read> point_from_position: array<u32>;
@group(0) @binding(2) var<storage, read> x_from_point: array<u32>;
@group(0) @binding(3) var<storage, read> y_from_point: array<u32>;
@group(0) @binding(4) var<storage, read> z_from_point: array<u32>;
@group(0) @binding(5) var<storage, read_write> x_from_position: array<u32>;
@group(0) @binding(6) var<storage, read_write> y_from_position: array<u32>;
@group(0) @binding(7) var<storage, read_write> z_from_position: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn gather_sorted(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.page_len {
        return;
    }
    let point = point_from_position[i];
    let position = params.page_start + i;
    x_from_position[position] = x_from_point[point];
    y_from_position[position] = y_from_point[point];
    z_from_position[position] = z_from_point[point];
}

// LPIPS max-pooling: 3x3 windows at stride 2 with no padding (a window must lie inside the
// input), planar [C, H, W] to [C, (H - 3) / 2 + 1, (W - 3) / 2 + 1]. One invocation per output.
#import "shared/dispatch.wgsl"
#import "shared/lpips.wgsl"

struct PoolParams {
    channels: u32,
    in_height: u32,
    in_width: u32,
    out_height: u32,
    out_width: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: PoolParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: PoolParams;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read_write> output: array<f32>;

@compute @workgroup_size(256)
fn max_pool(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let index = workgroup_index(wid, nwg) * 256u + lid;
    let out_plane = params.out_height * params.out_width;
    if index >= params.channels * out_plane {
        return;
    }
    let channel = index / out_plane;
    let row = (index % out_plane) / params.out_width;
    let col = index % params.out_width;
    var best = input[plane_index(channel, 2u * row, 2u * col, params.in_height, params.in_width)];
    for (var dy = 0u; dy < 3u; dy++) {
        for (var dx = 0u; dx < 3u; dx++) {
            best = max(best, input[plane_index(channel, 2u * row + dy, 2u * col + dx, params.in_height, params.in_width)]);
        }
    }
    output[index] = best;
}

// Weight sums for the alpha-masked loss: one workgroup per 16x16 tile writes the record
// (sum of w over the tile's pixels, sum of w over its counted SSIM positions, 0, 0), with w the
// ground-truth alpha. loss_finalize.wgsl's `finalize_sums` turns the records into the two
// normalisers (W_l1, W_ssim) that ssim_backward.wgsl and loss_finalize.wgsl divide by.
#import "shared/dispatch.wgsl"
#import "shared/ssim.wgsl"

@group(0) @binding(0) var<uniform> params_uniform: LossParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: LossParams;
@group(0) @binding(1) var<storage, read> gt: array<u32>;
@group(0) @binding(2) var<storage, read_write> records: array<vec4<f32>>;

var<workgroup> sums: array<vec2<f32>, WG>;

@compute @workgroup_size(256)
fn loss_weights(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let tile = workgroup_index(wid, nwg);
    if tile * 3u >= uniform_vec4u(lid, vec4<u32>(job_count())).x {
        return;
    }
    // tile_job orders workgroups channel-fastest; this pass has one workgroup per tile.
    let job = tile_job(tile * 3u);
    let row = job.row0 + i32(lid / TILE);
    let col = job.col0 + i32(lid % TILE);
    var partial = vec2<f32>(0.0);
    if in_image(row, col) {
        let w = gt_weight(row, col);
        partial.x = w;
        if position_counts(row, col) {
            partial.y = w;
        }
    }
    sums[lid] = partial;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if lid < stride {
            sums[lid] += sums[lid + stride];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        records[params.record0 + tile] = vec4<f32>(sums[0], 0.0, 0.0);
    }
}

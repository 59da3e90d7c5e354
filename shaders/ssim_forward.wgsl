// Loss and metrics forward: one workgroup per (16x16 output tile, channel). It stages the
// tile plus a 5-pixel halo of both images in workgroup memory, filters the four moments with
// the separable Gaussian (rows, then columns) and writes one record of partial sums:
// (sum w|x - y|, sum w * ssim, sum w (x - y)^2, 0) over the tile's pixels / counted positions.
// src/loss/kernels.rs reduces the records with loss_finalize.wgsl.
#import "shared/dispatch.wgsl"
#import "shared/ssim.wgsl"

@group(0) @binding(0) var<uniform> params_uniform: LossParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: LossParams;
@group(0) @binding(1) var<storage, read> rendered: array<f32>;
@group(0) @binding(2) var<storage, read> gt: array<u32>;
@group(0) @binding(3) var<storage, read_write> records: array<vec4<f32>>;

// Staged region edge: TILE + 2 * RADIUS.
const REGION: u32 = 26u;
const REGION_PIXELS: u32 = 676u;
// Row-filtered moments: REGION rows x TILE columns.
const ROW_FILTERED: u32 = 416u;

// (x - kx, y - ky) on the staged region.
var<workgroup> xy: array<vec2<f32>, REGION_PIXELS>;
// Row-filtered moments of the shifted values: (x, y, xx + yy, xy) (shared/ssim.wgsl).
var<workgroup> row_moments: array<vec4<f32>, ROW_FILTERED>;
var<workgroup> sums: array<vec4<f32>, WG>;

// Rendered channel c; 0 outside the image (zero padding).
fn rendered_value(row: i32, col: i32, c: u32) -> f32 {
    if !in_image(row, col) {
        return 0.0;
    }
    let v = rendered[((u32(row) - params.x_row0) * params.width + u32(col)) * 4u + c];
    var x = v;
    if CLAMP_RENDERED {
        x = clamp(v, 0.0, 1.0);
    }
    if MASK {
        x *= gt_weight(row, col);
    }
    return x;
}

@compute @workgroup_size(256)
fn ssim_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let wg = workgroup_index(wid, nwg);
    if wg >= uniform_vec4u(lid, vec4<u32>(job_count())).x {
        return;
    }
    let job = tile_job(wg);
    let c = job.channel;
    // Per-tile shift: the values at the tile centre (clamped into the image).
    let centre_row = min(job.row0 + 8, i32(params.height) - 1);
    let centre_col = min(job.col0 + 8, i32(params.width) - 1);
    let k = vec2<f32>(rendered_value(centre_row, centre_col, c), gt_value(centre_row, centre_col, c));

    for (var i = lid; i < REGION_PIXELS; i += WG) {
        let row = job.row0 - i32(RADIUS) + i32(i / REGION);
        let col = job.col0 - i32(RADIUS) + i32(i % REGION);
        xy[i] = vec2<f32>(rendered_value(row, col, c), gt_value(row, col, c)) - k;
    }
    workgroupBarrier();

    for (var i = lid; i < ROW_FILTERED; i += WG) {
        let first = (i / TILE) * REGION + i % TILE;
        var m = vec4<f32>(0.0);
        for (var t = 0u; t < TAPS; t++) {
            m += GAUSS[t] * ssim_moments(xy[first + t]);
        }
        row_moments[i] = m;
    }
    workgroupBarrier();

    let ty = lid / TILE;
    let tx = lid % TILE;
    var m = vec4<f32>(0.0);
    for (var t = 0u; t < TAPS; t++) {
        m += GAUSS[t] * row_moments[(ty + t) * TILE + tx];
    }
    let row = job.row0 + i32(ty);
    let col = job.col0 + i32(tx);
    var partial = vec4<f32>(0.0);
    if in_image(row, col) {
        let w = gt_weight(row, col);
        let d = rendered_value(row, col, c) - gt_value(row, col, c);
        partial.x = abs(d);
        partial.z = d * d;
        if position_counts(row, col) {
            partial.y = w * ssim_point(m, k).m;
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
        records[params.record0 + wg] = sums[0];
    }
}

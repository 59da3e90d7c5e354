// Fused loss forward + backward: one workgroup per (16x16 output tile, channel) writes
// dLoss/dImage for the tile's pixels and the same record of partial sums as ssim_forward.wgsl.
//
// The SSIM gradient at pixel p is
//   sum_q G(q - p) * (A_q + 2 x_p B_q + y_p C_q)
// over the output positions q whose window covers p, with B = s dm/dvar_x, C = s dm/dcov,
// A = s (dm/dmu_x - 2 mu_x dm/dvar_x - mu_y dm/dcov) and s = -lambda w_q / (3 W_ssim); the
// window is symmetric, so this is the same Gaussian filter applied to A, B and C. Instead of
// storing A, B, C per pixel, the workgroup recomputes them for the 26x26 positions around its
// tile, which needs the images on a 36x36 region (halo 10):
//   1. stage (x - kx, y - ky) on 36x36                         -> `staged`, 1296 vec2
//   2. row-filter the five moments -> 36 rows x 26 columns      -> `row_moments` + `row_xy`
//   3. column-filter -> A, B, C at 26 x 26 positions             -> `staged` (A, B) and (C, 0)
//   4. row-filter A, B, C -> 26 rows x 16 columns                -> `row_moments` (A, B, C, 0)
//   5. column-filter, combine with x_p, y_p, add the L1 term, write the gradient; reduce the
//      partial sums in `row_moments`.
// Shifting by the tile-centre values kx, ky changes nothing mathematically (x_p - mu_x(q) is
// shift-invariant) but keeps the f32 variances accurate.
#import "shared/dispatch.wgsl"
#import "shared/ssim.wgsl"

@group(0) @binding(0) var<uniform> params_uniform: LossParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: LossParams;
@group(0) @binding(1) var<storage, read> rendered: array<f32>;
@group(0) @binding(2) var<storage, read> gt: array<u32>;
// (W_l1, W_ssim, 0, 0): the weight sums that normalise the L1 and SSIM means.
@group(0) @binding(3) var<storage, read> norm: array<f32>;
@group(0) @binding(4) var<storage, read_write> grad: array<f32>;
@group(0) @binding(5) var<storage, read_write> records: array<vec4<f32>>;

// Staged region edge: TILE + 4 * RADIUS.
const REGION: u32 = 36u;
const REGION_PIXELS: u32 = 1296u;
// Positions whose statistics are needed: TILE + 2 * RADIUS per edge.
const STATS: u32 = 26u;
const STATS_POSITIONS: u32 = 676u;
// Row-filtered moments: REGION rows x STATS columns; row-filtered A, B, C: STATS rows x TILE.
const ROW_MOMENTS: u32 = 936u;
const ROW_COEFFS: u32 = 416u;

// Stage 1 images (1296 used), then stage 3 coefficients: (A, B) at i and (C, 0) at
// STATS_POSITIONS + i (1352 used). 29,536 bytes of workgroup memory in all.
var<workgroup> staged: array<vec2<f32>, 1352>;
// Stage 2 moments (x, y, xx, yy), then stage 4 coefficients (A, B, C, 0), then the reduction.
var<workgroup> row_moments: array<vec4<f32>, ROW_MOMENTS>;
var<workgroup> row_xy: array<f32, ROW_MOMENTS>;

fn rendered_value(row: i32, col: i32, c: u32) -> f32 {
    if !in_image(row, col) {
        return 0.0;
    }
    return rendered[((u32(row) - params.x_row0) * params.width + u32(col)) * 4u + c];
}

fn inverse_or_zero(total: f32) -> f32 {
    return select(0.0, 1.0 / total, total > 0.0);
}

@compute @workgroup_size(256)
fn ssim_loss_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let wg = workgroup_index(wid, nwg);
    if wg >= job_count() {
        return;
    }
    let job = tile_job(wg);
    let c = job.channel;
    let lambda = params.ssim_weight;
    let l1_scale = (1.0 - lambda) * inverse_or_zero(norm[0]) / 3.0;
    let ssim_scale = -lambda * inverse_or_zero(norm[1]) / 3.0;
    let centre_row = min(job.row0 + 8, i32(params.height) - 1);
    let centre_col = min(job.col0 + 8, i32(params.width) - 1);
    let k = vec2<f32>(rendered_value(centre_row, centre_col, c), gt_value(centre_row, centre_col, c));
    let halo = 2 * i32(RADIUS);

    // 1. Images on the 36x36 region.
    for (var i = lid; i < REGION_PIXELS; i += WG) {
        let row = job.row0 - halo + i32(i / REGION);
        let col = job.col0 - halo + i32(i % REGION);
        staged[i] = vec2<f32>(rendered_value(row, col, c), gt_value(row, col, c)) - k;
    }
    workgroupBarrier();

    // 2. Row-filtered moments.
    for (var i = lid; i < ROW_MOMENTS; i += WG) {
        let first = (i / STATS) * REGION + i % STATS;
        var m = vec4<f32>(0.0);
        var mxy = 0.0;
        for (var t = 0u; t < TAPS; t++) {
            let v = staged[first + t];
            m += GAUSS[t] * vec4<f32>(v, v * v);
            mxy += GAUSS[t] * (v.x * v.y);
        }
        row_moments[i] = m;
        row_xy[i] = mxy;
    }
    workgroupBarrier();

    // 3. Statistics, SSIM and the coefficients A, B, C at the 26x26 positions.
    var ssim_sum = 0.0;
    for (var i = lid; i < STATS_POSITIONS; i += WG) {
        let r = i / STATS;
        let j = i % STATS;
        var m = vec4<f32>(0.0);
        var mxy = 0.0;
        for (var t = 0u; t < TAPS; t++) {
            let q = (r + t) * STATS + j;
            m += GAUSS[t] * row_moments[q];
            mxy += GAUSS[t] * row_xy[q];
        }
        let row = job.row0 - i32(RADIUS) + i32(r);
        let col = job.col0 - i32(RADIUS) + i32(j);
        var coeffs = vec3<f32>(0.0);
        if position_counts(row, col) {
            let w = gt_weight(row, col);
            let p = ssim_point(m, mxy, k);
            coeffs = ssim_scale * w * vec3<f32>(p.d_mu - 2.0 * m.x * p.d_var - m.y * p.d_cov, p.d_var, p.d_cov);
            if r >= RADIUS && r < RADIUS + TILE && j >= RADIUS && j < RADIUS + TILE {
                ssim_sum += w * p.m;
            }
        }
        // Stage 1's images are no longer read (barrier above), so `staged` is reused.
        staged[i] = coeffs.xy;
        staged[STATS_POSITIONS + i] = vec2<f32>(coeffs.z, 0.0);
    }
    workgroupBarrier();

    // 4. Row-filtered coefficients.
    for (var i = lid; i < ROW_COEFFS; i += WG) {
        let first = (i / TILE) * STATS + i % TILE;
        var f = vec3<f32>(0.0);
        for (var t = 0u; t < TAPS; t++) {
            let q = first + t;
            f += GAUSS[t] * vec3<f32>(staged[q], staged[STATS_POSITIONS + q].x);
        }
        row_moments[i] = vec4<f32>(f, 0.0);
    }
    workgroupBarrier();

    // 5. Column filter and the gradient of this invocation's pixel.
    let ty = lid / TILE;
    let tx = lid % TILE;
    var f = vec4<f32>(0.0);
    for (var t = 0u; t < TAPS; t++) {
        f += GAUSS[t] * row_moments[(ty + t) * TILE + tx];
    }
    let row = job.row0 + i32(ty);
    let col = job.col0 + i32(tx);
    var partial = vec4<f32>(0.0, ssim_sum, 0.0, 0.0);
    if in_image(row, col) {
        let x = rendered_value(row, col, c);
        let y = gt_value(row, col, c);
        let w = gt_weight(row, col);
        let d = x - y;
        let out = ((u32(row) - params.out_row0) * params.width + u32(col)) * 4u;
        grad[out + c] = f.x + 2.0 * (x - k.x) * f.y + (y - k.y) * f.z + l1_scale * w * sign(d);
        if c == 0u {
            grad[out + 3u] = 0.0;
        }
        partial.x = w * abs(d);
        partial.z = w * d * d;
    }

    // 6. Partial sums of the workgroup.
    workgroupBarrier();
    row_moments[lid] = partial;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if lid < stride {
            row_moments[lid] += row_moments[lid + stride];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        records[params.record0 + wg] = row_moments[0];
    }
}

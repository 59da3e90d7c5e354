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
//   1. stage x - kx and y - ky on 36x36                        (region, 2 x 1296 floats)
//   2. row-filter the five moments -> 36 rows x 26 columns      (moments, 5 x 936 floats)
//   3. column-filter -> A, B, C at 26 x 26 positions             (region, 3 x 676 floats)
//   4. row-filter A, B, C -> 26 rows x 16 columns                (moments, 3 x 416 floats)
//   5. column-filter, combine with x_p, y_p, add the L1 term, write the gradient.
// Shifting by the tile-centre values kx, ky changes nothing mathematically (x_p - mu_x(q) is
// shift-invariant) but keeps the f32 variances accurate.
#import "shared/dispatch.wgsl"
#import "shared/ssim.wgsl"

@group(0) @binding(0) var<uniform> params: LossParams;
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

// Stage 1 images, then stage 3 coefficients, then the final reduction.
var<workgroup> region: array<f32, 2592>;
// Stage 2 moments, then stage 4 coefficients.
var<workgroup> moments: array<f32, 4680>;

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
    let kx = rendered_value(centre_row, centre_col, c);
    let ky = gt_value(centre_row, centre_col, c);
    let halo = 2 * i32(RADIUS);

    // 1. Images on the 36x36 region.
    for (var i = lid; i < REGION_PIXELS; i += WG) {
        let row = job.row0 - halo + i32(i / REGION);
        let col = job.col0 - halo + i32(i % REGION);
        region[i] = rendered_value(row, col, c) - kx;
        region[REGION_PIXELS + i] = gt_value(row, col, c) - ky;
    }
    workgroupBarrier();

    // 2. Row-filtered moments.
    for (var i = lid; i < ROW_MOMENTS; i += WG) {
        let first = (i / STATS) * REGION + i % STATS;
        var m = vec4<f32>(0.0);
        var mxy = 0.0;
        for (var t = 0u; t < TAPS; t++) {
            let g = GAUSS[t];
            let a = region[first + t];
            let b = region[REGION_PIXELS + first + t];
            m += g * vec4<f32>(a, b, a * a, b * b);
            mxy += g * (a * b);
        }
        moments[i] = m.x;
        moments[ROW_MOMENTS + i] = m.y;
        moments[2u * ROW_MOMENTS + i] = m.z;
        moments[3u * ROW_MOMENTS + i] = m.w;
        moments[4u * ROW_MOMENTS + i] = mxy;
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
            let g = GAUSS[t];
            let k = (r + t) * STATS + j;
            m += g * vec4<f32>(moments[k], moments[ROW_MOMENTS + k], moments[2u * ROW_MOMENTS + k], moments[3u * ROW_MOMENTS + k]);
            mxy += g * moments[4u * ROW_MOMENTS + k];
        }
        let row = job.row0 - i32(RADIUS) + i32(r);
        let col = job.col0 - i32(RADIUS) + i32(j);
        var coeffs = vec3<f32>(0.0);
        if position_counts(row, col) {
            let w = gt_weight(row, col);
            let p = ssim_point(m.x, m.y, m.z, m.w, mxy, kx, ky);
            let s = ssim_scale * w;
            coeffs = s * vec3<f32>(p.d_mu - 2.0 * m.x * p.d_var - m.y * p.d_cov, p.d_var, p.d_cov);
            let centre = r >= RADIUS && r < RADIUS + TILE && j >= RADIUS && j < RADIUS + TILE;
            if centre {
                ssim_sum += w * p.m;
            }
        }
        // Stage 1's images are no longer read (barrier above), so the region is reused.
        region[i] = coeffs.x;
        region[STATS_POSITIONS + i] = coeffs.y;
        region[2u * STATS_POSITIONS + i] = coeffs.z;
    }
    workgroupBarrier();

    // 4. Row-filtered coefficients.
    for (var i = lid; i < ROW_COEFFS; i += WG) {
        let first = (i / TILE) * STATS + i % TILE;
        var f = vec3<f32>(0.0);
        for (var t = 0u; t < TAPS; t++) {
            let k = first + t;
            f += GAUSS[t] * vec3<f32>(region[k], region[STATS_POSITIONS + k], region[2u * STATS_POSITIONS + k]);
        }
        moments[i] = f.x;
        moments[ROW_COEFFS + i] = f.y;
        moments[2u * ROW_COEFFS + i] = f.z;
    }
    workgroupBarrier();

    // 5. Column filter and the gradient of this invocation's pixel.
    let ty = lid / TILE;
    let tx = lid % TILE;
    var f = vec3<f32>(0.0);
    for (var t = 0u; t < TAPS; t++) {
        let k = (ty + t) * TILE + tx;
        f += GAUSS[t] * vec3<f32>(moments[k], moments[ROW_COEFFS + k], moments[2u * ROW_COEFFS + k]);
    }
    let row = job.row0 + i32(ty);
    let col = job.col0 + i32(tx);
    var partial = vec4<f32>(0.0, ssim_sum, 0.0, 0.0);
    if in_image(row, col) {
        let x = rendered_value(row, col, c);
        let y = gt_value(row, col, c);
        let w = gt_weight(row, col);
        let d = x - y;
        let l1_grad = l1_scale * w * sign(d);
        let out = ((u32(row) - params.out_row0) * params.width + u32(col)) * 4u;
        grad[out + c] = f.x + 2.0 * (x - kx) * f.y + (y - ky) * f.z + l1_grad;
        if c == 0u {
            grad[out + 3u] = 0.0;
        }
        partial.x = w * abs(d);
        partial.z = w * d * d;
    }

    // 6. Partial sums of the workgroup (the region is free again after stage 4's barrier).
    region[4u * lid] = partial.x;
    region[4u * lid + 1u] = partial.y;
    region[4u * lid + 2u] = partial.z;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if lid < stride {
            for (var k = 0u; k < 3u; k++) {
                region[4u * lid + k] += region[4u * (lid + stride) + k];
            }
        }
        workgroupBarrier();
    }
    if lid == 0u {
        records[params.record0 + wg] = vec4<f32>(region[0], region[1], region[2], 0.0);
    }
}

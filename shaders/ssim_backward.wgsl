// Fused loss forward + backward: one workgroup per (32x16 output tile, channel) writes
// dLoss/dImage for the tile's pixels and a record of partial sums like ssim_forward.wgsl's.
//
// The SSIM gradient at pixel p is
//   sum_q G(q - p) * (A_q + 2 x_p B_q + y_p C_q)
// over the output positions q whose window covers p, with B = s dm/dvar_x, C = s dm/dcov,
// A = s (dm/dmu_x - 2 mu_x dm/dvar_x - mu_y dm/dcov) and s = -lambda w_q / (3 W_ssim); the
// window is symmetric, so this is the same Gaussian filter applied to A, B and C. Instead of
// storing A, B, C per pixel, the workgroup recomputes them for the 42x26 positions around its
// tile, which needs the images on a 52x36 region (halo 10). Every filter is a walk with a
// sliding window in registers (shared/window11.wgsl), one invocation per row or column, so each
// value is loaded once per pass instead of once per tap:
//   1. per region row: read (x - kx, y - ky) from the images and row-filter the four moments
//      (shared/ssim.wgsl, ssim_moments)                                   -> 36 rows x 42 columns
//   2. per position column: column-filter -> SSIM and A, B, C at 26 x 42 positions, pushed into
//      a second window that column-filters them at once -> 16 rows x 42 columns, written in
//      place over the rows of `moments` the walk has passed
//   3. per pixel row: row-filter, combine with x_p, y_p, add the L1 term, write the gradient;
//      then reduce the partial sums in `moments`.
// Each walk reads only its own row or column and writes behind itself, so the passes share one
// array. Tiles twice as wide as tall halve the halo's share of the work and the number of
// workgroups against 16x16 tiles (on lavapipe every workgroup-memory access is a loop over the
// lanes, so the work is counted in accesses; see ../shared/notes/lavapipe-performance.md).
// Shifting by the tile-centre values kx, ky changes nothing mathematically (x_p - mu_x(q) is
// shift-invariant) but keeps the f32 variances accurate.
#import "shared/dispatch.wgsl"
#import "shared/ssim.wgsl"
#import "shared/window11.wgsl"

@group(0) @binding(0) var<uniform> params_uniform: LossParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: LossParams;
@group(0) @binding(1) var<storage, read> rendered: array<f32>;
@group(0) @binding(2) var<storage, read> gt: array<u32>;
// (W_l1, W_ssim, 0, 0): the weight sums that normalise the L1 and SSIM means.
@group(0) @binding(3) var<storage, read> norm: array<f32>;
@group(0) @binding(4) var<storage, read_write> grad: array<f32>;
@group(0) @binding(5) var<storage, read_write> records: array<vec4<f32>>;

const INVOCATIONS: u32 = 64u;
// Output tile: TILE_WIDTH columns x TILE rows (src/loss/kernels.rs, BACKWARD_TILE_WIDTH).
const TILE_WIDTH: u32 = 32u;
// Staged region: TILE + 4 * RADIUS rows, TILE_WIDTH + 4 * RADIUS columns.
const REGION_ROWS: u32 = 36u;
const REGION_COLS: u32 = 52u;
// Position columns whose statistics are needed: 2 * RADIUS more than the tile each way (pass 2
// computes them on the 26 position rows the same margin gives).
const STATS_COLS: u32 = 42u;
// Row-filtered moments: REGION_ROWS rows of STATS_COLS columns (row stride STATS_COLS).
const MOMENTS: u32 = 1512u;

// Pass 1's moments (x, y, xx + yy, xy); pass 2's column-filtered (A, B, C, 0) over the first
// TILE rows; then the partial sums of the invocations. 24,192 bytes (BACKWARD_WORKGROUP_BYTES in
// src/loss/kernels.rs).
var<workgroup> moments: array<vec4<f32>, MOMENTS>;

fn rendered_value(row: i32, col: i32, c: u32) -> f32 {
    if !in_image(row, col) {
        return 0.0;
    }
    let v = rendered[((u32(row) - params.x_row0) * params.width + u32(col)) * 4u + c];
    if MASK {
        return v * gt_weight(row, col);
    }
    return v;
}

fn inverse_or_zero(total: f32) -> f32 {
    return select(0.0, 1.0 / total, total > 0.0);
}

@compute @workgroup_size(64)
fn ssim_loss_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let wg = workgroup_index(wid, nwg);
    if wg >= uniform_vec4u(lid, vec4<u32>(job_count())).x {
        return;
    }
    let job = tile_job_of_width(wg, TILE_WIDTH);
    let c = job.channel;
    let lambda = params.ssim_weight;
    let l1_scale = (1.0 - lambda) * inverse_or_zero(norm[0]) / 3.0;
    let ssim_scale = -lambda * inverse_or_zero(norm[1]) / 3.0;
    let centre_row = min(job.row0 + i32(TILE / 2u), i32(params.height) - 1);
    let centre_col = min(job.col0 + i32(TILE_WIDTH / 2u), i32(params.width) - 1);
    let k = vec2<f32>(rendered_value(centre_row, centre_col, c), gt_value(centre_row, centre_col, c));
    let halo = 2 * i32(RADIUS);

    // 1. Walk region row `lid` left to right: the five moments of the shifted values.
    if lid < REGION_ROWS {
        let row = job.row0 - halo + i32(lid);
        var w: Window4;
        for (var i = 0u; i < REGION_COLS; i++) {
            let col = job.col0 - halo + i32(i);
            let v = vec2<f32>(rendered_value(row, col, c), gt_value(row, col, c)) - k;
            push4(&w, ssim_moments(v));
            if i + 1u >= TAPS {
                moments[lid * STATS_COLS + i + 1u - TAPS] = filter4(w);
            }
        }
    }
    workgroupBarrier();

    // 2. Walk position column `lid` top to bottom: statistics, SSIM and A, B, C at position row
    // r = i - 10, pushed into a second window that column-filters them; from r = 10 on, the
    // filtered value of pixel row o = r - 10 is written over row o of the column, which the walk
    // read twenty steps earlier.
    var ssim_sum = 0.0;
    if lid < STATS_COLS {
        let j = lid;
        var w: Window4;
        var abc_window: Window4;
        for (var i = 0u; i < REGION_ROWS; i++) {
            push4(&w, moments[i * STATS_COLS + j]);
            if i + 1u >= TAPS {
                let r = i + 1u - TAPS;
                let m = filter4(w);
                let row = job.row0 - i32(RADIUS) + i32(r);
                let col = job.col0 - i32(RADIUS) + i32(j);
                var abc = vec3<f32>(0.0);
                if position_counts(row, col) {
                    let weight = gt_weight(row, col);
                    let p = ssim_point(m, k);
                    abc = ssim_scale * weight * vec3<f32>(p.d_mu - 2.0 * m.x * p.d_var - m.y * p.d_cov, p.d_var, p.d_cov);
                    if r >= RADIUS && r < RADIUS + TILE && j >= RADIUS && j < RADIUS + TILE_WIDTH {
                        ssim_sum += weight * p.m;
                    }
                }
                push4(&abc_window, vec4<f32>(abc, 0.0));
                if r + 1u >= TAPS {
                    moments[(r + 1u - TAPS) * STATS_COLS + j] = filter4(abc_window);
                }
            }
        }
    }
    workgroupBarrier();

    // 3. Walk pixel row `lid` left to right: row-filter the column-filtered A, B, C, and the
    // gradient of each pixel of the row.
    var partial = vec4<f32>(0.0, ssim_sum, 0.0, 0.0);
    if lid < TILE {
        let row = job.row0 + i32(lid);
        var w: Window4;
        for (var i = 0u; i < STATS_COLS; i++) {
            push4(&w, moments[lid * STATS_COLS + i]);
            if i + 1u >= TAPS {
                let f = filter4(w);
                let col = job.col0 + i32(i + 1u - TAPS);
                if in_image(row, col) {
                    let x = rendered_value(row, col, c);
                    let y = gt_value(row, col, c);
                    let d = x - y;
                    let out = ((u32(row) - params.out_row0) * params.width + u32(col)) * 4u;
                    var g = f.x + 2.0 * (x - k.x) * f.y + (y - k.y) * f.z + l1_scale * sign(d);
                    if MASK {
                        g *= gt_weight(row, col);
                    }
                    grad[out + c] = g;
                    if c == 0u {
                        grad[out + 3u] = 0.0;
                    }
                    partial.x += abs(d);
                    partial.z += d * d;
                }
            }
        }
    }

    // 5. Partial sums of the workgroup (`moments` is no longer read).
    workgroupBarrier();
    moments[lid] = partial;
    workgroupBarrier();
    for (var stride = INVOCATIONS / 2u; stride > 0u; stride = stride / 2u) {
        if lid < stride {
            moments[lid] += moments[lid + stride];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        records[params.record0 + wg] = moments[0];
    }
}

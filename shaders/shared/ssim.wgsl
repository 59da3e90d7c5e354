// Definitions shared by the loss kernels (ssim_forward.wgsl, ssim_backward.wgsl,
// loss_weights.wgsl). The importer declares `params: LossParams` (the private copy of its
// uniform, see shared/dispatch.wgsl) and
// `gt: array<u32>` (the ground truth, read-only storage). `LossParams` reaches Rust as
// the generated `kernels::shared_ssim::LossParams` (src/loss/kernels.rs uses it).

struct LossParams {
    width: u32,
    height: u32,
    // First output row of this dispatch (the image is processed in bands of whole tile rows).
    band_row0: u32,
    // Output rows in this band.
    band_rows: u32,
    // Image row stored at element 0 of the rendered / ground-truth / gradient bindings (0 when
    // the tensor is bound directly, the first staged row when it goes through a band buffer).
    x_row0: u32,
    y_row0: u32,
    out_row0: u32,
    // Record (partial-sum slot) of this dispatch's workgroup 0.
    record0: u32,
    // Tiles across the image.
    tiles_x: u32,
    _pad1: u32,
    // lambda: weight of (1 - SSIM) in the loss.
    ssim_weight: f32,
    _pad0: u32,
    // Background colour for compositing the ground truth (w unused).
    background: vec4<f32>,
}

// Pipeline-overridable constants: each loss pipeline is specialised for one image format and
// mode (src/loss/kernels.rs sets them from the options; Rust sees them as the generated
// `kernels::shared_ssim::Overrides`). On a CPU adapter both sides of an `if` on a uniform value
// run under a lane mask, loads included (../shared/notes/lavapipe-performance.md), so a mode
// switch read from the params would cost every dispatch the loads of the modes it does not use.
//
// Ground truth is 8-bit RGBA packed one pixel per u32 (r in the low byte); else f32 RGBA.
// (No override name ends in a digit: naga's WGSL writer, which a browser build goes through,
// would rename it and the pipeline would not find it.)
override GT_PACKED: bool = true;
// Composite the ground truth on `background` with its alpha.
override COMPOSITE: bool = false;
// Mask by the ground-truth alpha: both images are multiplied by it before every term, and the
// means are weighted by it.
override MASK: bool = false;
// "Valid" padding: only windows that lie fully inside the image count.
override VALID_PADDING: bool = false;
// Clamp the rendered values to [0, 1] (scores, ssim_forward.wgsl).
override CLAMP_RENDERED: bool = false;

// Output tile edge (rows; the columns of ssim_forward.wgsl's tiles too) and Gaussian window
// radius. Bands (src/loss/bands.rs) are whole multiples of TILE rows.
const TILE: u32 = 16u;
const RADIUS: u32 = 5u;
const TAPS: u32 = 11u;
const WG: u32 = 256u;
const SSIM_C1: f32 = 0.0001;
const SSIM_C2: f32 = 0.0009;

// The normalised 1-D Gaussian, sigma 1.5, 11 taps (f32 rounding of exp(-d^2 / 4.5) / sum).
const GAUSS: array<f32, 11> = array<f32, 11>(
    0.0010283801, 0.0075987582, 0.036000773, 0.10936069, 0.21300554, 0.26601171,
    0.21300554, 0.10936069, 0.036000773, 0.0075987582, 0.0010283801,
);

// Which tile and channel a workgroup handles: workgroups are ordered channel-fastest.
struct TileJob {
    // Image coordinates of the tile's first output pixel.
    row0: i32,
    col0: i32,
    channel: u32,
}

fn tile_job(wg: u32) -> TileJob {
    return tile_job_of_width(wg, TILE);
}

// The same for tiles `tile_width` columns wide and TILE rows tall (`params.tiles_x` counts them).
fn tile_job_of_width(wg: u32, tile_width: u32) -> TileJob {
    let tile = wg / 3u;
    let tile_row = tile / params.tiles_x;
    let tile_col = tile % params.tiles_x;
    return TileJob(i32(params.band_row0 + tile_row * TILE), i32(tile_col * tile_width), wg % 3u);
}

// Workgroups of this dispatch: 3 channels of every tile of the band.
fn job_count() -> u32 {
    return params.tiles_x * ((params.band_rows + TILE - 1u) / TILE) * 3u;
}

fn in_image(row: i32, col: i32) -> bool {
    return row >= 0 && col >= 0 && row < i32(params.height) && col < i32(params.width);
}

// Whether the SSIM map at (row, col) enters the mean (an output position).
fn position_counts(row: i32, col: i32) -> bool {
    if VALID_PADDING {
        let r = i32(RADIUS);
        return row >= r && col >= r && row + r < i32(params.height) && col + r < i32(params.width);
    }
    return in_image(row, col);
}

// Ground truth RGBA at an in-image pixel: decoded, composited when asked (alpha kept in w).
fn gt_rgba(row: i32, col: i32) -> vec4<f32> {
    let pixel = (u32(row) - params.y_row0) * params.width + u32(col);
    var v: vec4<f32>;
    if GT_PACKED {
        v = unpack4x8unorm(gt[pixel]);
    } else {
        let i = pixel * 4u;
        v = vec4<f32>(bitcast<f32>(gt[i]), bitcast<f32>(gt[i + 1u]), bitcast<f32>(gt[i + 2u]), bitcast<f32>(gt[i + 3u]));
    }
    if COMPOSITE {
        v = vec4<f32>(v.w * v.xyz + (1.0 - v.w) * params.background.xyz, v.w);
    }
    return v;
}

// Ground-truth channel c; 0 outside the image (zero padding). With a mask, multiplied by the
// pixel's weight (masked pixels are 0 in both images, so they add nothing to any term).
fn gt_value(row: i32, col: i32, c: u32) -> f32 {
    if !in_image(row, col) {
        return 0.0;
    }
    let v = gt_rgba(row, col);
    if MASK {
        return v[c] * v.w;
    }
    return v[c];
}

// Loss weight of an in-image pixel: its ground-truth alpha when masking, else 1.
fn gt_weight(row: i32, col: i32) -> f32 {
    if MASK {
        return gt_rgba(row, col).w;
    }
    return 1.0;
}

// SSIM at one position and its partial derivatives with respect to the local statistics.
// Inputs are Gaussian-filtered moments of the *shifted* values x - kx and y - ky:
// m = (E[x], E[y], E[x^2] + E[y^2], E[xy]), k = (kx, ky). SSIM depends on the two variances only
// through their sum, so the sum of the second moments is all it needs. The shift keeps
// var = E[x^2] - E[x]^2 from cancelling badly in f32; variances and covariances do not depend
// on it, means get it added back.
struct SsimPoint {
    m: f32,
    // dm/dmu_x holding the variances fixed, then dm/dvar_x (= dm/dvar_y) and dm/dcov.
    d_mu: f32,
    d_var: f32,
    d_cov: f32,
}

fn ssim_point(m: vec4<f32>, k: vec2<f32>) -> SsimPoint {
    let mu = m.xy + k;
    let var_sum = m.z - m.x * m.x - m.y * m.y;
    let cov = m.w - m.x * m.y;
    let a1 = 2.0 * mu.x * mu.y + SSIM_C1;
    let a2 = 2.0 * cov + SSIM_C2;
    let b1 = dot(mu, mu) + SSIM_C1;
    let b2 = var_sum + SSIM_C2;
    let inv = 1.0 / (b1 * b2);
    let ssim = a1 * a2 * inv;
    return SsimPoint(ssim, 2.0 * mu.y * a2 * inv - 2.0 * mu.x * ssim / b1, -ssim / b2, 2.0 * a1 * inv);
}

// The moments ssim_point takes, of one pair of shifted values v = (x - kx, y - ky).
fn ssim_moments(v: vec2<f32>) -> vec4<f32> {
    return vec4<f32>(v, dot(v, v), v.x * v.y);
}

// Types and helpers shared by the splatting stages (src/splat/). The uniform reaches Rust as
// the generated `kernels::shared_splat::RenderUniform` (constructors in src/splat/uniform.rs).

struct RenderUniform {
    // Rows of the world-to-camera transform [R | t].
    view_r0: vec4<f32>,
    view_r1: vec4<f32>,
    view_r2: vec4<f32>,
    // Camera centre in world space (w unused).
    cam_pos: vec4<f32>,
    // Background colour (a unused).
    background: vec4<f32>,
    focal: vec2<f32>,
    principal: vec2<f32>,
    image_size: vec2<u32>,
    tile_counts: vec2<u32>,
    near: f32,
    far: f32,
    // Active SH degree (0..=3).
    sh_degree: u32,
    // Items in this dispatch (Gaussians of the page, visible splats, or intersections).
    count: u32,
    // SH rest coefficients stored per Gaussian (0, 3, 8 or 15).
    sh_rest_count: u32,
    // 0 = gsplat's hard alpha cutoff; 1 = the smooth cutoff used by finite-difference tests.
    alpha_mode: u32,
    // Index of the first Gaussian of the page being processed.
    page_offset: u32,
    // Intersections (map_intersections), visible splats V (rasterizers, see chunk.wgsl), or flags.
    aux: u32,
    // RASTER_CLASSIC or RASTER_ANTIALIASED.
    raster_mode: u32,
    // Rasterizers (see chunk.wgsl): which slice of each tile's run in the chunk this dispatch
    // takes, and the intersections per slice (0 = the whole run in one dispatch).
    slice: u32,
    slice_len: u32,
    // LENS_PINHOLE, LENS_PERSPECTIVE, LENS_FISHEYE or LENS_FOV (shared/lens.wgsl): how a
    // camera-space point reaches its pixel. The pinhole's kernels never read the fields below.
    lens_kind: u32,
    // The radial factor's numerator 1 + k1 s + k2 s² + k3 s³ + k4 s⁴ (s = squared radius of the
    // normalised point, or of the angle-scaled point for a fisheye): (k1, k2, k3, k4).
    lens_radial: vec4<f32>,
    // Its denominator 1 + d1 s + d2 s² + d3 s³ (OpenCV's rational model): (d1, d2, d3, unused).
    lens_rational: vec4<f32>,
    // Tangential (p1, p2) and thin-prism (s1, s2) coefficients.
    lens_tangential: vec4<f32>,
    // x: the largest radius of the normalised point (perspective, FOV) or the largest angle from
    // the axis (fisheye) the lens maps one to one; y: the FOV model's 2 tan(ω/2); z: its ω.
    lens_limits: vec4<f32>,
}

// 3DGS: the 2D covariance is dilated by COV2D_DILATION and the opacity is kept.
const RASTER_CLASSIC: u32 = 0u;
// Mip-Splatting's 2D filter (gsplat's "antialiased"): the same dilation, and the opacity scaled by
// sqrt(det(cov) / det(cov + COV2D_DILATION I)) so a splat keeps its total weight when dilated.
const RASTER_ANTIALIASED: u32 = 1u;

// A projected splat is a row of SPLAT_STRIDE floats (src/splat/forward.rs).
const SPLAT_STRIDE: u32 = 12u;
// A row of per-splat (and per-Gaussian) screen-space gradients has V_STRIDE floats
// (src/splat/backward.rs).
const V_STRIDE: u32 = 12u;
// Flags of the per-Gaussian backward kernels (the uniform's `aux`): detach the SH view direction
// from the means, accumulate the densification statistics, and add the gradients to those
// already written rather than write them (a second backward pass of the same step, such as a
// geometry regulariser's).
const AUX_DETACH_VIEW_DIR: u32 = 1u;
const AUX_STATISTICS: u32 = 2u;
const AUX_ACCUMULATE: u32 = 4u;
const SPLAT_X: u32 = 0u;
const SPLAT_Y: u32 = 1u;
const SPLAT_CONIC_A: u32 = 2u;
const SPLAT_CONIC_B: u32 = 3u;
const SPLAT_CONIC_C: u32 = 4u;
const SPLAT_OPACITY: u32 = 5u;
const SPLAT_R: u32 = 6u;
const SPLAT_G: u32 = 7u;
const SPLAT_B: u32 = 8u;
const SPLAT_DEPTH: u32 = 9u;
const SPLAT_RADIUS_X: u32 = 10u;
const SPLAT_RADIUS_Y: u32 = 11u;

const TILE_SIZE: u32 = 16u;
const ALPHA_MAX: f32 = 0.999;
const ALPHA_MIN: f32 = 0.00392156862745098; // 1/255
const TRANSMITTANCE_MIN: f32 = 0.0001;
const COV2D_DILATION: f32 = 0.3;

fn is_finite_f32(x: f32) -> bool {
    // Infinities and NaN have every exponent bit set. (Not `abs(x) <= 3.4028234e38`: Chrome's
    // WGSL compiler refuses the largest float's decimal literal as not representable.)
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// Rotation matrix (columns) of an unnormalised quaternion (w, x, y, z).
fn quat_to_mat(q: vec4<f32>) -> mat3x3<f32> {
    let n = q / length(q);
    let w = n.x;
    let x = n.y;
    let y = n.z;
    let z = n.w;
    return mat3x3<f32>(
        vec3<f32>(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + w * z), 2.0 * (x * z - w * y)),
        vec3<f32>(2.0 * (x * y - w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + w * x)),
        vec3<f32>(2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)),
    );
}

// The axis (0, 1 or 2) of the shortest of three log scales; ties go to the earlier axis. The
// normals (splat_normals.wgsl) and the flattening term (flatten.wgsl) agree on it.
fn shortest_axis(log_s: vec3<f32>) -> u32 {
    var axis = 0u;
    if log_s.y < log_s.x {
        axis = 1u;
    }
    if log_s.z < log_s[axis] {
        axis = 2u;
    }
    return axis;
}

// The sign that turns a Gaussian's camera-space axis `n` at camera-space mean `p` towards the
// camera (-1 where it points away), as the normals are drawn.
// The colour a render of the depth composites for a splat at `depth`: (depth, 0, 0), or its
// moments (depth, depth², 1), whose composite gives Σ w·d, Σ w·d² and Σ w (geometry_colour.wgsl
// and geometry_splats.wgsl, which must agree bit for bit).
fn depth_colour(depth: f32, moments: bool) -> vec3<f32> {
    if moments {
        return vec3<f32>(depth, depth * depth, 1.0);
    }
    return vec3<f32>(depth, 0.0, 0.0);
}

fn facing_sign(n: vec3<f32>, p: vec3<f32>) -> f32 {
    return select(1.0, -1.0, dot(n, p) > 0.0);
}

fn sigmoid(x: f32) -> f32 {
    return 1.0 / (1.0 + exp(-x));
}

// World-to-camera rotation as a matrix (columns) and translation.
fn view_rotation(u: RenderUniform) -> mat3x3<f32> {
    return transpose(mat3x3<f32>(u.view_r0.xyz, u.view_r1.xyz, u.view_r2.xyz));
}

fn view_translation(u: RenderUniform) -> vec3<f32> {
    return vec3<f32>(u.view_r0.w, u.view_r1.w, u.view_r2.w);
}

// The alpha a splat contributes at a pixel, given sigma = -power (>= 0 inside the ellipse).
// Hard mode follows gsplat: alpha below 1/255 counts as zero. Smooth mode (tests only) fades
// alpha out continuously so finite differences see a differentiable function.
fn splat_alpha(opacity: f32, power: f32, mode: u32) -> f32 {
    let a = min(ALPHA_MAX, opacity * exp(power));
    if mode == 0u {
        return select(a, 0.0, a < ALPHA_MIN || power > 0.0);
    }
    return a;
}

// `splat_alpha` for four pixels at once, given exp(power) as `vis`.
fn splat_alpha4(opacity: f32, vis: vec4<f32>, power: vec4<f32>, mode: u32) -> vec4<f32> {
    let a = min(vec4<f32>(ALPHA_MAX), opacity * vis);
    if mode == 0u {
        return select(a, vec4<f32>(0.0), (a < vec4<f32>(ALPHA_MIN)) | (power > vec4<f32>(0.0)));
    }
    return a;
}

// Whether a splat with (conic a, b, c, opacity) `co` can give a nonzero alpha at any of four
// pixels at offsets (dx, dy[k]) from its centre where `reachable` holds: a cheap test before the
// exponential. Hard mode: alpha is zero where opacity * exp(power) < ALPHA_MIN, i.e. where power
// < ln(ALPHA_MIN / opacity); the test keeps a margin of 1e-3 for the rounding of exp and log, so
// it never rejects a pixel that the exact test keeps. Smooth mode never rejects.
fn splat_may_touch4(co: vec4<f32>, dx: f32, dy: vec4<f32>, reachable: vec4<bool>, mode: u32) -> bool {
    if mode != 0u {
        return any(reachable);
    }
    let power = -0.5 * (co.x * dx * dx + co.z * dy * dy) - co.y * dx * dy;
    let cutoff = log(ALPHA_MIN / co.w) - 1e-3;
    return any(reachable & (power >= vec4<f32>(cutoff)) & (power <= vec4<f32>(0.0)));
}

// The antialiased mode's opacity factor for a 2D covariance [[a0, b], [b, c0]] before dilation
// and the determinant `det` after it: sqrt(max(0, det0 / det)).
fn dilation_compensation(a0: f32, b: f32, c0: f32, det: f32) -> f32 {
    return sqrt(max(0.0, (a0 * c0 - b * b) / det));
}

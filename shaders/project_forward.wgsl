// Projection (EWA) of one page of Gaussians, in Gaussian order: camera transform, 3D covariance,
// its screen-space image with gsplat's clamped Jacobian and 0.3 px dilation, the conic, the
// opacity (scaled by the dilation's compensation in the antialiased mode), the tile
// footprint and the depth key. Culled Gaussians (behind the near plane, beyond the far plane,
// non-finite, degenerate, negligible opacity, or off screen) touch zero tiles.
//
// With LENS the camera's lens (shared/lens.wgsl) takes the pinhole's place: the mean goes
// through the lens, the Jacobian is the lens's at the mean (not clamped), the depth is z or, for
// a fisheye, the ray's length, and a mean the lens does not see one to one is culled.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/lens.wgsl"

// Whether the camera has a lens other than the ideal pinhole (a separate pipeline, so the
// pinhole's stays as it was).
override LENS: bool = false;

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> means: array<f32>;
@group(0) @binding(2) var<storage, read> log_scales: array<f32>;
@group(0) @binding(3) var<storage, read> quats: array<f32>;
@group(0) @binding(4) var<storage, read> opacity_logits: array<f32>;
@group(0) @binding(5) var<storage, read_write> projected: array<f32>;
@group(0) @binding(6) var<storage, read_write> tiles_touched: array<u32>;
@group(0) @binding(7) var<storage, read_write> depth_keys: array<u32>;

fn write_culled(i: u32) {
    for (var k = 0u; k < SPLAT_STRIDE; k++) {
        projected[i * SPLAT_STRIDE + k] = 0.0;
    }
    tiles_touched[i] = 0u;
    depth_keys[i] = 0xffffffffu;
}

@compute @workgroup_size(256)
fn project(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= u.count {
        return;
    }
    let mean = vec3<f32>(means[3u * i], means[3u * i + 1u], means[3u * i + 2u]);
    let p = view_rotation(u) * mean + view_translation(u);
    let opacity = sigmoid(opacity_logits[i]);
    let log_s = vec3<f32>(log_scales[3u * i], log_scales[3u * i + 1u], log_scales[3u * i + 2u]);
    let q = vec4<f32>(quats[4u * i], quats[4u * i + 1u], quats[4u * i + 2u], quats[4u * i + 3u]);
    let inputs_finite = is_finite_f32(p.x) && is_finite_f32(p.y) && is_finite_f32(p.z) && is_finite_f32(opacity)
        && is_finite_f32(log_s.x) && is_finite_f32(log_s.y) && is_finite_f32(log_s.z)
        && is_finite_f32(q.x) && is_finite_f32(q.y) && is_finite_f32(q.z) && is_finite_f32(q.w) && dot(q, q) > 0.0;
    var lens = LensProjection(vec2<f32>(0.0), mat3x2<f32>(), p.z, true);
    if LENS && inputs_finite {
        lens = lens_project(u, p);
    }
    let in_range = select(p.z >= u.near && p.z <= u.far, lens.valid, LENS);
    if !inputs_finite || !in_range {
        write_culled(i);
        return;
    }
    // Negligible opacity can never reach the 1/255 cutoff (hard mode only).
    let extent_sq = select(25.0, 2.0 * log(opacity / ALPHA_MIN), u.alpha_mode == 0u);
    if !(extent_sq > 0.0) {
        write_culled(i);
        return;
    }
    let r = quat_to_mat(q);
    let m = r * mat3x3<f32>(vec3<f32>(exp(log_s.x), 0.0, 0.0), vec3<f32>(0.0, exp(log_s.y), 0.0), vec3<f32>(0.0, 0.0, exp(log_s.z)));
    let sigma_world = m * transpose(m);
    let w = view_rotation(u);
    let sigma_cam = w * sigma_world * transpose(w);
    let size = vec2<f32>(u.image_size);
    let tan_fov = 0.5 * size / u.focal;
    let lim_pos = (size - u.principal) / u.focal + 0.3 * tan_fov;
    let lim_neg = u.principal / u.focal + 0.3 * tan_fov;
    let rz = 1.0 / p.z;
    let t = p.z * clamp(p.xy * rz, -lim_neg, lim_pos);
    // Jacobian of the perspective projection (2x3), stored as a 3x2 matrix (three columns).
    var j = mat3x2<f32>(
        vec2<f32>(u.focal.x * rz, 0.0),
        vec2<f32>(0.0, u.focal.y * rz),
        vec2<f32>(-u.focal.x * t.x * rz * rz, -u.focal.y * t.y * rz * rz),
    );
    var xy = u.focal * p.xy * rz + u.principal;
    if LENS {
        j = lens.jacobian;
        xy = lens.pixel;
    }
    let cov = j * sigma_cam * transpose(j);
    let a = cov[0][0] + COV2D_DILATION;
    let b = cov[0][1];
    let c = cov[1][1] + COV2D_DILATION;
    let det = a * c - b * b;
    // The cull below uses the undiminished opacity: conservative for the antialiased mode.
    var shown_opacity = opacity;
    if u.raster_mode == RASTER_ANTIALIASED {
        shown_opacity *= dilation_compensation(cov[0][0], b, cov[1][1], det);
    }
    if !(det > 0.0) || !is_finite_f32(det) || !is_finite_f32(xy.x) || !is_finite_f32(xy.y) {
        write_culled(i);
        return;
    }
    let conic = vec3<f32>(c / det, -b / det, a / det);
    let extent = sqrt(extent_sq);
    let radius = ceil(extent * sqrt(vec2<f32>(a, c)));
    let tiles = vec2<i32>(u.tile_counts);
    let tile_min = clamp(vec2<i32>(floor((xy - radius) / f32(TILE_SIZE))), vec2<i32>(0), tiles);
    let tile_max = clamp(vec2<i32>(ceil((xy + radius) / f32(TILE_SIZE))), vec2<i32>(0), tiles);
    let footprint = (tile_max - tile_min);
    if footprint.x <= 0 || footprint.y <= 0 || !is_finite_f32(radius.x) || !is_finite_f32(radius.y) {
        write_culled(i);
        return;
    }
    let base = i * SPLAT_STRIDE;
    projected[base + SPLAT_X] = xy.x;
    projected[base + SPLAT_Y] = xy.y;
    projected[base + SPLAT_CONIC_A] = conic.x;
    projected[base + SPLAT_CONIC_B] = conic.y;
    projected[base + SPLAT_CONIC_C] = conic.z;
    projected[base + SPLAT_OPACITY] = shown_opacity;
    // Colour is filled in by sh_forward.wgsl.
    projected[base + SPLAT_R] = 0.0;
    projected[base + SPLAT_G] = 0.0;
    projected[base + SPLAT_B] = 0.0;
    projected[base + SPLAT_DEPTH] = lens.depth;
    projected[base + SPLAT_RADIUS_X] = radius.x;
    projected[base + SPLAT_RADIUS_Y] = radius.y;
    tiles_touched[i] = u32(footprint.x * footprint.y);
    // Positive floats order like their bit patterns.
    depth_keys[i] = bitcast<u32>(lens.depth);
}

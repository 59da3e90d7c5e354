// Colour of each projected Gaussian of one page: max(SH(view direction) + 0.5, 0), written into
// the projected rows that project_forward.wgsl produced. Culled rows (radius 0) are left alone;
// a non-finite colour culls its Gaussian.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/sh.wgsl"

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> means: array<f32>;
@group(0) @binding(2) var<storage, read> sh_dc: array<f32>;
@group(0) @binding(3) var<storage, read> sh_rest: array<f32>;
@group(0) @binding(4) var<storage, read_write> projected: array<f32>;
@group(0) @binding(5) var<storage, read_write> tiles_touched: array<u32>;

@compute @workgroup_size(256)
fn color(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= u.count {
        return;
    }
    let base = i * SPLAT_STRIDE;
    if projected[base + SPLAT_RADIUS_X] <= 0.0 {
        return;
    }
    let mean = vec3<f32>(means[3u * i], means[3u * i + 1u], means[3u * i + 2u]);
    let dir = mean - u.cam_pos.xyz;
    let len = length(dir);
    let unit = select(vec3<f32>(0.0, 0.0, 1.0), dir / len, len > 0.0);
    let degree = min(u.sh_degree, sh_degree_of(u.sh_rest_count));
    let basis = sh_basis(degree, unit);
    var rgb = basis.b[0] * vec3<f32>(sh_dc[3u * i], sh_dc[3u * i + 1u], sh_dc[3u * i + 2u]);
    let count = (degree + 1u) * (degree + 1u);
    for (var k = 1u; k < count; k++) {
        let at = (i * u.sh_rest_count + (k - 1u)) * 3u;
        rgb += basis.b[k] * vec3<f32>(sh_rest[at], sh_rest[at + 1u], sh_rest[at + 2u]);
    }
    if !(is_finite_f32(rgb.x) && is_finite_f32(rgb.y) && is_finite_f32(rgb.z)) {
        // Non-finite SH coefficients: cull the Gaussian like any other non-finite parameter.
        projected[base + SPLAT_RADIUS_X] = 0.0;
        projected[base + SPLAT_RADIUS_Y] = 0.0;
        tiles_touched[i] = 0u;
        return;
    }
    rgb = max(rgb + vec3<f32>(0.5), vec3<f32>(0.0));
    projected[base + SPLAT_R] = rgb.x;
    projected[base + SPLAT_G] = rgb.y;
    projected[base + SPLAT_B] = rgb.z;
}

// The largest degree whose rest coefficients fit in `rest_count` per Gaussian.
fn sh_degree_of(rest_count: u32) -> u32 {
    if rest_count >= 15u {
        return 3u;
    }
    if rest_count >= 8u {
        return 2u;
    }
    if rest_count >= 3u {
        return 1u;
    }
    return 0u;
}

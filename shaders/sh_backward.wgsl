// Backward of the SH colour for one page of Gaussians: gradients of the SH coefficients and, unless
// detached (AUX_DETACH_VIEW_DIR, as gsplat's tests do), of the mean through the view direction, added to the
// mean gradient that project_backward.wgsl wrote.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/sh.wgsl"

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> means: array<f32>;
@group(0) @binding(2) var<storage, read> sh_dc: array<f32>;
@group(0) @binding(3) var<storage, read> sh_rest: array<f32>;
@group(0) @binding(4) var<storage, read> v_projected: array<f32>;
@group(0) @binding(5) var<storage, read_write> v_sh_dc: array<f32>;
@group(0) @binding(6) var<storage, read_write> v_sh_rest: array<f32>;
@group(0) @binding(7) var<storage, read_write> v_means: array<f32>;

// Gradient of the basis with respect to the (unnormalised-independent) components of d.
fn sh_basis_grad(degree: u32, d: vec3<f32>, k: u32) -> vec3<f32> {
    let x = d.x;
    let y = d.y;
    let z = d.z;
    switch k {
        case 1u: { return vec3<f32>(0.0, -0.48860251190291987, 0.0); }
        case 2u: { return vec3<f32>(0.0, 0.0, 0.48860251190291987); }
        case 3u: { return vec3<f32>(-0.48860251190291987, 0.0, 0.0); }
        case 4u: { return 1.092548430592079 * vec3<f32>(y, x, 0.0); }
        case 5u: { return -1.092548430592079 * vec3<f32>(0.0, z, y); }
        case 6u: { return vec3<f32>(0.0, 0.0, 1.8923493915151202 * z); }
        case 7u: { return -1.092548430592079 * vec3<f32>(z, 0.0, x); }
        case 8u: { return 1.092548430592079 * vec3<f32>(x, -y, 0.0); }
        case 9u: { return -0.5900435899266435 * vec3<f32>(6.0 * x * y, 3.0 * x * x - 3.0 * y * y, 0.0); }
        case 10u: { return 2.890611442640554 * vec3<f32>(y * z, x * z, x * y); }
        case 11u: {
            let tmp0c = -2.285228997322329 * z * z + 0.4570457994644658;
            return vec3<f32>(0.0, tmp0c, -4.570457994644658 * z * y);
        }
        case 12u: { return vec3<f32>(0.0, 0.0, 5.597644988851731 * z * z - 1.119528997770346); }
        case 13u: {
            let tmp0c = -2.285228997322329 * z * z + 0.4570457994644658;
            return vec3<f32>(tmp0c, 0.0, -4.570457994644658 * z * x);
        }
        case 14u: { return 1.445305721320277 * vec3<f32>(2.0 * z * x, -2.0 * z * y, x * x - y * y); }
        case 15u: { return -0.5900435899266435 * vec3<f32>(3.0 * x * x - 3.0 * y * y, -6.0 * x * y, 0.0); }
        default: { return vec3<f32>(0.0); }
    }
}

@compute @workgroup_size(256)
fn sh_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= u.count {
        return;
    }
    let rest = u.sh_rest_count;
    let v_color = vec3<f32>(v_projected[i * V_STRIDE + 6u], v_projected[i * V_STRIDE + 7u], v_projected[i * V_STRIDE + 8u]);
    let has_grad = !all(v_color == vec3<f32>(0.0));
    let mean = vec3<f32>(means[3u * i], means[3u * i + 1u], means[3u * i + 2u]);
    let dir = mean - u.cam_pos.xyz;
    let len = length(dir);
    let d = select(vec3<f32>(0.0, 0.0, 1.0), dir / len, len > 0.0);
    let degree = min(u.sh_degree, select(select(select(0u, 1u, rest >= 3u), 2u, rest >= 8u), 3u, rest >= 15u));
    let count = (degree + 1u) * (degree + 1u);
    let basis = sh_basis(degree, d);
    // The clamp max(c + 0.5, 0) passes gradient where its input is >= 0.
    var raw = basis.b[0] * vec3<f32>(sh_dc[3u * i], sh_dc[3u * i + 1u], sh_dc[3u * i + 2u]);
    for (var k = 1u; k < count; k++) {
        let at = (i * rest + (k - 1u)) * 3u;
        raw += basis.b[k] * vec3<f32>(sh_rest[at], sh_rest[at + 1u], sh_rest[at + 2u]);
    }
    let v_c = select(vec3<f32>(0.0), v_color, raw + vec3<f32>(0.5) >= vec3<f32>(0.0));
    let v_dc = select(vec3<f32>(0.0), basis.b[0] * v_c, has_grad);
    v_sh_dc[3u * i] = v_dc.x;
    v_sh_dc[3u * i + 1u] = v_dc.y;
    v_sh_dc[3u * i + 2u] = v_dc.z;
    var v_d = vec3<f32>(0.0);
    for (var k = 1u; k <= rest; k++) {
        let at = (i * rest + (k - 1u)) * 3u;
        var g = vec3<f32>(0.0);
        if has_grad && k < count {
            g = basis.b[k] * v_c;
            let coeff = vec3<f32>(sh_rest[at], sh_rest[at + 1u], sh_rest[at + 2u]);
            v_d += dot(coeff, v_c) * sh_basis_grad(degree, d, k);
        }
        v_sh_rest[at] = g.x;
        v_sh_rest[at + 1u] = g.y;
        v_sh_rest[at + 2u] = g.z;
    }
    if has_grad && (u.aux & AUX_DETACH_VIEW_DIR) == 0u && len > 0.0 {
        let v_dir = (v_d - d * dot(d, v_d)) / len;
        v_means[3u * i] += v_dir.x;
        v_means[3u * i + 1u] += v_dir.y;
        v_means[3u * i + 2u] += v_dir.z;
    }
}

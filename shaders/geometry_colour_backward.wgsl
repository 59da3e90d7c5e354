// The backward of geometry_colour.wgsl, in place of sh_backward.wgsl for a render whose colour
// is the depth, (MOMENTS) the depth's moments or (NORMAL) the normal. The depth's gradient (red
// channel, and for the moments the green's through depth²; blue is constant) reaches the mean
// through the depth (camera z, or a fisheye's ray length), added to the means' gradients
// project_backward.wgsl wrote; the normal's reaches the quaternion through the rotation's column
// of the shortest axis (the axis and the turn towards the camera are piecewise constant), added
// to the quaternions' gradients. The SH coefficients, which the render did not use, get zero
// (untouched with AUX_ACCUMULATE: a colour render's backward wrote them).
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/lens.wgsl"

override NORMAL: bool = false;
override MOMENTS: bool = false;

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> means: array<f32>;
@group(0) @binding(2) var<storage, read> log_scales: array<f32>;
@group(0) @binding(3) var<storage, read> quats: array<f32>;
@group(0) @binding(4) var<storage, read> v_projected: array<f32>;
@group(0) @binding(5) var<storage, read_write> v_sh_dc: array<f32>;
@group(0) @binding(6) var<storage, read_write> v_sh_rest: array<f32>;
@group(0) @binding(7) var<storage, read_write> v_means: array<f32>;
@group(0) @binding(8) var<storage, read_write> v_quats: array<f32>;

// ⟨g, ∂(column `axis` of the rotation of the unit quaternion n = (w, x, y, z))/∂n⟩.
fn column_vjp(n: vec4<f32>, axis: u32, g: vec3<f32>) -> vec4<f32> {
    let w = n.x;
    let x = n.y;
    let y = n.z;
    let z = n.w;
    if axis == 0u {
        // (1 - 2(y² + z²), 2(xy + wz), 2(xz - wy))
        return g.x * vec4<f32>(0.0, 0.0, -4.0 * y, -4.0 * z) + g.y * vec4<f32>(2.0 * z, 2.0 * y, 2.0 * x, 2.0 * w)
            + g.z * vec4<f32>(-2.0 * y, 2.0 * z, -2.0 * w, 2.0 * x);
    }
    if axis == 1u {
        // (2(xy - wz), 1 - 2(x² + z²), 2(yz + wx))
        return g.x * vec4<f32>(-2.0 * z, 2.0 * y, 2.0 * x, -2.0 * w) + g.y * vec4<f32>(0.0, -4.0 * x, 0.0, -4.0 * z)
            + g.z * vec4<f32>(2.0 * x, 2.0 * w, 2.0 * z, 2.0 * y);
    }
    // (2(xz + wy), 2(yz - wx), 1 - 2(x² + y²))
    return g.x * vec4<f32>(2.0 * y, 2.0 * z, 2.0 * w, 2.0 * x) + g.y * vec4<f32>(-2.0 * x, -2.0 * w, 2.0 * z, 2.0 * y)
        + g.z * vec4<f32>(0.0, -4.0 * x, -4.0 * y, 0.0);
}

@compute @workgroup_size(256)
fn geometry_colour_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= u.count {
        return;
    }
    if (u.aux & AUX_ACCUMULATE) == 0u {
        for (var k = 0u; k < 3u; k++) {
            v_sh_dc[3u * i + k] = 0.0;
        }
        for (var k = 0u; k < 3u * u.sh_rest_count; k++) {
            v_sh_rest[3u * u.sh_rest_count * i + k] = 0.0;
        }
    }
    let v_colour = vec3<f32>(v_projected[i * V_STRIDE + 6u], v_projected[i * V_STRIDE + 7u], v_projected[i * V_STRIDE + 8u]);
    if all(v_colour == vec3<f32>(0.0)) {
        return;
    }
    let w = view_rotation(u);
    let mean = vec3<f32>(means[3u * i], means[3u * i + 1u], means[3u * i + 2u]);
    let p = w * mean + view_translation(u);
    if NORMAL {
        let log_s = vec3<f32>(log_scales[3u * i], log_scales[3u * i + 1u], log_scales[3u * i + 2u]);
        let q = vec4<f32>(quats[4u * i], quats[4u * i + 1u], quats[4u * i + 2u], quats[4u * i + 3u]);
        let axis = shortest_axis(log_s);
        let n = w * quat_to_mat(q)[axis];
        let turned = facing_sign(n, p);
        // Into world space, then through the column of the unit quaternion and its normalisation.
        let g = turned * (transpose(w) * v_colour);
        let len = length(q);
        let unit = q / len;
        let v_unit = column_vjp(unit, axis, g);
        let v_q = (v_unit - unit * dot(unit, v_unit)) / len;
        for (var k = 0u; k < 4u; k++) {
            v_quats[4u * i + k] += v_q[k];
        }
        return;
    }
    // ∂depth/∂p: the z axis, or the unit ray for a fisheye; into world space through Wᵀ.
    var d_p = vec3<f32>(0.0, 0.0, 1.0);
    if u.lens_kind == LENS_FISHEYE {
        d_p = p / length(p);
    }
    var v_depth = v_colour.x;
    if MOMENTS {
        let depth = select(p.z, length(p), u.lens_kind == LENS_FISHEYE);
        v_depth += 2.0 * depth * v_colour.y;
    }
    let v_mean = v_depth * (transpose(w) * d_p);
    v_means[3u * i] += v_mean.x;
    v_means[3u * i + 1u] += v_mean.y;
    v_means[3u * i + 2u] += v_mean.z;
}

// Backward of the projection for one page of Gaussians, in Gaussian order: from the gradients of
// each projected mean (x, y), conic (a, b, c) and, in the antialiased mode, opacity (through its
// compensation factor) to the world mean, the log scales and the unnormalised quaternion. The forward quantities are recomputed. Rows of `v_projected` that are
// all zero (culled or invisible Gaussians) give zero gradients without touching their parameters,
// so non-finite parameters cannot leak NaN into the gradients.
//
// With LENS the Jacobian is the lens's (shared/lens.wgsl), and the mean's gradient takes the
// Jacobian's own dependence on the mean (∂J/∂μ) from `lens_vjp`.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/lens.wgsl"

// Whether the camera has a lens other than the ideal pinhole (see project_forward.wgsl).
override LENS: bool = false;

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> means: array<f32>;
@group(0) @binding(2) var<storage, read> log_scales: array<f32>;
@group(0) @binding(3) var<storage, read> quats: array<f32>;
@group(0) @binding(4) var<storage, read> v_projected: array<f32>;
@group(0) @binding(5) var<storage, read_write> v_means: array<f32>;
@group(0) @binding(6) var<storage, read_write> v_log_scales: array<f32>;
@group(0) @binding(7) var<storage, read_write> v_quats: array<f32>;
@group(0) @binding(8) var<storage, read> opacity_logits: array<f32>;

// Writes a Gaussian's gradients, or with AUX_ACCUMULATE adds them to those already there (a
// zero row then leaves them untouched).
fn write_grads(i: u32, vm: vec3<f32>, vs: vec3<f32>, vq: vec4<f32>) {
    if (u.aux & AUX_ACCUMULATE) != 0u {
        if any(vm != vec3<f32>(0.0)) || any(vs != vec3<f32>(0.0)) || any(vq != vec4<f32>(0.0)) {
            for (var k = 0u; k < 3u; k++) {
                v_means[3u * i + k] += vm[k];
                v_log_scales[3u * i + k] += vs[k];
            }
            for (var k = 0u; k < 4u; k++) {
                v_quats[4u * i + k] += vq[k];
            }
        }
        return;
    }
    v_means[3u * i] = vm.x;
    v_means[3u * i + 1u] = vm.y;
    v_means[3u * i + 2u] = vm.z;
    v_log_scales[3u * i] = vs.x;
    v_log_scales[3u * i + 1u] = vs.y;
    v_log_scales[3u * i + 2u] = vs.z;
    v_quats[4u * i] = vq.x;
    v_quats[4u * i + 1u] = vq.y;
    v_quats[4u * i + 2u] = vq.z;
    v_quats[4u * i + 3u] = vq.w;
}

@compute @workgroup_size(256)
fn project_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= u.count {
        return;
    }
    let vb = i * V_STRIDE;
    let v_xy = vec2<f32>(v_projected[vb], v_projected[vb + 1u]);
    let v_conic = vec3<f32>(v_projected[vb + 2u], v_projected[vb + 3u], v_projected[vb + 4u]);
    // The antialiased mode's opacity depends on the covariance too.
    let antialiased = u.raster_mode == RASTER_ANTIALIASED;
    let v_shown_opacity = select(0.0, v_projected[vb + 5u], antialiased);
    if all(v_xy == vec2<f32>(0.0)) && all(v_conic == vec3<f32>(0.0)) && v_shown_opacity == 0.0 {
        write_grads(i, vec3<f32>(0.0), vec3<f32>(0.0), vec4<f32>(0.0));
        return;
    }
    // Recompute the forward pass.
    let mean = vec3<f32>(means[3u * i], means[3u * i + 1u], means[3u * i + 2u]);
    let w = view_rotation(u);
    let p = w * mean + view_translation(u);
    let s = exp(vec3<f32>(log_scales[3u * i], log_scales[3u * i + 1u], log_scales[3u * i + 2u]));
    let q_raw = vec4<f32>(quats[4u * i], quats[4u * i + 1u], quats[4u * i + 2u], quats[4u * i + 3u]);
    let r = quat_to_mat(q_raw);
    let m = mat3x3<f32>(r[0] * s.x, r[1] * s.y, r[2] * s.z);
    let sigma_world = m * transpose(m);
    let sigma_cam = w * sigma_world * transpose(w);
    let size = vec2<f32>(u.image_size);
    let tan_fov = 0.5 * size / u.focal;
    let lim_pos = (size - u.principal) / u.focal + 0.3 * tan_fov;
    let lim_neg = u.principal / u.focal + 0.3 * tan_fov;
    let rz = 1.0 / p.z;
    let rz2 = rz * rz;
    let rz3 = rz2 * rz;
    let t = p.z * clamp(p.xy * rz, -lim_neg, lim_pos);
    let fx = u.focal.x;
    let fy = u.focal.y;
    var j = mat3x2<f32>(vec2<f32>(fx * rz, 0.0), vec2<f32>(0.0, fy * rz), vec2<f32>(-fx * t.x * rz2, -fy * t.y * rz2));
    if LENS {
        j = lens_project(u, p).jacobian;
    }
    let cov = j * sigma_cam * transpose(j);
    let a = cov[0][0] + COV2D_DILATION;
    let b = cov[0][1];
    let c = cov[1][1] + COV2D_DILATION;
    let det = a * c - b * b;
    let conic = mat2x2<f32>(vec2<f32>(c / det, -b / det), vec2<f32>(-b / det, a / det));

    // conic = cov^-1  =>  v_cov = -conic * v_conic_matrix * conic (b appears twice: half each).
    let v_conic_m = mat2x2<f32>(vec2<f32>(v_conic.x, 0.5 * v_conic.y), vec2<f32>(0.5 * v_conic.y, v_conic.z));
    var v_cov = -1.0 * (conic * v_conic_m * conic);
    if antialiased {
        // shown = sigmoid(logit) * k with k = sqrt(det0 / det), det0 = a0 c0 - b², det = a c - b²,
        // a = a0 + ε, c = c0 + ε. d(k²)/da0 = ((1 - k²) c - ε) / det = (1 - k²) conic_a - ε / det,
        // likewise for c0, and d(k²)/db = 2 (1 - k²) conic_b (half on each off-diagonal entry).
        let k = dilation_compensation(cov[0][0], b, cov[1][1], det);
        let v_k = v_shown_opacity * sigmoid(opacity_logits[i]);
        // k = 0 only where the clamp in dilation_compensation is active (flat gradient).
        let v_k2 = select(0.0, 0.5 * v_k / k, k > 0.0);
        let keep = 1.0 - k * k;
        let eps_over_det = COV2D_DILATION / det;
        v_cov += v_k2 * mat2x2<f32>(
            vec2<f32>(keep * conic[0][0] - eps_over_det, keep * conic[0][1]),
            vec2<f32>(keep * conic[1][0], keep * conic[1][1] - eps_over_det),
        );
    }
    // cov = J Σc Jᵀ
    let v_sigma_cam = transpose(j) * v_cov * j;
    let v_j = 2.0 * (v_cov * j * sigma_cam);
    // Pixel mean.
    var v_p_pinhole = vec3<f32>(fx * rz * v_xy.x, fy * rz * v_xy.y, -(fx * p.x * v_xy.x + fy * p.y * v_xy.y) * rz2);
    // The Jacobian depends on p (through the clamped tx, ty and 1/z).
    let xr = p.x * rz;
    let yr = p.y * rz;
    if xr <= lim_pos.x && xr >= -lim_neg.x {
        v_p_pinhole.x += -fx * rz2 * v_j[2][0];
    } else {
        v_p_pinhole.z += -fx * rz3 * v_j[2][0] * t.x;
    }
    if yr <= lim_pos.y && yr >= -lim_neg.y {
        v_p_pinhole.y += -fy * rz2 * v_j[2][1];
    } else {
        v_p_pinhole.z += -fy * rz3 * v_j[2][1] * t.y;
    }
    v_p_pinhole.z += -fx * rz2 * v_j[0][0] - fy * rz2 * v_j[1][1] + 2.0 * fx * t.x * rz3 * v_j[2][0] + 2.0 * fy * t.y * rz3 * v_j[2][1];
    var v_p = v_p_pinhole;
    if LENS {
        v_p = lens_vjp(u, p, v_xy, v_j);
    }
    let v_mean = transpose(w) * v_p;

    // Σc = W Σ Wᵀ, Σ = M Mᵀ, M = R S.
    let v_sigma = transpose(w) * v_sigma_cam * w;
    let v_m = (v_sigma + transpose(v_sigma)) * m;
    let v_s = vec3<f32>(dot(r[0], v_m[0]), dot(r[1], v_m[1]), dot(r[2], v_m[2]));
    let v_log_s = v_s * s;
    let v_r = mat3x3<f32>(v_m[0] * s.x, v_m[1] * s.y, v_m[2] * s.z);
    // Rotation from the normalised quaternion (w, x, y, z); g(row, col) = v_r[col][row].
    let qn = q_raw / length(q_raw);
    let qw = qn.x;
    let qx = qn.y;
    let qy = qn.z;
    let qz = qn.w;
    let g00 = v_r[0][0];
    let g01 = v_r[1][0];
    let g02 = v_r[2][0];
    let g10 = v_r[0][1];
    let g11 = v_r[1][1];
    let g12 = v_r[2][1];
    let g20 = v_r[0][2];
    let g21 = v_r[1][2];
    let g22 = v_r[2][2];
    let v_qn = 2.0 * vec4<f32>(
        -qz * g01 + qy * g02 + qz * g10 - qx * g12 - qy * g20 + qx * g21,
        qy * g01 + qz * g02 + qy * g10 - 2.0 * qx * g11 - qw * g12 + qz * g20 + qw * g21 - 2.0 * qx * g22,
        -2.0 * qy * g00 + qx * g01 + qw * g02 + qx * g10 + qz * g12 - qw * g20 + qz * g21 - 2.0 * qy * g22,
        -2.0 * qz * g00 - qw * g01 + qx * g02 + qw * g10 - 2.0 * qz * g11 + qy * g12 + qx * g20 + qy * g21,
    );
    let v_q = (v_qn - qn * dot(qn, v_qn)) / length(q_raw);
    write_grads(i, v_mean, v_log_s, v_q);
}

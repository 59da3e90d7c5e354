// Projection through a camera's lens (src/splat/lens.rs mirrors every function here on the CPU,
// and src/data/lens.rs is the reference both are tested against).
//
// A camera-space point p becomes a pixel in three steps:
//   q = g(p)            the normalised point (x/z, y/z), or for a fisheye the angle-scaled point
//                       θ (x, y) / |(x, y)| with θ = atan2(|(x, y)|, z), which exists past 90°;
//   d = D(q)            the distortion: q Q(|q|²) + tangential and thin-prism terms, with the
//                       radial factor Q rational (OpenCV) or the FOV model's atan;
//   pixel = f d + c.
// EWA needs the Jacobian J = diag(f) JD Jg at the mean, and the backward pass the gradient of
// J itself with respect to p (∂J/∂μ), which takes the Hessians of D and g: `lens_vjp` contracts
// them with the incoming gradient instead of forming them.
#import "shared/splat.wgsl"

const LENS_PINHOLE: u32 = 0u;
// SIMPLE_RADIAL, RADIAL, OPENCV, FULL_OPENCV: D on the normalised point.
const LENS_PERSPECTIVE: u32 = 1u;
// OPENCV_FISHEYE, SIMPLE_RADIAL_FISHEYE, RADIAL_FISHEYE, THIN_PRISM_FISHEYE: D on the
// angle-scaled point.
const LENS_FISHEYE: u32 = 2u;
// FOV (Devernay–Faugeras): Q(s) = atan(t √s) / (ω √s), t = 2 tan(ω/2).
const LENS_FOV: u32 = 3u;

// Below this ratio |(x, y)|² / z², `atan_ratio` sums its series instead of its closed form,
// whose derivatives lose digits to cancellation near the axis.
const LENS_SERIES_BELOW: f32 = 0.1;

// h(w, z) = atan2(√w, z) / √w and its first and second derivatives in w: (h, h_w, h_ww).
// (Its derivatives in z are closed: h_z = -1/ρ², h_wz = 1/ρ⁴, h_zz = 2z/ρ⁴, ρ² = w + z².)
fn atan_ratio(w: f32, z: f32) -> vec3<f32> {
    if z > 0.0 && w < LENS_SERIES_BELOW * z * z {
        // h z = Σ (-v)ⁿ / (2n + 1) with v = w / z²; nine terms reach f32 precision at v = 0.1.
        let v = w / (z * z);
        var h = 0.0;
        var h_w = 0.0;
        var h_ww = 0.0;
        for (var n = 9; n >= 0; n--) {
            let c = select(1.0, -1.0, (n & 1) == 1) / f32(2 * n + 1);
            h = h * v + c;
            if n >= 1 {
                h_w = h_w * v + f32(n) * c;
            }
            if n >= 2 {
                h_ww = h_ww * v + f32(n * (n - 1)) * c;
            }
        }
        let z2 = z * z;
        return vec3<f32>(h / z, h_w / (z2 * z), h_ww / (z2 * z2 * z));
    }
    let r = sqrt(w);
    let rho2 = w + z * z;
    let h = atan2(r, z) / r;
    let h_w = (z / rho2 - h) / (2.0 * w);
    let h_ww = (-z / (rho2 * rho2) - 3.0 * h_w) / (2.0 * w);
    return vec3<f32>(h, h_w, h_ww);
}

// The radial factor Q(s) and its derivatives (Q, Q', Q'').
fn lens_radial_factor(u: RenderUniform, s: f32) -> vec3<f32> {
    if u.lens_kind == LENS_FOV {
        let t = u.lens_limits.y;
        let omega = u.lens_limits.z;
        let t2 = t * t;
        let h = atan_ratio(t2 * s, 1.0);
        return vec3<f32>(h.x, h.y * t2, h.z * t2 * t2) * (t / omega);
    }
    let k = u.lens_radial;
    let d = u.lens_rational;
    let n = 1.0 + s * (k.x + s * (k.y + s * (k.z + s * k.w)));
    let n1 = k.x + s * (2.0 * k.y + s * (3.0 * k.z + s * 4.0 * k.w));
    let n2 = 2.0 * k.y + s * (6.0 * k.z + s * 12.0 * k.w);
    let m = 1.0 + s * (d.x + s * (d.y + s * d.z));
    let m1 = d.x + s * (2.0 * d.y + s * 3.0 * d.z);
    let m2 = 2.0 * d.y + s * 6.0 * d.z;
    let q = n / m;
    let q1 = (n1 - q * m1) / m;
    let q2 = (n2 - 2.0 * q1 * m1 - q * m2) / m;
    return vec3<f32>(q, q1, q2);
}

// The distorted point D(q) and its Jacobian (columns ∂D/∂q.x, ∂D/∂q.y).
struct LensDistortion {
    value: vec2<f32>,
    jacobian: mat2x2<f32>,
}

fn lens_distort(u: RenderUniform, q: vec2<f32>) -> LensDistortion {
    let a = q.x;
    let b = q.y;
    let rq = lens_radial_factor(u, a * a + b * b);
    let p1 = u.lens_tangential.x;
    let p2 = u.lens_tangential.y;
    let s1 = u.lens_tangential.z;
    let s2 = u.lens_tangential.w;
    let s = a * a + b * b;
    let value = vec2<f32>(
        a * rq.x + 2.0 * p1 * a * b + p2 * (s + 2.0 * a * a) + s1 * s,
        b * rq.x + p1 * (s + 2.0 * b * b) + 2.0 * p2 * a * b + s2 * s,
    );
    let jacobian = mat2x2<f32>(
        vec2<f32>(rq.x + 2.0 * a * a * rq.y + 2.0 * p1 * b + 6.0 * p2 * a + 2.0 * s1 * a,
                  2.0 * a * b * rq.y + 2.0 * p1 * a + 2.0 * p2 * b + 2.0 * s2 * a),
        vec2<f32>(2.0 * a * b * rq.y + 2.0 * p1 * a + 2.0 * p2 * b + 2.0 * s1 * b,
                  rq.x + 2.0 * b * b * rq.y + 6.0 * p1 * b + 2.0 * p2 * a + 2.0 * s2 * b),
    );
    return LensDistortion(value, jacobian);
}

// Σᵢⱼ V[i][j] ∂²Dᵢ/∂qⱼ∂q (V with row i = output, column j = input; WGSL indexes v[j][i]).
fn lens_distort_hessian_dot(u: RenderUniform, q: vec2<f32>, v: mat2x2<f32>) -> vec2<f32> {
    let rq = lens_radial_factor(u, dot(q, q));
    let trace = v[0][0] + v[1][1];
    // v * q is V q; transpose(v) * q is Vᵀ q.
    let quad = dot(q, v * q);
    var t = 2.0 * rq.y * (trace * q + v * q + transpose(v) * q) + 4.0 * rq.z * quad * q;
    let p1 = u.lens_tangential.x;
    let p2 = u.lens_tangential.y;
    let s1 = u.lens_tangential.z;
    let s2 = u.lens_tangential.w;
    // The tangential and prism terms' Hessians (constant).
    let hx = mat2x2<f32>(vec2<f32>(6.0 * p2 + 2.0 * s1, 2.0 * p1), vec2<f32>(2.0 * p1, 2.0 * p2 + 2.0 * s1));
    let hy = mat2x2<f32>(vec2<f32>(2.0 * p1 + 2.0 * s2, 2.0 * p2), vec2<f32>(2.0 * p2, 6.0 * p1 + 2.0 * s2));
    t += hx * vec2<f32>(v[0][0], v[1][0]) + hy * vec2<f32>(v[0][1], v[1][1]);
    return t;
}

// The normalised (or angle-scaled) point g(p) and its Jacobian (columns ∂g/∂x, ∂g/∂y, ∂g/∂z).
struct LensNormalised {
    value: vec2<f32>,
    jacobian: mat3x2<f32>,
}

fn lens_normalise(u: RenderUniform, p: vec3<f32>) -> LensNormalised {
    if u.lens_kind == LENS_FISHEYE {
        let w = dot(p.xy, p.xy);
        let h = atan_ratio(w, p.z);
        let h_z = -1.0 / (w + p.z * p.z);
        let xy = p.xy;
        let jacobian = mat3x2<f32>(
            vec2<f32>(h.x + 2.0 * xy.x * xy.x * h.y, 2.0 * xy.y * xy.x * h.y),
            vec2<f32>(2.0 * xy.x * xy.y * h.y, h.x + 2.0 * xy.y * xy.y * h.y),
            xy * h_z,
        );
        return LensNormalised(xy * h.x, jacobian);
    }
    let rz = 1.0 / p.z;
    let jacobian = mat3x2<f32>(vec2<f32>(rz, 0.0), vec2<f32>(0.0, rz), -p.xy * rz * rz);
    return LensNormalised(p.xy * rz, jacobian);
}

// Σⱼₖ W[j][k] ∂²gⱼ/∂pₖ∂p (W with row j = output, column k = input; WGSL indexes w[k][j]).
fn lens_normalise_hessian_dot(u: RenderUniform, p: vec3<f32>, w: mat3x2<f32>) -> vec3<f32> {
    if u.lens_kind == LENS_FISHEYE {
        let xy = p.xy;
        let r2 = dot(xy, xy);
        let h = atan_ratio(r2, p.z);
        let rho2 = r2 + p.z * p.z;
        let h_z = -1.0 / rho2;
        let h_wz = 1.0 / (rho2 * rho2);
        let h_zz = 2.0 * p.z / (rho2 * rho2);
        let wxy = mat2x2<f32>(w[0], w[1]);
        let wz = w[2];
        let trace = wxy[0][0] + wxy[1][1];
        let quad = dot(xy, wxy * xy);
        let along = dot(wz, xy);
        let out_xy = 2.0 * h.y * (trace * xy + wxy * xy + transpose(wxy) * xy) + 4.0 * h.z * quad * xy
            + h_z * wz + 2.0 * h_wz * along * xy;
        let out_z = h_z * trace + 2.0 * h_wz * quad + h_zz * along;
        return vec3<f32>(out_xy, out_z);
    }
    let rz = 1.0 / p.z;
    let rz2 = rz * rz;
    return vec3<f32>(
        -w[2][0] * rz2,
        -w[2][1] * rz2,
        -(w[0][0] + w[1][1]) * rz2 + 2.0 * (p.x * w[2][0] + p.y * w[2][1]) * rz2 * rz,
    );
}

// How far outside the image (as a share of its size) a mean may project and still be drawn.
// The pinhole clamps its Jacobian instead; through a lens, a mean projected far outside (a
// grazing ray where the radial polynomial runs away) would get an unbounded footprint.
const LENS_GUARD_BAND: f32 = 0.5;

// A camera-space point's pixel, the Jacobian of the pixel in the point, its depth (z, or the
// ray's length for a fisheye), and whether the lens sees it one to one within the guard band.
struct LensProjection {
    pixel: vec2<f32>,
    jacobian: mat3x2<f32>,
    depth: f32,
    valid: bool,
}

fn lens_project(u: RenderUniform, p: vec3<f32>) -> LensProjection {
    let fisheye = u.lens_kind == LENS_FISHEYE;
    let depth = select(p.z, length(p), fisheye);
    let g = lens_normalise(u, p);
    let d = lens_distort(u, g.value);
    let focal = mat2x2<f32>(vec2<f32>(u.focal.x, 0.0), vec2<f32>(0.0, u.focal.y));
    let jacobian = focal * d.jacobian * g.jacobian;
    // In front of the near plane (by z, or by distance for a fisheye, which sees behind its
    // plane), and within the radius or angle where the lens is one to one.
    let ahead = select(p.z > 0.0, true, fisheye);
    let pixel = u.focal * d.value + u.principal;
    let size = vec2<f32>(u.image_size);
    let guarded = all(abs(pixel - 0.5 * size) <= (0.5 + LENS_GUARD_BAND) * size);
    let valid = ahead && depth >= u.near && depth <= u.far && length(g.value) <= u.lens_limits.x && guarded;
    return LensProjection(pixel, jacobian, depth, valid);
}

// The gradient of the point p from the gradients of its pixel (v_pixel) and of the Jacobian
// lens_project returns (v_jacobian, indexed like it): Jᵀ v_pixel + ∂⟨v_jacobian, J⟩/∂p.
fn lens_vjp(u: RenderUniform, p: vec3<f32>, v_pixel: vec2<f32>, v_jacobian: mat3x2<f32>) -> vec3<f32> {
    let g = lens_normalise(u, p);
    let d = lens_distort(u, g.value);
    let focal = mat2x2<f32>(vec2<f32>(u.focal.x, 0.0), vec2<f32>(0.0, u.focal.y));
    let jacobian = focal * d.jacobian * g.jacobian;
    // J = F JD Jg: with G = F v_jacobian, JD sees V_A = G Jgᵀ and Jg sees V_B = JDᵀ G.
    let scaled = focal * v_jacobian;
    let v_a = scaled * transpose(g.jacobian);
    let v_b = transpose(d.jacobian) * scaled;
    let through_distortion = transpose(g.jacobian) * lens_distort_hessian_dot(u, g.value, v_a);
    let through_normalisation = lens_normalise_hessian_dot(u, p, v_b);
    return transpose(jacobian) * v_pixel + through_distortion + through_normalisation;
}

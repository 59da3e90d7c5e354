// The geometry regularisers of surface training on one view, and their gradients with respect to
// the two geometry renders (see loss/geometry.rs for the definitions):
// - depth distortion (Mip-NeRF 360's, as 2DGS uses): per pixel Σᵢ<ⱼ wᵢ wⱼ (dᵢ − dⱼ)² =
//   A·S2 − S1², from the depth moments render (S1, S2, A) = (Σ w·d, Σ w·d², Σ w);
// - depth–normal consistency (2DGS's): per pixel A·(1 − N·n), with N the rendered normal (the
//   normals render, alpha-weighted), n the unit normal of the surface the expected depths S1/A of
//   the four neighbours span (central differences of the unprojected points, turned towards the
//   camera), and A the pixel's opacity, held constant (a weight, not a term to lower).
// One invocation per pixel: it writes its two losses, the normal loss's gradient with respect to
// its rendered normal, and the gradient with respect to its moments, which gathers what its four
// neighbours' normal terms owe its depth (recomputed here, so no pass stores them).
#import "shared/dispatch.wgsl"

struct GeometryLossParams {
    width: u32,
    height: u32,
    // λ_normal / (W·H).
    normal_weight: f32,
    // λ_distortion / (W·H·scale²).
    distortion_weight: f32,
    // Pixels whose opacity A is below this have no expected depth: no normal term uses them.
    min_alpha: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p_uniform: GeometryLossParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> p: GeometryLossParams;
// [H, W, 4]: S1, S2, A and the render's alpha.
@group(0) @binding(1) var<storage, read> moments: array<f32>;
// [H, W, 4]: the alpha-weighted camera-space normal and alpha.
@group(0) @binding(2) var<storage, read> normals: array<f32>;
// [H, W, 4]: the camera-space ray r of each pixel centre, scaled so that the point at depth d is
// d·r (r.z = 1 for a depth along z, |r| = 1 for a fisheye's ray length), and 1 where the lens
// sees the pixel (0 elsewhere).
@group(0) @binding(3) var<storage, read> rays: array<f32>;
@group(0) @binding(4) var<storage, read_write> v_moments: array<f32>;
@group(0) @binding(5) var<storage, read_write> v_normals: array<f32>;
// [H, W, 2]: the weighted normal and distortion losses of each pixel.
@group(0) @binding(6) var<storage, read_write> losses: array<f32>;

fn pixel_index(q: vec2<i32>) -> u32 {
    return u32(q.y) * p.width + u32(q.x);
}

// The unprojected point of pixel q at its expected depth; w = 1 when it has one.
fn point_at(q: vec2<i32>) -> vec4<f32> {
    if q.x < 0 || q.y < 0 || q.x >= i32(p.width) || q.y >= i32(p.height) {
        return vec4<f32>(0.0);
    }
    let i = pixel_index(q);
    let a = moments[4u * i + 2u];
    let ray = vec4<f32>(rays[4u * i], rays[4u * i + 1u], rays[4u * i + 2u], rays[4u * i + 3u]);
    if ray.w == 0.0 || !(a >= p.min_alpha) {
        return vec4<f32>(0.0);
    }
    return vec4<f32>(moments[4u * i] / a * ray.xyz, 1.0);
}

// The normal term of pixel q: its loss, its gradient with respect to the rendered normal, and
// with respect to the two differences (right − left, down − up) whose cross product it is.
struct NormalTerm {
    valid: bool,
    loss: f32,
    v_normal: vec3<f32>,
    v_dx: vec3<f32>,
    v_dy: vec3<f32>,
}

fn normal_term(q: vec2<i32>) -> NormalTerm {
    var t = NormalTerm(false, 0.0, vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    let centre = point_at(q);
    let left = point_at(q - vec2<i32>(1, 0));
    let right = point_at(q + vec2<i32>(1, 0));
    let up = point_at(q - vec2<i32>(0, 1));
    let down = point_at(q + vec2<i32>(0, 1));
    if centre.w * left.w * right.w * up.w * down.w == 0.0 {
        return t;
    }
    let dx = right.xyz - left.xyz;
    let dy = down.xyz - up.xyz;
    let n = cross(dx, dy);
    let len = length(n);
    if !(len > 0.0) {
        return t;
    }
    let unit = n / len;
    // Turned towards the camera, as the rendered normals are (piecewise constant).
    let turn = select(1.0, -1.0, dot(unit, centre.xyz) > 0.0);
    let i = pixel_index(q);
    let rendered = vec3<f32>(normals[4u * i], normals[4u * i + 1u], normals[4u * i + 2u]);
    let weight = moments[4u * i + 2u];
    t.valid = true;
    t.loss = weight * (1.0 - dot(rendered, turn * unit));
    t.v_normal = -weight * turn * unit;
    // Through the normalisation, then the cross product n = dx × dy.
    let v_unit = -weight * turn * rendered;
    let v_n = (v_unit - unit * dot(unit, v_unit)) / len;
    t.v_dx = cross(dy, v_n);
    t.v_dy = cross(v_n, dx);
    return t;
}

@compute @workgroup_size(256)
fn geometry_loss(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        p = p_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= p.width * p.height {
        return;
    }
    let q = vec2<i32>(i32(i % p.width), i32(i / p.width));
    let own = normal_term(q);
    var v_normal = vec3<f32>(0.0);
    var normal_loss = 0.0;
    if own.valid {
        normal_loss = p.normal_weight * own.loss;
        v_normal = p.normal_weight * own.v_normal;
    }
    // What the neighbours' terms owe this pixel's point: it is the right point of its left
    // neighbour's difference dx, the left of its right neighbour's, and so on.
    var v_point = vec3<f32>(0.0);
    let from_left = normal_term(q - vec2<i32>(1, 0));
    let from_right = normal_term(q + vec2<i32>(1, 0));
    let from_up = normal_term(q - vec2<i32>(0, 1));
    let from_down = normal_term(q + vec2<i32>(0, 1));
    if from_left.valid {
        v_point += from_left.v_dx;
    }
    if from_right.valid {
        v_point -= from_right.v_dx;
    }
    if from_up.valid {
        v_point += from_up.v_dy;
    }
    if from_down.valid {
        v_point -= from_down.v_dy;
    }
    let s1 = moments[4u * i];
    let s2 = moments[4u * i + 1u];
    let a = moments[4u * i + 2u];
    var v_s1 = 0.0;
    var v_a = 0.0;
    if any(v_point != vec3<f32>(0.0)) {
        // The point is (S1 / A)·r.
        let ray = vec3<f32>(rays[4u * i], rays[4u * i + 1u], rays[4u * i + 2u]);
        let v_depth = p.normal_weight * dot(v_point, ray);
        v_s1 = v_depth / a;
        v_a = -v_depth * s1 / (a * a);
    }
    let dw = p.distortion_weight;
    v_s1 += -2.0 * dw * s1;
    let v_s2 = dw * a;
    v_a += dw * s2;
    v_moments[4u * i] = v_s1;
    v_moments[4u * i + 1u] = v_s2;
    v_moments[4u * i + 2u] = v_a;
    v_moments[4u * i + 3u] = 0.0;
    v_normals[4u * i] = v_normal.x;
    v_normals[4u * i + 1u] = v_normal.y;
    v_normals[4u * i + 2u] = v_normal.z;
    v_normals[4u * i + 3u] = 0.0;
    losses[2u * i] = normal_loss;
    losses[2u * i + 1u] = dw * (a * s2 - s1 * s1);
}

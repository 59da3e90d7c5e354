// Camera pose refinement: the gradient of the loss with respect to a rigid correction of the
// camera, from the per-Gaussian gradients of one chunk of the model.
//
// Moving the camera by a small rigid motion is, for the projection, the same as moving every
// Gaussian by the inverse motion: x -> x + e × x + b, its rotation q -> (1, e/2) ⊗ q (Hamilton
// product, q = (w, x, y, z) as `quat_to_mat` reads it). With g = dL/dx and h = dL/dq of each
// Gaussian (the backward pass's output), the loss changes by
//   dL/db = Σ g,    dL/de = Σ (x × g + ½ (q_w h_v − h_w q_v + q_v × h_v)),
// both in world coordinates; src/splat/pose.rs turns them into the camera's parameters. The
// view-direction term of the SH colour (which a camera rotation does not reproduce exactly) is
// the one approximation, and vanishes at SH degree 0.
//
// pose_gradient: per workgroup of 256 rows, the two sums (vec4 each, w unused) into records.
// pose_sum:      one workgroup adds the records in a fixed order (deterministic).
#import "shared/dispatch.wgsl"

struct PoseParams {
    // Rows in this chunk (gradient); the record count (sum).
    rows: u32,
    // The record this chunk's first workgroup writes (gradient).
    record0: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: PoseParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: PoseParams;
@group(0) @binding(1) var<storage, read> means: array<f32>;
@group(0) @binding(2) var<storage, read> quats: array<f32>;
@group(0) @binding(3) var<storage, read> v_means: array<f32>;
@group(0) @binding(4) var<storage, read> v_quats: array<f32>;
@group(0) @binding(5) var<storage, read_write> records: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> gradient: array<vec4<f32>>;

const WG: u32 = 256u;
// vec4 rows per record: dL/db, then dL/de.
const ROWS: u32 = 2u;

var<workgroup> partial: array<vec4<f32>, 512>;

// Sums the two vec4 of every invocation into partial[0] and partial[WG] (a tree, fixed order).
fn reduce_rows(lid: u32, b: vec4<f32>, e: vec4<f32>) {
    partial[lid] = b;
    partial[WG + lid] = e;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if lid < stride {
            partial[lid] += partial[lid + stride];
            partial[WG + lid] += partial[WG + lid + stride];
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(256)
fn pose_gradient(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let group = workgroup_index(wid, nwg);
    let i = group * WG + lid;
    var b = vec4<f32>(0.0);
    var e = vec4<f32>(0.0);
    if i < params.rows {
        let g = vec3<f32>(v_means[3u * i], v_means[3u * i + 1u], v_means[3u * i + 2u]);
        let h = vec4<f32>(v_quats[4u * i], v_quats[4u * i + 1u], v_quats[4u * i + 2u], v_quats[4u * i + 3u]);
        // Culled Gaussians have zero gradients: their parameters (possibly not finite) are
        // not read into the sums.
        if any(g != vec3<f32>(0.0)) || any(h != vec4<f32>(0.0)) {
            let x = vec3<f32>(means[3u * i], means[3u * i + 1u], means[3u * i + 2u]);
            let q = vec4<f32>(quats[4u * i], quats[4u * i + 1u], quats[4u * i + 2u], quats[4u * i + 3u]);
            let qv = q.yzw;
            let hv = h.yzw;
            b = vec4<f32>(g, 0.0);
            e = vec4<f32>(cross(x, g) + 0.5 * (q.x * hv - h.x * qv + cross(qv, hv)), 0.0);
        }
    }
    reduce_rows(lid, b, e);
    // Workgroups past the chunk's rows (a 2D grid's padding) write nothing.
    if lid < ROWS && group * WG < params.rows {
        records[(params.record0 + group) * ROWS + lid] = partial[lid * WG];
    }
}

@compute @workgroup_size(256)
fn pose_sum(@builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    var b = vec4<f32>(0.0);
    var e = vec4<f32>(0.0);
    for (var r = lid; r < params.record0; r += WG) {
        b += records[r * ROWS];
        e += records[r * ROWS + 1u];
    }
    reduce_rows(lid, b, e);
    if lid < ROWS {
        gradient[lid] = partial[lid * WG];
    }
}

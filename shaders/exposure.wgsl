// Exposure compensation: a learned affine colour transform per training image, applied to the
// render before the loss (INRIA's train_test_exp). The transform of view v is three vec4 rows at
// transforms[3 v ..] (row-major 3x4): out_c = dot(row_c, (rgb, 1)). Images are [H, W, 4] f32
// pages of whole pixels, one vec4 each.
//
// On lavapipe every load at a varying address is a loop over the 8 lanes, so each invocation loads its view's three rows once
// and then handles PIXELS_PER_LANE pixels with one vec4 load (and store) each, and the backward's
// workgroup reduction sums three vec4 per invocation once per 2,048 pixels.
//
// exposure_apply:    out = T(image), alpha copied.
// exposure_backward: d_image = T^T d_out (alpha: d_out's), and per workgroup the 12 partial sums
//                    of dL/dT (d_out_c * rgb_k, and d_out_c for the offset) into records.
// exposure_sum:      one workgroup adds the records in a fixed order: dL/dT, deterministic.
// exposure_adam:     one Adam step of view v's 12 values (moments at moments[24 v ..]).
#import "shared/dispatch.wgsl"

struct ExposureParams {
    // Pixels in this page (apply, backward).
    pixels: u32,
    // The record this page's first workgroup writes (backward); the record count (sum).
    record0: u32,
    // The view whose transform is used or stepped.
    view: u32,
    // Adam's bias corrections, 1 - beta^t, and its other settings (adam).
    bias1: f32,
    bias2: f32,
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: ExposureParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: ExposureParams;
@group(0) @binding(1) var<storage, read> image: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> d_out: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> transforms: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> records: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> gradient: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> moments: array<vec4<f32>>;

const WG: u32 = 256u;
// Pixels each invocation handles in the per-pixel kernels; a workgroup covers WG * this.
const PIXELS_PER_LANE: u32 = 8u;
// vec4 rows per transform (and per record of dL/dT).
const ROWS: u32 = 3u;

var<workgroup> partial: array<vec4<f32>, 768>;

// The pixel the `j`-th step of invocation `lid` of workgroup `group` handles.
fn pixel_of(group: u32, j: u32, lid: u32) -> u32 {
    return (group * PIXELS_PER_LANE + j) * WG + lid;
}

// The three rows of the view's transform.
fn view_rows() -> array<vec4<f32>, 3> {
    let first = params.view * ROWS;
    return array<vec4<f32>, 3>(transforms[first], transforms[first + 1u], transforms[first + 2u]);
}

@compute @workgroup_size(256)
fn exposure_apply(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let group = workgroup_index(wid, nwg);
    let t = view_rows();
    for (var j = 0u; j < PIXELS_PER_LANE; j++) {
        let i = pixel_of(group, j, lid);
        if i < params.pixels {
            let p = image[i];
            let x = vec4<f32>(p.xyz, 1.0);
            out[i] = vec4<f32>(dot(t[0], x), dot(t[1], x), dot(t[2], x), p.w);
        }
    }
}

// Sums the three vec4 of every invocation into partial[0..3] (a tree, in a fixed order).
fn reduce_rows(lid: u32, rows: array<vec4<f32>, 3>) {
    for (var r = 0u; r < ROWS; r++) {
        partial[r * WG + lid] = rows[r];
    }
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if lid < stride {
            for (var r = 0u; r < ROWS; r++) {
                partial[r * WG + lid] += partial[r * WG + lid + stride];
            }
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(256)
fn exposure_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let group = workgroup_index(wid, nwg);
    let t = view_rows();
    var rows = array<vec4<f32>, 3>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var j = 0u; j < PIXELS_PER_LANE; j++) {
        let i = pixel_of(group, j, lid);
        if i < params.pixels {
            let g = d_out[i];
            let x = vec4<f32>(image[i].xyz, 1.0);
            // d_image = T^T g over the 3x3 part; the offsets take no gradient to the image.
            let d = t[0].xyz * g.x + t[1].xyz * g.y + t[2].xyz * g.z;
            out[i] = vec4<f32>(d, g.w);
            rows[0] += g.x * x;
            rows[1] += g.y * x;
            rows[2] += g.z * x;
        }
    }
    reduce_rows(lid, rows);
    // Workgroups past the page's pixels (a 2D grid's padding) write nothing.
    if lid < ROWS && pixel_of(group, 0u, 0u) < params.pixels {
        records[(params.record0 + group) * ROWS + lid] = partial[lid * WG];
    }
}

@compute @workgroup_size(256)
fn exposure_sum(@builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    var rows = array<vec4<f32>, 3>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var r = lid; r < params.record0; r += WG) {
        rows[0] += records[r * ROWS];
        rows[1] += records[r * ROWS + 1u];
        rows[2] += records[r * ROWS + 2u];
    }
    reduce_rows(lid, rows);
    if lid < ROWS {
        gradient[lid] = partial[lid * WG];
    }
}

@compute @workgroup_size(256)
fn exposure_adam(@builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    if lid >= ROWS {
        return;
    }
    let g = gradient[lid];
    // Moments: m in rows 0-2, v in rows 3-5 of the view's six.
    let at = params.view * 2u * ROWS + lid;
    let m = params.beta1 * moments[at] + (1.0 - params.beta1) * g;
    let v = params.beta2 * moments[at + ROWS] + (1.0 - params.beta2) * g * g;
    moments[at] = m;
    moments[at + ROWS] = v;
    let m_hat = m / params.bias1;
    let v_hat = v / params.bias2;
    transforms[params.view * ROWS + lid] -= params.lr * m_hat / (sqrt(v_hat) + vec4<f32>(params.eps));
}

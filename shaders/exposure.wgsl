// Exposure compensation: a learned affine colour transform per training image, applied to the
// render before the loss (INRIA's train_test_exp). The transform of view v is 12 floats at
// transforms[12 v ..], row-major 3x4: out_c = sum_k T[c][k] rgb_k + T[c][3]. Images are [H, W, 4]
// f32 pages (a page never splits a pixel: page sizes are multiples of 4 elements).
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
@group(0) @binding(1) var<storage, read> image: array<f32>;
@group(0) @binding(2) var<storage, read> d_out: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read_write> transforms: array<f32>;
@group(0) @binding(5) var<storage, read_write> records: array<f32>;
@group(0) @binding(6) var<storage, read_write> gradient: array<f32>;
@group(0) @binding(7) var<storage, read_write> moments: array<f32>;

const WG: u32 = 256u;
const TERMS: u32 = 12u;

var<workgroup> partial: array<f32, 3072>;

fn transform_at(c: u32, k: u32) -> f32 {
    return transforms[params.view * TERMS + c * 4u + k];
}

@compute @workgroup_size(256)
fn exposure_apply(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.pixels {
        return;
    }
    let rgb = vec3<f32>(image[4u * i], image[4u * i + 1u], image[4u * i + 2u]);
    for (var c = 0u; c < 3u; c++) {
        out[4u * i + c] = transform_at(c, 0u) * rgb.x + transform_at(c, 1u) * rgb.y + transform_at(c, 2u) * rgb.z + transform_at(c, 3u);
    }
    out[4u * i + 3u] = image[4u * i + 3u];
}

@compute @workgroup_size(256)
fn exposure_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let group = workgroup_index(wid, nwg);
    let i = group * WG + lid;
    var terms: array<f32, 12>;
    for (var t = 0u; t < TERMS; t++) {
        terms[t] = 0.0;
    }
    if i < params.pixels {
        let rgb = vec3<f32>(image[4u * i], image[4u * i + 1u], image[4u * i + 2u]);
        let g = vec3<f32>(d_out[4u * i], d_out[4u * i + 1u], d_out[4u * i + 2u]);
        for (var k = 0u; k < 3u; k++) {
            out[4u * i + k] = transform_at(0u, k) * g.x + transform_at(1u, k) * g.y + transform_at(2u, k) * g.z;
        }
        out[4u * i + 3u] = d_out[4u * i + 3u];
        for (var c = 0u; c < 3u; c++) {
            terms[c * 4u] = g[c] * rgb.x;
            terms[c * 4u + 1u] = g[c] * rgb.y;
            terms[c * 4u + 2u] = g[c] * rgb.z;
            terms[c * 4u + 3u] = g[c];
        }
    }
    for (var t = 0u; t < TERMS; t++) {
        partial[t * WG + lid] = terms[t];
    }
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if lid < stride {
            for (var t = 0u; t < TERMS; t++) {
                partial[t * WG + lid] += partial[t * WG + lid + stride];
            }
        }
        workgroupBarrier();
    }
    if lid < TERMS && group * WG < params.pixels {
        records[(params.record0 + group) * TERMS + lid] = partial[lid * WG];
    }
}

@compute @workgroup_size(256)
fn exposure_sum(@builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    var terms: array<f32, 12>;
    for (var t = 0u; t < TERMS; t++) {
        terms[t] = 0.0;
    }
    for (var r = lid; r < params.record0; r += WG) {
        for (var t = 0u; t < TERMS; t++) {
            terms[t] += records[r * TERMS + t];
        }
    }
    for (var t = 0u; t < TERMS; t++) {
        partial[t * WG + lid] = terms[t];
    }
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        if lid < stride {
            for (var t = 0u; t < TERMS; t++) {
                partial[t * WG + lid] += partial[t * WG + lid + stride];
            }
        }
        workgroupBarrier();
    }
    if lid < TERMS {
        gradient[lid] = partial[lid * WG];
    }
}

@compute @workgroup_size(256)
fn exposure_adam(@builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    if lid >= TERMS {
        return;
    }
    let g = gradient[lid];
    let at = params.view * 2u * TERMS + lid;
    let m = params.beta1 * moments[at] + (1.0 - params.beta1) * g;
    let v = params.beta2 * moments[at + TERMS] + (1.0 - params.beta2) * g * g;
    moments[at] = m;
    moments[at + TERMS] = v;
    let m_hat = m / params.bias1;
    let v_hat = v / params.bias2;
    transforms[params.view * TERMS + lid] -= params.lr * m_hat / (sqrt(v_hat) + params.eps);
}

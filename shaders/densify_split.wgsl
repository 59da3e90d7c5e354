// The two children of each split Gaussian: positions sampled from the parent's Gaussian
// (N(0, diag(scale²)) rotated by the parent's rotation, plus its mean) and child A's scales
// divided by 1.6 (`log_scales` is child B's copy of the parent's; B is scaled afterwards).
// Random numbers come from a counter-based hash, so the result depends only on the seed and index.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/random.wgsl"

struct SplitParams {
    count: u32,
    seed: u32,
    scale_divisor_log: f32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> p_uniform: SplitParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> p: SplitParams;
@group(0) @binding(1) var<storage, read> log_scales: array<f32>;
@group(0) @binding(2) var<storage, read> quats: array<f32>;
@group(0) @binding(3) var<storage, read_write> means_a: array<f32>;
@group(0) @binding(4) var<storage, read_write> means_b: array<f32>;
@group(0) @binding(5) var<storage, read_write> log_scales_a: array<f32>;

@compute @workgroup_size(256)
fn split(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        p = p_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= p.count {
        return;
    }
    let s = exp(vec3<f32>(log_scales[3u * i], log_scales[3u * i + 1u], log_scales[3u * i + 2u]));
    let r = quat_to_mat(vec4<f32>(quats[4u * i], quats[4u * i + 1u], quats[4u * i + 2u], quats[4u * i + 3u]));
    let base = pcg(p.seed ^ pcg(i));
    let za = vec3<f32>(normal(base), normal(base + 1u), normal(base + 2u));
    let zb = vec3<f32>(normal(base + 3u), normal(base + 4u), normal(base + 5u));
    let da = r * (za * s);
    let db = r * (zb * s);
    for (var k = 0u; k < 3u; k++) {
        means_a[3u * i + k] += da[k];
        means_b[3u * i + k] += db[k];
        log_scales_a[3u * i + k] = log_scales[3u * i + k] - p.scale_divisor_log;
    }
}

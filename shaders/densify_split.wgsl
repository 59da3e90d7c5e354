// The two children of each split Gaussian, which densification places on adjacent rows (2j and
// 2j + 1, both copies of the parent): positions sampled from the parent's Gaussian
// (N(0, diag(scale²)) rotated by the parent's rotation, plus its mean) and scales divided by 1.6.
// Random numbers come from a counter-based hash of the seed and the pair's global index, so the
// result depends only on them.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/random.wgsl"

struct SplitParams {
    // Pairs in this page.
    pairs: u32,
    // Global index of the page's first pair.
    first_pair: u32,
    seed: u32,
    scale_divisor_log: f32,
}

@group(0) @binding(0) var<uniform> p_uniform: SplitParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> p: SplitParams;
@group(0) @binding(1) var<storage, read_write> means: array<f32>;
@group(0) @binding(2) var<storage, read_write> log_scales: array<f32>;
@group(0) @binding(3) var<storage, read> quats: array<f32>;

@compute @workgroup_size(256)
fn split_pairs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        p = p_uniform;
    }
    let j = workgroup_index(wid, nwg) * 256u + lid;
    if j >= p.pairs {
        return;
    }
    let a = 2u * j;
    let b = a + 1u;
    let s = exp(vec3<f32>(log_scales[3u * a], log_scales[3u * a + 1u], log_scales[3u * a + 2u]));
    let r = quat_to_mat(vec4<f32>(quats[4u * a], quats[4u * a + 1u], quats[4u * a + 2u], quats[4u * a + 3u]));
    let base = pcg(p.seed ^ pcg(p.first_pair + j));
    let za = vec3<f32>(normal(base), normal(base + 1u), normal(base + 2u));
    let zb = vec3<f32>(normal(base + 3u), normal(base + 4u), normal(base + 5u));
    let da = r * (za * s);
    let db = r * (zb * s);
    for (var k = 0u; k < 3u; k++) {
        means[3u * a + k] += da[k];
        means[3u * b + k] += db[k];
        log_scales[3u * a + k] -= p.scale_divisor_log;
        log_scales[3u * b + k] -= p.scale_divisor_log;
    }
}

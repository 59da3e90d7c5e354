// MCMC, stage 4: 3DGS-MCMC's correction of every drawn source, so that the source and its copies
// together render like the source alone: with n = draws + 1 (the table capped at 51), opacity
// becomes 1 - (1 - o)^(1/n) and the scales are multiplied by o / D, where
// D = sum over i in 1..=n of sum over k < i of C(i-1, k) (-1)^k o'^(k+1) / sqrt(k+1).
// `reset` becomes 1 on rows whose optimizer moments restart: drawn sources, and in relocation the
// dead rows about to be overwritten.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/mcmc.wgsl"

// Binomial table size of 3DGS-MCMC: larger ratios use the last row.
const MAX_RATIO: u32 = 51u;
const ONE_MINUS_EPS: f32 = 0.99999988;

@group(0) @binding(0) var<uniform> p_uniform: McmcParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> p: McmcParams;
@group(0) @binding(1) var<storage, read> draws: array<u32>;
@group(0) @binding(2) var<storage, read_write> opacity_logits: array<f32>;
@group(0) @binding(3) var<storage, read_write> log_scales: array<f32>;
@group(0) @binding(4) var<storage, read_write> reset: array<u32>;

fn correction_denominator(o: f32, n: u32) -> f32 {
    var sum = 0.0;
    for (var i = 1u; i <= n; i++) {
        var binomial = 1.0;
        var power = o;
        for (var k = 0u; k < i; k++) {
            let sign = select(1.0, -1.0, (k & 1u) == 1u);
            sum += binomial * sign * power / sqrt(f32(k + 1u));
            binomial = binomial * f32(i - 1u - k) / f32(k + 1u);
            power *= o;
        }
    }
    return sum;
}

@compute @workgroup_size(256)
fn correct(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        p = p_uniform;
    }
    let i = mcmc_item(wid, nwg, lid);
    if i >= p.count {
        return;
    }
    let drawn = draws[i];
    let logit = opacity_logits[i];
    let overwritten = p.mode == MODE_RELOCATE && mcmc_is_dead(logit, p.min_opacity);
    reset[i] = select(0u, 1u, drawn > 0u || overwritten);
    if drawn == 0u {
        return;
    }
    let o = sigmoid(logit);
    let n = min(drawn + 1u, MAX_RATIO);
    let raw = 1.0 - pow(1.0 - o, 1.0 / f32(n));
    let log_factor = log(o / correction_denominator(raw, n));
    let new_o = clamp(raw, p.min_opacity, ONE_MINUS_EPS);
    opacity_logits[i] = log(new_o / (1.0 - new_o));
    for (var k = 0u; k < 3u; k++) {
        log_scales[3u * i + k] += log_factor;
    }
}

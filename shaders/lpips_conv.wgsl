// One LPIPS convolution layer with its bias and ReLU: planar input [in, H, W] to planar output
// [out, OH, OW], square kernel, stride and zero padding as in AlexNet.
//
// Weights are in HWIO order with the output channel fastest ([k][k][in][out/4] vec4), so four
// consecutive output channels are one vec4 load. A workgroup computes CONV_PIXELS output pixels
// (one per invocation) for one group of CONV_CHANNELS output channels; the weight addresses
// depend only on the workgroup and the loop counters, so every invocation reads the same weights
// (one broadcast load on a GPU), and the input value, used for 16 multiply-adds, is the only
// value that differs per invocation. With subgroups the lanes split the weight loads and share
// them by shuffles (see add_tap_shuffled).
#import "shared/dispatch.wgsl"
#import "shared/lpips.wgsl"

struct ConvParams {
    in_channels: u32,
    in_height: u32,
    in_width: u32,
    kernel_size: u32,
    out_channels: u32,
    out_height: u32,
    out_width: u32,
    stride: u32,
    padding: u32,
    pixel_blocks: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: ConvParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: ConvParams;
@group(0) @binding(1) var<storage, read> input: array<f32>;
@group(0) @binding(2) var<storage, read> weights: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> bias: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;

// The 16 output channels one invocation accumulates.
struct Accumulators {
    c0: vec4<f32>,
    c1: vec4<f32>,
    c2: vec4<f32>,
    c3: vec4<f32>,
}

// Adds x times the 16 weights at vec4 index `w` (portable: each invocation loads them).
fn add_tap_loaded(acc: ptr<function, Accumulators>, x: f32, w: u32) {
    (*acc).c0 += x * weights[w];
    (*acc).c1 += x * weights[w + 1u];
    (*acc).c2 += x * weights[w + 2u];
    (*acc).c3 += x * weights[w + 3u];
}

#if SUBGROUPS
fn weight_scalar(index: u32) -> f32 {
    return weights[index >> 2u][index & 3u];
}

// Adds x times the 16 weights, which the subgroup holds spread over its lanes: lane l loaded
// channel l % 16 (`mine_low`) and 8 + l % 8 (`mine_high`). With 16 or more lanes the low loads
// cover every channel; with 8, the high loads cover channels 8..15. On lavapipe every load in a
// loop is a loop over the lanes and a shuffle is one permute, so this reads 2 values per lane
// per tap instead of 16.
fn add_tap_shuffled(acc: ptr<function, Accumulators>, x: f32, mine_low: f32, mine_high: f32, wide: bool) {
    (*acc).c0 += x * vec4<f32>(subgroupShuffle(mine_low, 0u), subgroupShuffle(mine_low, 1u), subgroupShuffle(mine_low, 2u), subgroupShuffle(mine_low, 3u));
    (*acc).c1 += x * vec4<f32>(subgroupShuffle(mine_low, 4u), subgroupShuffle(mine_low, 5u), subgroupShuffle(mine_low, 6u), subgroupShuffle(mine_low, 7u));
    var high0: vec4<f32>;
    var high1: vec4<f32>;
    if wide {
        high0 = vec4<f32>(subgroupShuffle(mine_low, 8u), subgroupShuffle(mine_low, 9u), subgroupShuffle(mine_low, 10u), subgroupShuffle(mine_low, 11u));
        high1 = vec4<f32>(subgroupShuffle(mine_low, 12u), subgroupShuffle(mine_low, 13u), subgroupShuffle(mine_low, 14u), subgroupShuffle(mine_low, 15u));
    } else {
        high0 = vec4<f32>(subgroupShuffle(mine_high, 0u), subgroupShuffle(mine_high, 1u), subgroupShuffle(mine_high, 2u), subgroupShuffle(mine_high, 3u));
        high1 = vec4<f32>(subgroupShuffle(mine_high, 4u), subgroupShuffle(mine_high, 5u), subgroupShuffle(mine_high, 6u), subgroupShuffle(mine_high, 7u));
    }
    (*acc).c2 += x * high0;
    (*acc).c3 += x * high1;
}
#endif

@compute @workgroup_size(64)
fn conv(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) sg_size: u32,
#endif
) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let job = workgroup_index(wid, nwg);
    let group = job / params.pixel_blocks;
    if group * CONV_CHANNELS >= params.out_channels {
        return;
    }
    let out_pixels = params.out_height * params.out_width;
    let pixel = (job % params.pixel_blocks) * CONV_PIXELS + lid;
    let valid = pixel < out_pixels;
#if SUBGROUPS
    // Lanes share weights, so a lane past the end stays (computing the last pixel again) unless
    // its whole subgroup is past the end. Subgroups of fewer than 8 lanes load directly.
    if subgroupAll(!valid) {
        return;
    }
    let shuffled = sg_size >= 8u;
    let wide = sg_size >= 16u;
#else
    // Invocations past the end leave; on lavapipe a chunk of 8 such lanes then skips the loops.
    if !valid {
        return;
    }
#endif
    let p = min(pixel, out_pixels - 1u);
    let out_row = p / params.out_width;
    let out_col = p % params.out_width;
    let vec4s_per_tap = params.out_channels / 4u;
    let first_vec4 = group * (CONV_CHANNELS / 4u);
    var acc = Accumulators(bias[first_vec4], bias[first_vec4 + 1u], bias[first_vec4 + 2u], bias[first_vec4 + 3u]);
    let plane = params.in_height * params.in_width;
    let k = params.kernel_size;
    for (var ky = 0u; ky < k; ky++) {
        // Signed arithmetic: padding reaches before the first row.
        let row = i32(out_row * params.stride + ky) - i32(params.padding);
        let row_inside = row >= 0 && row < i32(params.in_height);
        let src_row = u32(clamp(row, 0, i32(params.in_height) - 1));
        for (var kx = 0u; kx < k; kx++) {
            let col = i32(out_col * params.stride + kx) - i32(params.padding);
            let inside = row_inside && col >= 0 && col < i32(params.in_width);
            let src = src_row * params.in_width + u32(clamp(col, 0, i32(params.in_width) - 1));
            var w = ((ky * k + kx) * params.in_channels) * vec4s_per_tap + first_vec4;
            for (var c = 0u; c < params.in_channels; c++) {
                let x = select(0.0, input[c * plane + src], inside);
#if SUBGROUPS
                if shuffled {
                    let first = 4u * w;
                    add_tap_shuffled(&acc, x, weight_scalar(first + lane % 16u), weight_scalar(first + 8u + lane % 8u), wide);
                } else {
                    add_tap_loaded(&acc, x, w);
                }
#else
                add_tap_loaded(&acc, x, w);
#endif
                w += vec4s_per_tap;
            }
        }
    }
    if valid {
        let first = group * CONV_CHANNELS;
        let zero = vec4<f32>(0.0);
        let r = array<vec4<f32>, 4>(max(acc.c0, zero), max(acc.c1, zero), max(acc.c2, zero), max(acc.c3, zero));
        for (var j = 0u; j < 4u; j++) {
            for (var e = 0u; e < 4u; e++) {
                output[(first + 4u * j + e) * out_pixels + p] = r[j][e];
            }
        }
    }
}

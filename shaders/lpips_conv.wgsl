// One LPIPS convolution layer with its bias and ReLU: planar input [in, H, W] to planar output
// [out, OH, OW], square kernel, stride and zero padding as in AlexNet.
//
// Weights are in HWIO order with the output channel fastest ([k][k][in][out/4] vec4), so four
// consecutive output channels are one vec4 load. A workgroup computes CONV_PIXELS output pixels
// for one group of CONV_CHANNELS output channels: each invocation owns PIXELS_PER_INVOCATION
// pixels, CONV_INVOCATIONS apart, and all 16 channels of each. Per input channel and tap it loads
// its pixels' inputs and the 16 weights once, and does 64 multiply-adds with them; the weight
// addresses depend only on the workgroup and the loop counters (one broadcast load on a GPU). On
// lavapipe every load in a loop is a loop over the lanes (../shared/notes/lavapipe-performance.md),
// so the work is counted in loads: 8 per 64 multiply-adds here, against 5 per 16 with one pixel
// per invocation. With subgroups the lanes split the weight loads and share them by shuffles.
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

// Subgroup path: share the weights by shuffles (the adapter's subgroups have at least 8 lanes);
// otherwise every lane loads them. Set per adapter when the pipeline is built (src/loss/lpips/
// layers.rs), so no adapter runs both (a CPU adapter executes both sides of a uniform `if`).
override SHUFFLED_WEIGHTS: bool = true;

// Invocations per workgroup.
const CONV_INVOCATIONS: u32 = 64u;
// Output pixels per invocation (CONV_PIXELS = CONV_INVOCATIONS * PIXELS_PER_INVOCATION).
const PIXELS_PER_INVOCATION: u32 = 4u;

// The 16 output channels of one pixel.
struct Accumulators {
    c0: vec4<f32>,
    c1: vec4<f32>,
    c2: vec4<f32>,
    c3: vec4<f32>,
}

// The 16 weights of one input channel and tap, in output-channel order.
struct Weights16 {
    w0: vec4<f32>,
    w1: vec4<f32>,
    w2: vec4<f32>,
    w3: vec4<f32>,
}

// The 16 weights at vec4 index `w`, loaded by this invocation.
fn loaded_weights(w: u32) -> Weights16 {
    return Weights16(weights[w], weights[w + 1u], weights[w + 2u], weights[w + 3u]);
}

fn accumulate(acc: ptr<function, Accumulators>, x: f32, w: Weights16) {
    (*acc).c0 += x * w.w0;
    (*acc).c1 += x * w.w1;
    (*acc).c2 += x * w.w2;
    (*acc).c3 += x * w.w3;
}

#if SUBGROUPS
fn weight_scalar(index: u32) -> f32 {
    return weights[index >> 2u][index & 3u];
}

// The 16 weights, held by lanes 0..7 of the subgroup: lane l loaded channel l % 8 (`low`) and
// 8 + l % 8 (`high`). A shuffle is one permute on lavapipe, so this reads 2 values per lane
// instead of 16.
fn shuffled_weights(low: f32, high: f32) -> Weights16 {
    return Weights16(
        vec4<f32>(subgroupShuffle(low, 0u), subgroupShuffle(low, 1u), subgroupShuffle(low, 2u), subgroupShuffle(low, 3u)),
        vec4<f32>(subgroupShuffle(low, 4u), subgroupShuffle(low, 5u), subgroupShuffle(low, 6u), subgroupShuffle(low, 7u)),
        vec4<f32>(subgroupShuffle(high, 0u), subgroupShuffle(high, 1u), subgroupShuffle(high, 2u), subgroupShuffle(high, 3u)),
        vec4<f32>(subgroupShuffle(high, 4u), subgroupShuffle(high, 5u), subgroupShuffle(high, 6u), subgroupShuffle(high, 7u)),
    );
}
#endif

// Writes one pixel's 16 channels after the ReLU.
fn write_pixel(acc: Accumulators, first_channel: u32, out_pixels: u32, p: u32) {
    let zero = vec4<f32>(0.0);
    let r = array<vec4<f32>, 4>(max(acc.c0, zero), max(acc.c1, zero), max(acc.c2, zero), max(acc.c3, zero));
    for (var j = 0u; j < 4u; j++) {
        for (var e = 0u; e < 4u; e++) {
            output[(first_channel + 4u * j + e) * out_pixels + p] = r[j][e];
        }
    }
}

@compute @workgroup_size(64)
fn conv(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
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
    // This invocation's pixels; the first is the smallest.
    let steps = vec4<u32>(0u, 1u, 2u, 3u) * CONV_INVOCATIONS;
    let pixels = vec4<u32>((job % params.pixel_blocks) * CONV_PIXELS + lid) + steps;
    let valid = pixels < vec4<u32>(out_pixels);
#if SUBGROUPS
    // Lanes share weights, so a lane past the end stays (computing the last pixel again) unless
    // its whole subgroup is past the end.
    if subgroupAll(!valid.x) {
        return;
    }
#else
    // Invocations past the end leave; on lavapipe a chunk of 8 such lanes then skips the loops.
    if !valid.x {
        return;
    }
#endif
    let p = min(pixels, vec4<u32>(out_pixels - 1u));
    // Signed arithmetic: padding reaches before the first row and column.
    let first_row = vec4<i32>((p / params.out_width) * params.stride) - i32(params.padding);
    let first_col = vec4<i32>((p % params.out_width) * params.stride) - i32(params.padding);
    let vec4s_per_tap = params.out_channels / 4u;
    let first_vec4 = group * (CONV_CHANNELS / 4u);
    let biases = Accumulators(bias[first_vec4], bias[first_vec4 + 1u], bias[first_vec4 + 2u], bias[first_vec4 + 3u]);
    var acc0 = biases;
    var acc1 = biases;
    var acc2 = biases;
    var acc3 = biases;
    let plane = params.in_height * params.in_width;
    let k = params.kernel_size;
    let last_row = vec4<i32>(i32(params.in_height) - 1);
    let last_col = vec4<i32>(i32(params.in_width) - 1);
    for (var ky = 0u; ky < k; ky++) {
        let row = first_row + i32(ky);
        let row_inside = row >= vec4<i32>(0) & row <= last_row;
        let src_row = vec4<u32>(clamp(row, vec4<i32>(0), last_row)) * params.in_width;
        for (var kx = 0u; kx < k; kx++) {
            let col = first_col + i32(kx);
            let inside = row_inside & col >= vec4<i32>(0) & col <= last_col;
            let src = src_row + vec4<u32>(clamp(col, vec4<i32>(0), last_col));
            var w = ((ky * k + kx) * params.in_channels) * vec4s_per_tap + first_vec4;
            var base = 0u;
            for (var c = 0u; c < params.in_channels; c++) {
                let x = select(vec4<f32>(0.0), vec4<f32>(input[base + src.x], input[base + src.y], input[base + src.z], input[base + src.w]), inside);
#if SUBGROUPS
                var weights16: Weights16;
                if SHUFFLED_WEIGHTS {
                    let first = 4u * w;
                    weights16 = shuffled_weights(weight_scalar(first + lane % 8u), weight_scalar(first + 8u + lane % 8u));
                } else {
                    weights16 = loaded_weights(w);
                }
#else
                let weights16 = loaded_weights(w);
#endif
                accumulate(&acc0, x.x, weights16);
                accumulate(&acc1, x.y, weights16);
                accumulate(&acc2, x.z, weights16);
                accumulate(&acc3, x.w, weights16);
                w += vec4s_per_tap;
                base += plane;
            }
        }
    }
    let first_channel = group * CONV_CHANNELS;
    if valid.x {
        write_pixel(acc0, first_channel, out_pixels, p.x);
    }
    if valid.y {
        write_pixel(acc1, first_channel, out_pixels, p.y);
    }
    if valid.z {
        write_pixel(acc2, first_channel, out_pixels, p.z);
    }
    if valid.w {
        write_pixel(acc3, first_channel, out_pixels, p.w);
    }
}

// One LPIPS convolution layer with its bias and ReLU: planar input [in, H, W] to planar output
// [out, OH, OW], square kernel, stride and zero padding as in AlexNet.
//
// Weights are in HWIO order with the output channel fastest ([k][k][in][out/4] vec4), so four
// consecutive output channels are one vec4 load. A workgroup computes CONV_PIXELS output pixels
// (one per invocation) for one group of CONV_CHANNELS output channels; the weight addresses
// depend only on the workgroup and the loop counters, so every invocation reads the same weights
// (one broadcast load on a GPU, one scalar load on lavapipe) and the only per-invocation load is
// the input value, used for 16 multiply-adds.
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

@compute @workgroup_size(64)
fn conv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
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
    // Invocations past the end compute the last pixel again and write nothing.
    let p = min(pixel, out_pixels - 1u);
    let out_row = p / params.out_width;
    let out_col = p % params.out_width;
    let vec4s_per_tap = params.out_channels / 4u;
    let first_vec4 = group * (CONV_CHANNELS / 4u);
    var acc0 = bias[first_vec4];
    var acc1 = bias[first_vec4 + 1u];
    var acc2 = bias[first_vec4 + 2u];
    var acc3 = bias[first_vec4 + 3u];
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
                acc0 += x * weights[w];
                acc1 += x * weights[w + 1u];
                acc2 += x * weights[w + 2u];
                acc3 += x * weights[w + 3u];
                w += vec4s_per_tap;
            }
        }
    }
    if valid {
        let first = group * CONV_CHANNELS;
        let zero = vec4<f32>(0.0);
        let r = array<vec4<f32>, 4>(max(acc0, zero), max(acc1, zero), max(acc2, zero), max(acc3, zero));
        for (var j = 0u; j < 4u; j++) {
            for (var e = 0u; e < 4u; e++) {
                output[(first + 4u * j + e) * out_pixels + p] = r[j][e];
            }
        }
    }
}

// One LPIPS layer's contribution per pixel: both feature vectors are normalised to unit length
// over the channels (f / (|f| + 1e-10)), their squared difference is weighted by the layer's
// linear head (a 1x1 convolution to one channel, no bias) and summed over the channels, then
// multiplied by `scale` (1 / the layer's pixel count, so that summing every layer's outputs gives
// the sum of the spatial means, which is LPIPS). Output `out_offset + pixel`.
#import "shared/dispatch.wgsl"
#import "shared/lpips.wgsl"

struct DistanceParams {
    channels: u32,
    pixels: u32,
    out_offset: u32,
    scale: f32,
}

@group(0) @binding(0) var<uniform> params_uniform: DistanceParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: DistanceParams;
@group(0) @binding(1) var<storage, read> features_a: array<f32>;
@group(0) @binding(2) var<storage, read> features_b: array<f32>;
@group(0) @binding(3) var<storage, read> head: array<f32>;
@group(0) @binding(4) var<storage, read_write> distances: array<f32>;

@compute @workgroup_size(256)
fn feature_distance(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let pixel = workgroup_index(wid, nwg) * 256u + lid;
    if pixel >= params.pixels {
        return;
    }
    var norm_a = 0.0;
    var norm_b = 0.0;
    for (var c = 0u; c < params.channels; c++) {
        let a = features_a[c * params.pixels + pixel];
        let b = features_b[c * params.pixels + pixel];
        norm_a += a * a;
        norm_b += b * b;
    }
    let inv_a = 1.0 / (sqrt(norm_a) + 1e-10);
    let inv_b = 1.0 / (sqrt(norm_b) + 1e-10);
    var sum = 0.0;
    for (var c = 0u; c < params.channels; c++) {
        let d = features_a[c * params.pixels + pixel] * inv_a - features_b[c * params.pixels + pixel] * inv_b;
        sum += head[c] * d * d;
    }
    distances[params.out_offset + pixel] = sum * params.scale;
}

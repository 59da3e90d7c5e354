// The viewer's present pass: turns one page of a rendered f32 RGBA image ([H, W, 4], row-major)
// into packed 8-bit RGBA pixels (R in the low byte) laid out with a padded row stride, ready for a
// buffer-to-texture copy. `present_difference` writes |render - reference| scaled by a gain
// instead, against a reference image packed the same way without padding; `present_normals`
// shows the rendered normals ([H, W, 3] camera-space sums, bound whole) in the normal-map
// convention (x right, y up, z towards the viewer), faded by the opacity over black.
#import "shared/dispatch.wgsl"

struct PresentParams {
    // Image width in pixels.
    width: u32,
    // Image height in pixels.
    height: u32,
    // Pixels per output row (the width rounded up to the copy alignment).
    row_stride: u32,
    // Index of this page's first pixel in the image.
    first_pixel: u32,
    // Pixels held in this page.
    page_pixels: u32,
    // Multiplier of the absolute difference (present_difference only).
    difference_gain: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: PresentParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: PresentParams;
@group(0) @binding(1) var<storage, read> image: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<storage, read> reference: array<u32>;
@group(0) @binding(4) var<storage, read> normals: array<f32>;

const WG: u32 = 256u;
// Opacity below which a pixel shows no normal (`MIN_NORMAL_ALPHA` in src/show/normals.rs).
const MIN_NORMAL_ALPHA: f32 = 0.05;

fn to_byte(v: f32) -> u32 {
    return u32(round(clamp(v, 0.0, 1.0) * 255.0));
}

fn pack(rgb: vec3<f32>) -> u32 {
    return to_byte(rgb.x) | (to_byte(rgb.y) << 8u) | (to_byte(rgb.z) << 16u) | (255u << 24u);
}

fn output_index(pixel: u32) -> u32 {
    let y = pixel / params.width;
    let x = pixel - y * params.width;
    return y * params.row_stride + x;
}

fn render_rgb(local: u32) -> vec3<f32> {
    return vec3<f32>(image[local * 4u], image[local * 4u + 1u], image[local * 4u + 2u]);
}

@compute @workgroup_size(256)
fn present(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let local = workgroup_index(wid, nwg) * WG + lid;
    if local >= params.page_pixels {
        return;
    }
    out[output_index(params.first_pixel + local)] = pack(render_rgb(local));
}

@compute @workgroup_size(256)
fn present_difference(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let local = workgroup_index(wid, nwg) * WG + lid;
    if local >= params.page_pixels {
        return;
    }
    let pixel = params.first_pixel + local;
    let packed = reference[pixel];
    let truth = vec3<f32>(f32(packed & 255u), f32((packed >> 8u) & 255u), f32((packed >> 16u) & 255u)) / 255.0;
    out[output_index(pixel)] = pack(abs(render_rgb(local) - truth) * params.difference_gain);
}

@compute @workgroup_size(256)
fn present_normals(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let local = workgroup_index(wid, nwg) * WG + lid;
    if local >= params.page_pixels {
        return;
    }
    let pixel = params.first_pixel + local;
    let alpha = image[local * 4u + 3u];
    let n = vec3<f32>(normals[3u * pixel], normals[3u * pixel + 1u], normals[3u * pixel + 2u]);
    let len = length(n);
    var rgb = vec3<f32>(0.0);
    if alpha >= MIN_NORMAL_ALPHA && len > 1e-6 * alpha {
        let unit = n / len;
        rgb = (0.5 + 0.5 * vec3<f32>(unit.x, -unit.y, -unit.z)) * alpha;
    }
    out[output_index(pixel)] = pack(rgb);
}

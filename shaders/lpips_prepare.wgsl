// LPIPS input layer: an image [H, W, 4] (f32 bits, or 8-bit RGBA packed one pixel per u32 with red
// in the low byte) becomes the network's input, a planar [3, H, W] map. Each colour value is
// optionally composited on a background with the image's alpha (ground truth on the training
// background), clamped to [0, 1] (renders may exceed 1, scores clamp them as PSNR does), mapped to
// [-1, 1] and normalised with the network's fixed shift and scale. With a mask, colours are
// multiplied by its alpha first (masked pixels black in both images, as the loss does).
#import "shared/dispatch.wgsl"
#import "shared/lpips.wgsl"

struct PrepareParams {
    width: u32,
    height: u32,
    _pad0: u32,
    _pad1: u32,
    background: vec4<f32>,
}

// The modes are pipeline-overridable constants, set per dispatch by src/loss/lpips/layers.rs (a
// CPU adapter runs both sides of an `if` on a uniform value, loads included; see "Shaders" in
// the README).
// The image is 8-bit RGBA packed one pixel per u32 (else f32 RGBA, 4 words per pixel).
override PACKED: bool = true;
// Composite the colour on `background` with the image's own alpha.
override COMPOSITE: bool = false;
// Multiply the colour by the alpha of `mask` (8-bit RGBA packed like the image): a loss mask's
// ignored pixels become black in both images a distance compares.
override MASK: bool = false;

// The fixed input normalisation of LPIPS (both the original and its ports): (x - shift) / scale.
const SHIFT = vec3<f32>(-0.030, -0.088, -0.188);
const SCALE = vec3<f32>(0.458, 0.448, 0.450);

@group(0) @binding(0) var<uniform> params_uniform: PrepareParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: PrepareParams;
@group(0) @binding(1) var<storage, read> image: array<u32>;
@group(0) @binding(2) var<storage, read_write> prepared: array<f32>;
// The mask (read only when MASK is set; otherwise the dispatch binds a placeholder).
@group(0) @binding(3) var<storage, read> mask: array<u32>;

@compute @workgroup_size(256)
fn prepare(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let pixel = workgroup_index(wid, nwg) * 256u + lid;
    let pixels = params.width * params.height;
    if pixel >= pixels {
        return;
    }
    var rgba: vec4<f32>;
    if PACKED {
        rgba = unpack4x8unorm(image[pixel]);
    } else {
        let base = pixel * 4u;
        rgba = bitcast<vec4<f32>>(vec4<u32>(image[base], image[base + 1u], image[base + 2u], image[base + 3u]));
    }
    var rgb = rgba.rgb;
    if COMPOSITE {
        rgb = rgba.a * rgb + (1.0 - rgba.a) * params.background.rgb;
    }
    if MASK {
        rgb = clamp(rgb, vec3<f32>(0.0), vec3<f32>(1.0)) * unpack4x8unorm(mask[pixel]).a;
    }
    let x = (2.0 * clamp(rgb, vec3<f32>(0.0), vec3<f32>(1.0)) - 1.0 - SHIFT) / SCALE;
    prepared[pixel] = x.r;
    prepared[pixels + pixel] = x.g;
    prepared[2u * pixels + pixel] = x.b;
}

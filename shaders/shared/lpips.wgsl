// Shapes shared by the LPIPS kernels (src/loss/lpips/): feature maps are planar f32 tensors
// [channels, height, width], one plane per channel, row-major within a plane.

// Output pixels one convolution workgroup computes (lpips_conv.wgsl: 64 invocations of 4).
const CONV_PIXELS: u32 = 256u;
// Output channels one invocation accumulates: four vec4 accumulators.
const CONV_CHANNELS: u32 = 16u;

// Index of (channel, row, column) in a planar map of height x width.
fn plane_index(channel: u32, row: u32, col: u32, height: u32, width: u32) -> u32 {
    return (channel * height + row) * width + col;
}

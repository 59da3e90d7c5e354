// The uniform of the rasterizer's backward kernels (generated into Rust; src/splat/raster.rs fills it): the render
// parameters and the window of tile-sorted intersections whose gradient rows one dispatch writes.
// The rows of one window fit one buffer binding; larger frames run the backward once per window,
// back to front (see rasterize_backward.wgsl).

struct IsectWindow {
    // First tile-sorted intersection of the window.
    begin: u32,
    // One past its last.
    end: u32,
    // Intersections in the frame (I).
    total: u32,
    // Unused (keeps the struct 16 bytes).
    pad: u32,
}

struct BackwardUniform {
    render: RenderUniform,
    window: IsectWindow,
}

// Floats per intersection row: the gradients of x, y, conic a, b, c, opacity, r, g, b and the
// sums of |d/dx| and |d/dy| (gsplat's "absgrad"), summed over the tile's pixels.
const ROW_GRADS: u32 = 11u;

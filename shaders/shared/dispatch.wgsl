// Dispatch helpers shared by every kernel. The Rust side (src/gpu/dispatch.rs) launches a 2D grid
// when the workgroup count exceeds the per-dimension limit; kernels recover the linear index here.

fn workgroup_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// Whether this dispatch shows its uniform parameters to the kernel: true in every dispatch that
// runs (none runs with zero workgroups along z), but not known before it runs. Every kernel
// copies its uniform parameters into a private variable under this condition, first thing in its
// entry point, and reads only the copy.
//
// Why: Mesa's lavapipe (22.x, the software Vulkan driver of Debian 12) "inlines" uniform values
// that decide branches. When folding them in shrinks a shader by half or more, it clones the
// shader, folds in the values bound for that dispatch and compiles a new one with LLVM, at every
// dispatch, and never frees it: the loss kernels cost the process 1.6 MB per training iteration
// (issue 12; README, "Memory"). Its analysis follows a branch condition back through arithmetic
// to a uniform load at a constant offset; the copy's value also depends on this condition, so
// the analysis finds nothing to inline. Elsewhere it costs one compare and select per value.
fn uniforms_visible(nwg: vec3<u32>) -> bool {
    return nwg.z != 0u;
}

var<workgroup> uniform_exchange: vec4<u32>;

// Four values of invocation 0, handed to every invocation of the workgroup as values that
// Chrome's WGSL compiler (Tint) knows to be uniform. Tint's uniformity analysis counts every read
// of a module-scope private variable as non-uniform, so a kernel with barriers may not branch on
// its private copy of the parameters (see `uniforms_visible`) directly: it passes the values its
// control flow depends on through this first (naga and the native drivers accept either). Call it
// from uniform control flow, with the same values in every invocation; it holds two barriers.
fn uniform_vec4u(lid: u32, values: vec4<u32>) -> vec4<u32> {
    if lid == 0u {
        uniform_exchange = values;
    }
    let exchanged = workgroupUniformLoad(&uniform_exchange);
    workgroupBarrier();
    return exchanged;
}

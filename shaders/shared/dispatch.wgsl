// Dispatch helpers shared by every kernel. The Rust side (src/gpu/dispatch.rs) launches a 2D grid
// when the workgroup count exceeds the per-dimension limit; kernels recover the linear index here.

fn workgroup_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

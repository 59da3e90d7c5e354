// The indirect dispatch arguments of the rasterizers' slices on CPU adapters (src/splat/raster.rs,
// shared/chunk.wgsl): slice k of `slice_len` intersections runs over the rasterizer's grid where
// some tile's run is longer than k * slice_len, and over no workgroups otherwise; slice 0 always
// runs (it takes every short run whole). So a frame pays for the slices its longest tile run
// needs, not for those that the number of splats could need. One workgroup: it finds the longest
// run of `ranges` ((start, end) per tile) and writes (x, y, 1) for each of `slices` slices.
#import "shared/dispatch.wgsl"

struct SliceParams {
    // Tiles in the frame (pairs in `ranges`).
    num_tiles: u32,
    // Intersections per slice.
    slice_len: u32,
    // Slices to write arguments for.
    slices: u32,
    _pad0: u32,
    // The rasterizer's grid of workgroups (x, y).
    grid: vec2<u32>,
    _pad1: vec2<u32>,
}

@group(0) @binding(0) var<uniform> params_uniform: SliceParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: SliceParams;
@group(0) @binding(1) var<storage, read> ranges: array<u32>;
@group(0) @binding(2) var<storage, read_write> args: array<u32>;

const SLICE_WG: u32 = 256u;

var<workgroup> longest: atomic<u32>;

@compute @workgroup_size(256)
fn slice_args(@builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    var run = 0u;
    for (var t = lid; t < params.num_tiles; t += SLICE_WG) {
        run = max(run, ranges[2u * t + 1u] - ranges[2u * t]);
    }
    atomicMax(&longest, run);
    workgroupBarrier();
    let most = atomicLoad(&longest);
    for (var k = lid; k < params.slices; k += SLICE_WG) {
        // k * slice_len stays below the run bound the slices were counted from (a u32).
        let runs = k == 0u || k * params.slice_len < most;
        args[3u * k] = select(0u, params.grid.x, runs);
        args[3u * k + 1u] = select(1u, params.grid.y, runs);
        args[3u * k + 2u] = 1u;
    }
}

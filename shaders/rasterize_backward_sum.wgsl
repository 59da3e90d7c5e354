// Second half of the rasterizer's backward: adds each visible splat's per-intersection gradient
// rows (written by rasterize_backward.wgsl for one window of tile-sorted intersections) into its
// row of `v_splats`, in emission order (the splat's tiles row-major; map_intersections.wgsl), so
// the sum's order never depends on scheduling. One invocation per splat of the chunk: `count`
// splats from `page_offset`, `aux` = V; `v_splats` is the chunk's page, cleared before the first
// window and added to by each window in turn (back to front).
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/isect_window.wgsl"

@group(0) @binding(0) var<uniform> b_uniform: BackwardUniform;
// The kernel reads these private copies (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> b: BackwardUniform;
var<private> u: RenderUniform;
var<private> window: IsectWindow;
@group(0) @binding(1) var<storage, read> isect_offsets: array<u32>;
@group(0) @binding(2) var<storage, read> isect_from_orig: array<u32>;
@group(0) @binding(3) var<storage, read> rows: array<f32>;
@group(0) @binding(4) var<storage, read_write> v_splats: array<f32>;

@compute @workgroup_size(256)
fn sum_isect_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        b = b_uniform;
    }
    u = b.render;
    window = b.window;
    let local = workgroup_index(wid, nwg) * 256u + lid;
    if local >= u.count {
        return;
    }
    let splat = u.page_offset + local;
    let first = isect_offsets[splat];
    let past = select(window.total, isect_offsets[splat + 1u], splat + 1u < u.aux);
    var sums: array<f32, ROW_GRADS>;
    var touched = false;
    for (var orig = first; orig < past; orig++) {
        let isect = isect_from_orig[orig];
        if isect >= window.begin && isect < window.end {
            touched = true;
            let base = (isect - window.begin) * ROW_GRADS;
            for (var k = 0u; k < ROW_GRADS; k++) {
                sums[k] += rows[base + k];
            }
        }
    }
    if touched {
        for (var k = 0u; k < ROW_GRADS; k++) {
            v_splats[local * V_STRIDE + k] += sums[k];
        }
    }
}

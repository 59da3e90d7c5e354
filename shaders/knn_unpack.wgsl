// k-NN initialisation, step 1: split one page of an [N, 3] point tensor into three coordinate
// arrays (x, y, z), each a single buffer of N floats. Rows may straddle pages, so every element is
// placed on its own: global element g is coordinate g % 3 of point g / 3.
#import "shared/dispatch.wgsl"

struct KnnUnpackParams {
    // Elements in the bound page.
    page_len: u32,
    // Global index of the page's first element.
    page_start: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: KnnUnpackParams;
@group(0) @binding(1) var<storage, read> points_page: array<f32>;
@group(0) @binding(2) var<storage, read_write> x_from_point: array<f32>;
@group(0) @binding(3) var<storage, read_write> y_from_point: array<f32>;
@group(0) @binding(4) var<storage, read_write> z_from_point: array<f32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn unpack_points(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.page_len {
        return;
    }
    let g = params.page_start + i;
    let point = g / 3u;
    let value = points_page[i];
    switch g % 3u {
        case 0u: {
            x_from_point[point] = value;
        }
        case 1u: {
            y_from_point[point] = value;
        }
        default: {
            z_from_point[point] = value;
        }
    }
}

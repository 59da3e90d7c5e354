// k-NN initialisation, step 1: split one page of an [N, 3] point tensor into three coordinate
// arrays (x, y, z), each a single buffer of N floats, and fold the page into the bounding box.
// Rows may straddle pages, so every element is placed on its own: global element g is coordinate
// g % 3 of point g / 3.
//
// The box is kept as order-preserving u32 images of the floats (see ordered_bits) in six atomics
// that start at zero and only grow with atomicMax: [0..3) hold the complement of the image of the
// minimum, [3..6) the image of the maximum.
#import "shared/dispatch.wgsl"

struct KnnUnpackParams {
    // Elements in the bound page.
    page_len: u32,
    // Global index of the page's first element.
    page_start: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: KnnUnpackParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: KnnUnpackParams;
@group(0) @binding(1) var<storage, read> points_page: array<f32>;
@group(0) @binding(2) var<storage, read_write> x_from_point: array<f32>;
@group(0) @binding(3) var<storage, read_write> y_from_point: array<f32>;
@group(0) @binding(4) var<storage, read_write> z_from_point: array<f32>;
@group(0) @binding(5) var<storage, read_write> bounds: array<atomic<u32>, 6>;

const WG: u32 = 256u;

var<workgroup> workgroup_bounds: array<atomic<u32>, 6>;

// A u32 whose unsigned order matches the order of the f32 with these bits.
fn ordered_bits(bits: u32) -> u32 {
    return select(bits | 0x80000000u, ~bits, (bits & 0x80000000u) != 0u);
}

@compute @workgroup_size(256)
fn unpack_points(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    if lid < 6u {
        atomicStore(&workgroup_bounds[lid], 0u);
    }
    workgroupBarrier();
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i < params.page_len {
        let g = params.page_start + i;
        let point = g / 3u;
        let axis = g % 3u;
        let value = points_page[i];
        switch axis {
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
        let image = ordered_bits(bitcast<u32>(value));
        atomicMax(&workgroup_bounds[axis], ~image);
        atomicMax(&workgroup_bounds[3u + axis], image);
    }
    workgroupBarrier();
    if lid < 6u {
        let folded = atomicLoad(&workgroup_bounds[lid]);
        if folded != 0u {
            atomicMax(&bounds[lid], folded);
        }
    }
}

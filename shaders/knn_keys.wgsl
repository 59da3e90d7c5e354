// k-NN initialisation, step 2: one 32-bit word of each point's sort key, for the points of one
// page of the current permutation (sorted position -> original point). The points are sorted by
// the whole 128-bit key, word 0 most significant, with one stable 32-bit sort per word:
//
// - Word 0, the *coarse* key: the Hilbert index of the point's cell in a uniform 1024³ grid over
//   the bounding box. Hilbert order keeps runs of consecutive points compact, so the boxes
//   built over them are small.
// - Words 1-3, the *fine* key: the 96-bit Hilbert index of the three coordinates mapped to u32s
//   that order like the floats (ordered_bits). It orders the points inside one coarse cell, with
//   every bit of every float: only identical points share a whole key, so a dense cluster never
//   collapses into one unordered run, however far an outlier stretches the bounding box.
#import "shared/dispatch.wgsl"

struct KnnKeyParams {
    // Positions in the bound permutation page.
    page_len: u32,
    // Which key word: 0 (coarse, most significant) to 3.
    word: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: KnnKeyParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: KnnKeyParams;
@group(0) @binding(1) var<storage, read> point_from_position: array<u32>;
@group(0) @binding(2) var<storage, read> x_from_point: array<f32>;
@group(0) @binding(3) var<storage, read> y_from_point: array<f32>;
@group(0) @binding(4) var<storage, read> z_from_point: array<f32>;
@group(0) @binding(5) var<storage, read> bounds: array<u32, 6>;
@group(0) @binding(6) var<storage, read_write> key_from_position: array<u32>;

const WG: u32 = 256u;
// Bits per axis of the coarse grid.
const COARSE_BITS: u32 = 10u;

// A u32 whose unsigned order matches the order of the f32 with these bits.
fn ordered_bits(bits: u32) -> u32 {
    return select(bits | 0x80000000u, ~bits, (bits & 0x80000000u) != 0u);
}

// The float whose ordered_bits are `image`.
fn from_ordered_bits(image: u32) -> f32 {
    return bitcast<f32>(select(~image, image & 0x7fffffffu, (image & 0x80000000u) != 0u));
}

// Skilling's transform: the Hilbert index of `coords` (`bits` bits each) in transposed form, i.e.
// bit k of the index's j-th bit group is bit k of component j.
fn hilbert_transposed(coords: vec3<u32>, bits: u32) -> vec3<u32> {
    var x = coords;
    // Undo the excess work of the inverse transform, from the top bit down.
    for (var q = 1u << (bits - 1u); q > 1u; q >>= 1u) {
        let p = q - 1u;
        x.x ^= select(0u, p, (x.x & q) != 0u);
        let ty = select((x.x ^ x.y) & p, 0u, (x.y & q) != 0u);
        x.x ^= select(ty, p, (x.y & q) != 0u);
        x.y ^= ty;
        let tz = select((x.x ^ x.z) & p, 0u, (x.z & q) != 0u);
        x.x ^= select(tz, p, (x.z & q) != 0u);
        x.z ^= tz;
    }
    // Gray encode.
    x.y ^= x.x;
    x.z ^= x.y;
    var t = 0u;
    for (var q = 1u << (bits - 1u); q > 1u; q >>= 1u) {
        t ^= select(0u, q - 1u, (x.z & q) != 0u);
    }
    return x ^ vec3<u32>(t);
}

// Bits [32 word, 32 word + 32) (0 = most significant) of the index whose bit b is bit
// `bits - 1 - b / 3` of transposed component b % 3.
fn interleaved_word(transposed: vec3<u32>, bits: u32, word: u32) -> u32 {
    var key = 0u;
    for (var j = 0u; j < 32u; j++) {
        let b = word * 32u + j;
        if b < 3u * bits {
            let bit = (transposed[b % 3u] >> (bits - 1u - b / 3u)) & 1u;
            key |= bit << (31u - j);
        }
    }
    return key;
}

fn coarse_cell(value: f32, axis: u32) -> u32 {
    let lo = from_ordered_bits(~bounds[axis]);
    let hi = from_ordered_bits(bounds[3u + axis]);
    // Halved so that the extent of any finite box is finite.
    let extent = 0.5 * hi - 0.5 * lo;
    let scale = select(0.0, f32(1u << COARSE_BITS) / extent, extent > 0.0);
    let cell = (0.5 * value - 0.5 * lo) * scale;
    return u32(clamp(cell, 0.0, f32((1u << COARSE_BITS) - 1u)));
}

@compute @workgroup_size(256)
fn sort_key_word(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.page_len {
        return;
    }
    let point = point_from_position[i];
    let p = vec3<f32>(x_from_point[point], y_from_point[point], z_from_point[point]);
    var key: u32;
    if params.word == 0u {
        let cell = vec3<u32>(coarse_cell(p.x, 0u), coarse_cell(p.y, 1u), coarse_cell(p.z, 2u));
        key = interleaved_word(hilbert_transposed(cell, COARSE_BITS), COARSE_BITS, 0u) >> (32u - 3u * COARSE_BITS);
    } else {
        let images = vec3<u32>(ordered_bits(bitcast<u32>(p.x)), ordered_bits(bitcast<u32>(p.y)), ordered_bits(bitcast<u32>(p.z)));
        key = interleaved_word(hilbert_transposed(images, 32u), 32u, params.word - 1u);
    }
    key_from_position[i] = key;
}

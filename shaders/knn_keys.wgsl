// k-NN initialisation, step 2: one 32-bit word of each point's 96-bit Morton key, for the points
// of one page of the current permutation (sorted position -> original point).
//
// The key interleaves the bits of the three coordinates after mapping each f32 to a u32 whose
// unsigned order is the float order (flip all bits of negatives, set the sign bit of positives).
// So the order is a Z-order curve over a monotonically warped space: every prefix of the key is an
// axis-aligned box, and with all 96 bits only identical points share a key. Key bit b (0 = most
// significant) is bit 31 - b / 3 of axis b % 3; word w holds key bits 32 w .. 32 w + 31.
#import "shared/dispatch.wgsl"

struct KnnKeyParams {
    // Positions in the bound permutation page.
    page_len: u32,
    // Which key word: 0 (most significant), 1 or 2.
    word: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: KnnKeyParams;
@group(0) @binding(1) var<storage, read> point_from_position: array<u32>;
@group(0) @binding(2) var<storage, read> x_from_point: array<u32>;
@group(0) @binding(3) var<storage, read> y_from_point: array<u32>;
@group(0) @binding(4) var<storage, read> z_from_point: array<u32>;
@group(0) @binding(5) var<storage, read_write> key_from_position: array<u32>;

const WG: u32 = 256u;

// A u32 whose unsigned order matches the order of the f32 with these bits.
fn ordered_bits(bits: u32) -> u32 {
    return select(bits | 0x80000000u, ~bits, (bits & 0x80000000u) != 0u);
}

@compute @workgroup_size(256)
fn morton_key_word(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.page_len {
        return;
    }
    let point = point_from_position[i];
    let coords = vec3<u32>(ordered_bits(x_from_point[point]), ordered_bits(y_from_point[point]), ordered_bits(z_from_point[point]));
    var key = 0u;
    for (var j = 0u; j < 32u; j++) {
        let b = params.word * 32u + j;
        let bit = (coords[b % 3u] >> (31u - b / 3u)) & 1u;
        key |= bit << (31u - j);
    }
    key_from_position[i] = key;
}

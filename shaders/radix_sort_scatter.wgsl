// Radix sort, step 3 of a pass: every block of one source page ranks its keys stably by digit and
// writes each key (and value) to  scanned_counts[digit][block] + rank among the block's keys of
// that digit. Dispatched once per (source page, destination page) pair; a dispatch writes only the
// positions inside its destination page.
//
// Ranking: invocation `slot` owns keys [slot * ITEMS, slot * ITEMS + ITEMS) of the block. It counts
// its digits into its own column of `ranks` (ranks[digit * WG + slot]); an exclusive scan of the
// whole table in bin-major order then gives, for each (digit, slot), the position in the
// block-sorted order of that slot's first key with that digit. Walking its keys in order, the
// invocation takes and bumps its column entry, so equal digits keep their input order.
#import "shared/dispatch.wgsl"
#import "radix_sort_common.wgsl"

// Shared with radix_sort_histogram.wgsl (same layout, mirrored separately).
struct RadixPassParams {
    // Keys in the source page.
    n: u32,
    // Global index of the source page's first block.
    block_base: u32,
    // Blocks over all pages (the row length of the digit table).
    num_blocks: u32,
    // Position of this pass's digit.
    shift: u32,
    // Mask of this pass's digit after shifting (fewer than 4 bits on a short last pass).
    digit_mask: u32,
    // Global index of the destination page's first element.
    dst_start: u32,
    // Elements in the destination page.
    dst_len: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: RadixPassParams;
@group(0) @binding(1) var<storage, read> keys_in: array<u32>;
// The digit table after the exclusive scan.
@group(0) @binding(2) var<storage, read> scanned_counts: array<u32>;
@group(0) @binding(3) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(4) var<storage, read> values_in: array<u32>;
@group(0) @binding(5) var<storage, read_write> values_out: array<u32>;

// ranks[digit * WG + slot], see the header.
var<workgroup> ranks: array<u32, 2048>;
// Global output position minus block-local position, per digit (wrapping u32 arithmetic).
var<workgroup> global_minus_local: array<u32, RADIX>;

// Leaves ranks[digit * WG + slot] = block-local output position of the slot's first key with that
// digit, and global_minus_local filled. `keys` holds the slot's keys; `count` how many are real.
fn rank_block(inv: Invocation, slot: u32, block: u32, keys: array<u32, ITEMS>, count: u32) {
    for (var d = 0u; d < RADIX; d += 1u) {
        ranks[d * WG + slot] = 0u;
    }
    for (var i = 0u; i < count; i += 1u) {
        let d = digit_of(keys[i], params.shift, params.digit_mask);
        ranks[d * WG + slot] += 1u;
    }
    workgroupBarrier();
    // Bin-major scan of the RADIX * WG table: each slot takes RADIX consecutive entries.
    let row = slot * RADIX;
    var sum = 0u;
    for (var j = 0u; j < RADIX; j += 1u) {
        sum += ranks[row + j];
    }
    var running = workgroup_exclusive_scan(inv, slot, sum).x;
    for (var j = 0u; j < RADIX; j += 1u) {
        let v = ranks[row + j];
        ranks[row + j] = running;
        running += v;
    }
    workgroupBarrier();
    if slot < RADIX {
        let global_first = scanned_counts[slot * params.num_blocks + params.block_base + block];
        global_minus_local[slot] = global_first - ranks[slot * WG];
    }
    workgroupBarrier();
}

// Loads the slot's keys; returns how many are inside the page.
fn load_keys(first: u32, keys: ptr<function, array<u32, ITEMS>>) -> u32 {
    var count = 0u;
    for (var i = 0u; i < ITEMS; i += 1u) {
        if first + i < params.n {
            (*keys)[i] = keys_in[first + i];
            count += 1u;
        }
    }
    return count;
}

// The destination of the slot's next key with digit `d` (relative to the destination page, may be
// out of it), bumping the slot's rank for that digit.
fn take_position(slot: u32, d: u32) -> u32 {
    let local = ranks[d * WG + slot];
    ranks[d * WG + slot] = local + 1u;
    return global_minus_local[d] + local - params.dst_start;
}

@compute @workgroup_size(128)
fn scatter_pairs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, inv: Invocation) {
    let block = workgroup_index(wid, nwg);
    if block >= (params.n + BLOCK - 1u) / BLOCK {
        return;
    }
    let slot = logical_slot(inv);
    let first = block * BLOCK + slot * ITEMS;
    var keys: array<u32, ITEMS>;
    let count = load_keys(first, &keys);
    rank_block(inv, slot, block, keys, count);
    for (var i = 0u; i < count; i += 1u) {
        let key = keys[i];
        let dst = take_position(slot, digit_of(key, params.shift, params.digit_mask));
        // Positions below dst_start wrap to huge values, so one comparison bounds both sides.
        if dst < params.dst_len {
            keys_out[dst] = key;
            values_out[dst] = values_in[first + i];
        }
    }
}

@compute @workgroup_size(128)
fn scatter_keys(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, inv: Invocation) {
    let block = workgroup_index(wid, nwg);
    if block >= (params.n + BLOCK - 1u) / BLOCK {
        return;
    }
    let slot = logical_slot(inv);
    let first = block * BLOCK + slot * ITEMS;
    var keys: array<u32, ITEMS>;
    let count = load_keys(first, &keys);
    rank_block(inv, slot, block, keys, count);
    for (var i = 0u; i < count; i += 1u) {
        let key = keys[i];
        let dst = take_position(slot, digit_of(key, params.shift, params.digit_mask));
        if dst < params.dst_len {
            keys_out[dst] = key;
        }
    }
}

// Radix sort, step 3 of a pass: every block of one source page ranks its keys stably by digit and
// writes each key (and value) to  scanned_counts[digit][block] + rank among the block's keys of
// that digit. Dispatched once per (source page, destination page) pair; a dispatch writes only the
// positions inside its destination page.
//
// Ranking: invocation `slot` owns keys [slot * ITEMS, slot * ITEMS + ITEMS) of the block and counts
// their digits in registers (radix_sort_digits.wgsl). A workgroup scan of those counts in slot
// order, plus the block's counts of smaller digits, gives for every digit the block-local position
// of the slot's first key with that digit. Walking its keys in order, the invocation takes and
// bumps that position, so equal digits keep their input order.
#import "shared/dispatch.wgsl"
#import "radix_sort_digits.wgsl"

@group(0) @binding(0) var<uniform> params_uniform: RadixPassParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: RadixPassParams;
@group(0) @binding(1) var<storage, read> keys_in: array<u32>;
// The digit table after the exclusive scan.
@group(0) @binding(2) var<storage, read> scanned_counts: array<u32>;
@group(0) @binding(3) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(4) var<storage, read> values_in: array<u32>;
@group(0) @binding(5) var<storage, read_write> values_out: array<u32>;

// Global output position minus block-local position, per digit (wrapping u32 arithmetic).
var<workgroup> global_minus_local: array<u32, RADIX>;

// The slot's keys, in input order, and how many of them are inside the page.
struct SlotKeys {
    keys: array<u32, ITEMS>,
    count: u32,
}

fn load_keys(first: u32) -> SlotKeys {
    var out: SlotKeys;
    out.count = 0u;
    for (var i = 0u; i < ITEMS; i += 1u) {
        out.keys[i] = 0u;
        if first + i < params.n {
            out.keys[i] = keys_in[first + i];
            out.count += 1u;
        }
    }
    return out;
}

// For every digit, the block-local output position of the slot's first key with that digit; also
// fills global_minus_local for the block.
fn rank_slot(inv: Invocation, slot: u32, block: u32, loaded: SlotKeys) -> DigitCounts {
    var counts = no_digits();
    for (var i = 0u; i < ITEMS; i += 1u) {
        if i < loaded.count {
            counts = add_digits(counts, digit_field(digit_of(loaded.keys[i], params.shift, params.digit_mask), 1u));
        }
    }
    let scan = scan_digit_counts(inv, slot, counts);
    let block_starts = counts_of_smaller_digits(scan.total);
    if slot < RADIX {
        let global_first = scanned_counts[slot * params.num_blocks + params.block_base + block];
        global_minus_local[slot] = global_first - digit_count(block_starts, slot);
    }
    workgroupBarrier();
    return add_digits(block_starts, scan.before);
}

@compute @workgroup_size(128)
fn scatter_pairs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, inv: Invocation) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let block = workgroup_index(wid, nwg);
    if block >= (uniform_vec4u(inv.lid, vec4<u32>(params.n)).x + BLOCK - 1u) / BLOCK {
        return;
    }
    let slot = logical_slot(inv);
    let first = block * BLOCK + slot * ITEMS;
    let loaded = load_keys(first);
    var next = rank_slot(inv, slot, block, loaded);
    for (var i = 0u; i < ITEMS; i += 1u) {
        if i < loaded.count {
            let key = loaded.keys[i];
            let d = digit_of(key, params.shift, params.digit_mask);
            // Positions below dst_start wrap to huge values, so one comparison bounds both sides.
            let dst = global_minus_local[d] + digit_count(next, d) - params.dst_start;
            next = add_digits(next, digit_field(d, 1u));
            if dst < params.dst_len {
                keys_out[dst] = key;
                values_out[dst] = values_in[first + i];
            }
        }
    }
}

@compute @workgroup_size(128)
fn scatter_keys(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, inv: Invocation) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let block = workgroup_index(wid, nwg);
    if block >= (uniform_vec4u(inv.lid, vec4<u32>(params.n)).x + BLOCK - 1u) / BLOCK {
        return;
    }
    let slot = logical_slot(inv);
    let first = block * BLOCK + slot * ITEMS;
    let loaded = load_keys(first);
    var next = rank_slot(inv, slot, block, loaded);
    for (var i = 0u; i < ITEMS; i += 1u) {
        if i < loaded.count {
            let key = loaded.keys[i];
            let d = digit_of(key, params.shift, params.digit_mask);
            let dst = global_minus_local[d] + digit_count(next, d) - params.dst_start;
            next = add_digits(next, digit_field(d, 1u));
            if dst < params.dst_len {
                keys_out[dst] = key;
            }
        }
    }
}

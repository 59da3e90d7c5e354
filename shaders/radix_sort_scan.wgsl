// Radix sort, step 2 of a pass: exclusive scan of the digit table, turning each (bin, block) count
// into that block's first output position for the bin. Multi-level (driven by
// src/ops/radix_sort.rs): `reduce_blocks` sums each scan block of BLOCK entries into the next
// level, that level is scanned the same way (down to one block), then `scan_blocks` scans each
// block in place and adds its block's scanned sum.
#import "shared/dispatch.wgsl"
#import "radix_sort_common.wgsl"

struct RadixScanParams {
    // Entries at this level.
    n: u32,
    // 1: add block_sums[block] to every entry of the block (scan_blocks); 0: start from zero.
    add_block_sums: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: RadixScanParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: RadixScanParams;
// The entries of this level (read by reduce_blocks, scanned in place by scan_blocks).
@group(0) @binding(1) var<storage, read_write> entries: array<u32>;
// One entry per scan block: written by reduce_blocks, read (already scanned) by scan_blocks.
@group(0) @binding(2) var<storage, read_write> block_sums: array<u32>;

// One value per slot (portable path), or one total per subgroup (subgroup path).
var<workgroup> scan_slots: array<u32, WG>;
// Raked partial sums; the last entry is the workgroup total.
var<workgroup> scan_partials: array<u32, 17>;

// Exclusive scan in slot order without subgroups: write, rake RAKE_SPAN values per lane, scan the
// lane totals serially, add back.
fn scan_by_raking(slot: u32, value: u32) -> vec2<u32> {
    scan_slots[slot] = value;
    workgroupBarrier();
    if slot < RAKE_LANES {
        var sum = 0u;
        for (var i = 0u; i < RAKE_SPAN; i += 1u) {
            let j = slot * RAKE_SPAN + i;
            let v = scan_slots[j];
            scan_slots[j] = sum;
            sum += v;
        }
        scan_partials[slot] = sum;
    }
    workgroupBarrier();
    if slot == 0u {
        var sum = 0u;
        for (var i = 0u; i < RAKE_LANES; i += 1u) {
            let v = scan_partials[i];
            scan_partials[i] = sum;
            sum += v;
        }
        scan_partials[RAKE_LANES] = sum;
    }
    workgroupBarrier();
    let result = vec2<u32>(scan_slots[slot] + scan_partials[slot / RAKE_SPAN], scan_partials[RAKE_LANES]);
    workgroupBarrier();
    return result;
}

#if SUBGROUPS
// Exclusive scan in slot order with full subgroups: scan inside each subgroup (the last lane's
// inclusive sum is the subgroup total), scan the subgroup totals serially (at most WG / subgroup
// size of them), add back.
fn scan_by_subgroups(inv: Invocation, value: u32) -> vec2<u32> {
    let inside = subgroupExclusiveAdd(value);
    if inv.sg_lane == inv.sg_size - 1u {
        scan_slots[inv.sg_id] = inside + value;
    }
    workgroupBarrier();
    if inv.lid == 0u {
        var sum = 0u;
        for (var s = 0u; s < inv.sg_count; s += 1u) {
            let v = scan_slots[s];
            scan_slots[s] = sum;
            sum += v;
        }
        scan_partials[0] = sum;
    }
    workgroupBarrier();
    let result = vec2<u32>(inside + scan_slots[inv.sg_id], scan_partials[0]);
    workgroupBarrier();
    return result;
}
#endif

// Exclusive prefix of `value` over the slots before `slot`, and the workgroup total. Every
// invocation of the workgroup must call it (it has barriers); it ends with a barrier, so the scan
// storage may be reused right after.
fn workgroup_exclusive_scan(inv: Invocation, slot: u32, value: u32) -> vec2<u32> {
#if SUBGROUPS
    if subgroups_are_full(inv) {
        return scan_by_subgroups(inv, value);
    }
#endif
    return scan_by_raking(slot, value);
}


@compute @workgroup_size(128)
fn reduce_blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, inv: Invocation) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let block = workgroup_index(wid, nwg);
    if block >= (uniform_vec4u(inv.lid, vec4<u32>(params.n)).x + BLOCK - 1u) / BLOCK {
        return;
    }
    let first = block * BLOCK;
    var sum = 0u;
    for (var i = 0u; i < ITEMS; i += 1u) {
        let index = first + i * WG + inv.lid;
        if index < params.n {
            sum += entries[index];
        }
    }
    // A sum needs no order, but the scan is the shared workgroup reduction.
    let total = workgroup_exclusive_scan(inv, inv.lid, sum).y;
    if inv.lid == 0u {
        block_sums[block] = total;
    }
}

@compute @workgroup_size(128)
fn scan_blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, inv: Invocation) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let block = workgroup_index(wid, nwg);
    if block >= (uniform_vec4u(inv.lid, vec4<u32>(params.n)).x + BLOCK - 1u) / BLOCK {
        return;
    }
    let slot = logical_slot(inv);
    let first = block * BLOCK + slot * ITEMS;
    var values: array<u32, ITEMS>;
    var sum = 0u;
    for (var i = 0u; i < ITEMS; i += 1u) {
        let index = first + i;
        var v = 0u;
        if index < params.n {
            v = entries[index];
        }
        values[i] = v;
        sum += v;
    }
    var running = workgroup_exclusive_scan(inv, slot, sum).x;
    if params.add_block_sums != 0u {
        running += block_sums[block];
    }
    for (var i = 0u; i < ITEMS; i += 1u) {
        let index = first + i;
        if index < params.n {
            entries[index] = running;
        }
        running += values[i];
    }
}

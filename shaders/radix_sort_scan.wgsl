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

@group(0) @binding(0) var<uniform> params: RadixScanParams;
// The entries of this level (read by reduce_blocks, scanned in place by scan_blocks).
@group(0) @binding(1) var<storage, read_write> entries: array<u32>;
// One entry per scan block: written by reduce_blocks, read (already scanned) by scan_blocks.
@group(0) @binding(2) var<storage, read_write> block_sums: array<u32>;

@compute @workgroup_size(128)
fn reduce_blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, inv: Invocation) {
    let block = workgroup_index(wid, nwg);
    if block >= (params.n + BLOCK - 1u) / BLOCK {
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
    let block = workgroup_index(wid, nwg);
    if block >= (params.n + BLOCK - 1u) / BLOCK {
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

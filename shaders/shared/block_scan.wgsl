// Block-level prefix sums of u32 (wrapping), shared by the scan kernels.
//
// A workgroup of SCAN_WG invocations scans one block of SCAN_BLOCK elements: every invocation holds
// SCAN_ITEMS consecutive elements in registers, sums them, and the invocations' sums are scanned
// across the workgroup by `workgroup_exclusive_scan`.
//
// Invocations are ordered by `scan_rank`: the local index on the portable path, and
// `subgroup_id * subgroup_size + subgroup_invocation_id` on the subgroup path, so the order of the
// subgroup scans and the order of the elements always agree.
//
// Portable path: Hillis-Steele scan in workgroup memory. Subgroup path: a subgroup scan of the
// invocation sums, then up to three more levels of subgroup scans over the per-subgroup totals
// (stored in workgroup memory). Four levels cover 256 invocations for every subgroup size from 4
// to 128; every subgroup operation and barrier is reached by the whole workgroup.

const SCAN_WG: u32 = 256u;
// Elements each invocation scans in registers. src/ops/scan.rs reads this constant through naga.
const SCAN_ITEMS: u32 = 8u;
const SCAN_BLOCK: u32 = SCAN_WG * SCAN_ITEMS;

// The builtins every scan entry point takes.
struct ScanInvocation {
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(num_subgroups) num_sg: u32,
#endif
}

// Position of the invocation in scan order, in [0, SCAN_WG).
fn scan_rank(inv: ScanInvocation) -> u32 {
#if SUBGROUPS
    return inv.sg_id * inv.sg_size + inv.lane;
#else
    return inv.lid;
#endif
}

#if SUBGROUPS
// Per-level totals: level 1 holds one value per subgroup (at most SCAN_WG / 4), level 2 one per
// group of subgroups, level 3 one per group of those.
var<workgroup> scan_level1: array<u32, 64>;
var<workgroup> scan_level2: array<u32, 16>;
var<workgroup> scan_level3: array<u32, 4>;
var<workgroup> scan_total: u32;

// Exclusive prefix of `x` over lower ranks, and the workgroup total.
fn workgroup_exclusive_scan(inv: ScanInvocation, x: u32) -> vec2<u32> {
    let rank = scan_rank(inv);
    let last_lane = inv.lane == inv.sg_size - 1u;
    let prefix0 = subgroupExclusiveAdd(x);
    if last_lane {
        scan_level1[inv.sg_id] = prefix0 + x;
    }
    workgroupBarrier();

    let count1 = inv.num_sg;
    let value1 = select(0u, scan_level1[min(rank, 63u)], rank < count1);
    let prefix1 = subgroupExclusiveAdd(value1);
    if rank < count1 {
        scan_level1[rank] = prefix1;
    }
    if last_lane && inv.sg_id < 16u {
        scan_level2[inv.sg_id] = prefix1 + value1;
    }
    workgroupBarrier();

    let count2 = (count1 + inv.sg_size - 1u) / inv.sg_size;
    let value2 = select(0u, scan_level2[min(rank, 15u)], rank < count2);
    let prefix2 = subgroupExclusiveAdd(value2);
    if rank < count2 {
        scan_level2[rank] = prefix2;
    }
    if last_lane && inv.sg_id < 4u {
        scan_level3[inv.sg_id] = prefix2 + value2;
    }
    workgroupBarrier();

    let count3 = (count2 + inv.sg_size - 1u) / inv.sg_size;
    let value3 = select(0u, scan_level3[min(rank, 3u)], rank < count3);
    let prefix3 = subgroupExclusiveAdd(value3);
    if rank < count3 {
        scan_level3[rank] = prefix3;
    }
    if last_lane && inv.sg_id == 0u {
        scan_total = prefix3 + value3;
    }
    workgroupBarrier();

    let group = inv.sg_id / inv.sg_size;
    let prefix = prefix0 + scan_level1[inv.sg_id] + scan_level2[group] + scan_level3[group / inv.sg_size];
    let total = scan_total;
    // Callers may scan again; nobody may overwrite the levels before everyone has read them.
    workgroupBarrier();
    return vec2<u32>(prefix, total);
}
#else
// Two buffers for the Hillis-Steele steps (read one, write the other).
var<workgroup> scan_buffers: array<array<u32, 256>, 2>;

// Exclusive prefix of `x` over lower ranks, and the workgroup total.
fn workgroup_exclusive_scan(inv: ScanInvocation, x: u32) -> vec2<u32> {
    let rank = inv.lid;
    scan_buffers[0][rank] = x;
    workgroupBarrier();
    var source = 0u;
    for (var offset = 1u; offset < SCAN_WG; offset = offset << 1u) {
        let own = scan_buffers[source][rank];
        let before = select(0u, scan_buffers[source][rank - min(offset, rank)], rank >= offset);
        scan_buffers[1u - source][rank] = own + before;
        workgroupBarrier();
        source = 1u - source;
    }
    let inclusive = scan_buffers[source][rank];
    let total = scan_buffers[source][SCAN_WG - 1u];
    workgroupBarrier();
    return vec2<u32>(inclusive - x, total);
}
#endif

// Scans the SCAN_ITEMS values an invocation holds: returns the exclusive (or inclusive) prefix of
// each one over the whole block, plus `base`. Also returns the block total (without `base`) in
// `block_total` of the result.
struct ScannedItems {
    values: array<u32, SCAN_ITEMS>,
    block_total: u32,
}

fn scan_items(inv: ScanInvocation, items: array<u32, SCAN_ITEMS>, base: u32, inclusive: bool) -> ScannedItems {
    var sum = 0u;
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        sum += items[k];
    }
    let scanned = workgroup_exclusive_scan(inv, sum);
    var out: ScannedItems;
    var running = base + scanned.x;
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        let next = running + items[k];
        out.values[k] = select(running, next, inclusive);
        running = next;
    }
    out.block_total = scanned.y;
    return out;
}

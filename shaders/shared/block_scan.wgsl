// Block-level prefix sums of u32 (wrapping), shared by the scan kernels.
//
// A workgroup of SCAN_WG invocations scans one block of SCAN_BLOCK elements: every invocation owns
// SCAN_ITEMS consecutive elements, sums them, and the invocations' sums are scanned across the
// workgroup by `workgroup_exclusive_scan`.
//
// Invocations are ordered by `scan_rank`: the local index on the portable path, and
// `subgroup_id * subgroup_size + subgroup_invocation_id` on the subgroup path, so the order of the
// subgroup scans and the order of the elements always agree.
//
// Barriers dominate on CPU implementations (lavapipe), so the workgroup scan uses few: one on the
// subgroup path (correct for any subgroup size from 4 to 128), two on the portable path. Every
// subgroup operation and barrier is reached by the whole workgroup. Loops have constant trip
// counts of at most 32, which CPU drivers unroll.

const SCAN_WG: u32 = 256u;
// Elements each invocation scans. src/ops/scan.rs reads this constant through naga.
const SCAN_ITEMS: u32 = 16u;
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
// Total of every subgroup (at most SCAN_WG / 4 = 64 subgroups).
var<workgroup> scan_subgroup_totals: array<u32, 64>;

// Exclusive prefix of `x` over lower ranks (rank SCAN_WG - 1 adds its own `x` to get the workgroup
// total). One barrier: every subgroup publishes its total, then each invocation adds the totals of
// the subgroups before its own to its exclusive scan within the subgroup. Correct for any subgroup
// size from 4 to 128. Call at most once per kernel invocation.
fn workgroup_exclusive_scan(inv: ScanInvocation, x: u32) -> u32 {
    let subgroup_total = subgroupAdd(x);
    if inv.lane == 0u {
        scan_subgroup_totals[inv.sg_id] = subgroup_total;
    }
    workgroupBarrier();
    // 32 iterations of two entries: loops with a constant trip count of at most 32 get unrolled
    // by CPU drivers, which run other loops after a barrier very slowly.
    var before = 0u;
    for (var j = 0u; j < 32u; j++) {
        before += select(0u, scan_subgroup_totals[j], j < inv.sg_id);
        before += select(0u, scan_subgroup_totals[j + 32u], j + 32u < inv.sg_id);
    }
    return before + subgroupExclusiveAdd(x);
}
#else
// Chunks of SCAN_RAKE values scanned serially by SCAN_WG / SCAN_RAKE invocations.
const SCAN_RAKE: u32 = 16u;
var<workgroup> scan_values: array<u32, SCAN_WG>;
var<workgroup> scan_chunk_totals: array<u32, 16>;

// Exclusive prefix of `x` over lower ranks (rank SCAN_WG - 1 adds its own `x` to get the workgroup
// total). Two barriers: the first SCAN_WG / SCAN_RAKE invocations each scan one chunk of SCAN_RAKE
// values serially, then every invocation adds the totals of the chunks before its own. Call at
// most once per kernel invocation.
fn workgroup_exclusive_scan(inv: ScanInvocation, x: u32) -> u32 {
    let rank = inv.lid;
    scan_values[rank] = x;
    workgroupBarrier();
    if rank < SCAN_WG / SCAN_RAKE {
        var running = 0u;
        for (var j = 0u; j < SCAN_RAKE; j++) {
            let v = scan_values[rank * SCAN_RAKE + j];
            scan_values[rank * SCAN_RAKE + j] = running;
            running += v;
        }
        scan_chunk_totals[rank] = running;
    }
    workgroupBarrier();
    var before = scan_values[rank];
    for (var j = 0u; j < SCAN_WG / SCAN_RAKE; j++) {
        before += select(0u, scan_chunk_totals[j], j < rank / SCAN_RAKE);
    }
    return before;
}
#endif

// Scans block `block` of the first `n` elements: the exclusive (or inclusive) prefix of every
// element within the block, plus `base`. Returns the block total (without `base`) on the
// invocation of rank SCAN_WG - 1 (other invocations get partial sums). The importing file
// provides `fn scan_load(i: u32) -> u32` (0 for i >= n) and `fn scan_store(i: u32, value: u32)`.
// Every invocation loads its SCAN_ITEMS elements into registers before any store, and stores only
// its own elements, so in-place scans are safe.
fn scan_block(inv: ScanInvocation, block: u32, n: u32, base: u32, inclusive: bool) -> u32 {
    let first = block * SCAN_BLOCK + scan_rank(inv) * SCAN_ITEMS;
    var items: array<u32, SCAN_ITEMS>;
    var sum = 0u;
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        items[k] = scan_load(first + k);
        sum += items[k];
    }
    let before = workgroup_exclusive_scan(inv, sum);
    var running = base + before;
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        let next = running + items[k];
        if first + k < n {
            scan_store(first + k, select(running, next, inclusive));
        }
        running = next;
    }
    return before + sum;
}

// The sum of block `block`, valid on the invocation of rank SCAN_WG - 1.
fn reduce_block(inv: ScanInvocation, block: u32) -> u32 {
    let first = block * SCAN_BLOCK + scan_rank(inv) * SCAN_ITEMS;
    var sum = 0u;
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        sum += scan_load(first + k);
    }
    return workgroup_exclusive_scan(inv, sum) + sum;
}

// Shared by the radix sort kernels (src/ops/radix_sort.rs): block geometry, the invocation
// builtins, and an exclusive scan of one value per invocation across the workgroup.
//
// Kernels that care about order (the scan of the digit table, the stable ranking of a block) give
// each invocation a *logical slot* from `logical_slot` and assign work by slot, never by
// `local_invocation_index`. On the portable path the slot is the local index. On the subgroup path,
// when every subgroup is full, the slot is `subgroup_id * subgroup_size + subgroup_invocation_id`,
// which is exactly the order subgroupExclusiveAdd scans in, whatever the hardware's mapping from
// local index to lane is and whatever the subgroup size. If subgroups are not full, both functions
// fall back to the portable code, so results never depend on the subgroup size.

// Invocations per workgroup in every radix sort kernel.
const WG: u32 = 128u;
// Keys per invocation in the histogram and scatter kernels, and entries per invocation in the
// digit-table scan.
const ITEMS: u32 = 8u;
// Keys per sort block (one workgroup), and entries per scan block.
const BLOCK: u32 = 1024u;
// Bins of one 4-bit digit.
const RADIX: u32 = 16u;
// The portable scan rakes WG values with RAKE_LANES invocations, RAKE_SPAN values each.
const RAKE_LANES: u32 = 16u;
const RAKE_SPAN: u32 = 8u;

struct Invocation {
    @builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
    @builtin(subgroup_id) sg_id: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(num_subgroups) sg_count: u32,
#endif
}

// One value per slot (portable path), or one total per subgroup (subgroup path).
var<workgroup> scan_slots: array<u32, WG>;
// Raked partial sums; the last entry is the workgroup total.
var<workgroup> scan_partials: array<u32, 17>;

#if SUBGROUPS
fn subgroups_are_full(inv: Invocation) -> bool {
    return inv.sg_count * inv.sg_size == WG;
}
#endif

// The slot that decides which data this invocation works on (see the header).
fn logical_slot(inv: Invocation) -> u32 {
#if SUBGROUPS
    if subgroups_are_full(inv) {
        return inv.sg_id * inv.sg_size + inv.sg_lane;
    }
#endif
    return inv.lid;
}

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
// Exclusive scan in slot order with full subgroups: scan inside each subgroup, then each
// invocation adds the totals of the subgroups before its own (at most WG / subgroup size reads).
fn scan_by_subgroups(inv: Invocation, value: u32) -> vec2<u32> {
    let inside = subgroupExclusiveAdd(value);
    let subgroup_total = subgroupAdd(value);
    if inv.sg_lane == 0u {
        scan_slots[inv.sg_id] = subgroup_total;
    }
    workgroupBarrier();
    var before = 0u;
    var total = 0u;
    for (var s = 0u; s < inv.sg_count; s += 1u) {
        let t = scan_slots[s];
        before += select(0u, t, s < inv.sg_id);
        total += t;
    }
    workgroupBarrier();
    return vec2<u32>(before + inside, total);
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

// The digit of `key` for the pass described by (shift, mask).
fn digit_of(key: u32, shift: u32, mask: u32) -> u32 {
    return (key >> shift) & mask;
}

// Shared by the radix sort kernels (src/ops/radix_sort.rs): block geometry, the invocation
// builtins and the logical slot of an invocation.
//
// Kernels that care about order (the scan of the digit table, the stable ranking of a block) give
// each invocation a *logical slot* from `logical_slot` and assign work by slot, never by
// `local_invocation_index`. On the portable path the slot is the local index. On the subgroup path,
// when every subgroup is full, the slot is `subgroup_id * subgroup_size + subgroup_invocation_id`,
// which is exactly the order subgroupExclusiveAdd scans in, whatever the hardware's mapping from
// local index to lane is and whatever the subgroup size. If subgroups are not full, the slot and
// the workgroup scans fall back to the portable code, so results never depend on the subgroup size.

// Invocations per workgroup in every radix sort kernel.
const WG: u32 = 128u;
// Keys per invocation in the histogram and scatter kernels, and entries per invocation in the
// digit-table scan.
const ITEMS: u32 = 16u;
// Keys per sort block (one workgroup), and entries per scan block.
const BLOCK: u32 = 2048u;
// Bins of one 4-bit digit.
const RADIX: u32 = 16u;
// The portable scan rakes WG values with RAKE_LANES invocations, RAKE_SPAN values each.
const RAKE_LANES: u32 = 16u;
const RAKE_SPAN: u32 = 8u;

// Uniform parameters of one pass of the histogram (radix_sort_histogram.wgsl) and scatter
// (radix_sort_scatter.wgsl) kernels.
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
    // Global index of the destination page's first element (scatter only).
    dst_start: u32,
    // Elements in the destination page (scatter only).
    dst_len: u32,
    _pad0: u32,
}

struct Invocation {
    @builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
    @builtin(subgroup_id) sg_id: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(num_subgroups) sg_count: u32,
#endif
}

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

// The digit of `key` for the pass described by (shift, mask).
fn digit_of(key: u32, shift: u32, mask: u32) -> u32 {
    return (key >> shift) & mask;
}

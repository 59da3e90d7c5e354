// Per-digit counts of the radix sort, packed so that ranking a block needs no dynamically indexed
// memory per key: the 16 counts of one 4-bit digit live in 16-bit fields of two vec4<u32> (digit d
// in component (d & 7) >> 1 of `lo` for d < 8, of `hi` otherwise, bits 16 * (d & 1)). Counts never
// exceed BLOCK (2048), so fields never carry into each other. Also: the workgroup scan of these
// counts in slot order (see radix_sort_common.wgsl).
#import "radix_sort_common.wgsl"

struct DigitCounts {
    lo: vec4<u32>,
    hi: vec4<u32>,
}

// Result of `scan_digit_counts`: the counts of the slots before this one, and of the workgroup.
struct DigitCountsScan {
    before: DigitCounts,
    total: DigitCounts,
}

fn no_digits() -> DigitCounts {
    return DigitCounts(vec4<u32>(0u), vec4<u32>(0u));
}

// `amount` in the field of digit `d`, zero elsewhere.
fn digit_field(d: u32, amount: u32) -> DigitCounts {
    let word = amount << (16u * (d & 1u));
    let picked = select(vec4<u32>(0u), vec4<u32>(word), vec4<u32>((d >> 1u) & 3u) == vec4<u32>(0u, 1u, 2u, 3u));
    let low_half = d < 8u;
    return DigitCounts(select(vec4<u32>(0u), picked, low_half), select(picked, vec4<u32>(0u), low_half));
}

fn add_digits(a: DigitCounts, b: DigitCounts) -> DigitCounts {
    return DigitCounts(a.lo + b.lo, a.hi + b.hi);
}

// The count of digit `d`.
fn digit_count(c: DigitCounts, d: u32) -> u32 {
    let half = select(c.hi, c.lo, d < 8u);
    return (half[(d >> 1u) & 3u] >> (16u * (d & 1u))) & 0xFFFFu;
}

// For every digit, the total count of the smaller digits: an exclusive scan over the 16 fields.
fn counts_of_smaller_digits(c: DigitCounts) -> DigitCounts {
    // Per word [a | b << 16]: the word's total a + b, and its exclusive scan [0 | a << 16].
    let total_lo = (c.lo & vec4<u32>(0xFFFFu)) + (c.lo >> vec4<u32>(16u));
    let total_hi = (c.hi & vec4<u32>(0xFFFFu)) + (c.hi >> vec4<u32>(16u));
    // Exclusive scan over the 8 word totals.
    let before_lo = vec4<u32>(0u, total_lo.x, total_lo.x + total_lo.y, total_lo.x + total_lo.y + total_lo.z);
    let lo_sum = before_lo.w + total_lo.w;
    let before_hi = vec4<u32>(lo_sum, lo_sum + total_hi.x, lo_sum + total_hi.x + total_hi.y, lo_sum + total_hi.x + total_hi.y + total_hi.z);
    // Add each word's offset to both of its fields.
    return DigitCounts((c.lo << vec4<u32>(16u)) + before_lo * 0x10001u, (c.hi << vec4<u32>(16u)) + before_hi * 0x10001u);
}

var<workgroup> scan_lo: array<vec4<u32>, WG>;
var<workgroup> scan_hi: array<vec4<u32>, WG>;
// Raked partial sums; the last entry is the workgroup total.
var<workgroup> partial_lo: array<vec4<u32>, 17>;
var<workgroup> partial_hi: array<vec4<u32>, 17>;

// The scan without subgroups: write, rake RAKE_SPAN slots per lane, scan the lane totals serially,
// add back.
fn scan_digit_counts_by_raking(slot: u32, c: DigitCounts) -> DigitCountsScan {
    scan_lo[slot] = c.lo;
    scan_hi[slot] = c.hi;
    workgroupBarrier();
    if slot < RAKE_LANES {
        var lo = vec4<u32>(0u);
        var hi = vec4<u32>(0u);
        for (var i = 0u; i < RAKE_SPAN; i += 1u) {
            let j = slot * RAKE_SPAN + i;
            let v_lo = scan_lo[j];
            let v_hi = scan_hi[j];
            scan_lo[j] = lo;
            scan_hi[j] = hi;
            lo += v_lo;
            hi += v_hi;
        }
        partial_lo[slot] = lo;
        partial_hi[slot] = hi;
    }
    workgroupBarrier();
    if slot == 0u {
        var lo = vec4<u32>(0u);
        var hi = vec4<u32>(0u);
        for (var i = 0u; i < RAKE_LANES; i += 1u) {
            let v_lo = partial_lo[i];
            let v_hi = partial_hi[i];
            partial_lo[i] = lo;
            partial_hi[i] = hi;
            lo += v_lo;
            hi += v_hi;
        }
        partial_lo[RAKE_LANES] = lo;
        partial_hi[RAKE_LANES] = hi;
    }
    workgroupBarrier();
    let lane = slot / RAKE_SPAN;
    let before = DigitCounts(scan_lo[slot] + partial_lo[lane], scan_hi[slot] + partial_hi[lane]);
    let total = DigitCounts(partial_lo[RAKE_LANES], partial_hi[RAKE_LANES]);
    workgroupBarrier();
    return DigitCountsScan(before, total);
}

#if SUBGROUPS
// The scan with full subgroups: scan inside each subgroup (the last lane's inclusive sum is the
// subgroup total), scan the subgroup totals serially (at most WG / subgroup size of them), add back.
fn scan_digit_counts_by_subgroups(inv: Invocation, c: DigitCounts) -> DigitCountsScan {
    let inside = DigitCounts(subgroupExclusiveAdd(c.lo), subgroupExclusiveAdd(c.hi));
    if inv.sg_lane == inv.sg_size - 1u {
        scan_lo[inv.sg_id] = inside.lo + c.lo;
        scan_hi[inv.sg_id] = inside.hi + c.hi;
    }
    workgroupBarrier();
    if inv.lid == 0u {
        var lo = vec4<u32>(0u);
        var hi = vec4<u32>(0u);
        for (var s = 0u; s < inv.sg_count; s += 1u) {
            let v_lo = scan_lo[s];
            let v_hi = scan_hi[s];
            scan_lo[s] = lo;
            scan_hi[s] = hi;
            lo += v_lo;
            hi += v_hi;
        }
        partial_lo[0] = lo;
        partial_hi[0] = hi;
    }
    workgroupBarrier();
    let before = add_digits(inside, DigitCounts(scan_lo[inv.sg_id], scan_hi[inv.sg_id]));
    let total = DigitCounts(partial_lo[0], partial_hi[0]);
    workgroupBarrier();
    return DigitCountsScan(before, total);
}
#endif

// Exclusive scan of per-slot digit counts in slot order, and their workgroup total. Every
// invocation must call it (it has barriers); it ends with a barrier, so the scan storage may be
// reused right after.
fn scan_digit_counts(inv: Invocation, slot: u32, c: DigitCounts) -> DigitCountsScan {
#if SUBGROUPS
    if subgroups_are_full(inv) {
        return scan_digit_counts_by_subgroups(inv, c);
    }
#endif
    return scan_digit_counts_by_raking(slot, c);
}

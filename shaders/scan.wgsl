// Prefix scan of u32 (wrapping add), one level of the multi-level scan over one tensor page or one
// scratch buffer of block sums. src/ops/scan.rs drives the levels:
//   reduce_blocks: the sum of every block of SCAN_BLOCK inputs -> output[block];
//   scan_blocks:   output[i] = prefix of input within its block + offsets[offset_index + block].
// The top level is a single block whose base is a page's carry: with write_total set it also stores
// carry + block total at offsets[offset_index + 1], the carry of the next page.
// The in-place form of scan_blocks lives in scan_in_place.wgsl (one read-write binding).
#import "shared/dispatch.wgsl"
#import "shared/block_scan.wgsl"

struct ScanParams {
    // Elements of `input` to scan.
    n: u32,
    // 1: inclusive prefix; 0: exclusive.
    inclusive: u32,
    // 1: scan (input != 0) as 0/1 instead of the input values (stream compaction).
    flags_mode: u32,
    // Index in `offsets` of the base of block 0.
    offset_index: u32,
    // 1 (single-block dispatches only): store base + block total at offsets[offset_index + 1].
    write_total: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: ScanParams;
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read_write> output: array<u32>;
@group(0) @binding(3) var<storage, read_write> offsets: array<u32>;

fn load_item(i: u32) -> u32 {
    if i >= params.n {
        return 0u;
    }
    let v = input[i];
    return select(v, u32(v != 0u), params.flags_mode != 0u);
}

@compute @workgroup_size(256)
fn reduce_blocks(inv: ScanInvocation) {
    let block = workgroup_index(inv.wid, inv.nwg);
    if block >= (params.n + SCAN_BLOCK - 1u) / SCAN_BLOCK {
        return;
    }
    let first = block * SCAN_BLOCK + scan_rank(inv) * SCAN_ITEMS;
    var sum = 0u;
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        sum += load_item(first + k);
    }
    let scanned = workgroup_exclusive_scan(inv, sum);
    if scan_rank(inv) == 0u {
        output[block] = scanned.y;
    }
}

@compute @workgroup_size(256)
fn scan_blocks(inv: ScanInvocation) {
    let block = workgroup_index(inv.wid, inv.nwg);
    if block >= (params.n + SCAN_BLOCK - 1u) / SCAN_BLOCK {
        return;
    }
    let first = block * SCAN_BLOCK + scan_rank(inv) * SCAN_ITEMS;
    var items: array<u32, SCAN_ITEMS>;
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        items[k] = load_item(first + k);
    }
    let base = offsets[params.offset_index + block];
    let scanned = scan_items(inv, items, base, params.inclusive != 0u);
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        if first + k < params.n {
            output[first + k] = scanned.values[k];
        }
    }
    if params.write_total != 0u && scan_rank(inv) == SCAN_WG - 1u {
        offsets[params.offset_index + 1u] = base + scanned.block_total;
    }
}

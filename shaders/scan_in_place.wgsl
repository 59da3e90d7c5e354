// In-place form of scan.wgsl's scan_blocks: every invocation reads its elements into registers
// before the block scan and writes them back after it, so `data` may be both input and output.
// Also used for the upper levels of every scan (block sums are scanned in place).
#import "shared/dispatch.wgsl"
#import "shared/block_scan.wgsl"

struct ScanInPlaceParams {
    // Elements of `data` to scan.
    n: u32,
    // 1: inclusive prefix; 0: exclusive.
    inclusive: u32,
    // Index in `offsets` of the base of block 0.
    offset_index: u32,
    // 1 (single-block dispatches only): store base + block total at offsets[offset_index + 1].
    write_total: u32,
}

@group(0) @binding(0) var<uniform> params: ScanInPlaceParams;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> offsets: array<u32>;

@compute @workgroup_size(256)
fn scan_blocks_in_place(inv: ScanInvocation) {
    let block = workgroup_index(inv.wid, inv.nwg);
    if block >= (params.n + SCAN_BLOCK - 1u) / SCAN_BLOCK {
        return;
    }
    let first = block * SCAN_BLOCK + scan_rank(inv) * SCAN_ITEMS;
    var items: array<u32, SCAN_ITEMS>;
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        items[k] = select(0u, data[min(first + k, params.n - 1u)], first + k < params.n);
    }
    let base = offsets[params.offset_index + block];
    let scanned = scan_items(inv, items, base, params.inclusive != 0u);
    for (var k = 0u; k < SCAN_ITEMS; k++) {
        if first + k < params.n {
            data[first + k] = scanned.values[k];
        }
    }
    if params.write_total != 0u && scan_rank(inv) == SCAN_WG - 1u {
        offsets[params.offset_index + 1u] = base + scanned.block_total;
    }
}

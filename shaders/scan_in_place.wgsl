// In-place form of scan.wgsl's scan_blocks: `data` is both input and output (every invocation
// reads each of its elements before it overwrites it).
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

@group(0) @binding(0) var<uniform> params_uniform: ScanInPlaceParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: ScanInPlaceParams;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> offsets: array<u32>;

fn scan_load(i: u32) -> u32 {
    return select(0u, data[min(i, params.n - 1u)], i < params.n);
}

fn scan_store(i: u32, value: u32) {
    data[i] = value;
}

@compute @workgroup_size(256)
fn scan_blocks_in_place(inv: ScanInvocation) {
    if uniforms_visible(inv.nwg) {
        params = params_uniform;
    }
    // No early return for the padding workgroups of a 2D grid: CPU drivers slow down every
    // workgroup of a kernel that may return before a barrier. They load zeros and store nothing.
    let blocks = (params.n + SCAN_BLOCK - 1u) / SCAN_BLOCK;
    let block = min(workgroup_index(inv.wid, inv.nwg), blocks);
    let base = offsets[params.offset_index + min(block, blocks - 1u)];
    let total = scan_block(inv, block, params.n, base, params.inclusive != 0u);
    if params.write_total != 0u && scan_rank(inv) == SCAN_WG - 1u && block < blocks {
        offsets[params.offset_index + 1u] = base + total;
    }
}

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

@group(0) @binding(0) var<uniform> params_uniform: ScanParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: ScanParams;
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read_write> output: array<u32>;
@group(0) @binding(3) var<storage, read_write> offsets: array<u32>;

// Branch-free, so the callers' loops stay unrollable.
fn scan_load(i: u32) -> u32 {
    let v = input[min(i, params.n - 1u)];
    return select(0u, select(v, u32(v != 0u), params.flags_mode != 0u), i < params.n);
}

fn scan_store(i: u32, value: u32) {
    output[i] = value;
}

@compute @workgroup_size(256)
fn reduce_blocks(inv: ScanInvocation) {
    if uniforms_visible(inv.nwg) {
        params = params_uniform;
    }
    // No early return for the padding workgroups of a 2D grid: CPU drivers slow down every
    // workgroup of a kernel that may return before a barrier. They load zeros and store nothing.
    let blocks = (params.n + SCAN_BLOCK - 1u) / SCAN_BLOCK;
    let block = min(workgroup_index(inv.wid, inv.nwg), blocks);
    let total = reduce_block(inv, block);
    if scan_rank(inv) == SCAN_WG - 1u && block < blocks {
        output[block] = total;
    }
}

@compute @workgroup_size(256)
fn scan_blocks(inv: ScanInvocation) {
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

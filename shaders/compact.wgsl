// Scatter step of stable stream compaction: every element whose flag is nonzero goes to
// `positions[i]` (the exclusive scan of the flags). One dispatch covers one source page and one
// destination page; it writes only the kept elements whose position falls inside that destination
// page. src/ops/compact.rs dispatches every destination page at or before the source page, since
// a kept element never moves to a higher index.
#import "shared/dispatch.wgsl"

struct CompactParams {
    // Elements in the source page.
    n: u32,
    // Global index of the source page's first element (for compact_indices).
    source_start: u32,
    // Global index of the destination page's first element.
    dest_start: u32,
    // Elements in the destination page.
    dest_len: u32,
    // 1: write the source index instead of the value.
    write_indices: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: CompactParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: CompactParams;
@group(0) @binding(1) var<storage, read> flags: array<u32>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
@group(0) @binding(3) var<storage, read> values: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn scatter_kept(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.n || flags[i] == 0u {
        return;
    }
    let offset = positions[i] - params.dest_start;
    // Positions before dest_start wrap around to large offsets and fail this test too.
    if offset >= params.dest_len {
        return;
    }
    out[offset] = select(values[i], params.source_start + i, params.write_indices != 0u);
}

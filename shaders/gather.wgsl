// Row gather and scatter of 32-bit values between paged tensors, one (linear page, index page,
// addressed page) triple per dispatch.
//
// Rows have `width` elements and may straddle pages, so every element is addressed on its own:
// element l of the bound *linear* page (the output of a gather, the source of a scatter) is
// column j of row i; its partner in the *addressed* tensor (gather source, scatter destination)
// is column j of row index[i]. A dispatch handles only the elements whose index lies in the bound
// index page and whose partner lies in the bound addressed page; the Rust side dispatches every
// triple, so each element is handled exactly once.
#import "shared/dispatch.wgsl"

struct GatherParams {
    // Elements in the bound linear page.
    lin_len: u32,
    // Row and column of the linear page's first element.
    lin_row0: u32,
    lin_col0: u32,
    // Elements per row.
    width: u32,
    // First row whose index is in the bound index page, and the page's length.
    index_row0: u32,
    index_len: u32,
    // Row and column of the addressed page's first element, and its length.
    addr_row0: u32,
    addr_col0: u32,
    addr_len: u32,
    // Rows that reach into the addressed page: ceil((addr_len + addr_col0) / width).
    addr_rows_span: u32,
    // Rows of the whole addressed tensor; indices at or past this are out of range.
    rows_total: u32,
    // Gather only: 1 if this dispatch writes 0 for out-of-range indices.
    zero_out_of_range: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: GatherParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: GatherParams;
@group(0) @binding(1) var<storage, read> values_in: array<u32>;
@group(0) @binding(2) var<storage, read> row_index: array<u32>;
@group(0) @binding(3) var<storage, read_write> values_out: array<u32>;

const WG: u32 = 256u;
// Marks "not handled by this dispatch".
const SKIP: u32 = 0xffffffffu;
// Marks "index out of range".
const OUT_OF_RANGE: u32 = 0xfffffffeu;

// Offset in the addressed page of the partner of linear element `l`, or SKIP / OUT_OF_RANGE.
fn partner_offset(l: u32) -> u32 {
    let k = params.width;
    let t = params.lin_col0 + l;
    let row = params.lin_row0 + t / k;
    let col = t % k;
    if row < params.index_row0 || row - params.index_row0 >= params.index_len {
        return SKIP;
    }
    let target_row = row_index[row - params.index_row0];
    if target_row >= params.rows_total {
        return OUT_OF_RANGE;
    }
    if target_row < params.addr_row0 || target_row - params.addr_row0 >= params.addr_rows_span {
        return SKIP;
    }
    let d = (target_row - params.addr_row0) * k + col;
    if d < params.addr_col0 || d - params.addr_col0 >= params.addr_len {
        return SKIP;
    }
    return d - params.addr_col0;
}

// values_out = the linear page of the output, values_in = the addressed page of the source.
@compute @workgroup_size(256)
fn gather_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let l = workgroup_index(wid, nwg) * WG + lid;
    if l >= params.lin_len {
        return;
    }
    let offset = partner_offset(l);
    if offset == OUT_OF_RANGE {
        if params.zero_out_of_range == 1u {
            values_out[l] = 0u;
        }
    } else if offset != SKIP {
        values_out[l] = values_in[offset];
    }
}

// values_in = the linear page of the source, values_out = the addressed page of the destination.
@compute @workgroup_size(256)
fn scatter_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let l = workgroup_index(wid, nwg) * WG + lid;
    if l >= params.lin_len {
        return;
    }
    let offset = partner_offset(l);
    if offset != SKIP && offset != OUT_OF_RANGE {
        values_out[offset] = values_in[l];
    }
}

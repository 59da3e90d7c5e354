// Fill and arange over one tensor page. Values travel as 32-bit patterns so one kernel serves
// f32, u32 and i32.
#import "shared/dispatch.wgsl"

struct FillParams {
    // Elements in this page.
    n: u32,
    // Global index of the page's first element (arange only).
    offset: u32,
    // 0 = f32, 1 = u32, 2 = i32 (arange only).
    mode: u32,
    // Bit pattern of the fill value, or of arange's start.
    start_bits: u32,
    // Bit pattern of arange's step.
    step_bits: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: FillParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: FillParams;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn fill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.n {
        return;
    }
    out[i] = params.start_bits;
}

@compute @workgroup_size(256)
fn arange(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.n {
        return;
    }
    let k = params.offset + i;
    switch params.mode {
        case 0u: {
            out[i] = bitcast<u32>(bitcast<f32>(params.start_bits) + f32(k) * bitcast<f32>(params.step_bits));
        }
        default: {
            // Two's complement makes the u32 and i32 forms the same wrapping arithmetic.
            out[i] = params.start_bits + k * params.step_bits;
        }
    }
}

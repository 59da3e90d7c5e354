// In-place element-wise maps over one page. `map_inplace`: values[i] = op(values[i], rhs[i])
// (or op(rhs[i], values[i]) when params.swap is 1); `map_self`: values[i] = op(values[i]) for
// unary ops. A separate file from elementwise.wgsl because binding 1 is read-write here.
#import "shared/dispatch.wgsl"
#import "shared/elementwise_ops.wgsl"

@group(0) @binding(0) var<uniform> params_uniform: ElementwiseParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: ElementwiseParams;
@group(0) @binding(1) var<storage, read_write> values: array<u32>;
@group(0) @binding(2) var<storage, read> rhs: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn map_inplace(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.n {
        return;
    }
    let t = values[i];
    let r = rhs[i];
    if params.swap == 1u {
        values[i] = elementwise_apply(params.op, r, t, params.s0_bits, params.s1_bits);
    } else {
        values[i] = elementwise_apply(params.op, t, r, params.s0_bits, params.s1_bits);
    }
}

@compute @workgroup_size(256)
fn map_self(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.n {
        return;
    }
    let t = values[i];
    values[i] = elementwise_apply(params.op, t, t, params.s0_bits, params.s1_bits);
}

// Out-of-place element-wise map over one page: out[i] = op(lhs[i], rhs[i]). Unary ops bind the
// same page as lhs and rhs (two read-only bindings of one buffer are allowed) and ignore rhs.
#import "shared/dispatch.wgsl"
#import "shared/elementwise_ops.wgsl"

@group(0) @binding(0) var<uniform> params_uniform: ElementwiseParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: ElementwiseParams;
@group(0) @binding(1) var<storage, read> lhs: array<u32>;
@group(0) @binding(2) var<storage, read> rhs: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(256)
fn map_out(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = workgroup_index(wid, nwg) * WG + lid;
    if i >= params.n {
        return;
    }
    out[i] = elementwise_apply(params.op, lhs[i], rhs[i], params.s0_bits, params.s1_bits);
}

// Backward of the opacity activation (and of the antialiased mode's compensation factor, as far
// as the logit goes) for one page of Gaussians, and the densification statistics:
// per Gaussian, the accumulated norm of the screen-space mean gradient in gsplat's units (pixels
// scaled by half the image size), the same for the per-pixel absolute gradient ("absgrad"), how
// many renders it was visible in, and the largest screen radius seen (AUX_STATISTICS turns them
// on). With AUX_ACCUMULATE the logit's gradient is added to the one already written.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> opacity_logits: array<f32>;
@group(0) @binding(2) var<storage, read> projected: array<f32>;
@group(0) @binding(3) var<storage, read> v_projected: array<f32>;
@group(0) @binding(4) var<storage, read_write> v_opacity_logits: array<f32>;
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;

const STATS_STRIDE: u32 = 4u;

@compute @workgroup_size(256)
fn opacity_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= u.count {
        return;
    }
    let vb = i * V_STRIDE;
    let v_opacity = v_projected[vb + 5u];
    var v_logit = 0.0;
    if v_opacity != 0.0 {
        // The projected opacity is o = sigmoid(logit) times a factor that does not depend on
        // the logit (1, or the antialiased mode's compensation), so its derivative is itself
        // times (1 - o). The classic mode uses o as computed here, so that its arithmetic does
        // not depend on how another kernel rounded the same sigmoid.
        let o = sigmoid(opacity_logits[i]);
        let shown = select(o, projected[i * SPLAT_STRIDE + SPLAT_OPACITY], u.raster_mode == RASTER_ANTIALIASED);
        v_logit = v_opacity * shown * (1.0 - o);
    }
    if (u.aux & AUX_ACCUMULATE) != 0u {
        v_opacity_logits[i] += v_logit;
    } else {
        v_opacity_logits[i] = v_logit;
    }
    let radius = max(projected[i * SPLAT_STRIDE + SPLAT_RADIUS_X], projected[i * SPLAT_STRIDE + SPLAT_RADIUS_Y]);
    if (u.aux & AUX_STATISTICS) != 0u && radius > 0.0 {
        let half = 0.5 * vec2<f32>(u.image_size);
        let grad = vec2<f32>(v_projected[vb], v_projected[vb + 1u]) * half;
        let absgrad = vec2<f32>(v_projected[vb + 9u], v_projected[vb + 10u]) * half;
        let sb = i * STATS_STRIDE;
        stats[sb] += length(grad);
        stats[sb + 1u] += length(absgrad);
        stats[sb + 2u] += 1.0;
        stats[sb + 3u] = max(stats[sb + 3u], radius);
    }
}

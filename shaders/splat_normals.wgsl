// Each Gaussian's normal in camera space, for one page of Gaussians in Gaussian order: the axis
// of its shortest scale, rotated into the camera and turned to face it (pointing from the mean
// towards the camera centre, so a surface seen from either side reads as seen from the front).
// The rasterizer composites these per pixel with the colour's weights (rasterize.wgsl, NORMALS).
// A Gaussian whose inputs are not finite gets the zero vector (it is culled by the projection).
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> means: array<f32>;
@group(0) @binding(2) var<storage, read> log_scales: array<f32>;
@group(0) @binding(3) var<storage, read> quats: array<f32>;
@group(0) @binding(4) var<storage, read_write> normals: array<f32>;

@compute @workgroup_size(256)
fn splat_normals(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= u.count {
        return;
    }
    let mean = vec3<f32>(means[3u * i], means[3u * i + 1u], means[3u * i + 2u]);
    let p = view_rotation(u) * mean + view_translation(u);
    let log_s = vec3<f32>(log_scales[3u * i], log_scales[3u * i + 1u], log_scales[3u * i + 2u]);
    let q = vec4<f32>(quats[4u * i], quats[4u * i + 1u], quats[4u * i + 2u], quats[4u * i + 3u]);
    let axis = shortest_axis(log_s);
    var n = vec3<f32>(0.0);
    let finite = is_finite_f32(p.x) && is_finite_f32(p.y) && is_finite_f32(p.z) && is_finite_f32(q.x)
        && is_finite_f32(q.y) && is_finite_f32(q.z) && is_finite_f32(q.w) && dot(q, q) > 0.0;
    if finite {
        n = view_rotation(u) * quat_to_mat(q)[axis];
        n *= facing_sign(n, p);
    }
    normals[3u * i] = n.x;
    normals[3u * i + 1u] = n.y;
    normals[3u * i + 2u] = n.z;
}

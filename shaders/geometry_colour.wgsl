// Geometry as colour, for one page of Gaussians in Gaussian order: each projected row's colour
// becomes its depth, (depth, 0, 0), with NORMAL its camera-space normal (the shortest axis
// turned towards the camera, as splat_normals.wgsl makes it), or with MOMENTS (depth, depth², 1),
// so the rasterizer composites the alpha-weighted depth or normal, or per pixel Σ w·d, Σ w·d²
// and Σ w (the sums of the depth distortion loss), into the image and its backward gives the gradient of a loss
// on them through the splats' weights (means, conics, opacities) and, per splat, with respect
// to the depth or normal itself (geometry_colour_backward.wgsl). Runs after sh_forward.wgsl in
// place of its colours; culled rows stay zero.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"

// Composite the normal rather than the depth.
override NORMAL: bool = false;
// Composite the depth's moments rather than the depth (NORMAL unset).
override MOMENTS: bool = false;

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> means: array<f32>;
@group(0) @binding(2) var<storage, read> log_scales: array<f32>;
@group(0) @binding(3) var<storage, read> quats: array<f32>;
@group(0) @binding(4) var<storage, read> tiles_touched: array<u32>;
@group(0) @binding(5) var<storage, read_write> projected: array<f32>;

@compute @workgroup_size(256)
fn geometry_colour(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let i = workgroup_index(wid, nwg) * 256u + lid;
    if i >= u.count || tiles_touched[i] == 0u {
        return;
    }
    let base = i * SPLAT_STRIDE;
    let depth = projected[base + SPLAT_DEPTH];
    var colour = depth_colour(depth, MOMENTS);
    if NORMAL {
        let mean = vec3<f32>(means[3u * i], means[3u * i + 1u], means[3u * i + 2u]);
        let p = view_rotation(u) * mean + view_translation(u);
        let log_s = vec3<f32>(log_scales[3u * i], log_scales[3u * i + 1u], log_scales[3u * i + 2u]);
        let q = vec4<f32>(quats[4u * i], quats[4u * i + 1u], quats[4u * i + 2u], quats[4u * i + 3u]);
        colour = view_rotation(u) * quat_to_mat(q)[shortest_axis(log_s)];
        colour *= facing_sign(colour, p);
    }
    projected[base + SPLAT_R] = colour.x;
    projected[base + SPLAT_G] = colour.y;
    projected[base + SPLAT_B] = colour.z;
}

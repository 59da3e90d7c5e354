// Tile rasterizer: one 16x16 workgroup per tile composites the tile's depth-ordered splats front
// to back, loading them in batches of 256 through workgroup memory. Per pixel it writes RGB
// composited on the background with alpha, the alpha-weighted depth, and how many of the tile's
// intersections it consumed up to its last contributor (the backward pass starts there).
//
// It runs once per chunk of splats (shared/chunk.wgsl), `splats` being the chunk's page. Between
// chunks the outputs hold the running state: `rgba` = (colour so far, transmittance), `depth` =
// depth so far, `consumed` = consumed count with DONE_BIT set once the pixel has terminated. The
// first chunk starts from the empty state without reading; the last composites the background.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/chunk.wgsl"

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> splats: array<f32>;
@group(0) @binding(2) var<storage, read> splat_from_isect: array<u32>;
@group(0) @binding(3) var<storage, read> ranges: array<u32>;
@group(0) @binding(4) var<storage, read_write> rgba: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> depth: array<f32>;
@group(0) @binding(6) var<storage, read_write> consumed: array<u32>;

const BATCH: u32 = 256u;
// Set in `consumed` between chunks once a pixel's transmittance ran out.
const DONE_BIT: u32 = 0x80000000u;

var<workgroup> s_xy: array<vec2<f32>, BATCH>;
var<workgroup> s_conic_opacity: array<vec4<f32>, BATCH>;
var<workgroup> s_color_depth: array<vec4<f32>, BATCH>;
var<workgroup> done_count: atomic<u32>;
var<workgroup> done_snapshot: u32;

// Opacity of the splat at `xy` with (conic a, b, c, opacity) `co` at `pixel`.
fn alpha_at(xy: vec2<f32>, co: vec4<f32>, pixel: vec2<f32>) -> f32 {
    let d = xy - pixel;
    let power = -0.5 * (co.x * d.x * d.x + co.z * d.y * d.y) - co.y * d.x * d.y;
    return splat_alpha(co.w, power, u.alpha_mode);
}

// Composites a splat of opacity `alpha` and (colour, depth) `cd` under the pixel's state, front
// to back. Returns false and leaves the state as it is when the splat would end the pixel
// (classic mode: transmittance at or below TRANSMITTANCE_MIN).
fn blend(
    alpha: f32,
    cd: vec4<f32>,
    color: ptr<function, vec3<f32>>,
    depth_acc: ptr<function, f32>,
    transmittance: ptr<function, f32>,
) -> bool {
    let next_t = *transmittance * (1.0 - alpha);
    if u.alpha_mode == 0u && next_t <= TRANSMITTANCE_MIN {
        return false;
    }
    *color += cd.xyz * (alpha * *transmittance);
    *depth_acc += cd.w * (alpha * *transmittance);
    *transmittance = next_t;
    return true;
}

// One-dimensional workgroup (256 = 16x16 pixels, row-major): naga allows subgroup builtins only
// in 1D workgroups.
@compute @workgroup_size(256)
fn rasterize(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) sg_size: u32,
#endif
) {
    if uniforms_visible(nwg) {
        u = u_uniform;
    }
    let tile = workgroup_index(wid, nwg);
    let num_tiles = u.tile_counts.x * u.tile_counts.y;
    if tile >= num_tiles {
        return; // uniform: the whole workgroup leaves together
    }
    let px = (tile % u.tile_counts.x) * TILE_SIZE + lid % TILE_SIZE;
    let py = (tile / u.tile_counts.x) * TILE_SIZE + lid / TILE_SIZE;
    let inside = px < u.image_size.x && py < u.image_size.y;
    let pixel = vec2<f32>(f32(px) + 0.5, f32(py) + 0.5);
    let start = ranges[2u * tile];
    let end = ranges[2u * tile + 1u];
    let run = chunk_run(start, end);
    let first_chunk = chunk_is_first();
    let last_chunk = chunk_is_last();
    if run.x == run.y && !first_chunk && !last_chunk {
        return; // uniform: this chunk leaves the tile's state as it is
    }
    let p = select(0u, py * u.image_size.x + px, inside);

    var transmittance = 1.0;
    var color = vec3<f32>(0.0);
    var depth_acc = 0.0;
    var used = 0u;
    var done = !inside;
    if !first_chunk {
        let state = rgba[p];
        let carried = consumed[p];
        color = state.xyz;
        transmittance = state.w;
        depth_acc = depth[p];
        used = carried & ~DONE_BIT;
        done = done || (carried & DONE_BIT) != 0u;
    }
    if lid == 0u {
        atomicStore(&done_count, 0u);
    }
    workgroupBarrier();
    if done {
        atomicAdd(&done_count, 1u);
    }
    for (var batch = run.x; batch < run.y; batch += BATCH) {
        workgroupBarrier();
        if lid == 0u {
            done_snapshot = atomicLoad(&done_count);
        }
        if workgroupUniformLoad(&done_snapshot) == BATCH {
            break;
        }
        let idx = batch + lid;
        if idx < run.y {
            let s = (splat_from_isect[idx] - u.page_offset) * SPLAT_STRIDE;
            s_xy[lid] = vec2<f32>(splats[s + SPLAT_X], splats[s + SPLAT_Y]);
            s_conic_opacity[lid] = vec4<f32>(splats[s + SPLAT_CONIC_A], splats[s + SPLAT_CONIC_B], splats[s + SPLAT_CONIC_C], splats[s + SPLAT_OPACITY]);
            s_color_depth[lid] = vec4<f32>(splats[s + SPLAT_R], splats[s + SPLAT_G], splats[s + SPLAT_B], splats[s + SPLAT_DEPTH]);
        }
        workgroupBarrier();
        let n = min(BATCH, run.y - batch);
#if SUBGROUPS
        // Each lane reads one splat of every group of `sg_size` from workgroup memory, and the
        // subgroup sees splat t of the group through shuffles: on lavapipe a workgroup-memory
        // load is a loop over the lanes and a 32-bit shuffle one vector permute, so one load
        // serves `sg_size` splats instead of one. Finished lanes keep shuffling for the others;
        // the subgroup leaves once all of its lanes are done.
        var group = 0u;
        loop {
            if group >= n || subgroupAll(done) {
                break;
            }
            let mine = min(group + lane, n - 1u);
            let my_xy = s_xy[mine];
            let my_co = s_conic_opacity[mine];
            let my_cd = s_color_depth[mine];
            let count = min(sg_size, n - group);
            for (var t = 0u; t < count; t++) {
                let xy = subgroupShuffle(my_xy, t);
                let co = subgroupShuffle(my_co, t);
                let cd = subgroupShuffle(my_cd, t);
                if done {
                    continue;
                }
                let alpha = alpha_at(xy, co, pixel);
                if alpha <= 0.0 {
                    continue;
                }
                if !blend(alpha, cd, &color, &depth_acc, &transmittance) {
                    done = true;
                    atomicAdd(&done_count, 1u);
                    continue;
                }
                used = batch + group + t + 1u - start;
            }
            group += sg_size;
        }
#else
        if !done {
            for (var j = 0u; j < n; j++) {
                let alpha = alpha_at(s_xy[j], s_conic_opacity[j], pixel);
                if alpha <= 0.0 {
                    continue;
                }
                if !blend(alpha, s_color_depth[j], &color, &depth_acc, &transmittance) {
                    done = true;
                    atomicAdd(&done_count, 1u);
                    break;
                }
                used = batch + j + 1u - start;
            }
        }
#endif
    }
    if inside {
        depth[p] = depth_acc;
        if last_chunk {
            rgba[p] = vec4<f32>(color + transmittance * u.background.xyz, 1.0 - transmittance);
            consumed[p] = used;
        } else {
            rgba[p] = vec4<f32>(color, transmittance);
            consumed[p] = used | select(0u, DONE_BIT, done);
        }
    }
}

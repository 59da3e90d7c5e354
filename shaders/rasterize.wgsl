// Tile rasterizer: one workgroup of 64 invocations per 16x16 tile composites the tile's
// depth-ordered splats front to back, loading them in batches of 64 through workgroup memory.
// Each invocation owns a column of four pixels (x = lid % 16, y = 4 * (lid / 16) + 0..3) held
// as vec4 components, so one splat read serves four pixels. In the CPU layout (CPU_LAYOUT, for
// CPU adapters such as lavapipe, where every workgroup-memory access is a loop over the lanes) 16
// invocations each own a whole column of 16 pixels as four such groups, so one read serves 16. Per pixel it writes RGB
// composited on the background with alpha, the alpha-weighted depth and the median depth (the
// depth of the splat at which the accumulated opacity first reaches 0.5; 0 where it never does),
// and how many of the tile's intersections it consumed up to its last contributor (the backward
// pass starts there).
//
// It runs once per chunk of splats and slice of the tile's run (shared/chunk.wgsl), `splats`
// being the chunk's page. Between dispatches the outputs hold the running state: `rgba` =
// (colour so far, transmittance), `depth` = (depth so far, median so far), `consumed` = consumed count with
// DONE_BIT set once the pixel has terminated. The first dispatch starts from the empty state
// without reading; the last composites the background.
//
// With NORMALS it also composites each splat's camera-space normal (splat_normals.wgsl, in the
// visible splats' order) with the colour's weights into `normals` ([H, W, 3], a running sum
// between dispatches like the colour); a separate pipeline, so the colour's stays as it was.
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/tile_layout.wgsl"
#import "shared/chunk.wgsl"

// Whether to composite the splats' normals too (render --normals, the mesh's views).
override NORMALS: bool = false;

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> splats: array<f32>;
@group(0) @binding(2) var<storage, read> splat_from_isect: array<u32>;
@group(0) @binding(3) var<storage, read> ranges: array<u32>;
@group(0) @binding(4) var<storage, read_write> rgba: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> depth: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> consumed: array<u32>;
// NORMALS only: each visible splat's normal (3 floats, indexed like splat_from_isect's values,
// not by page), and per pixel the alpha-weighted sum of the normals.
@group(0) @binding(7) var<storage, read> splat_normals: array<f32>;
@group(0) @binding(8) var<storage, read_write> normals: array<f32>;

const BATCH: u32 = 64u;
// Set in `consumed` between chunks once a pixel's transmittance ran out.
const DONE_BIT: u32 = 0x80000000u;

var<workgroup> s_xy: array<vec2<f32>, BATCH>;
var<workgroup> s_conic_opacity: array<vec4<f32>, BATCH>;
var<workgroup> s_color_depth: array<vec4<f32>, BATCH>;
var<workgroup> s_normal: array<vec4<f32>, BATCH>;
var<workgroup> done_count: atomic<u32>;
var<workgroup> done_snapshot: u32;

// The state of one invocation's column of four pixels.
struct Column {
    x: f32,
    y: vec4<f32>,
    // Pixel indices, and whether each pixel lies inside the image.
    p: vec4<u32>,
    inside: vec4<bool>,
    r: vec4<f32>,
    g: vec4<f32>,
    b: vec4<f32>,
    depth: vec4<f32>,
    median: vec4<f32>,
    // NORMALS only: the alpha-weighted normal so far.
    nx: vec4<f32>,
    ny: vec4<f32>,
    nz: vec4<f32>,
    transmittance: vec4<f32>,
    // Intersections consumed up to the last contributor, counted from the tile's start.
    used: vec4<u32>,
    done: vec4<bool>,
}

// Composites one splat under the column's pixels, front to back. `consumed_if_used` is the
// consumed count a pixel records when the splat contributes to it. Returns how many pixels it
// ended (classic mode: a pixel ends, without blending, when the splat would leave its
// transmittance at or below TRANSMITTANCE_MIN).
fn blend_column(xy: vec2<f32>, co: vec4<f32>, cd: vec4<f32>, n: vec4<f32>, consumed_if_used: u32, c: ptr<function, Column>) -> u32 {
    let dx = xy.x - (*c).x;
    // A loop that runs at most once: on lavapipe an `if` only masks lanes, while a loop that
    // every lane leaves is skipped, so lanes the splat misses skip the exponential and blending.
    var ended = 0u;
    loop {
        if !splat_may_touch4(co, dx, xy.y - (*c).y, !(*c).done, u.alpha_mode) {
            break;
        }
        ended = blend_touched(xy, co, cd, n, consumed_if_used, c);
        break;
    }
    return ended;
}

fn blend_touched(xy: vec2<f32>, co: vec4<f32>, cd: vec4<f32>, n: vec4<f32>, consumed_if_used: u32, c: ptr<function, Column>) -> u32 {
    let dx = xy.x - (*c).x;
    let dy = xy.y - (*c).y;
    let power = -0.5 * (co.x * dx * dx + co.z * dy * dy) - co.y * dx * dy;
    let alpha = splat_alpha4(co.w, exp(power), power, u.alpha_mode);
    let hit = !(*c).done & (alpha > vec4<f32>(0.0));
    let next_t = (*c).transmittance * (1.0 - alpha);
    let ends = hit & vec4<bool>(u.alpha_mode == 0u) & (next_t <= vec4<f32>(TRANSMITTANCE_MIN));
    let blends = hit & !ends;
    let weight = select(vec4<f32>(0.0), alpha * (*c).transmittance, blends);
    (*c).r += cd.x * weight;
    (*c).g += cd.y * weight;
    (*c).b += cd.z * weight;
    (*c).depth += cd.w * weight;
    if NORMALS {
        (*c).nx += n.x * weight;
        (*c).ny += n.y * weight;
        (*c).nz += n.z * weight;
    }
    let crosses = blends & ((*c).transmittance > vec4<f32>(0.5)) & (next_t <= vec4<f32>(0.5));
    (*c).median = select((*c).median, vec4<f32>(cd.w), crosses);
    (*c).transmittance = select((*c).transmittance, next_t, blends);
    (*c).used = select((*c).used, vec4<u32>(consumed_if_used), blends);
    (*c).done |= ends;
    return dot(select(vec4<u32>(0u), vec4<u32>(1u), ends), vec4<u32>(1u));
}

// A column of four pixels from (px, py0) down: empty in the first chunk, else the state the chunk
// in front of this one left.
fn open_column(px: u32, py0: u32, first_chunk: bool) -> Column {
    var c: Column;
    c.x = f32(px) + 0.5;
    c.y = f32(py0) + vec4<f32>(0.5, 1.5, 2.5, 3.5);
    c.transmittance = vec4<f32>(1.0);
    for (var k = 0u; k < 4u; k++) {
        c.inside[k] = px < u.image_size.x && py0 + k < u.image_size.y;
        c.p[k] = select(0u, (py0 + k) * u.image_size.x + px, c.inside[k]);
        c.done[k] = !c.inside[k];
        if !first_chunk && c.inside[k] {
            let state = rgba[c.p[k]];
            let carried = consumed[c.p[k]];
            c.r[k] = state.x;
            c.g[k] = state.y;
            c.b[k] = state.z;
            c.transmittance[k] = state.w;
            let d = depth[c.p[k]];
            c.depth[k] = d.x;
            c.median[k] = d.y;
            if NORMALS {
                c.nx[k] = normals[3u * c.p[k]];
                c.ny[k] = normals[3u * c.p[k] + 1u];
                c.nz[k] = normals[3u * c.p[k] + 2u];
            }
            c.used[k] = carried & ~DONE_BIT;
            c.done[k] = (carried & DONE_BIT) != 0u;
        }
    }
    return c;
}

// Writes the column's pixels: final in the last chunk, else the running state.
fn close_column(c: ptr<function, Column>, last_chunk: bool) {
    for (var k = 0u; k < 4u; k++) {
        if (*c).inside[k] {
            let p = (*c).p[k];
            depth[p] = vec2<f32>((*c).depth[k], (*c).median[k]);
            if NORMALS {
                normals[3u * p] = (*c).nx[k];
                normals[3u * p + 1u] = (*c).ny[k];
                normals[3u * p + 2u] = (*c).nz[k];
            }
            let color = vec3<f32>((*c).r[k], (*c).g[k], (*c).b[k]);
            if last_chunk {
                rgba[p] = vec4<f32>(color + (*c).transmittance[k] * u.background.xyz, 1.0 - (*c).transmittance[k]);
                consumed[p] = (*c).used[k];
            } else {
                rgba[p] = vec4<f32>(color, (*c).transmittance[k]);
                consumed[p] = (*c).used[k] | select(0u, DONE_BIT, (*c).done[k]);
            }
        }
    }
}

fn done_pixels(c: Column) -> u32 {
    return dot(select(vec4<u32>(0u), vec4<u32>(1u), c.done), vec4<u32>(1u));
}

@compute @workgroup_size(WORKGROUP)
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
    let num_tiles = uniform_vec4u(lid, vec4<u32>(u.tile_counts.x * u.tile_counts.y)).x;
    if tile >= num_tiles {
        return; // uniform: the whole workgroup leaves together
    }
    let start = ranges[2u * tile];
    let end = ranges[2u * tile + 1u];
    let slice = slice_from_front(chunk_run(start, end));
    // The loops below hold barriers, so what they depend on goes through `uniform_vec4u`.
    let chunk = uniform_vec4u(lid, vec4<u32>(slice.xy, u32(chunk_is_first() && slice.z != 0u), u32(chunk_is_last() && slice.w != 0u)));
    let run = chunk.xy;
    // Whether this dispatch starts the tile's state, and whether it finishes its pixels.
    let first_chunk = chunk.z != 0u;
    let last_chunk = chunk.w != 0u;
    if run.x == run.y && !first_chunk && !last_chunk {
        return; // uniform: this dispatch leaves the tile's state as it is
    }
    let origin = column_origin(tile, u.tile_counts.x, lid);
    let px = origin.x;
    let first_row = origin.y;
    // The invocation's columns: c0, and in the CPU layout c1..c3 below it.
    var c0 = open_column(px, first_row, first_chunk);
    var done_at_start = done_pixels(c0);
#if CPU_LAYOUT
    var c1 = open_column(px, first_row + 4u, first_chunk);
    var c2 = open_column(px, first_row + 8u, first_chunk);
    var c3 = open_column(px, first_row + 12u, first_chunk);
    done_at_start += done_pixels(c1) + done_pixels(c2) + done_pixels(c3);
#endif
    if lid == 0u {
        atomicStore(&done_count, 0u);
    }
    workgroupBarrier();
    atomicAdd(&done_count, done_at_start);
    for (var batch = run.x; batch < run.y; batch += BATCH) {
        workgroupBarrier();
        if lid == 0u {
            done_snapshot = atomicLoad(&done_count);
        }
        if workgroupUniformLoad(&done_snapshot) == TILE_SIZE * TILE_SIZE {
            break;
        }
        for (var i = lid; i < BATCH && batch + i < run.y; i += WORKGROUP) {
            let s = (splat_from_isect[batch + i] - u.page_offset) * SPLAT_STRIDE;
            s_xy[i] = vec2<f32>(splats[s + SPLAT_X], splats[s + SPLAT_Y]);
            s_conic_opacity[i] = vec4<f32>(splats[s + SPLAT_CONIC_A], splats[s + SPLAT_CONIC_B], splats[s + SPLAT_CONIC_C], splats[s + SPLAT_OPACITY]);
            s_color_depth[i] = vec4<f32>(splats[s + SPLAT_R], splats[s + SPLAT_G], splats[s + SPLAT_B], splats[s + SPLAT_DEPTH]);
            if NORMALS {
                let v = splat_from_isect[batch + i];
                s_normal[i] = vec4<f32>(splat_normals[3u * v], splat_normals[3u * v + 1u], splat_normals[3u * v + 2u], 0.0);
            }
        }
        workgroupBarrier();
        let n = min(BATCH, run.y - batch);
        var ended = 0u;
#if SUBGROUPS
        // Each lane reads one splat of every group of `sg_size` from workgroup memory, and the
        // subgroup sees splat t of the group through shuffles: on lavapipe a workgroup-memory
        // load is a loop over the lanes and a 32-bit shuffle one vector permute, so one load
        // serves `sg_size` splats instead of one. The subgroup leaves once all of its pixels are
        // done. A subgroup wider than the workgroup (a 16-invocation CPU layout on 32 lanes) has
        // only WORKGROUP live lanes.
        let lanes = min(sg_size, WORKGROUP);
        var group = 0u;
        loop {
#if CPU_LAYOUT
            let all_done = all(c0.done & c1.done & c2.done & c3.done);
#else
            let all_done = all(c0.done);
#endif
            if group >= n || subgroupAll(all_done) {
                break;
            }
            let mine = min(group + lane, n - 1u);
            let my_xy = s_xy[mine];
            let my_co = s_conic_opacity[mine];
            let my_cd = s_color_depth[mine];
            var my_n = vec4<f32>(0.0);
            if NORMALS {
                my_n = s_normal[mine];
            }
            let count = min(lanes, n - group);
            for (var t = 0u; t < count; t++) {
                let xy = subgroupShuffle(my_xy, t);
                let co = subgroupShuffle(my_co, t);
                let cd = subgroupShuffle(my_cd, t);
                var n = vec4<f32>(0.0);
                if NORMALS {
                    n = subgroupShuffle(my_n, t);
                }
                let used = batch + group + t + 1u - start;
                ended += blend_column(xy, co, cd, n, used, &c0);
#if CPU_LAYOUT
                ended += blend_column(xy, co, cd, n, used, &c1);
                ended += blend_column(xy, co, cd, n, used, &c2);
                ended += blend_column(xy, co, cd, n, used, &c3);
#endif
            }
            group += lanes;
        }
#else
        for (var j = 0u; j < n; j++) {
#if CPU_LAYOUT
            let all_done = all(c0.done & c1.done & c2.done & c3.done);
#else
            let all_done = all(c0.done);
#endif
            if all_done {
                break;
            }
            let used = batch + j + 1u - start;
            var n = vec4<f32>(0.0);
            if NORMALS {
                n = s_normal[j];
            }
            ended += blend_column(s_xy[j], s_conic_opacity[j], s_color_depth[j], n, used, &c0);
#if CPU_LAYOUT
            ended += blend_column(s_xy[j], s_conic_opacity[j], s_color_depth[j], n, used, &c1);
            ended += blend_column(s_xy[j], s_conic_opacity[j], s_color_depth[j], n, used, &c2);
            ended += blend_column(s_xy[j], s_conic_opacity[j], s_color_depth[j], n, used, &c3);
#endif
        }
#endif
        if ended != 0u {
            atomicAdd(&done_count, ended);
        }
    }
    close_column(&c0, last_chunk);
#if CPU_LAYOUT
    close_column(&c1, last_chunk);
    close_column(&c2, last_chunk);
    close_column(&c3, last_chunk);
#endif
}

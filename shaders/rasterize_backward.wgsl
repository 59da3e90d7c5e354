// Backward of the tile rasterizer. One workgroup of 64 invocations per 16x16 tile; each
// invocation owns a column of four pixels (x = lid % 16, y = 4 * (lid / 16) + 0..3), held as the
// components of vec4s. The workgroup walks the tile's splats back to front, reconstructing each
// pixel's transmittance from its final value, and computes every pixel's gradient with respect to
// each splat's mean (x, y), conic (a, b, c), opacity and colour, plus |d/dx| and |d/dy| per pixel
// (gsplat's "absgrad").
//
// No atomics: the sums over the tile's pixels go, in a fixed order, to one row of ROW_GRADS
// floats per intersection (`rows`, indexed by tile-sorted position within the dispatch's window),
// and rasterize_backward_sum.wgsl adds each splat's rows in emission order. Both paths therefore
// give the same bits on every run, however the workgroups are scheduled.
// - Subgroups: splats reach the lanes through shuffles, in groups of the subgroup size (each lane
//   reads one splat of the group from workgroup memory), so one workgroup-memory load serves a
//   whole group; a lane first sums its four pixels in registers, then the subgroup sums its lanes
//   with a butterfly of shuffles, and lane t keeps the group's splat t. After each group the
//   subgroups' sums are added in subgroup order through workgroup memory (one barrier per group,
//   double-buffered).
// - Portable: groups of four splats; each invocation stores its four-pixel sums in workgroup
//   memory and two levels (4 invocations, then 16 partial sums) add them, two barriers per group.
// Batches behind every pixel's last contributor are skipped (their rows stay zero).
//
// It runs once per chunk of splats and slice of the tile's run (shared/chunk.wgsl) and window of
// intersections (shared/isect_window.wgsl), back to front: `splats` is the chunk's page, and
// `carry` passes each pixel's (transmittance, colour behind) from one dispatch to the one in front
// of it. The backmost dispatch starts from the rendered image; the frontmost writes no carry (with
// one dispatch, `carry` is never touched).
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/tile_layout.wgsl"
#import "shared/isect_window.wgsl"
#import "shared/chunk.wgsl"

@group(0) @binding(0) var<uniform> b_uniform: BackwardUniform;
// The kernel reads these private copies (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> b: BackwardUniform;
var<private> u: RenderUniform;
var<private> window: IsectWindow;
@group(0) @binding(1) var<storage, read> splats: array<f32>;
@group(0) @binding(2) var<storage, read> splat_from_isect: array<u32>;
@group(0) @binding(3) var<storage, read> ranges: array<u32>;
@group(0) @binding(4) var<storage, read> rgba: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> consumed: array<u32>;
@group(0) @binding(6) var<storage, read> v_rgba: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> rows: array<f32>;
@group(0) @binding(8) var<storage, read_write> carry: array<vec4<f32>>;

// Splats loaded into workgroup memory at a time.
const BATCH: u32 = 64u;
// Splats per group of the portable path's reduction: 768 / (3 WORKGROUP), 4 or 16.
const GROUP: u32 = 768u / (3u * WORKGROUP);

var<workgroup> s_xy: array<vec2<f32>, BATCH>;
var<workgroup> s_conic_opacity: array<vec4<f32>, BATCH>;
var<workgroup> s_color: array<vec4<f32>, BATCH>;
#if SUBGROUPS
// Two buffers (by group parity) of 64 slots (subgroup, splat of the group) x 3 vec4.
var<workgroup> part: array<vec4<f32>, 384>;
#else
// Per splat of the group and invocation, 3 vec4.
var<workgroup> part: array<vec4<f32>, 768>;
#if !CPU_LAYOUT
// Per splat of the group, 16 sums of 4 invocations.
var<workgroup> part16: array<vec4<f32>, 192>;
#endif
#endif
var<workgroup> max_limit: atomic<u32>;
var<workgroup> max_limit_snapshot: u32;

// The state of one invocation's column of four pixels.
struct Column {
    // Pixel centres: x, and y of the four pixels.
    x: f32,
    y: vec4<f32>,
    // Pixel indices, and whether each pixel lies inside the image.
    p: vec4<u32>,
    inside: vec4<bool>,
    // Tile-sorted index one past each pixel's last contributor (the tile's start when outside).
    limit: vec4<u32>,
    // Final transmittance.
    t_final: vec4<f32>,
    // dLoss/d(red, green, blue) and dLoss/d(alpha) - background . dLoss/d(rgb).
    v_r: vec4<f32>,
    v_g: vec4<f32>,
    v_b: vec4<f32>,
    v_alpha_bg: vec4<f32>,
    // Transmittance in front of the next splat, and the colour accumulated behind it.
    transmittance: vec4<f32>,
    behind_r: vec4<f32>,
    behind_g: vec4<f32>,
    behind_b: vec4<f32>,
}

// One splat's gradients summed over the column, going back to front: un-composites the splat
// from each pixel's state and returns (x, y, a, b), (c, opacity, r, g), (b, |x|, |y|, 0).
fn column_gradient(xy: vec2<f32>, co: vec4<f32>, color: vec3<f32>, isect: u32, c: ptr<function, Column>) -> array<vec4<f32>, 3> {
    let dx = xy.x - (*c).x;
    let dy = xy.y - (*c).y;
    let power = -0.5 * (co.x * dx * dx + co.z * dy * dy) - co.y * dx * dy;
    let vis = exp(power);
    let alpha = splat_alpha4(co.w, vis, power, u.alpha_mode);
    let live = (vec4<u32>(isect) < (*c).limit) & (alpha > vec4<f32>(0.0));
    let ra = 1.0 / (1.0 - alpha);
    let t = select((*c).transmittance, (*c).transmittance * ra, live);
    (*c).transmittance = t;
    let fac = select(vec4<f32>(0.0), alpha * t, live);
    let v_alpha = (*c).v_r * (color.x * t - (*c).behind_r * ra)
        + (*c).v_g * (color.y * t - (*c).behind_g * ra)
        + (*c).v_b * (color.z * t - (*c).behind_b * ra)
        + (*c).t_final * ra * (*c).v_alpha_bg;
    // Where the opacity clamp is active, alpha does not depend on the mean, conic or opacity.
    let geometric = live & (co.w * vis <= vec4<f32>(ALPHA_MAX));
    let v_sigma = select(vec4<f32>(0.0), -co.w * vis * v_alpha, geometric);
    let v_opacity = select(vec4<f32>(0.0), vis * v_alpha, geometric);
    let v_x = v_sigma * (co.x * dx + co.y * dy);
    let v_y = v_sigma * (co.y * dx + co.z * dy);
    (*c).behind_r += color.x * fac;
    (*c).behind_g += color.y * fac;
    (*c).behind_b += color.z * fac;
    let one = vec4<f32>(1.0);
    let v_sigma_sum = dot(v_sigma, one);
    return array<vec4<f32>, 3>(
        vec4<f32>(dot(v_x, one), dot(v_y, one), 0.5 * dx * dx * v_sigma_sum, dx * dot(v_sigma, dy)),
        vec4<f32>(0.5 * dot(v_sigma * dy, dy), dot(v_opacity, one), dot(fac, (*c).v_r), dot(fac, (*c).v_g)),
        vec4<f32>(dot(fac, (*c).v_b), dot(abs(v_x), one), dot(abs(v_y), one), 0.0),
    );
}

// Whether the splat can contribute to any pixel of the column (a cheap, conservative test;
// column_gradient changes nothing where it does not).
fn column_may_touch(xy: vec2<f32>, co: vec4<f32>, isect: u32, c: ptr<function, Column>) -> bool {
    let reachable = vec4<u32>(isect) < (*c).limit;
    return splat_may_touch4(co, xy.x - (*c).x, xy.y - (*c).y, reachable, u.alpha_mode);
}

// Writes part `q` (floats 4q..4q+3, up to ROW_GRADS) of tile-sorted intersection `isect`'s row.
fn write_row(isect: u32, q: u32, value: vec4<f32>) {
    let base = (isect - window.begin) * ROW_GRADS + 4u * q;
    rows[base] = value.x;
    rows[base + 1u] = value.y;
    rows[base + 2u] = value.z;
    if q < 2u {
        rows[base + 3u] = value.w;
    }
}

// A column of four pixels from (px, py0) down, with its state: from the rendered image when this
// dispatch is the backmost, else from the carry of the dispatch behind it.
fn open_column(px: u32, py0: u32, start: u32, backmost: bool) -> Column {
    var c: Column;
    c.x = f32(px) + 0.5;
    c.y = f32(py0) + vec4<f32>(0.5, 1.5, 2.5, 3.5);
    for (var k = 0u; k < 4u; k++) {
        c.inside[k] = px < u.image_size.x && py0 + k < u.image_size.y;
        c.p[k] = select(0u, (py0 + k) * u.image_size.x + px, c.inside[k]);
        let v_out = select(vec4<f32>(0.0), v_rgba[c.p[k]], c.inside[k]);
        c.v_r[k] = v_out.x;
        c.v_g[k] = v_out.y;
        c.v_b[k] = v_out.z;
        c.v_alpha_bg[k] = v_out.w - dot(u.background.xyz, v_out.xyz);
        c.t_final[k] = select(1.0, 1.0 - rgba[c.p[k]].w, c.inside[k]);
        c.limit[k] = select(start, start + consumed[c.p[k]], c.inside[k]);
        if backmost {
            c.transmittance[k] = c.t_final[k];
        } else {
            let carried = carry[c.p[k]];
            c.transmittance[k] = carried.x;
            c.behind_r[k] = carried.y;
            c.behind_g[k] = carried.z;
            c.behind_b[k] = carried.w;
        }
    }
    return c;
}

// Passes the column's state to the dispatch in front of this one.
fn store_carry(c: ptr<function, Column>) {
    for (var k = 0u; k < 4u; k++) {
        if (*c).inside[k] {
            carry[(*c).p[k]] = vec4<f32>((*c).transmittance[k], (*c).behind_r[k], (*c).behind_g[k], (*c).behind_b[k]);
        }
    }
}

fn add_parts(a: array<vec4<f32>, 3>, b: array<vec4<f32>, 3>) -> array<vec4<f32>, 3> {
    return array<vec4<f32>, 3>(a[0] + b[0], a[1] + b[1], a[2] + b[2]);
}

fn column_max_limit(c: Column) -> u32 {
    let l = max(c.limit.xy, c.limit.zw);
    return max(l.x, l.y);
}

#if SUBGROUPS
// Sum over the first `lanes` lanes by a butterfly of shuffles; every lane ends with the same total
// (each step pairs the same operands in every lane). On lavapipe a 32-bit shuffle is one vector
// permute, where subgroupAdd is a loop over the lanes (../shared/notes/lavapipe-performance.md).
fn subgroup_sum(value: vec4<f32>, lanes: u32) -> vec4<f32> {
    var v = value;
    for (var mask = 1u; mask < lanes; mask <<= 1u) {
        v += subgroupShuffleXor(v, mask);
    }
    return v;
}
#endif

@compute @workgroup_size(WORKGROUP)
fn rasterize_backward(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(num_subgroups) num_sg: u32,
#endif
) {
    if uniforms_visible(nwg) {
        b = b_uniform;
    }
    u = b.render;
    window = b.window;
    let tile = workgroup_index(wid, nwg);
    if tile >= uniform_vec4u(lid, vec4<u32>(u.tile_counts.x * u.tile_counts.y)).x {
        return;
    }
    let start = ranges[2u * tile];
    let end = ranges[2u * tile + 1u];
    let chunk = chunk_run(start, end);
    let in_window = max(chunk.x, window.begin);
    let slice = slice_from_back(vec2<u32>(in_window, max(min(chunk.y, window.end), in_window)));
    // The loops below hold barriers, so what they depend on goes through `uniform_vec4u`.
    let run = uniform_vec4u(lid, vec4<u32>(
        slice.xy,
        u32(chunk_is_first() && window.begin == 0u && slice.w != 0u),
        u32(chunk_is_last() && window.end >= window.total && slice.z != 0u),
    ));
    let run_start = run.x;
    let run_end = run.y;
    let frontmost = run.z != 0u;
    let backmost = run.w != 0u;
    if run_start == run_end && !backmost {
        return; // uniform: this dispatch leaves the tile's carried state as it is
    }

    let origin = column_origin(tile, u.tile_counts.x, lid);
    let px = origin.x;
    let first_row = origin.y;
    // The invocation's columns: c0, and in the CPU layout c1..c3 below it.
    var c0 = open_column(px, first_row, start, backmost);
    var limit = max(run_start, column_max_limit(c0));
#if CPU_LAYOUT
    var c1 = open_column(px, first_row + 4u, start, backmost);
    var c2 = open_column(px, first_row + 8u, start, backmost);
    var c3 = open_column(px, first_row + 12u, start, backmost);
    limit = max(limit, max(column_max_limit(c1), max(column_max_limit(c2), column_max_limit(c3))));
#endif

    // Intersections past every pixel's last contributor change nothing: start at the largest limit.
    if lid == 0u {
        atomicStore(&max_limit, run_start);
    }
    workgroupBarrier();
    atomicMax(&max_limit, limit);
    workgroupBarrier();
    if lid == 0u {
        max_limit_snapshot = atomicLoad(&max_limit);
    }
    let last = workgroupUniformLoad(&max_limit_snapshot);
#if SUBGROUPS
    let lanes = min(sg_size, WORKGROUP);
    var parity = 0u;
#endif
    var batch_end = min(run_end, last);
    while batch_end > run_start {
        let batch_start = select(run_start, batch_end - BATCH, batch_end - run_start > BATCH);
        let n = batch_end - batch_start;
        workgroupBarrier();
        for (var i = lid; i < n; i += WORKGROUP) {
            let s = (splat_from_isect[batch_start + i] - u.page_offset) * SPLAT_STRIDE;
            s_xy[i] = vec2<f32>(splats[s + SPLAT_X], splats[s + SPLAT_Y]);
            s_conic_opacity[i] = vec4<f32>(splats[s + SPLAT_CONIC_A], splats[s + SPLAT_CONIC_B], splats[s + SPLAT_CONIC_C], splats[s + SPLAT_OPACITY]);
            s_color[i] = vec4<f32>(splats[s + SPLAT_R], splats[s + SPLAT_G], splats[s + SPLAT_B], 0.0);
        }
        workgroupBarrier();
#if SUBGROUPS
        var group_end = n;
        while group_end > 0u {
            let group_start = select(0u, group_end - lanes, group_end > lanes);
            let count = group_end - group_start;
            let mine = min(group_start + lane, n - 1u);
            let my_xy = s_xy[mine];
            let my_co = s_conic_opacity[mine];
            let my_color = s_color[mine];
            var keep = array<vec4<f32>, 3>();
            for (var t = count; t > 0u; t--) {
                let xy = subgroupShuffle(my_xy, t - 1u);
                let co = subgroupShuffle(my_co, t - 1u);
                let color = subgroupShuffle(my_color, t - 1u);
                let isect = batch_start + group_start + t - 1u;
                // A loop that runs at most once: on lavapipe an `if` only masks lanes, while a
                // loop that every lane leaves is skipped, so subgroups the splat misses skip it.
                loop {
                    var touch = column_may_touch(xy, co, isect, &c0);
#if CPU_LAYOUT
                    touch = touch | column_may_touch(xy, co, isect, &c1) | column_may_touch(xy, co, isect, &c2) | column_may_touch(xy, co, isect, &c3);
#endif
                    if !subgroupAny(touch) {
                        break;
                    }
                    var g = column_gradient(xy, co, color.xyz, isect, &c0);
#if CPU_LAYOUT
                    g = add_parts(g, column_gradient(xy, co, color.xyz, isect, &c1));
                    g = add_parts(g, column_gradient(xy, co, color.xyz, isect, &c2));
                    g = add_parts(g, column_gradient(xy, co, color.xyz, isect, &c3));
#endif
                    let sum0 = subgroup_sum(g[0], lanes);
                    let sum1 = subgroup_sum(g[1], lanes);
                    let sum2 = subgroup_sum(g[2], lanes);
                    if lane == t - 1u {
                        keep = array<vec4<f32>, 3>(sum0, sum1, sum2);
                    }
                    break;
                }
            }
            let slot = parity * 192u + (sg_id * lanes + lane) * 3u;
            if lane < count {
                part[slot] = keep[0];
                part[slot + 1u] = keep[1];
                part[slot + 2u] = keep[2];
            }
            workgroupBarrier();
            // The tile's sums, subgroup by subgroup in a fixed order. The other buffer is written
            // next; this one only after the next group's barrier, which every reader reaches first.
            // A group has up to `lanes` splats of 3 parts each: with subgroups of more than 21
            // lanes (32 on NVIDIA, 64 on AMD) that is more parts than the workgroup has
            // invocations, so each invocation takes every WORKGROUP-th part.
            for (var i = lid; i < count * 3u; i += WORKGROUP) {
                let t = i / 3u;
                let q = i % 3u;
                var sum = vec4<f32>(0.0);
                for (var s = 0u; s < num_sg; s++) {
                    sum += part[parity * 192u + (s * lanes + t) * 3u + q];
                }
                write_row(batch_start + group_start + t, q, sum);
            }
            parity ^= 1u;
            group_end = group_start;
        }
#else
        var group_end = n;
        while group_end > 0u {
            let group_start = select(0u, group_end - GROUP, group_end > GROUP);
            let count = group_end - group_start;
            for (var t = count; t > 0u; t--) {
                let j = group_start + t - 1u;
                let xy = s_xy[j];
                let co = s_conic_opacity[j];
                var g = array<vec4<f32>, 3>();
                // At most once; skipped where the splat misses every pixel (see above).
                let isect = batch_start + j;
                loop {
                    var touch = column_may_touch(xy, co, isect, &c0);
#if CPU_LAYOUT
                    touch = touch | column_may_touch(xy, co, isect, &c1) | column_may_touch(xy, co, isect, &c2) | column_may_touch(xy, co, isect, &c3);
#endif
                    if !touch {
                        break;
                    }
                    let color = s_color[j].xyz;
                    g = column_gradient(xy, co, color, isect, &c0);
#if CPU_LAYOUT
                    g = add_parts(g, column_gradient(xy, co, color, isect, &c1));
                    g = add_parts(g, column_gradient(xy, co, color, isect, &c2));
                    g = add_parts(g, column_gradient(xy, co, color, isect, &c3));
#endif
                    break;
                }
                let slot = ((t - 1u) * WORKGROUP + lid) * 3u;
                part[slot] = g[0];
                part[slot + 1u] = g[1];
                part[slot + 2u] = g[2];
            }
            workgroupBarrier();
#if CPU_LAYOUT
            // One level: part (t, q) adds the 16 invocations' sums of splat t, in order; the
            // barrier after it lets the next group overwrite `part`.
            for (var i = lid; i < count * 3u; i += WORKGROUP) {
                let t = i / 3u;
                let q = i % 3u;
                var sum = vec4<f32>(0.0);
                for (var r = 0u; r < WORKGROUP; r++) {
                    sum += part[(t * WORKGROUP + r) * 3u + q];
                }
                write_row(batch_start + group_start + t, q, sum);
            }
            workgroupBarrier();
#else
            // First level: invocation (t, r) adds invocations 4r..4r+3 of splat t, in order.
            let t1 = lid / 16u;
            if t1 < count {
                let r = lid % 16u;
                for (var q = 0u; q < 3u; q++) {
                    var sum = vec4<f32>(0.0);
                    for (var i = 0u; i < 4u; i++) {
                        sum += part[((t1 * WORKGROUP) + 4u * r + i) * 3u + q];
                    }
                    part16[(t1 * 16u + r) * 3u + q] = sum;
                }
            }
            workgroupBarrier();
            // Second level: the 16 partial sums, in order. The next group writes `part` only after
            // the barrier above, and `part16` only after its first barrier.
            if lid < count * 3u {
                let t = lid / 3u;
                let q = lid % 3u;
                var sum = vec4<f32>(0.0);
                for (var r = 0u; r < 16u; r++) {
                    sum += part16[(t * 16u + r) * 3u + q];
                }
                write_row(batch_start + group_start + t, q, sum);
            }
#endif
            group_end = group_start;
        }
#endif
        batch_end = batch_start;
    }
    if !frontmost {
        store_carry(&c0);
#if CPU_LAYOUT
        store_carry(&c1);
        store_carry(&c2);
        store_carry(&c3);
#endif
    }
}

// Backward of the tile rasterizer. One 16x16 workgroup per tile walks the tile's splats back to
// front, reconstructing each pixel's transmittance from its final value, and computes every
// pixel's gradient with respect to each splat's mean (x, y), conic (a, b, c), opacity and colour.
// Those are summed over the tile's pixels and added to the splat's row of `v_splats` once per tile:
// with f32 atomics where available, else with a compare-and-swap loop on the u32 bit pattern.
// Columns 9 and 10 accumulate |v_x| and |v_y| per pixel (gsplat's "absgrad").
//
// The per-tile sum: with subgroups, the splats reach a subgroup's lanes through shuffles (each
// lane reads one splat of a group of subgroup-size from workgroup memory), each subgroup sums a
// splat's values with a butterfly of shuffles and lane 0 adds them into a per-batch accumulator
// in workgroup memory (a u32 compare-and-swap, since workgroup f32 atomics do not exist), so no
// barrier is needed per splat; the accumulators are flushed once per batch. Without subgroups,
// the values go through workgroup memory and a two-level reduction of 16 x 16 (two barriers)
// runs per splat.
// Batches behind every pixel's last contributor are skipped.
//
// It runs once per chunk of splats (shared/chunk.wgsl), back to front: `splats` and `v_splats` are
// the chunk's pages, and `carry` passes each pixel's transmittance and colour accumulated behind
// (T, r, g, b) from one chunk to the chunk in front of it. The backmost chunk starts from the
// rendered image; the frontmost writes no carry (with one chunk, `carry` is never touched).
#import "shared/dispatch.wgsl"
#import "shared/splat.wgsl"
#import "shared/chunk.wgsl"

@group(0) @binding(0) var<uniform> u_uniform: RenderUniform;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> u: RenderUniform;
@group(0) @binding(1) var<storage, read> splats: array<f32>;
@group(0) @binding(2) var<storage, read> splat_from_isect: array<u32>;
@group(0) @binding(3) var<storage, read> ranges: array<u32>;
@group(0) @binding(4) var<storage, read> rgba: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> consumed: array<u32>;
@group(0) @binding(6) var<storage, read> v_rgba: array<vec4<f32>>;
#if FLOAT_ATOMICS
@group(0) @binding(7) var<storage, read_write> v_splats: array<atomic<f32>>;
#else
@group(0) @binding(7) var<storage, read_write> v_splats: array<atomic<u32>>;
#endif
@group(0) @binding(8) var<storage, read_write> carry: array<vec4<f32>>;

const BATCH: u32 = 256u;
// Gradient values per splat row (see src/splat/backward.rs): x, y, conic a, b, c, opacity, r, g,
// b, |x|, |y|; the row stride is 12.
const GRADS: u32 = 11u;
const V_STRIDE: u32 = 12u;

var<workgroup> s_xy: array<vec2<f32>, BATCH>;
var<workgroup> s_conic_opacity: array<vec4<f32>, BATCH>;
var<workgroup> s_color: array<vec4<f32>, BATCH>;
var<workgroup> s_index: array<u32, BATCH>;
#if SUBGROUPS
var<workgroup> acc: array<atomic<u32>, 2816>; // BATCH * GRADS
#else
var<workgroup> partial: array<array<f32, GRADS>, BATCH>;
// Sums of 16 pixels' gradients each (the first level of the portable path's reduction).
var<workgroup> partial16: array<array<f32, GRADS>, 16>;
#endif
var<workgroup> max_limit: atomic<u32>;
var<workgroup> max_limit_snapshot: u32;

fn add_grad(index: u32, value: f32) {
    if value == 0.0 {
        return;
    }
#if FLOAT_ATOMICS
    atomicAdd(&v_splats[index], value);
#else
    var old = atomicLoad(&v_splats[index]);
    loop {
        let next = bitcast<u32>(bitcast<f32>(old) + value);
        let result = atomicCompareExchangeWeak(&v_splats[index], old, next);
        if result.exchanged {
            break;
        }
        old = result.old_value;
    }
#endif
}

#if SUBGROUPS
// Sum over the subgroup by a butterfly of shuffles; every lane ends with the same total (each
// step pairs the same operands in every lane). On lavapipe a 32-bit shuffle is one vector
// permute, where subgroupAdd is a loop over the lanes (../shared/notes/lavapipe-performance.md).
fn subgroup_sum(value: f32, size: u32) -> f32 {
    var v = value;
    for (var mask = 1u; mask < size; mask <<= 1u) {
        v += subgroupShuffleXor(v, mask);
    }
    return v;
}

fn acc_add(index: u32, value: f32) {
    var old = atomicLoad(&acc[index]);
    loop {
        let next = bitcast<u32>(bitcast<f32>(old) + value);
        let result = atomicCompareExchangeWeak(&acc[index], old, next);
        if result.exchanged {
            break;
        }
        old = result.old_value;
    }
}
#endif

// One splat's gradient at this pixel, going back to front: un-composites the splat from the
// pixel's state (transmittance in front of it, colour behind it), writes the gradients of its
// mean, conic, opacity and colour (and |mean gradient|) into `g` (zeros where it adds nothing)
// and returns whether it contributed to the pixel.
fn splat_gradient(
    xy: vec2<f32>,
    co: vec4<f32>,
    color: vec3<f32>,
    pixel: vec2<f32>,
    t_final: f32,
    v_out: vec4<f32>,
    transmittance: ptr<function, f32>,
    behind: ptr<function, vec3<f32>>,
    g: ptr<function, array<f32, GRADS>>,
) -> bool {
    for (var k = 0u; k < GRADS; k++) {
        (*g)[k] = 0.0;
    }
    let d = xy - pixel;
    let power = -0.5 * (co.x * d.x * d.x + co.z * d.y * d.y) - co.y * d.x * d.y;
    let alpha = splat_alpha(co.w, power, u.alpha_mode);
    if alpha <= 0.0 {
        return false;
    }
    let vis = exp(power);
    let ra = 1.0 / (1.0 - alpha);
    *transmittance *= ra;
    let fac = alpha * *transmittance;
    var v_alpha = dot(color * *transmittance - *behind * ra, v_out.xyz);
    v_alpha += t_final * ra * v_out.w;
    v_alpha -= t_final * ra * dot(u.background.xyz, v_out.xyz);
    if co.w * vis <= ALPHA_MAX {
        let v_sigma = -co.w * vis * v_alpha;
        (*g)[0] = v_sigma * (co.x * d.x + co.y * d.y);
        (*g)[1] = v_sigma * (co.y * d.x + co.z * d.y);
        (*g)[2] = 0.5 * v_sigma * d.x * d.x;
        (*g)[3] = v_sigma * d.x * d.y;
        (*g)[4] = 0.5 * v_sigma * d.y * d.y;
        (*g)[5] = vis * v_alpha;
        (*g)[9] = abs((*g)[0]);
        (*g)[10] = abs((*g)[1]);
    }
    (*g)[6] = fac * v_out.x;
    (*g)[7] = fac * v_out.y;
    (*g)[8] = fac * v_out.z;
    *behind += color * fac;
    return true;
}

// One-dimensional workgroup (256 = 16x16 pixels): naga allows subgroup ids only in 1D workgroups.
@compute @workgroup_size(256)
fn rasterize_backward(
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
    if tile >= u.tile_counts.x * u.tile_counts.y {
        return;
    }
    let px = (tile % u.tile_counts.x) * TILE_SIZE + lid % TILE_SIZE;
    let py = (tile / u.tile_counts.x) * TILE_SIZE + lid / TILE_SIZE;
    let inside = px < u.image_size.x && py < u.image_size.y;
    let p = select(0u, py * u.image_size.x + px, inside);
    let pixel = vec2<f32>(f32(px) + 0.5, f32(py) + 0.5);
    let start = ranges[2u * tile];
    let end = ranges[2u * tile + 1u];
    let run = chunk_run(start, end);
    let first_chunk = chunk_is_first();
    let last_chunk = chunk_is_last();
    if run.x == run.y && !last_chunk {
        return; // uniform: this chunk leaves the tile's carried state as it is
    }

    let t_final = select(1.0, 1.0 - rgba[p].w, inside);
    let v_out = select(vec4<f32>(0.0), v_rgba[p], inside);
    let limit = select(start, start + consumed[p], inside);
    var transmittance = t_final;
    var behind = vec3<f32>(0.0);
    if !last_chunk {
        let carried = carry[p];
        transmittance = carried.x;
        behind = carried.yzw;
    }

    // Intersections past every pixel's last contributor change nothing: start at the largest limit.
    if lid == 0u {
        atomicStore(&max_limit, run.x);
    }
    workgroupBarrier();
    atomicMax(&max_limit, limit);
    workgroupBarrier();
    if lid == 0u {
        max_limit_snapshot = atomicLoad(&max_limit);
    }
    let last = workgroupUniformLoad(&max_limit_snapshot);
    var batch_end = min(run.y, last);
    while batch_end > run.x {
        let batch_start = select(run.x, batch_end - BATCH, batch_end - run.x > BATCH);
        let n = batch_end - batch_start;
        workgroupBarrier();
#if SUBGROUPS
        for (var e = lid; e < BATCH * GRADS; e += BATCH) {
            atomicStore(&acc[e], 0u);
        }
#endif
        if lid < n {
            let splat = splat_from_isect[batch_start + lid] - u.page_offset;
            let s = splat * SPLAT_STRIDE;
            s_index[lid] = splat;
            s_xy[lid] = vec2<f32>(splats[s + SPLAT_X], splats[s + SPLAT_Y]);
            s_conic_opacity[lid] = vec4<f32>(splats[s + SPLAT_CONIC_A], splats[s + SPLAT_CONIC_B], splats[s + SPLAT_CONIC_C], splats[s + SPLAT_OPACITY]);
            s_color[lid] = vec4<f32>(splats[s + SPLAT_R], splats[s + SPLAT_G], splats[s + SPLAT_B], 0.0);
        }
        workgroupBarrier();
#if SUBGROUPS
        // Back to front in groups of `sg_size`: each lane reads one splat of the group from
        // workgroup memory and the subgroup sees splat t through shuffles (one vector permute on
        // lavapipe, where every workgroup-memory load is a loop over the lanes).
        var group_end = n;
        while group_end > 0u {
            let group_start = select(0u, group_end - sg_size, group_end > sg_size);
            let mine = min(group_start + lane, n - 1u);
            let my_xy = s_xy[mine];
            let my_co = s_conic_opacity[mine];
            let my_color = s_color[mine];
            for (var t = group_end - group_start; t > 0u; t--) {
                let j = group_start + t - 1u;
                let xy = subgroupShuffle(my_xy, t - 1u);
                let co = subgroupShuffle(my_co, t - 1u);
                let color = subgroupShuffle(my_color, t - 1u);
                var g: array<f32, GRADS>;
                let contributes = batch_start + j < limit
                    && splat_gradient(xy, co, color.xyz, pixel, t_final, v_out, &transmittance, &behind, &g);
                // Sum over the tile's pixels.
                if subgroupAny(contributes) {
                    var sums: array<f32, GRADS>;
                    for (var k = 0u; k < GRADS; k++) {
                        sums[k] = subgroup_sum(g[k], sg_size);
                    }
                    if lane == 0u {
                        for (var k = 0u; k < GRADS; k++) {
                            if sums[k] != 0.0 {
                                acc_add(j * GRADS + k, sums[k]);
                            }
                        }
                    }
                }
            }
            group_end = group_start;
        }
        workgroupBarrier();
        for (var e = lid; e < n * GRADS; e += BATCH) {
            add_grad(s_index[e / GRADS] * V_STRIDE + e % GRADS, bitcast<f32>(atomicLoad(&acc[e])));
        }
#else
        for (var jj = 0u; jj < n; jj++) {
            let j = n - 1u - jj;
            var g: array<f32, GRADS>;
            if batch_start + j < limit {
                splat_gradient(s_xy[j], s_conic_opacity[j], s_color[j].xyz, pixel, t_final, v_out, &transmittance, &behind, &g);
            }
            // Sum over the tile's pixels in two levels of 16 with two barriers: 176 invocations
            // each add 16 pixels' value of one gradient, then 11 add the 16 partial sums. The
            // next splat's writes to `partial` come after every read of it (second barrier), and
            // its writes to `partial16` after the first barrier, which the readers of
            // `partial16` reach only once they are done.
            for (var k = 0u; k < GRADS; k++) {
                partial[lid][k] = g[k];
            }
            workgroupBarrier();
            if lid < 16u * GRADS {
                let k = lid / 16u;
                let first = (lid % 16u) * 16u;
                var sum = 0.0;
                for (var i = 0u; i < 16u; i++) {
                    sum += partial[first + i][k];
                }
                partial16[lid % 16u][k] = sum;
            }
            workgroupBarrier();
            if lid < GRADS {
                var sum = 0.0;
                for (var i = 0u; i < 16u; i++) {
                    sum += partial16[i][lid];
                }
                add_grad(s_index[j] * V_STRIDE + lid, sum);
            }
        }
#endif
        batch_end = batch_start;
    }
    if !first_chunk && inside {
        carry[p] = vec4<f32>(transmittance, behind);
    }
}

// The Gaussians of a level-of-detail cut, written as the renderer's tensors (src/io/lod/cut.rs).
// The page pool and the output may each span several buffers; each dispatch binds one of each:
//   emit_rows:    each cut node whose row lies in the bound pool buffer is copied out;
//   blend_parent: each cut node whose parent's row lies in it is blended towards the parent.
// Every emit_rows dispatch runs before every blend_parent dispatch, so each output row is written
// once and then blended at most once. Cut node i is row i - out_row0 of the bound output page.
//
// Blending with weight w: mean, log scale and SH are interpolated, the rotation is normalised
// after interpolating on the parent's side of the sphere, and the opacity goes towards
// 1 - (1 - α_parent)^(1/k) for a parent of k children: k such copies drawn where the parent was
// cover what the parent covered, so a node appears where its parent was without a jump.
#import "shared/dispatch.wgsl"

struct EmitParams {
    // Nodes in the cut.
    count: u32,
    // First pool row in the bound buffer, and its rows.
    pool_row0: u32,
    pool_rows: u32,
    // Floats per pool row: 11 + 3 * sh_coeffs.
    row_width: u32,
    // SH coefficients per Gaussian (1, 4, 9 or 16).
    sh_coeffs: u32,
    // First cut node in the bound output page, and the page's rows.
    out_row0: u32,
    out_rows: u32,
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params_uniform: EmitParams;
// The kernel reads this private copy (see `uniforms_visible` in shared/dispatch.wgsl).
var<private> params: EmitParams;
// Per cut node: pool row, parent's pool row (NO_ROW: none), weight (f32 bits), parent's children.
@group(0) @binding(1) var<storage, read> records: array<vec4<u32>>;
// Rows of row_width floats: mean (3), log scale (3), rotation (4), opacity logit, SH.
@group(0) @binding(2) var<storage, read> pool: array<f32>;
@group(0) @binding(3) var<storage, read_write> means: array<f32>;
@group(0) @binding(4) var<storage, read_write> log_scales: array<f32>;
@group(0) @binding(5) var<storage, read_write> quats: array<f32>;
@group(0) @binding(6) var<storage, read_write> opacity_logits: array<f32>;
@group(0) @binding(7) var<storage, read_write> sh_dc: array<f32>;
@group(0) @binding(8) var<storage, read_write> sh_rest: array<f32>;

const WG: u32 = 256u;
const NO_ROW: u32 = 0xffffffffu;

fn sigmoid(x: f32) -> f32 {
    return 1.0 / (1.0 + exp(-x));
}

fn logit(p: f32) -> f32 {
    let q = clamp(p, 1e-6, 1.0 - 1e-6);
    return log(q / (1.0 - q));
}

fn record_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// The record of row r of the bound output page, or a record of NO_ROWs past the cut's end.
fn record_of(r: u32) -> vec4<u32> {
    if r >= params.out_rows || params.out_row0 + r >= params.count {
        return vec4<u32>(NO_ROW, NO_ROW, 0u, 0u);
    }
    return records[params.out_row0 + r];
}

// Where a pool row starts in the bound pool buffer, or NO_ROW when it lies in another one.
fn pool_offset(row: u32) -> u32 {
    if row == NO_ROW || row < params.pool_row0 || row - params.pool_row0 >= params.pool_rows {
        return NO_ROW;
    }
    return (row - params.pool_row0) * params.row_width;
}

@compute @workgroup_size(256)
fn emit_rows(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = record_index(gid, nwg);
    let at = pool_offset(record_of(i).x);
    if at == NO_ROW {
        return;
    }
    for (var k = 0u; k < 3u; k++) {
        means[3u * i + k] = pool[at + k];
        log_scales[3u * i + k] = pool[at + 3u + k];
        sh_dc[3u * i + k] = pool[at + 11u + k];
    }
    for (var k = 0u; k < 4u; k++) {
        quats[4u * i + k] = pool[at + 6u + k];
    }
    opacity_logits[i] = pool[at + 10u];
    let rest = 3u * (params.sh_coeffs - 1u);
    for (var k = 0u; k < rest; k++) {
        sh_rest[rest * i + k] = pool[at + 14u + k];
    }
}

@compute @workgroup_size(256)
fn blend_parent(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if uniforms_visible(nwg) {
        params = params_uniform;
    }
    let i = record_index(gid, nwg);
    let record = record_of(i);
    let at = pool_offset(record.y);
    if at == NO_ROW {
        return;
    }
    let w = bitcast<f32>(record.z);
    for (var k = 0u; k < 3u; k++) {
        means[3u * i + k] = mix(means[3u * i + k], pool[at + k], w);
        log_scales[3u * i + k] = mix(log_scales[3u * i + k], pool[at + 3u + k], w);
        sh_dc[3u * i + k] = mix(sh_dc[3u * i + k], pool[at + 11u + k], w);
    }
    let own = vec4<f32>(quats[4u * i], quats[4u * i + 1u], quats[4u * i + 2u], quats[4u * i + 3u]);
    var parent = vec4<f32>(pool[at + 6u], pool[at + 7u], pool[at + 8u], pool[at + 9u]);
    if dot(own, parent) < 0.0 {
        parent = -parent;
    }
    let q = normalize(mix(normalize(own), normalize(parent), w));
    for (var k = 0u; k < 4u; k++) {
        quats[4u * i + k] = q[k];
    }
    let share = 1.0 - pow(1.0 - sigmoid(pool[at + 10u]), 1.0 / f32(max(record.w, 1u)));
    opacity_logits[i] = logit(mix(sigmoid(opacity_logits[i]), share, w));
    let rest = 3u * (params.sh_coeffs - 1u);
    for (var k = 0u; k < rest; k++) {
        sh_rest[rest * i + k] = mix(sh_rest[rest * i + k], pool[at + 14u + k], w);
    }
}

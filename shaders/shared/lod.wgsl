// What the level-of-detail cut's stages share (lod_cut.wgsl, lod_resolve.wgsl): the camera and
// cut parameters, and a node's visibility and size. The importer declares `params: CutParams`
// (the private copy of its uniform).

struct CutParams {
    // World-to-camera rotation rows, with the translation in w.
    rot0: vec4<f32>,
    rot1: vec4<f32>,
    rot2: vec4<f32>,
    // fx, fy, cx, cy.
    focal: vec4<f32>,
    // width, height, near plane, asked threshold in pixels.
    view: vec4<f32>,
    // Nodes in the tree.
    nodes: u32,
    // Pages in the tree.
    pages: u32,
    // Most nodes the cut may hold.
    budget: u32,
    // Nodes in the cut (cut_resolve only).
    cut_count: u32,
    // Nodes per page in the pool.
    page_nodes: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

const BINS: u32 = 256u;
const BIN_ONE_PIXEL: f32 = 128.0;
const BINS_PER_OCTAVE: f32 = 16.0;
// Steps per bin of the fine threshold: the cut's threshold is a multiple of 1/FINE of a bin.
const FINE: u32 = 256u;
const NOT_RESIDENT: u32 = 0xffffffffu;
const NO_NODE: u32 = 0xffffffffu;

fn to_camera(p: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(
        dot(params.rot0.xyz, p) + params.rot0.w,
        dot(params.rot1.xyz, p) + params.rot1.w,
        dot(params.rot2.xyz, p) + params.rot2.w,
    );
}

// Whether a sphere reaches into the view frustum (near plane and the four image edges).
fn in_view(s: vec4<f32>) -> bool {
    let c = to_camera(s.xyz);
    let r = s.w;
    let right = (params.view.x - params.focal.z) / params.focal.x;
    let left = params.focal.z / params.focal.x;
    let down = (params.view.y - params.focal.w) / params.focal.y;
    let up = params.focal.w / params.focal.y;
    return c.z + r > params.view.z
        && (c.x - right * c.z) * inverseSqrt(1.0 + right * right) <= r
        && (-c.x - left * c.z) * inverseSqrt(1.0 + left * left) <= r
        && (c.y - down * c.z) * inverseSqrt(1.0 + down * down) <= r
        && (-c.y - up * c.z) * inverseSqrt(1.0 + up * up) <= r;
}

// The projected radius of a sphere in bins (continuous): the radius over the distance to its
// nearest point, at least the near plane.
fn size_level(s: vec4<f32>) -> f32 {
    let c = to_camera(s.xyz);
    let d = max(length(c) - s.w, params.view.z);
    let px = max(params.focal.x, params.focal.y) * s.w / d;
    return log2(max(px, 1e-30)) * BINS_PER_OCTAVE + BIN_ONE_PIXEL;
}

// The smallest bin at or above a continuous level, clamped to 0..=BINS.
fn level_bin(level: f32) -> u32 {
    return u32(clamp(ceil(level), 0.0, f32(BINS)));
}

// The smallest fine step (1/FINE of a bin) at or above a continuous level, clamped to
// 0..=BINS * FINE; its bin is fine_to_bin of it.
fn level_fine(level: f32) -> u32 {
    return u32(clamp(ceil(level * f32(FINE)), 0.0, f32(BINS * FINE)));
}

// The smallest bin at or above a fine step.
fn fine_to_bin(f: u32) -> u32 {
    return (f + FINE - 1u) / FINE;
}

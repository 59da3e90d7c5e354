// Sliding windows of the 11-tap Gaussian (shared/ssim.wgsl's GAUSS) held in registers: a kernel
// walks along a row or a column, pushes one value per step and, once 11 are in, reads one filtered
// value per step. Every load of the walk serves 11 taps, where a gather per output would load 11
// values (on lavapipe every load with a varying address is a loop over the lanes; see
// ../shared/notes/lavapipe-performance.md). The fields are named, not an array, so no backend
// needs a dynamically indexed private array. The importer imports shared/ssim.wgsl first.

struct Window4 {
    a0: vec4<f32>, a1: vec4<f32>, a2: vec4<f32>, a3: vec4<f32>, a4: vec4<f32>, a5: vec4<f32>,
    a6: vec4<f32>, a7: vec4<f32>, a8: vec4<f32>, a9: vec4<f32>, a10: vec4<f32>,
}

// Drops the oldest value and appends `v`.
fn push4(w: ptr<function, Window4>, v: vec4<f32>) {
    (*w).a0 = (*w).a1;
    (*w).a1 = (*w).a2;
    (*w).a2 = (*w).a3;
    (*w).a3 = (*w).a4;
    (*w).a4 = (*w).a5;
    (*w).a5 = (*w).a6;
    (*w).a6 = (*w).a7;
    (*w).a7 = (*w).a8;
    (*w).a8 = (*w).a9;
    (*w).a9 = (*w).a10;
    (*w).a10 = v;
}

// The filtered value at the window's centre, in tap order (the same sum, term by term, as a loop
// over GAUSS).
fn filter4(w: Window4) -> vec4<f32> {
    var m = GAUSS[0] * w.a0;
    m += GAUSS[1] * w.a1;
    m += GAUSS[2] * w.a2;
    m += GAUSS[3] * w.a3;
    m += GAUSS[4] * w.a4;
    m += GAUSS[5] * w.a5;
    m += GAUSS[6] * w.a6;
    m += GAUSS[7] * w.a7;
    m += GAUSS[8] * w.a8;
    m += GAUSS[9] * w.a9;
    m += GAUSS[10] * w.a10;
    return m;
}

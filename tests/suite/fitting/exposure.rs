//! Exposure compensation (`shaders/exposure.wgsl`) against its CPU reference and central finite
//! differences, on both kernel paths, with one-page and several-page images (64 KiB pages: the
//! 96×80 image spans two), and Adam against its reference over several steps.

use wgsplat::loss::exposure::{
    self, ExposureAdam, ExposureState, IDENTITY, TERMS, reference as cpu,
};
use wgsplat::testing::{TestRng, both_paths, both_paths_small_pages, compare_close};
use wgsplat::{DType, GpuContext, MemoryCategory, Tensor};

fn gpu_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Three views' transforms near the identity; the tests use view 1.
fn transforms(rng: &mut TestRng) -> Vec<f32> {
    (0..3)
        .flat_map(|_| IDENTITY)
        .map(|v| v + rng.vec_f32(1, -0.2, 0.2)[0])
        .collect()
}

fn view_transform(all: &[f32], view: usize) -> [f32; TERMS] {
    all[view * TERMS..(view + 1) * TERMS].try_into().unwrap()
}

struct GpuResult {
    exposed: Vec<f32>,
    d_image: Vec<f32>,
    d_t: Vec<f32>,
}

fn run_gpu(
    ctx: &GpuContext,
    image: &[f32],
    d_out: &[f32],
    all: &[f32],
    shape: [usize; 3],
) -> GpuResult {
    let _gpu = gpu_lock();
    let mut enc = ctx.encoder("exposure test");
    let x = Tensor::from_slice(&mut enc, image, &shape, MemoryCategory::Other, "image").unwrap();
    let g = Tensor::from_slice(&mut enc, d_out, &shape, MemoryCategory::Other, "d_out").unwrap();
    let t = Tensor::from_slice(&mut enc, all, &[3, TERMS], MemoryCategory::Other, "t").unwrap();
    let exposed = exposure::record_apply(&mut enc, &x, &t, 1).unwrap();
    let (d_image, d_t) = exposure::record_backward(&mut enc, &x, &g, &t, 1).unwrap();
    assert_eq!(d_t.dtype(), DType::F32);
    let reads = [
        exposed.record_read(&mut enc).unwrap(),
        d_image.record_read(&mut enc).unwrap(),
        d_t.record_read(&mut enc).unwrap(),
    ];
    ctx.submit(enc).unwrap();
    let [a, b, c] = reads.map(|r| r.wait(ctx).unwrap());
    GpuResult {
        exposed: a,
        d_image: b,
        d_t: c,
    }
}

#[test]
fn forward_and_backward_match_the_cpu_reference_on_one_and_several_pages() {
    let mut rng = TestRng::new(7);
    for (contexts, (w, h)) in [
        (both_paths(), (37usize, 29usize)),
        (both_paths_small_pages(), (96, 80)),
    ] {
        assert!(w * h * 4 > 16_384 || (w, h) == (37, 29));
        let image = rng.vec_f32(w * h * 4, 0.0, 1.0);
        let d_out = rng.vec_f32(w * h * 4, -1.0, 1.0);
        let all = transforms(&mut rng);
        let t = view_transform(&all, 1);
        let want_exposed = cpu::apply(&image, &t);
        let (want_d_image, want_d_t) = cpu::backward(&image, &d_out, &t);
        for ctx in contexts {
            let got = run_gpu(ctx, &image, &d_out, &all, [h, w, 4]);
            compare_close("exposed", &got.exposed, &want_exposed, 1e-6, 1e-5).unwrap();
            compare_close("d_image", &got.d_image, &want_d_image, 1e-6, 1e-5).unwrap();
            // A sum over every pixel: f32 in a different order.
            compare_close("dL/dT", &got.d_t, &want_d_t, 1e-3, 1e-4).unwrap();
        }
    }
}

/// `L = ½ Σ (T(x) - y)²` in f64.
fn loss(image: &[f32], target: &[f32], t: &[f32; TERMS]) -> f64 {
    cpu::apply(image, t)
        .iter()
        .zip(target)
        .enumerate()
        .filter(|(i, _)| i % 4 != 3)
        .map(|(_, (a, b))| 0.5 * (f64::from(*a) - f64::from(*b)).powi(2))
        .sum()
}

#[test]
fn gradients_match_central_finite_differences() {
    let mut rng = TestRng::new(11);
    let (w, h) = (12usize, 9usize);
    let image = rng.vec_f32(w * h * 4, 0.0, 1.0);
    let target = rng.vec_f32(w * h * 4, 0.0, 1.0);
    let all = transforms(&mut rng);
    let t = view_transform(&all, 1);
    // dL/d exposed = T(x) - y (alpha: 0).
    let d_out: Vec<f32> = cpu::apply(&image, &t)
        .iter()
        .zip(&target)
        .enumerate()
        .map(|(i, (a, b))| if i % 4 == 3 { 0.0 } else { a - b })
        .collect();
    let eps = 1e-3f32;
    let fd_t: Vec<f32> = (0..TERMS)
        .map(|k| {
            let (mut plus, mut minus) = (t, t);
            plus[k] += eps;
            minus[k] -= eps;
            ((loss(&image, &target, &plus) - loss(&image, &target, &minus))
                / (2.0 * f64::from(eps))) as f32
        })
        .collect();
    let pixels = [0usize, 5, 17, 40, 107];
    let fd_x: Vec<f32> = pixels
        .iter()
        .flat_map(|&p| (0..3).map(move |c| 4 * p + c))
        .map(|i| {
            let (mut plus, mut minus) = (image.clone(), image.clone());
            plus[i] += eps;
            minus[i] -= eps;
            ((loss(&plus, &target, &t) - loss(&minus, &target, &t)) / (2.0 * f64::from(eps))) as f32
        })
        .collect();
    for ctx in both_paths() {
        let got = run_gpu(ctx, &image, &d_out, &all, [h, w, 4]);
        compare_close("dL/dT vs finite differences", &got.d_t, &fd_t, 2e-3, 2e-3).unwrap();
        let got_x: Vec<f32> = pixels
            .iter()
            .flat_map(|&p| (0..3).map(move |c| 4 * p + c))
            .map(|i| got.d_image[i])
            .collect();
        compare_close("dL/dx vs finite differences", &got_x, &fd_x, 2e-3, 2e-3).unwrap();
    }
}

#[test]
fn adam_steps_match_the_reference_and_leave_other_views_alone() {
    let mut rng = TestRng::new(3);
    let settings = ExposureAdam::with_lr(0.01);
    for ctx in both_paths() {
        let _gpu = gpu_lock();
        let mut enc = ctx.encoder("exposure adam");
        let state = ExposureState::identity(&mut enc, 3).unwrap();
        let mut want_t = IDENTITY;
        let mut want_m = [0.0f32; 2 * TERMS];
        for step in 1..=5u64 {
            let g: [f32; TERMS] = rng.vec_f32(TERMS, -1.0, 1.0).try_into().unwrap();
            let gradient =
                Tensor::from_slice(&mut enc, &g, &[TERMS], MemoryCategory::Other, "g").unwrap();
            exposure::record_adam(
                &mut enc,
                &state.transforms,
                &state.moments,
                &gradient,
                2,
                step,
                settings,
            )
            .unwrap();
            cpu::adam(&mut want_t, &mut want_m, &g, step, settings);
        }
        ctx.submit(enc).unwrap();
        let (t, m) = state.read(ctx).unwrap();
        compare_close(
            "untouched views",
            &t[..2 * TERMS],
            &[IDENTITY, IDENTITY].concat(),
            0.0,
            0.0,
        )
        .unwrap();
        compare_close(
            "transform after 5 steps",
            &t[2 * TERMS..],
            &want_t,
            1e-6,
            1e-5,
        )
        .unwrap();
        compare_close(
            "moments after 5 steps",
            &m[4 * TERMS..],
            &want_m,
            1e-6,
            1e-4,
        )
        .unwrap();
        assert!(want_t != IDENTITY, "the steps moved the transform");
    }
}

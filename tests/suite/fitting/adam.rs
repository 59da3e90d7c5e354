//! Adam against a CPU reference (f64 arithmetic, f32 storage) over several steps, on both kernel
//! paths and paged; the 3DGS learning-rate schedules against their formula; row surgery keeping
//! parameters and moments aligned.

use wgsplat::optim::{
    AdamConfig, ExponentialDecay, GaussianOptimizer, LearningRateSchedule, LearningRates,
    MomentStorage, adam_step,
};
use wgsplat::splat::GaussianTensors;
use wgsplat::splat::gaussians::Attribute;
use wgsplat::testing::{TestRng, both_paths, both_paths_small_pages, compare_close, compare_exact};
use wgsplat::{DType, GpuContext, MemoryCategory, Tensor};

const ATOL: f32 = 1e-6;
const RTOL: f32 = 1e-5;

/// One parameter tensor's CPU Adam state.
#[derive(Clone, Debug)]
struct CpuAdam {
    param: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
}

impl CpuAdam {
    fn new(param: Vec<f32>) -> Self {
        let n = param.len();
        CpuAdam {
            param,
            m: vec![0.0; n],
            v: vec![0.0; n],
        }
    }

    fn step(&mut self, grad: &[f32], lr: f32, step: u64, c: &AdamConfig) {
        let bc1 = 1.0 - c.beta1.powi(step as i32);
        let bc2 = 1.0 - c.beta2.powi(step as i32);
        for (i, &g) in grad.iter().enumerate() {
            let g = f64::from(g);
            let m = c.beta1 * f64::from(self.m[i]) + (1.0 - c.beta1) * g;
            let v = c.beta2 * f64::from(self.v[i]) + (1.0 - c.beta2) * g * g;
            self.m[i] = m as f32;
            self.v[i] = v as f32;
            let update = f64::from(lr) * (m / bc1) / ((v / bc2).sqrt() + c.eps);
            self.param[i] = (f64::from(self.param[i]) - update) as f32;
        }
    }

    fn gather(&self, index: &[u32], width: usize) -> CpuAdam {
        let rows = |data: &[f32]| -> Vec<f32> {
            index
                .iter()
                .flat_map(|&r| data[r as usize * width..(r as usize + 1) * width].to_vec())
                .collect()
        };
        CpuAdam {
            param: rows(&self.param),
            m: rows(&self.m),
            v: rows(&self.v),
        }
    }

    fn append(&mut self, params: &[f32]) {
        self.param.extend_from_slice(params);
        self.m.extend(std::iter::repeat_n(0.0, params.len()));
        self.v.extend(std::iter::repeat_n(0.0, params.len()));
    }
}

/// Random gradients with some exact zeros (Gaussians nobody saw).
fn random_grads(rng: &mut TestRng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            if rng.unit() < 0.1 {
                0.0
            } else {
                rng.range(-1.0, 1.0) * 10f32.powf(rng.range(-4.0, 1.0))
            }
        })
        .collect()
}

fn check_flat_adam(ctx: &GpuContext, n: usize) {
    let path = ctx.info().kernel_path();
    let config = AdamConfig::default();
    let mut rng = TestRng::new(n as u64 + 11);
    let mut cpu = CpuAdam::new(rng.vec_f32(n, -2.0, 2.0));
    let mut enc = ctx.encoder("adam");
    let param =
        Tensor::from_slice(&mut enc, &cpu.param, &[n], MemoryCategory::Other, "param").unwrap();
    let m = Tensor::zeros(&mut enc, DType::F32, &[n], MemoryCategory::Other, "m").unwrap();
    let v = Tensor::zeros(&mut enc, DType::F32, &[n], MemoryCategory::Other, "v").unwrap();
    for step in 1..=5u64 {
        let g = random_grads(&mut rng, n);
        let grad = Tensor::from_slice(&mut enc, &g, &[n], MemoryCategory::Other, "grad").unwrap();
        let lr = 0.01 * step as f32;
        adam_step(&mut enc, &param, &grad, &m, &v, lr, step, &config).unwrap();
        cpu.step(&g, lr, step, &config);
    }
    ctx.submit(enc).unwrap();
    let what = |name: &str| format!("adam {name} n={n} {path}");
    compare_close(
        &what("param"),
        &param.read::<f32>(ctx).unwrap(),
        &cpu.param,
        ATOL,
        RTOL,
    )
    .unwrap();
    compare_close(&what("m"), &m.read::<f32>(ctx).unwrap(), &cpu.m, ATOL, RTOL).unwrap();
    compare_close(&what("v"), &v.read::<f32>(ctx).unwrap(), &cpu.v, ATOL, RTOL).unwrap();
}

#[test]
fn adam_step_matches_cpu() {
    for ctx in both_paths() {
        for n in [0, 1, 255, 256, 257, 65_537] {
            check_flat_adam(ctx, n);
        }
    }
}

#[test]
fn adam_step_paged() {
    for ctx in both_paths_small_pages() {
        check_flat_adam(ctx, 3 * 16_384 + 17);
    }
}

#[test]
fn adam_step_rejects_bad_arguments() {
    let ctx = both_paths()[1];
    let mut enc = ctx.encoder("adam");
    let a = Tensor::zeros(&mut enc, DType::F32, &[10], MemoryCategory::Other, "a").unwrap();
    let b = Tensor::zeros(&mut enc, DType::F32, &[10], MemoryCategory::Other, "b").unwrap();
    let c = Tensor::zeros(&mut enc, DType::F32, &[10], MemoryCategory::Other, "c").unwrap();
    let short = Tensor::zeros(&mut enc, DType::F32, &[9], MemoryCategory::Other, "short").unwrap();
    let config = AdamConfig::default();
    assert!(adam_step(&mut enc, &a, &b, &c, &short, 0.1, 1, &config).is_err());
    assert!(adam_step(&mut enc, &a, &b, &c, &c, 0.1, 1, &config).is_err());
    assert!(
        adam_step(
            &mut enc,
            &a,
            &b,
            &c,
            &a.bitcast(DType::U32),
            0.1,
            1,
            &config
        )
        .is_err()
    );
    let d = Tensor::zeros(&mut enc, DType::F32, &[10], MemoryCategory::Other, "d").unwrap();
    assert!(adam_step(&mut enc, &a, &b, &c, &d, 0.1, 0, &config).is_err());
    let bad = AdamConfig {
        beta1: 1.0,
        ..config
    };
    assert!(adam_step(&mut enc, &a, &b, &c, &d, 0.1, 1, &bad).is_err());
    ctx.submit(enc).unwrap();
}

/// Random Gaussian tensors (upload of flat random data per attribute) and the same data on the CPU.
pub(crate) fn random_gaussians(
    enc: &mut wgsplat::Encoder,
    rng: &mut TestRng,
    n: usize,
    degree: u32,
    category: MemoryCategory,
) -> (GaussianTensors, Vec<Vec<f32>>) {
    let t = GaussianTensors::uninit(enc, n, degree, category, "g").unwrap();
    let data: Vec<Vec<f32>> = t
        .attributes()
        .iter()
        .map(|a| rng.vec_f32(a.len() as usize, -1.0, 1.0))
        .collect();
    for (a, d) in t.attributes().into_iter().zip(&data) {
        a.write(enc, d).unwrap();
    }
    (t, data)
}

fn widths(t: &GaussianTensors) -> Vec<usize> {
    t.attributes()
        .iter()
        .map(|a| a.row_elems() as usize)
        .collect()
}

/// Parameters, first and second moments of every attribute, read back as f32.
fn read_state(
    ctx: &GpuContext,
    params: &GaussianTensors,
    opt: &GaussianOptimizer,
) -> [Vec<Vec<f32>>; 3] {
    let p = params
        .attributes()
        .map(|a| a.read::<f32>(ctx).unwrap())
        .to_vec();
    let [m, v] = opt.read_moments(ctx).unwrap();
    [p, m, v]
}

fn compare_state(
    ctx: &GpuContext,
    what: &str,
    params: &GaussianTensors,
    opt: &GaussianOptimizer,
    cpu: &[CpuAdam],
) {
    let state = read_state(ctx, params, opt);
    for (set, got) in ["param", "m", "v"].into_iter().zip(&state) {
        for (i, (g, c)) in got.iter().zip(cpu).enumerate() {
            let want = match set {
                "param" => &c.param,
                "m" => &c.m,
                _ => &c.v,
            };
            let name = wgsplat::splat::gaussians::ATTRIBUTE_NAMES[i];
            compare_close(&format!("{what} {set}.{name}"), g, want, ATOL, RTOL).unwrap();
        }
    }
}

/// f32 moments, which the f64 CPU reference follows to f32 rounding.
fn f32_config() -> AdamConfig {
    AdamConfig {
        moments: MomentStorage::F32,
        ..AdamConfig::default()
    }
}

fn rates(step: u64) -> LearningRates {
    let mut r = LearningRateSchedule::three_dgs(3.0, 100).at(step);
    // Larger rates than 3DGS's so the parameters move visibly.
    r.means *= 100.0;
    r
}

/// Steps the GPU optimizer and the CPU reference together.
fn step_both(
    ctx: &GpuContext,
    rng: &mut TestRng,
    params: &GaussianTensors,
    opt: &mut GaussianOptimizer,
    cpu: &mut [CpuAdam],
) {
    let mut enc = ctx.encoder("step");
    let grads = GaussianTensors::uninit(
        &mut enc,
        params.len() as usize,
        params.max_sh_degree(),
        MemoryCategory::Gradients,
        "grads",
    )
    .unwrap();
    let step = opt.step_count() + 1;
    let lrs = rates(step);
    for ((g, c), lr) in grads
        .attributes()
        .into_iter()
        .zip(cpu.iter_mut())
        .zip(lrs.as_array())
    {
        let data = random_grads(rng, g.len() as usize);
        g.write(&mut enc, &data).unwrap();
        c.step(&data, lr, step, &opt.config);
    }
    opt.step(&mut enc, params, &grads, &lrs).unwrap();
    ctx.submit(enc).unwrap();
}

fn check_gaussian_optimizer(ctx: &GpuContext, n: usize, degree: u32) {
    let what = format!(
        "GaussianOptimizer n={n} degree={degree} {}",
        ctx.info().kernel_path()
    );
    let mut rng = TestRng::new(7 + n as u64 + u64::from(degree));
    let mut enc = ctx.encoder("init");
    let (params, data) =
        random_gaussians(&mut enc, &mut rng, n, degree, MemoryCategory::Parameters);
    let mut opt = GaussianOptimizer::new(&mut enc, &params, f32_config()).unwrap();
    ctx.submit(enc).unwrap();
    let mut cpu: Vec<CpuAdam> = data.into_iter().map(CpuAdam::new).collect();
    for _ in 0..4 {
        step_both(ctx, &mut rng, &params, &mut opt, &mut cpu);
    }
    assert_eq!(opt.step_count(), 4);
    compare_state(ctx, &what, &params, &opt, &cpu);
}

#[test]
fn gaussian_optimizer_matches_cpu() {
    for ctx in both_paths() {
        for (n, degree) in [(0, 3), (1, 0), (1000, 3), (300, 1)] {
            check_gaussian_optimizer(ctx, n, degree);
        }
    }
}

#[test]
fn gaussian_optimizer_paged() {
    for ctx in both_paths_small_pages() {
        // 256 rows per page at 64 KiB pages: 4 pages.
        check_gaussian_optimizer(ctx, 1000, 3);
        check_gaussian_optimizer(ctx, 777, 2);
    }
}

#[test]
fn gaussian_optimizer_rejects_misaligned_gradients() {
    let ctx = both_paths()[1];
    let mut rng = TestRng::new(3);
    let mut enc = ctx.encoder("misaligned");
    let (params, _) = random_gaussians(&mut enc, &mut rng, 10, 3, MemoryCategory::Parameters);
    let (grads, _) = random_gaussians(&mut enc, &mut rng, 11, 3, MemoryCategory::Gradients);
    let (grads_sh, _) = random_gaussians(&mut enc, &mut rng, 10, 1, MemoryCategory::Gradients);
    let mut opt = GaussianOptimizer::new(&mut enc, &params, f32_config()).unwrap();
    assert!(opt.step(&mut enc, &params, &grads, &rates(1)).is_err());
    assert!(opt.step(&mut enc, &params, &grads_sh, &rates(1)).is_err());
    assert_eq!(opt.step_count(), 0);
    ctx.submit(enc).unwrap();
}

/// Steps, keeps a shuffled subset (with duplicates) of rows, appends new rows, steps again; the
/// GPU parameters and moments must follow the CPU reference doing the same surgery.
fn check_row_surgery(ctx: &GpuContext, n: usize, degree: u32) {
    let what = format!(
        "row surgery n={n} degree={degree} {}",
        ctx.info().kernel_path()
    );
    let mut rng = TestRng::new(99 + n as u64);
    let mut enc = ctx.encoder("init");
    let (mut params, data) =
        random_gaussians(&mut enc, &mut rng, n, degree, MemoryCategory::Parameters);
    let mut opt = GaussianOptimizer::new(&mut enc, &params, f32_config()).unwrap();
    ctx.submit(enc).unwrap();
    let widths = widths(&params);
    let mut cpu: Vec<CpuAdam> = data.into_iter().map(CpuAdam::new).collect();
    for _ in 0..2 {
        step_both(ctx, &mut rng, &params, &mut opt, &mut cpu);
    }

    // Keep about two thirds of the rows, in a scrambled order with some repeated. The GPU result
    // must be exactly the GPU rows picked; the CPU reference follows the same surgery.
    let read_all = |params: &GaussianTensors, opt: &GaussianOptimizer| -> Vec<Vec<f32>> {
        read_state(ctx, params, opt).into_iter().flatten().collect()
    };
    let before = read_all(&params, &opt);
    let keep: Vec<u32> = (0..n * 2 / 3)
        .map(|_| rng.vec_u32(1, n as u32)[0])
        .collect();
    let mut enc = ctx.encoder("select");
    let index = Tensor::from_slice(
        &mut enc,
        &keep,
        &[keep.len()],
        MemoryCategory::Other,
        "keep",
    )
    .unwrap();
    opt.select_rows(&mut enc, &mut params, &index).unwrap();
    ctx.submit(enc).unwrap();
    for (c, &w) in cpu.iter_mut().zip(&widths) {
        *c = c.gather(&keep, w);
    }
    assert_eq!(params.len(), keep.len() as u64);
    assert_eq!(opt.len(), keep.len() as u64);
    let after = read_all(&params, &opt);
    for (i, (old, new)) in before.iter().zip(&after).enumerate() {
        let w = widths[i % 6];
        let want: Vec<f32> = keep
            .iter()
            .flat_map(|&r| old[r as usize * w..(r as usize + 1) * w].to_vec())
            .collect();
        compare_exact(&format!("{what} after select, tensor {i}"), new, &want).unwrap();
    }
    compare_state(ctx, &format!("{what} after select"), &params, &opt, &cpu);

    // Append new Gaussians: zero moments for them.
    let added = n / 3 + 1;
    let mut enc = ctx.encoder("append");
    let (new_rows, new_data) = random_gaussians(
        &mut enc,
        &mut rng,
        added,
        degree,
        MemoryCategory::Parameters,
    );
    opt.append_rows(&mut enc, &mut params, &new_rows).unwrap();
    ctx.submit(enc).unwrap();
    for (c, d) in cpu.iter_mut().zip(&new_data) {
        c.append(d);
    }
    assert_eq!(params.len(), (keep.len() + added) as u64);
    assert_eq!(params.means.category(), MemoryCategory::Parameters);
    assert_eq!(
        opt.moments().sets()[0].means.category(),
        MemoryCategory::OptimizerState
    );
    compare_state(ctx, &format!("{what} after append"), &params, &opt, &cpu);

    // The step count carries on, and the next step sees aligned rows.
    for _ in 0..2 {
        step_both(ctx, &mut rng, &params, &mut opt, &mut cpu);
    }
    assert_eq!(opt.step_count(), 4);
    compare_state(
        ctx,
        &format!("{what} after more steps"),
        &params,
        &opt,
        &cpu,
    );

    // Clearing one group's moments.
    let mut enc = ctx.encoder("clear");
    opt.clear_group_moments(&mut enc, Attribute::OpacityLogits)
        .unwrap();
    ctx.submit(enc).unwrap();
    let opacity = &mut cpu[3];
    opacity
        .m
        .iter_mut()
        .chain(opacity.v.iter_mut())
        .for_each(|x| *x = 0.0);
    compare_state(
        ctx,
        &format!("{what} after clearing opacity moments"),
        &params,
        &opt,
        &cpu,
    );
}

#[test]
fn row_surgery_keeps_moments_aligned() {
    for ctx in both_paths() {
        check_row_surgery(ctx, 500, 3);
        check_row_surgery(ctx, 90, 0);
    }
}

#[test]
fn row_surgery_paged() {
    for ctx in both_paths_small_pages() {
        check_row_surgery(ctx, 1100, 3);
    }
}

#[test]
fn position_schedule_matches_3dgs_formula() {
    let extent = 4.2;
    let max_steps = 30_000;
    let s = LearningRateSchedule::three_dgs(extent, max_steps);
    let (init, fin) = (1.6e-4 * extent, 1.6e-6 * extent);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1e-30);
    for step in [
        0u64, 1, 10, 7_500, 15_000, 29_999, 30_000, 31_000, 1_000_000,
    ] {
        let t = (step as f64 / max_steps as f64).min(1.0);
        let want = (init.ln() * (1.0 - t) + fin.ln() * t).exp();
        assert!(
            close(s.means.at(step), want),
            "step {step}: {} vs {want}",
            s.means.at(step)
        );
        let r = s.at(step);
        assert_eq!(r.means, want as f32);
        assert_eq!(r.sh_dc, 2.5e-3);
        assert_eq!(r.sh_rest, (2.5e-3f64 / 20.0) as f32);
        assert_eq!(r.opacity_logits, 0.05);
        assert_eq!(r.log_scales, 5e-3);
        assert_eq!(r.quats, 1e-3);
    }
    assert!(close(s.means.at(15_000), (init * fin).sqrt()));

    // With a delay, the rate eases in from delay_mult along a quarter sine.
    let delayed = ExponentialDecay {
        delay_steps: 100,
        ..s.means
    };
    assert!(close(delayed.at(0), 0.01 * init));
    let t = 50.0 / max_steps as f64;
    let want = (0.01 + 0.99 * (std::f64::consts::FRAC_PI_4).sin())
        * (init.ln() * (1.0 - t) + fin.ln() * t).exp();
    assert!(close(delayed.at(50), want));
    assert!(close(delayed.at(100), s.means.at(100)));
    let zero = ExponentialDecay {
        lr_init: 0.0,
        lr_final: 0.0,
        ..s.means
    };
    assert_eq!(zero.at(10), 0.0);
}

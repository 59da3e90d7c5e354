//! Adam with bfloat16 moments: the kernel against its CPU reference (the same f32 arithmetic and
//! the same stochastic rounding), and the optimizer's trajectory against f32 Adam within a stated
//! bound that round-to-nearest moments break.

use wgsplat::optim::bf16::{f32_to_bf16_nearest, pack, reference_step, rounding_seed, unpack};
use wgsplat::optim::{AdamConfig, GaussianOptimizer, LearningRates, MomentStorage};
use wgsplat::splat::GaussianTensors;
use wgsplat::testing::{TestRng, both_paths, both_paths_small_pages, compare_close};
use wgsplat::{GpuContext, MemoryCategory};

fn bf16_config() -> AdamConfig {
    AdamConfig {
        moments: MomentStorage::Bf16,
        ..AdamConfig::default()
    }
}

fn same_rates(lr: f32) -> LearningRates {
    LearningRates {
        means: lr,
        log_scales: lr,
        quats: lr,
        opacity_logits: lr,
        sh_dc: lr,
        sh_rest: lr,
    }
}

/// A model of `n` Gaussians at `degree` with random parameters, and the same data on the host.
fn random_model(
    ctx: &GpuContext,
    rng: &mut TestRng,
    n: usize,
    degree: u32,
) -> (GaussianTensors, Vec<Vec<f32>>) {
    let mut enc = ctx.encoder("model");
    let model = super::adam::random_gaussians(&mut enc, rng, n, degree, MemoryCategory::Parameters);
    ctx.submit(enc).unwrap();
    model
}

/// One optimizer step on the GPU with the host gradients `grads` and rate `lr` for every group.
fn gpu_step(
    ctx: &GpuContext,
    opt: &mut GaussianOptimizer,
    params: &GaussianTensors,
    grads: &[Vec<f32>],
    lr: f32,
) {
    let gpu_grads = upload_grads(ctx, params, grads);
    let mut enc = ctx.encoder("step");
    opt.step(&mut enc, params, &gpu_grads, &same_rates(lr))
        .unwrap();
    ctx.submit(enc).unwrap();
}

/// Uploads one step's gradients (one host vector per attribute) as a full-size set.
fn upload_grads(ctx: &GpuContext, like: &GaussianTensors, grads: &[Vec<f32>]) -> GaussianTensors {
    let mut enc = ctx.encoder("grads");
    let g = like.with_rows(&mut enc, "grads", grads).unwrap();
    ctx.submit(enc).unwrap();
    g
}

/// Gradients over many magnitudes with some exact zeros (Gaussians nobody saw).
fn random_grads(rng: &mut TestRng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| match rng.unit() < 0.1 {
            true => 0.0,
            false => rng.range(-1.0, 1.0) * 10f32.powf(rng.range(-6.0, 1.0)),
        })
        .collect()
}

fn check_against_reference(ctx: &GpuContext, n: usize, degree: u32) {
    let what = format!(
        "bf16 Adam n={n} degree={degree} {}",
        ctx.info().kernel_path()
    );
    let mut rng = TestRng::new(41 + n as u64);
    let config = bf16_config();
    let (params, mut cpu_params) = random_model(ctx, &mut rng, n, degree);
    let mut enc = ctx.encoder("optimizer");
    let mut opt = GaussianOptimizer::new(&mut enc, &params, config).unwrap();
    ctx.submit(enc).unwrap();
    let mut cpu_words: Vec<Vec<u32>> = cpu_params.iter().map(|p| vec![0; p.len()]).collect();
    for step in 1..=6u64 {
        let lr = 0.01 * step as f32;
        let grads: Vec<Vec<f32>> = cpu_params
            .iter()
            .map(|p| random_grads(&mut rng, p.len()))
            .collect();
        gpu_step(ctx, &mut opt, &params, &grads, lr);
        let (step_size, inv_sqrt_bc2) = config.folded_factors(step, lr).unwrap();
        for (a, ((p, w), g)) in cpu_params
            .iter_mut()
            .zip(&mut cpu_words)
            .zip(&grads)
            .enumerate()
        {
            let seed = rounding_seed(step, a);
            reference_step(p, w, g, &config, step_size, inv_sqrt_bc2, 0, seed);
        }
    }
    let [m, v] = opt.read_moments(ctx).unwrap();
    for (a, name) in wgsplat::splat::gaussians::ATTRIBUTE_NAMES
        .iter()
        .enumerate()
    {
        let got = params.attributes()[a].read::<f32>(ctx).unwrap();
        compare_close(
            &format!("{what} param {name}"),
            &got,
            &cpu_params[a],
            1e-5,
            1e-4,
        )
        .unwrap();
        let (want_m, want_v): (Vec<f32>, Vec<f32>) =
            cpu_words[a].iter().map(|&w| unpack(w)).unzip();
        // One bfloat16 step (2^-7 relative) covers a rounding that fell the other way because
        // the GPU fused a multiply-add the reference did not.
        let one_step = 1.0 / 128.0;
        compare_close(&format!("{what} m {name}"), &m[a], &want_m, 1e-30, one_step).unwrap();
        compare_close(&format!("{what} v {name}"), &v[a], &want_v, 1e-30, one_step).unwrap();
        // ... but the rounding is the reference's: nearly every word is identical.
        let words = opt.moments().sets()[0].attributes()[a]
            .read::<u32>(ctx)
            .unwrap();
        let same = words
            .iter()
            .zip(&cpu_words[a])
            .filter(|(x, y)| x == y)
            .count();
        assert!(
            same * 100 >= words.len() * 99,
            "{what} {name}: only {same} of {} words match the reference",
            words.len()
        );
    }
}

#[test]
fn bf16_adam_matches_its_cpu_reference() {
    for ctx in both_paths() {
        for (n, degree) in [(1, 0), (1000, 3), (300, 1)] {
            check_against_reference(ctx, n, degree);
        }
    }
    for ctx in both_paths_small_pages() {
        check_against_reference(ctx, 1000, 3);
    }
}

/// f32 Adam in f64 arithmetic, and the same update with bfloat16 moments rounded to nearest.
struct HostAdam {
    param: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    nearest_bf16: bool,
}

impl HostAdam {
    fn step(&mut self, grad: &[f32], lr: f32, step: u64, c: &AdamConfig) {
        let bc1 = 1.0 - c.beta1.powi(step as i32);
        let bc2 = 1.0 - c.beta2.powi(step as i32);
        let narrow = |x: f64| match self.nearest_bf16 {
            true => f32::from_bits(u32::from(f32_to_bf16_nearest(x as f32)) << 16),
            false => x as f32,
        };
        for (i, &g) in grad.iter().enumerate() {
            let g = f64::from(g);
            let m = c.beta1 * f64::from(self.m[i]) + (1.0 - c.beta1) * g;
            let v = c.beta2 * f64::from(self.v[i]) + (1.0 - c.beta2) * g * g;
            let update = f64::from(lr) * (m / bc1) / ((v / bc2).sqrt() + c.eps);
            self.param[i] = (f64::from(self.param[i]) - update) as f32;
            self.m[i] = narrow(m);
            self.v[i] = narrow(v);
        }
    }
}

/// The bound, as a fraction of the largest distance Adam can move an element in `steps` steps
/// (about lr per step): mean and largest deviation from f32 Adam.
const MEAN_BOUND: f64 = 0.01;
const MAX_BOUND: f64 = 0.05;

/// Mean and largest |a - b| over all elements, in units of `scale`.
fn deviation(a: &[Vec<f32>], b: &[Vec<f32>], scale: f64) -> (f64, f64) {
    let d: Vec<f64> = a
        .iter()
        .flatten()
        .zip(b.iter().flatten())
        .map(|(&x, &y)| (f64::from(x) - f64::from(y)).abs() / scale)
        .collect();
    let mean = d.iter().sum::<f64>() / d.len().max(1) as f64;
    (mean, d.iter().copied().fold(0.0, f64::max))
}

/// 3,000 steps with gradients that shrink 70-fold (as a converging model's do), magnitudes from
/// 1e-6 to 0.1 and a tenth of them zero at each step. bfloat16 moments with stochastic rounding
/// stay within the bound of f32 Adam; rounded to nearest, the second moment can no longer decay
/// (its 0.1% per-step change is below half a bfloat16 step), the steps shrink too little, and the
/// bound is broken: the bound is tight enough to catch a biased rounding.
#[test]
fn bf16_moments_track_f32_adam_within_the_bound() {
    let ctx = both_paths()[0];
    let (n, steps, lr) = (128, 3000u64, 1e-3f32);
    let config = bf16_config();
    let mut rng = TestRng::new(5);
    let (params, data) = random_model(ctx, &mut rng, n, 0);
    let mut enc = ctx.encoder("optimizer");
    let mut opt = GaussianOptimizer::new(&mut enc, &params, config).unwrap();
    ctx.submit(enc).unwrap();
    let host = |nearest_bf16| -> Vec<HostAdam> {
        data.iter()
            .map(|p| HostAdam {
                param: p.clone(),
                m: vec![0.0; p.len()],
                v: vec![0.0; p.len()],
                nearest_bf16,
            })
            .collect()
    };
    let (mut exact, mut nearest) = (host(false), host(true));
    let scales: Vec<Vec<f32>> = data
        .iter()
        .map(|p| {
            (0..p.len())
                .map(|_| 10f32.powf(rng.range(-6.0, -1.0)))
                .collect()
        })
        .collect();
    for step in 1..=steps {
        let shrink = (-(step as f32) / 700.0).exp();
        let grads: Vec<Vec<f32>> = scales
            .iter()
            .map(|s| {
                s.iter()
                    .map(|&s| match rng.unit() < 0.1 {
                        true => 0.0,
                        false => s * shrink * rng.range(0.5, 1.5),
                    })
                    .collect()
            })
            .collect();
        gpu_step(ctx, &mut opt, &params, &grads, lr);
        for ((e, r), g) in exact.iter_mut().zip(nearest.iter_mut()).zip(&grads) {
            e.step(g, lr, step, &config);
            r.step(g, lr, step, &config);
        }
    }
    let gpu: Vec<Vec<f32>> = params
        .attributes()
        .map(|a| a.read::<f32>(ctx).unwrap())
        .to_vec();
    let want: Vec<Vec<f32>> = exact.iter().map(|e| e.param.clone()).collect();
    let frozen: Vec<Vec<f32>> = nearest.iter().map(|e| e.param.clone()).collect();
    let scale = f64::from(lr) * steps as f64;
    let (mean, max) = deviation(&gpu, &want, scale);
    let (frozen_mean, frozen_max) = deviation(&frozen, &want, scale);
    println!(
        "deviation from f32 Adam over {steps} steps, in units of lr x steps: stochastic bf16 \
         mean {mean:.5} max {max:.5}; nearest bf16 mean {frozen_mean:.5} max {frozen_max:.5}"
    );
    assert!(
        mean <= MEAN_BOUND && max <= MAX_BOUND,
        "bf16 moments: mean {mean}, max {max}"
    );
    assert!(
        frozen_mean > MEAN_BOUND,
        "round-to-nearest moments stay within the bound (mean {frozen_mean}): it cannot tell them apart"
    );
}

/// Converting moments between the storages: bfloat16 → f32 is exact, f32 → bfloat16 rounds to
/// nearest.
#[test]
fn moments_convert_between_storages() {
    let ctx = both_paths()[1];
    let mut rng = TestRng::new(8);
    let (params, _) = random_model(ctx, &mut rng, 500, 3);
    let mut enc = ctx.encoder("optimizer");
    let mut opt = GaussianOptimizer::new(&mut enc, &params, bf16_config()).unwrap();
    ctx.submit(enc).unwrap();
    for step in 1..=3 {
        let grads: Vec<Vec<f32>> = params
            .attributes()
            .iter()
            .map(|a| random_grads(&mut rng, a.len() as usize))
            .collect();
        gpu_step(ctx, &mut opt, &params, &grads, 0.01 * step as f32);
    }
    let packed = opt.read_moments(ctx).unwrap();
    let wide = opt.converted(ctx, MomentStorage::F32).unwrap();
    assert_eq!(wide.moments().storage(), MomentStorage::F32);
    assert_eq!(wide.config.moments, MomentStorage::F32);
    assert_eq!(wide.step_count(), 3);
    assert_eq!(
        wide.read_moments(ctx).unwrap(),
        packed,
        "bf16 -> f32 is exact"
    );
    let back = wide.converted(ctx, MomentStorage::Bf16).unwrap();
    assert_eq!(back.read_moments(ctx).unwrap(), packed, "and back again");
    // f32 values off the bfloat16 grid round to nearest.
    let words = back.moments().sets()[0].means.read::<u32>(ctx).unwrap();
    let (m, v) = unpack(words[0]);
    assert_eq!(
        pack(f32_to_bf16_nearest(m), f32_to_bf16_nearest(v)),
        words[0]
    );
}

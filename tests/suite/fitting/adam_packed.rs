//! Adam with both moments packed into one word per element, in the 16-bit state
//! ([`MomentStorage::Packed`]) and the earlier bfloat16 packing: each kernel against its CPU
//! reference (the same f32 arithmetic and the same stochastic rounding), and each storage's
//! trajectory against f32 Adam within a stated bound, which the next-coarser storage breaks.

use wgsplat::optim::bf16::{
    bf16_to_f32, f32_to_bf16_nearest, f32_to_bf16_stochastic, rounding_bits, rounding_seed,
};
use wgsplat::optim::{AdamConfig, GaussianOptimizer, LearningRates, MomentStorage, packed};
use wgsplat::splat::GaussianTensors;
use wgsplat::testing::{TestRng, both_paths, both_paths_small_pages, compare_close};
use wgsplat::{GpuContext, MemoryCategory};

fn config_with(moments: MomentStorage) -> AdamConfig {
    AdamConfig {
        moments,
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

fn check_against_reference(ctx: &GpuContext, n: usize, degree: u32, storage: MomentStorage) {
    let what = format!(
        "{} Adam n={n} degree={degree} {}",
        storage.name(),
        ctx.info().kernel_path()
    );
    let mut rng = TestRng::new(41 + n as u64);
    let config = config_with(storage);
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
            let factors = (step_size, inv_sqrt_bc2);
            packed::reference_step(p, w, g, &config, factors, (0, seed)).unwrap();
        }
    }
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
        let words = opt.moments().sets()[0].attributes()[a]
            .read::<u32>(ctx)
            .unwrap();
        // Within one step of each stored value, which covers a rounding that fell the other way
        // because the GPU fused a multiply-add (or rounded a division) differently ...
        let (got_m, got_v) = fields(storage, &words);
        let (want_m, want_v) = fields(storage, &cpu_words[a]);
        let (m_atol, m_rtol, v_rtol) = match storage {
            MomentStorage::Packed => (1.0, 0.0, 1.0 / 2048.0),
            _ => (1e-30, 1.0 / 128.0, 1.0 / 128.0),
        };
        compare_close(&format!("{what} m {name}"), &got_m, &want_m, m_atol, m_rtol).unwrap();
        compare_close(&format!("{what} v {name}"), &got_v, &want_v, 1e-30, v_rtol).unwrap();
        // ... but the rounding is the reference's: nearly every word is identical.
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

/// The stored fields of packed words: for the 16-bit state, m's 13-bit integer and v; for
/// bfloat16, the two moments.
fn fields(storage: MomentStorage, words: &[u32]) -> (Vec<f32>, Vec<f32>) {
    words
        .iter()
        .map(|&w| match storage {
            MomentStorage::Packed => (packed::ratio_of(w) as f32, packed::v_of(w)),
            _ => wgsplat::optim::bf16::unpack(w),
        })
        .unzip()
}

#[test]
fn packed_adam_matches_its_cpu_reference() {
    for storage in [MomentStorage::Packed, MomentStorage::Bf16] {
        for ctx in both_paths() {
            for (n, degree) in [(1, 0), (1000, 3), (300, 1)] {
                check_against_reference(ctx, n, degree, storage);
            }
        }
    }
    for ctx in both_paths_small_pages() {
        check_against_reference(ctx, 1000, 3, MomentStorage::Packed);
    }
}

/// How the host Adam stores one moment between steps.
#[derive(Clone, Copy, PartialEq)]
enum Narrow {
    /// f32.
    F32,
    /// bfloat16, rounded to nearest.
    Nearest,
    /// bfloat16, rounded stochastically (by the kernel's random bits).
    Stochastic,
}

/// Adam in f64 arithmetic with each moment stored as `narrow_m` and `narrow_v` say.
struct HostAdam {
    param: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    narrow_m: Narrow,
    narrow_v: Narrow,
}

impl HostAdam {
    fn new(param: &[f32], narrow_m: Narrow, narrow_v: Narrow) -> Self {
        HostAdam {
            param: param.to_vec(),
            m: vec![0.0; param.len()],
            v: vec![0.0; param.len()],
            narrow_m,
            narrow_v,
        }
    }

    fn step(&mut self, grad: &[f32], lr: f32, step: u64, c: &AdamConfig) {
        let bc1 = 1.0 - c.beta1.powi(step as i32);
        let bc2 = 1.0 - c.beta2.powi(step as i32);
        let narrow = |x: f64, how: Narrow, r: u32| match how {
            Narrow::F32 => x as f32,
            Narrow::Nearest => bf16_to_f32(f32_to_bf16_nearest(x as f32)),
            Narrow::Stochastic => bf16_to_f32(f32_to_bf16_stochastic(x as f32, r)),
        };
        for (i, &g) in grad.iter().enumerate() {
            let g = f64::from(g);
            let m = c.beta1 * f64::from(self.m[i]) + (1.0 - c.beta1) * g;
            let v = c.beta2 * f64::from(self.v[i]) + (1.0 - c.beta2) * g * g;
            let update = f64::from(lr) * (m / bc1) / ((v / bc2).sqrt() + c.eps);
            self.param[i] = (f64::from(self.param[i]) - update) as f32;
            let r = rounding_bits(i as u32, rounding_seed(step, 0));
            self.m[i] = narrow(m, self.narrow_m, r >> 16);
            self.v[i] = narrow(v, self.narrow_v, r);
        }
    }
}

/// A bound, as a fraction of the largest distance Adam can move an element in `steps` steps
/// (about lr per step): mean and largest deviation from f32 Adam.
#[derive(Clone, Copy, Debug)]
struct Bound {
    mean: f64,
    max: f64,
}

/// The 16-bit state's bound.
const PACKED_BOUND: Bound = Bound {
    mean: 0.001,
    max: 0.005,
};
/// The bfloat16 packing's bound, ten times wider.
const BF16_BOUND: Bound = Bound {
    mean: 0.01,
    max: 0.05,
};

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
/// 1e-6 to 0.1 and a tenth of them zero at each step, on the GPU in both packed storages and on
/// the host in f64 and with bfloat16 moments rounded to nearest. Each bound is tight enough to
/// catch the next-coarser storage: the 16-bit state stays within [`PACKED_BOUND`], which the
/// bfloat16 packing breaks (its 8-bit v wanders by several percent over the 1,000 steps it
/// remembers); the bfloat16 packing stays within [`BF16_BOUND`], which bfloat16 rounded to nearest
/// breaks (v can no longer decay: its 0.1% per-step change is below half a bfloat16 step).
#[test]
fn packed_moments_track_f32_adam_within_their_bounds() {
    let ctx = both_paths()[0];
    let (n, steps, lr) = (128, 3000u64, 1e-3f32);
    // The same model twice, one per storage.
    let (params, data) = random_model(ctx, &mut TestRng::new(5), n, 0);
    let (packed_params, _) = random_model(ctx, &mut TestRng::new(5), n, 0);
    let mut rng = TestRng::new(6);
    let mut enc = ctx.encoder("optimizer");
    let mut bf16 =
        GaussianOptimizer::new(&mut enc, &params, config_with(MomentStorage::Bf16)).unwrap();
    let mut packed =
        GaussianOptimizer::new(&mut enc, &packed_params, config_with(MomentStorage::Packed))
            .unwrap();
    ctx.submit(enc).unwrap();
    let config = AdamConfig::default();
    let host = |narrow_m, narrow_v| -> Vec<HostAdam> {
        data.iter()
            .map(|p| HostAdam::new(p, narrow_m, narrow_v))
            .collect()
    };
    let mut exact = host(Narrow::F32, Narrow::F32);
    let mut nearest = host(Narrow::Nearest, Narrow::Nearest);
    // Which moment the bfloat16 drift comes from: each one alone in bfloat16.
    let mut m_only = host(Narrow::Stochastic, Narrow::F32);
    let mut v_only = host(Narrow::F32, Narrow::Stochastic);
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
        gpu_step(ctx, &mut bf16, &params, &grads, lr);
        gpu_step(ctx, &mut packed, &packed_params, &grads, lr);
        for runs in [&mut exact, &mut nearest, &mut m_only, &mut v_only] {
            for (run, g) in runs.iter_mut().zip(&grads) {
                run.step(g, lr, step, &config);
            }
        }
    }
    let read = |set: &GaussianTensors| -> Vec<Vec<f32>> {
        set.attributes()
            .map(|a| a.read::<f32>(ctx).unwrap())
            .to_vec()
    };
    let want: Vec<Vec<f32>> = exact.iter().map(|e| e.param.clone()).collect();
    let frozen: Vec<Vec<f32>> = nearest.iter().map(|e| e.param.clone()).collect();
    let scale = f64::from(lr) * steps as f64;
    let packed_dev = deviation(&read(&packed_params), &want, scale);
    let bf16_dev = deviation(&read(&params), &want, scale);
    let frozen_dev = deviation(&frozen, &want, scale);
    let params_of =
        |runs: &[HostAdam]| -> Vec<Vec<f32>> { runs.iter().map(|r| r.param.clone()).collect() };
    let m_only_dev = deviation(&params_of(&m_only), &want, scale);
    let v_only_dev = deviation(&params_of(&v_only), &want, scale);
    println!(
        "deviation from f32 Adam over {steps} steps, in units of lr x steps (mean, max): \
         16-bit state {packed_dev:.5?}; stochastic bf16 {bf16_dev:.5?}; nearest bf16 {frozen_dev:.5?}; \
         host, bf16 m only {m_only_dev:.5?}, bf16 v only {v_only_dev:.5?}"
    );
    assert!(
        v_only_dev.0 > 5.0 * m_only_dev.0,
        "the bfloat16 drift should come from v (the 16-bit state's layout rests on it): \
         m alone {m_only_dev:?}, v alone {v_only_dev:?}"
    );
    let within = |(mean, max): (f64, f64), b: Bound| mean <= b.mean && max <= b.max;
    assert!(
        within(packed_dev, PACKED_BOUND),
        "16-bit state: {packed_dev:?}"
    );
    assert!(within(bf16_dev, BF16_BOUND), "bf16 moments: {bf16_dev:?}");
    assert!(
        !within(bf16_dev, PACKED_BOUND),
        "bf16 moments stay within the 16-bit bound ({bf16_dev:?}): it cannot tell them apart"
    );
    assert!(
        !within(frozen_dev, BF16_BOUND),
        "round-to-nearest moments stay within the bf16 bound ({frozen_dev:?}): it cannot tell them apart"
    );
}

/// Converting moments between the storages: a packed state → f32 is exact, f32 → a packed state
/// rounds to nearest, so a round trip gives the same words.
#[test]
fn moments_convert_between_storages() {
    let ctx = both_paths()[1];
    for storage in [MomentStorage::Packed, MomentStorage::Bf16] {
        let mut rng = TestRng::new(8);
        let (params, _) = random_model(ctx, &mut rng, 500, 3);
        let mut enc = ctx.encoder("optimizer");
        let mut opt = GaussianOptimizer::new(&mut enc, &params, config_with(storage)).unwrap();
        ctx.submit(enc).unwrap();
        for step in 1..=3 {
            let grads: Vec<Vec<f32>> = params
                .attributes()
                .iter()
                .map(|a| random_grads(&mut rng, a.len() as usize))
                .collect();
            gpu_step(ctx, &mut opt, &params, &grads, 0.01 * step as f32);
        }
        let words = |o: &GaussianOptimizer| -> Vec<Vec<u32>> {
            o.moments().sets()[0]
                .attributes()
                .map(|a| a.read::<u32>(ctx).unwrap())
                .to_vec()
        };
        let before = words(&opt);
        let wide_values = opt.read_moments(ctx).unwrap();
        let wide = opt.converted(ctx, MomentStorage::F32).unwrap();
        assert_eq!(wide.moments().storage(), MomentStorage::F32);
        assert_eq!(wide.config.moments, MomentStorage::F32);
        assert_eq!(wide.step_count(), 3);
        assert_eq!(
            wide.read_moments(ctx).unwrap(),
            wide_values,
            "{storage:?} -> f32 is exact"
        );
        let back = wide.converted(ctx, storage).unwrap();
        assert_eq!(back.moments().storage(), storage);
        assert_eq!(words(&back), before, "{storage:?} -> f32 -> {storage:?}");
    }
    // f32 values off the grid round to nearest.
    let step = AdamConfig::default().ratio_step();
    let (m, v) = (0.012_345_67f32, 0.000_123_456_7f32);
    let word = packed::pack_nearest(m, v, step);
    let (m2, v2) = packed::unpack(word, step);
    assert!((v2 - v).abs() <= v * 2f32.powi(-12), "v {v} -> {v2}");
    assert!(
        (m2 - m).abs() <= 0.5 * step * v2.sqrt() * 1.001,
        "m {m} -> {m2}"
    );
}

//! The MCMC strategy: relocation and growth checked against their definitions on both kernel paths
//! and on small pages (the model spans several pages), the regularisers and the position noise
//! against CPU ports, and a short training run.

use wgsplat::GpuContext;
use wgsplat::MemoryCategory;
use wgsplat::data::Dataset;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::gpu::kernels::row_chunks;
use wgsplat::optim::MomentStorage;
use wgsplat::splat::GaussianTensors;
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::testing::{TestRng, both_paths, both_paths_small_pages, compare_close, fresh_context};
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::mcmc::{record_noise, record_regularizers};
use wgsplat::train::strategy::ChunkRows;
use wgsplat::train::{StrategyKind, TrainConfig, Trainer};

const DEAD_LOGIT: f32 = -8.0;

fn tiny_dataset() -> Dataset {
    generate(&BuiltinOptions {
        resolution: 16,
        train_views: 2,
        test_views: 1,
        points: 100,
        ..BuiltinOptions::default()
    })
    .unwrap()
}

/// `n` Gaussians with distinct means; every third one dead.
fn model(n: usize, seed: u64) -> CpuGaussians {
    let mut rng = TestRng::new(seed);
    let mut g = CpuGaussians::default();
    for i in 0..n {
        g.means.push([
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
        ]);
        g.log_scales.push([
            rng.range(-5.0, -3.0),
            rng.range(-5.0, -3.0),
            rng.range(-5.0, -3.0),
        ]);
        g.quats
            .push([1.0, rng.range(-0.3, 0.3), rng.range(-0.3, 0.3), 0.1]);
        g.opacity_logits.push(if i % 3 == 0 {
            DEAD_LOGIT
        } else {
            rng.range(-2.0, 3.0)
        });
        let mut sh = [[0f32; 3]; 16];
        sh[0] = [
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
        ];
        g.sh.push(sh);
    }
    g
}

fn trainer_with(
    ctx: &GpuContext,
    cpu: &CpuGaussians,
    cap: u64,
    optimizer_state: MomentStorage,
) -> Trainer {
    let mut enc = ctx.encoder("upload");
    let params =
        GaussianTensors::upload(&mut enc, cpu, 3, MemoryCategory::Parameters, "params").unwrap();
    ctx.submit(enc).unwrap();
    let config = TrainConfig {
        strategy: StrategyKind::Mcmc,
        max_gaussians: cap,
        iterations: 100,
        optimizer_state,
        ..TrainConfig::default()
    };
    let mut t = Trainer::new(ctx, tiny_dataset(), params, config).unwrap();
    t.step().unwrap(); // non-zero moments
    t
}

fn sigmoid(x: f32) -> f64 {
    1.0 / (1.0 + (-f64::from(x)).exp())
}

/// 3DGS-MCMC's correction of a source of opacity `o` drawn `d` times: (new opacity, scale factor).
fn correction(o: f64, d: u64) -> (f64, f64) {
    let n = (d + 1).min(51);
    let raw = 1.0 - (1.0 - o).powf(1.0 / n as f64);
    let mut denominator = 0.0;
    for i in 1..=n {
        let mut binomial = 1.0;
        for k in 0..i {
            let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
            denominator += binomial * sign * raw.powi(k as i32 + 1) / ((k + 1) as f64).sqrt();
            binomial *= (i - 1 - k) as f64 / (k + 1) as f64;
        }
    }
    (raw.clamp(0.005, 1.0 - 1.19e-7), o / denominator)
}

/// Both Adam moments widened to f32 (whatever their storage), as Gaussian sets.
fn moments(t: &Trainer) -> (CpuGaussians, CpuGaussians) {
    let ctx = t.ctx();
    let [m, v] = t.optimizer().read_moments(ctx).unwrap();
    let mut enc = ctx.encoder("moments");
    let m = t.params().with_rows(&mut enc, "m", &m).unwrap();
    let v = t.params().with_rows(&mut enc, "v", &v).unwrap();
    ctx.submit(enc).unwrap();
    (m.download(ctx).unwrap(), v.download(ctx).unwrap())
}

fn row_is_zero(g: &CpuGaussians, i: usize) -> bool {
    g.means[i] == [0.0; 3]
        && g.opacity_logits[i] == 0.0
        && g.sh[i].iter().flatten().all(|&v| v == 0.0)
}

fn check_relocation(ctx: &GpuContext, storage: MomentStorage) {
    let n = 1500;
    let mut t = trainer_with(ctx, &model(n, 7), 4 * n as u64, storage);
    assert_ne!(
        moments(&t).0.opacity_logits,
        vec![0.0; n],
        "{storage:?}: a step moved the moments"
    );
    let before = t.params().download(ctx).unwrap();
    let (m1_before, _) = moments(&t);
    let dead: Vec<usize> = (0..n)
        .filter(|&i| sigmoid(before.opacity_logits[i]) <= 0.005)
        .collect();
    assert_eq!(dead.len(), n.div_ceil(3));
    let moved = t.relocate_dead().unwrap();
    assert_eq!(moved, dead.len() as u64);
    let after = t.params().download(ctx).unwrap();
    let (m1, m2) = moments(&t);
    // Every dead row is now a copy of a live source (found by its untouched mean).
    let mut draws = vec![0u64; n];
    for &d in &dead {
        let source = (0..n)
            .find(|&s| !dead.contains(&s) && before.means[s] == after.means[d])
            .unwrap_or_else(|| panic!("dead row {d} is not a copy of a live row"));
        draws[source] += 1;
        assert_eq!(
            after.log_scales[d], after.log_scales[source],
            "copy {d} of {source}"
        );
        assert_eq!(after.opacity_logits[d], after.opacity_logits[source]);
        assert_eq!(after.sh[d], after.sh[source]);
        assert!(
            row_is_zero(&m1, d) && row_is_zero(&m2, d),
            "moments of row {d}"
        );
    }
    // Draws are proportional to opacity (systematic resampling: within one of the expectation).
    let total: f64 = (0..n)
        .filter(|i| !dead.contains(i))
        .map(|i| sigmoid(before.opacity_logits[i]))
        .sum();
    let k = dead.len() as f64;
    for s in (0..n).filter(|i| !dead.contains(i)) {
        let expected = k * sigmoid(before.opacity_logits[s]) / total;
        assert!(
            (draws[s] as f64 - expected).abs() < 1.05,
            "row {s}: {} draws, expected {expected}",
            draws[s]
        );
        if draws[s] == 0 {
            assert_eq!(
                after.opacity_logits[s], before.opacity_logits[s],
                "untouched row {s}"
            );
            assert_eq!(after.log_scales[s], before.log_scales[s]);
            assert_eq!(m1.opacity_logits[s], m1_before.opacity_logits[s]);
            continue;
        }
        let (opacity, factor) = correction(sigmoid(before.opacity_logits[s]), draws[s]);
        let got = sigmoid(after.opacity_logits[s]);
        assert!(
            (got - opacity).abs() < 1e-4 + 1e-3 * opacity,
            "row {s}: opacity {got} vs {opacity}"
        );
        for k in 0..3 {
            let want = f64::from(before.log_scales[s][k]) + factor.ln();
            let got = f64::from(after.log_scales[s][k]);
            assert!(
                (got - want).abs() < 2e-3,
                "row {s}: log scale {got} vs {want}"
            );
        }
        assert!(
            row_is_zero(&m1, s) && row_is_zero(&m2, s),
            "moments of source {s}"
        );
    }
    assert!(
        after
            .opacity_logits
            .iter()
            .all(|&l| sigmoid(l) > 0.005 - 1e-6),
        "a dead row survived"
    );
    assert_eq!(t.relocate_dead().unwrap(), 0, "nothing left to relocate");
}

#[test]
fn relocation_copies_live_gaussians_in_proportion_to_opacity() {
    for ctx in both_paths().into_iter().chain(both_paths_small_pages()) {
        check_relocation(ctx, MomentStorage::Packed);
    }
    check_relocation(both_paths()[0], MomentStorage::F32);
}

#[test]
fn growth_adds_five_percent_up_to_the_cap() {
    for ctx in both_paths().into_iter().chain(both_paths_small_pages()) {
        let cpu = model(1000, 3);
        let mut t = trainer_with(ctx, &cpu, 1080, MomentStorage::Packed);
        let before = t.params().download(ctx).unwrap();
        assert_eq!(t.grow().unwrap(), 50);
        assert_eq!(t.params().len(), 1050);
        assert_eq!(t.optimizer().len(), 1050);
        let after = t.params().download(ctx).unwrap();
        let (m1, m2) = moments(&t);
        for i in 1000..1050 {
            let source = (0..1000)
                .find(|&s| before.means[s] == after.means[i])
                .unwrap_or_else(|| panic!("new row {i} copies no existing row"));
            assert!(
                sigmoid(before.opacity_logits[source]) > 0.005,
                "dead source {source}"
            );
            assert_eq!(after.opacity_logits[i], after.opacity_logits[source]);
            assert!(row_is_zero(&m1, i) && row_is_zero(&m2, i));
        }
        assert_eq!(t.grow().unwrap(), 30, "growth stops at the cap");
        assert_eq!(t.grow().unwrap(), 0);
        t.step().unwrap();
    }
}

// CPU ports of shaders/shared/random.wgsl.
fn pcg(v: u32) -> u32 {
    let state = v.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
    (word >> 22) ^ word
}

fn normal(key: u32) -> f64 {
    let u = |k: u32| (f64::from(pcg(k) >> 8) + 0.5) / 16_777_216.0;
    (-2.0 * u(key).ln()).sqrt() * (std::f64::consts::TAU * u(key ^ 0x9e37_79b9)).cos()
}

#[test]
fn regularizers_and_noise_match_cpu_ports() {
    for ctx in both_paths().into_iter().chain(both_paths_small_pages()) {
        let cpu = model(700, 11);
        let mut enc = ctx.encoder("upload");
        let g =
            GaussianTensors::upload(&mut enc, &cpu, 3, MemoryCategory::Parameters, "p").unwrap();
        let grads =
            GaussianTensors::zeros_like(&mut enc, &g, MemoryCategory::Gradients, "g").unwrap();
        for model in row_chunks(g.len(), g.rows_per_page, 256) {
            let chunks = ChunkRows {
                model,
                grads: model,
            };
            record_regularizers(&mut enc, &g, &grads, chunks, 0.01, 0.02).unwrap();
        }
        record_noise(&mut enc, &g, 0.5, 1234).unwrap();
        ctx.submit(enc).unwrap();
        let n = cpu.means.len();
        let got = grads.download(ctx).unwrap();
        let want_o: Vec<f32> = cpu
            .opacity_logits
            .iter()
            .map(|&l| {
                let o = sigmoid(l);
                (0.01 / n as f64 * o * (1.0 - o)) as f32
            })
            .collect();
        compare_close(
            "opacity regulariser",
            &got.opacity_logits,
            &want_o,
            1e-9,
            1e-4,
        )
        .unwrap();
        let want_s: Vec<f32> = cpu
            .log_scales
            .iter()
            .flatten()
            .map(|&s| (0.02 / (3 * n) as f64 * f64::from(s).exp()) as f32)
            .collect();
        let got_s: Vec<f32> = got.log_scales.iter().flatten().copied().collect();
        compare_close("scale regulariser", &got_s, &want_s, 1e-9, 1e-4).unwrap();
        let moved = g.download(ctx).unwrap();
        let mut got_d = Vec::new();
        let mut want_d = Vec::new();
        for i in 0..n {
            let o = sigmoid(cpu.opacity_logits[i]);
            let gate = 1.0 / (1.0 + (-100.0 * ((1.0 - o) - 0.995)).exp());
            let r = wgsplat::splat::reference::quat_to_matrix(cpu.quats[i]);
            let s: Vec<f64> = cpu.log_scales[i]
                .iter()
                .map(|&v| f64::from(v).exp())
                .collect();
            let base = pcg(1234 ^ pcg(i as u32));
            let eps: Vec<f64> = (0..3).map(|k| normal(base + k)).collect();
            // Σ ε = R S² Rᵀ ε (quat_to_matrix is row-major: r[a][b] = R_ab).
            let rt_eps: Vec<f64> = (0..3)
                .map(|a| (0..3).map(|b| f64::from(r[b][a]) * eps[b]).sum())
                .collect();
            for (a, row) in r.iter().enumerate() {
                let step: f64 = (0..3)
                    .map(|b| f64::from(row[b]) * s[b] * s[b] * rt_eps[b])
                    .sum::<f64>()
                    * gate
                    * 0.5;
                got_d.push(moved.means[i][a] - cpu.means[i][a]);
                want_d.push(step as f32);
            }
        }
        compare_close("position noise", &got_d, &want_d, 2e-7, 2e-3).unwrap();
        assert!(
            want_d.iter().any(|d| d.abs() > 1e-6),
            "the test moves nothing"
        );
    }
}

#[test]
fn mcmc_training_improves_within_its_cap() {
    let ctx = fresh_context(false);
    let dataset = generate(&BuiltinOptions {
        resolution: 40,
        train_views: 12,
        test_views: 3,
        points: 1500,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let config = TrainConfig {
        strategy: StrategyKind::Mcmc,
        max_gaussians: 1800,
        iterations: 160,
        lpips: false,
        densify_from: 20,
        densify_every: 20,
        sh_degree_interval: 50,
        loss_readback_every: 20,
        ..TrainConfig::default()
    };
    let params = initial_gaussians(&ctx, &dataset, &config).unwrap();
    let mut t = Trainer::new(&ctx, dataset, params, config).unwrap();
    let before = t.evaluate().unwrap().psnr;
    t.run(&mut |_| {}, &|| false).unwrap();
    let after = t.evaluate().unwrap().psnr;
    assert_eq!(t.params().len(), 1800, "growth reaches the cap");
    assert!(after > before + 3.0, "PSNR {before:.2} -> {after:.2}");
    let dead = t.params().opacity_logits.read::<f32>(&ctx).unwrap();
    assert!(dead.iter().all(|v| v.is_finite()));
}

//! The loss gradient against central differences: of the GPU loss, and of the CPU reference itself.

use super::*;

/// Central differences of the GPU loss at `entries` of the rendered image (one encoder, one
/// submit). Returns (entry, finite difference) pairs.
fn gpu_finite_differences(
    ctx: &GpuContext,
    case: &Case,
    options: &LossOptions,
    entries: &[usize],
    step: f32,
) -> Vec<f64> {
    let _gpu = gpu_lock();
    let mut enc = ctx.encoder("finite differences");
    let (_, y) = case.upload(&mut enc);
    let mut pending = Vec::new();
    for &entry in entries {
        let mut sides = Vec::new();
        for sign in [1.0f32, -1.0] {
            let mut image = case.rendered.clone();
            image[entry] += sign * step;
            let x = Tensor::from_slice(
                &mut enc,
                &image,
                &[case.height, case.width, 4],
                MemoryCategory::Other,
                "perturbed",
            )
            .unwrap();
            let stats = loss::loss_stats(&mut enc, &x, &y, options).unwrap();
            sides.push((
                stats.prefix(1).unwrap().record_read(&mut enc).unwrap(),
                image[entry],
            ));
        }
        pending.push(sides);
    }
    ctx.submit(enc).unwrap();
    pending
        .into_iter()
        .map(|mut sides| {
            let (minus, x_minus) = sides.pop().unwrap();
            let (plus, x_plus) = sides.pop().unwrap();
            let (lp, lm) = (
                plus.wait::<f32>(ctx).unwrap()[0],
                minus.wait::<f32>(ctx).unwrap()[0],
            );
            (f64::from(lp) - f64::from(lm)) / (f64::from(x_plus) - f64::from(x_minus))
        })
        .collect()
}

/// Checks `grad` at `entries` against finite differences `fd`: within 0.5% of the largest
/// finite difference plus 0.5% relative (the f32 loss has ~1e-7 relative noise, amplified by
/// 1 / (2 step); lavapipe agrees to ~0.05% of the largest).
fn compare_with_finite_differences(
    what: &str,
    grad: &[f32],
    entries: &[usize],
    fd: &[f64],
) -> Result<(), String> {
    let got: Vec<f32> = entries.iter().map(|&e| grad[e]).collect();
    let want = f32s(fd);
    let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    compare_close(what, &got, &want, 0.005 * scale, 0.005)
}

/// Entries (pixel, RGB channel) whose |x - y| exceeds `margin`, so a step does not cross the
/// kink of |x - y|.
fn entries_away_from_kinks(
    rng: &mut TestRng,
    case: &Case,
    count: usize,
    margin: f32,
) -> Vec<usize> {
    let Gt::F32(gt) = &case.gt else {
        unreachable!()
    };
    let mut entries = Vec::new();
    while entries.len() < count {
        let pixel = (rng.next_u32() as usize) % (case.width * case.height);
        let entry = 4 * pixel + (rng.next_u32() as usize) % 3;
        if (case.rendered[entry] - gt[entry]).abs() > margin && !entries.contains(&entry) {
            entries.push(entry);
        }
    }
    entries
}

#[test]
fn gradient_matches_finite_differences_of_gpu_loss() {
    let mut rng = TestRng::new(15);
    let (width, height) = (12, 11);
    let case = Case::new(
        width,
        height,
        random_image(&mut rng, width, height),
        random_image(&mut rng, width, height),
    );
    let step = 1e-2;
    let entries = entries_away_from_kinks(&mut rng, &case, 36, 3.0 * step);
    for options in [
        LossOptions::default(),
        LossOptions {
            ssim_weight: 1.0,
            padding: SsimPadding::Valid,
            ..Default::default()
        },
    ] {
        for ctx in both_paths() {
            let what = format!("{options:?} {}", ctx.info().kernel_path());
            let (_, grad) = case.gpu_grad(ctx, &options);
            let fd = gpu_finite_differences(ctx, &case, &options, &entries, step);
            compare_with_finite_differences(
                &format!("finite differences {what}"),
                &grad,
                &entries,
                &fd,
            )
            .unwrap();
            // The check has teeth: a 3% error in one entry fails it.
            let mut corrupted = grad.clone();
            let (worst, _) = entries
                .iter()
                .enumerate()
                .max_by(|a, b| grad[*a.1].abs().total_cmp(&grad[*b.1].abs()))
                .unwrap();
            corrupted[entries[worst]] *= 1.03;
            assert!(
                compare_with_finite_differences("corrupted", &corrupted, &entries, &fd).is_err(),
                "a corrupted gradient passed {what}"
            );
        }
    }
}

#[test]
fn cpu_reference_gradient_matches_its_finite_differences() {
    let mut rng = TestRng::new(16);
    let (width, height) = (13, 12);
    let mut gt = random_image(&mut rng, width, height);
    for p in 0..width * height {
        gt[4 * p + 3] = rng.unit();
    }
    let case = Case::new(width, height, random_image(&mut rng, width, height), gt);
    let step = 1e-3f32;
    let entries = entries_away_from_kinks(&mut rng, &case, 40, 3.0 * step);
    let options = [
        LossOptions::default(),
        LossOptions {
            ssim_weight: 0.7,
            padding: SsimPadding::Valid,
            background: Some([0.2, 0.5, 0.9]),
            mask_by_alpha: true,
        },
    ];
    for opts in options {
        let grad = case.cpu(&opts, true).grad;
        for &entry in &entries {
            let mut sides = [0.0f64; 2];
            let mut xs = [0.0f32; 2];
            for (k, sign) in [1.0f32, -1.0].into_iter().enumerate() {
                let mut perturbed = case.clone();
                perturbed.rendered[entry] += sign * step;
                xs[k] = perturbed.rendered[entry];
                sides[k] = perturbed.cpu(&opts, false).loss;
            }
            let fd = (sides[0] - sides[1]) / f64::from(xs[0] - xs[1]);
            let tolerance =
                1e-6 * grad.iter().fold(0.0f64, |m, g| m.max(g.abs())) + 1e-4 * fd.abs();
            assert!(
                (fd - grad[entry]).abs() <= tolerance,
                "entry {entry}: reference gradient {} vs finite difference {fd} ({opts:?})",
                grad[entry]
            );
        }
    }
}

//! Masked and RGBA8 ground truth, and SSIM's valid padding.

use super::*;

#[test]
fn masks_composite_and_rgba8_ground_truth() {
    let mut rng = TestRng::new(17);
    let (width, height) = (45, 38);
    let rendered = random_image(&mut rng, width, height);
    let float_gt = Case::new(
        width,
        height,
        rendered.clone(),
        random_rgba_with_alpha(&mut rng, width, height),
    );
    let byte_gt = Case {
        gt: Gt::Rgba8(pack_rgba8(&mut rng, width * height)),
        ..float_gt.clone()
    };
    let options = [
        LossOptions {
            background: Some([1.0, 1.0, 1.0]),
            ..Default::default()
        },
        LossOptions {
            mask_by_alpha: true,
            ..Default::default()
        },
        LossOptions {
            background: Some([0.1, 0.6, 0.3]),
            mask_by_alpha: true,
            ssim_weight: 0.4,
            ..Default::default()
        },
        LossOptions {
            background: Some([0.0, 0.0, 0.0]),
            mask_by_alpha: true,
            padding: SsimPadding::Valid,
            ..Default::default()
        },
    ];
    for opts in &options {
        for (name, case) in [("f32 gt", &float_gt), ("rgba8 gt", &byte_gt)] {
            let want = case.cpu(opts, true);
            for ctx in both_paths() {
                let what = format!("{name} {opts:?} {}", ctx.info().kernel_path());
                case.assert_both_kernels_match(ctx, opts, &want, &what);
            }
        }
    }
    // The mask changes the result (the options are not ignored).
    let plain = float_gt.cpu(&LossOptions::default(), false).loss;
    assert!((float_gt.cpu(&options[1], false).loss - plain).abs() > 1e-3);
}

#[test]
fn all_zero_mask_gives_zero_loss_and_gradient() {
    let mut rng = TestRng::new(18);
    let (width, height) = (19, 23);
    let mut gt = random_image(&mut rng, width, height);
    for p in 0..width * height {
        gt[4 * p + 3] = 0.0;
    }
    let case = Case::new(width, height, random_image(&mut rng, width, height), gt);
    let opts = LossOptions {
        mask_by_alpha: true,
        ..Default::default()
    };
    for ctx in both_paths() {
        let (stats, grad) = case.gpu_grad(ctx, &opts);
        assert_eq!(
            stats,
            vec![0.0, 0.0, 1.0, 0.0],
            "{}",
            ctx.info().kernel_path()
        );
        assert!(grad.iter().all(|&g| g == 0.0));
    }
}

#[test]
fn masked_pixels_add_nothing_whatever_their_colour() {
    // Half of every row is masked; changing the colours under the mask (in both images) must
    // change neither the loss terms nor the gradient anywhere, and masked pixels get no gradient.
    let mut rng = TestRng::new(31);
    let (width, height) = (37, 29);
    let masked = |p: usize| p % width < width / 2;
    let rendered = random_image(&mut rng, width, height);
    let mut gt = random_image(&mut rng, width, height);
    for p in 0..width * height {
        gt[4 * p + 3] = if masked(p) { 0.0 } else { 1.0 };
    }
    let (mut rendered_2, mut gt_2) = (rendered.clone(), gt.clone());
    for p in (0..width * height).filter(|&p| masked(p)) {
        for c in 0..3 {
            rendered_2[4 * p + c] = rng.range(-1.0, 2.0);
            gt_2[4 * p + c] = rng.unit();
        }
    }
    let opts = LossOptions {
        mask_by_alpha: true,
        ..Default::default()
    };
    let a = Case::new(width, height, rendered, gt);
    let b = Case::new(width, height, rendered_2, gt_2);
    let (cpu_a, cpu_b) = (a.cpu(&opts, true), b.cpu(&opts, true));
    assert!(
        (cpu_a.loss - cpu_b.loss).abs() < 1e-12,
        "{} vs {}",
        cpu_a.loss,
        cpu_b.loss
    );
    for ctx in both_paths() {
        let what = format!("garbage under a mask {}", ctx.info().kernel_path());
        let (stats_a, grad_a) = a.gpu_grad(ctx, &opts);
        let (stats_b, grad_b) = b.gpu_grad(ctx, &opts);
        compare_close(&what, &stats_b, &stats_a, 1e-6, 0.0).unwrap();
        compare_close(&what, &grad_b, &grad_a, 1e-9, 0.0).unwrap();
        for p in (0..width * height).filter(|&p| masked(p)) {
            assert!(
                grad_a[4 * p..4 * p + 4].iter().all(|&g| g == 0.0),
                "{what}: pixel {p}"
            );
        }
        compare_grad(&what, &grad_a, &cpu_a.grad).unwrap();
    }
}

#[test]
fn valid_padding_needs_a_full_window() {
    let mut rng = TestRng::new(19);
    let valid = LossOptions {
        padding: SsimPadding::Valid,
        ..Default::default()
    };
    for (width, height) in [(11, 11), (30, 12), (64, 47)] {
        let case = Case::new(
            width,
            height,
            random_image(&mut rng, width, height),
            gradient_image(width, height),
        );
        let want = case.cpu(&valid, true);
        assert!(
            (want.ssim - case.cpu(&LossOptions::default(), false).ssim).abs() > 1e-4,
            "valid and same differ"
        );
        for ctx in both_paths() {
            let what = format!("valid {width}x{height} {}", ctx.info().kernel_path());
            let (stats, grad) = case.gpu_grad(ctx, &valid);
            compare_close(&what, &stats, &reference_stats(&want), STATS_ATOL, 0.0).unwrap();
            compare_grad(&what, &grad, &want.grad).unwrap();
        }
    }
    let ctx = both_paths()[1];
    let case = Case::new(
        10,
        40,
        random_image(&mut rng, 10, 40),
        random_image(&mut rng, 10, 40),
    );
    let _gpu = gpu_lock();
    let mut enc = ctx.encoder("too small");
    let (x, y) = case.upload(&mut enc);
    let err = loss::loss_and_grad(&mut enc, &x, &y, &valid)
        .expect_err("10 columns are too few for valid padding");
    assert!(err.to_string().contains("at least 11x11"), "{err}");
}

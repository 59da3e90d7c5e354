//! Row bands of paged images, the comparison helpers' failure on corrupted data, the metrics'
//! single readback, clamping and invalid inputs.

use super::*;

#[test]
fn multi_page_images_go_through_row_bands() {
    let mut rng = TestRng::new(20);
    // 64 KiB pages: a 70-wide f32 image row is 1120 bytes, so 150 rows span 3 pages and bands are
    // 32 (backward) or 48 (forward) rows; 257 columns do not fit one band per page at all.
    let tall = Case::new(
        70,
        150,
        random_image(&mut rng, 70, 150),
        random_rgba_with_alpha(&mut rng, 70, 150),
    );
    let wide = Case {
        gt: Gt::Rgba8(pack_rgba8(&mut rng, 257 * 40)),
        ..Case::new(257, 40, random_image(&mut rng, 257, 40), Vec::new())
    };
    let options = [
        LossOptions::default(),
        LossOptions {
            background: Some([0.3, 0.3, 0.3]),
            mask_by_alpha: true,
            padding: SsimPadding::Valid,
            ..Default::default()
        },
    ];
    for case in [&tall, &wide] {
        for opts in &options {
            let want = case.cpu(opts, true);
            for ctx in both_paths_small_pages() {
                let what = format!(
                    "paged {}x{} {opts:?} {}",
                    case.width,
                    case.height,
                    ctx.info().kernel_path()
                );
                case.assert_both_kernels_match(ctx, opts, &want, &what);
            }
        }
    }
    let ctx = both_paths_small_pages()[0];
    let _gpu = gpu_lock();
    let mut enc = ctx.encoder("page count");
    let (x, _) = tall.upload(&mut enc);
    assert!(x.num_pages() > 1, "the paged case must span several pages");
    ctx.submit(enc).unwrap();
}

#[test]
fn corrupted_gradient_or_ssim_fails_the_comparison() {
    let mut rng = TestRng::new(21);
    let (width, height) = (33, 29);
    let case = Case::new(
        width,
        height,
        random_image(&mut rng, width, height),
        random_image(&mut rng, width, height),
    );
    let opts = LossOptions::default();
    let want = case.cpu(&opts, true);
    let (stats, grad) = case.gpu_grad(both_paths()[1], &opts);
    compare_grad("clean", &grad, &want.grad).unwrap();
    let largest = grad.iter().fold(0.0f32, |m, g| m.max(g.abs()));
    for (entry, delta) in [
        (4 * 100 + 1, 1e-3 * largest),
        (4 * 7, -5e-4 * largest),
        (4 * 500 + 3, 1e-3 * largest),
    ] {
        let mut corrupted = grad.clone();
        corrupted[entry] += delta;
        let err = compare_grad("corrupted", &corrupted, &want.grad)
            .expect_err("a corrupted gradient must fail");
        assert!(err.contains(&format!("index {entry}")), "{err}");
    }
    let mut bad_stats = stats.clone();
    bad_stats[2] += 2e-5;
    assert!(
        compare_close(
            "corrupted ssim",
            &bad_stats,
            &reference_stats(&want),
            STATS_ATOL,
            0.0
        )
        .is_err()
    );
}

#[test]
fn metrics_match_reference_with_one_readback() {
    let mut rng = TestRng::new(22);
    let (width, height) = (50, 37);
    let case = Case::new(
        width,
        height,
        random_image(&mut rng, width, height),
        gradient_image(width, height),
    );
    let opts = LossOptions::default();
    let want = case.cpu(&opts, false);
    for ctx in both_paths() {
        let _gpu = gpu_lock();
        let mut enc = ctx.encoder("metrics inputs");
        let (x, y) = case.upload(&mut enc);
        ctx.submit(enc).unwrap();
        let m = loss::evaluate_metrics(ctx, &x, &y, &opts).unwrap();
        let path = ctx.info().kernel_path();
        assert!(
            (m.ssim - want.ssim).abs() < 1e-5 && (m.l1 - want.l1).abs() < 1e-5,
            "{m:?} vs {want:?} {path}"
        );
        assert!(
            (m.mse - want.mse).abs() < 1e-5 * want.mse.max(1e-3),
            "{m:?} vs {want:?} {path}"
        );
        let psnr = -10.0 * want.mse.log10();
        assert!(
            (m.psnr - psnr).abs() < 1e-4,
            "PSNR {} vs {psnr} {path}",
            m.psnr
        );
        let same = loss::evaluate_metrics(ctx, &x, &x.clone(), &opts).unwrap();
        assert!(
            same.psnr.is_infinite() && (same.ssim - 1.0).abs() < 1e-6 && same.l1 == 0.0,
            "{same:?}"
        );
    }
}

/// Issue 14: scores clamp the render to [0, 1] first, as gsplat and INRIA do. A render that
/// overshoots where the ground truth is white or black scores as a perfect match; the training
/// loss still sees the unclamped values.
#[test]
fn scores_clamp_the_render_to_the_unit_range() {
    let (width, height) = (20, 17);
    let mut rng = TestRng::new(5);
    let mut gt = Vec::new();
    let mut rendered = Vec::new();
    for _ in 0..width * height {
        let white = rng.range(0.0, 1.0) > 0.5;
        for _ in 0..3 {
            gt.push(if white { 1.0 } else { 0.0 });
            rendered.push(if white {
                rng.range(1.0, 1.4)
            } else {
                rng.range(-0.3, 0.0)
            });
        }
        gt.push(1.0);
        rendered.push(1.0);
    }
    let case = Case::new(width, height, rendered, gt);
    let opts = LossOptions::default();
    for ctx in both_paths() {
        let _gpu = gpu_lock();
        let mut enc = ctx.encoder("clamp inputs");
        let (x, y) = case.upload(&mut enc);
        let stats = loss::loss_stats(&mut enc, &x, &y, &opts).unwrap();
        ctx.submit(enc).unwrap();
        let m = loss::evaluate_metrics(ctx, &x, &y, &opts).unwrap();
        assert!(
            m.psnr.is_infinite() && m.l1 == 0.0 && (m.ssim - 1.0).abs() < 1e-6,
            "{m:?}"
        );
        let unclamped: Vec<f32> = stats.read(ctx).unwrap();
        assert!(
            unclamped[1] > 0.05,
            "the loss must see the overshoot: {unclamped:?}"
        );
    }
}

#[test]
fn invalid_inputs_are_rejected() {
    let ctx = both_paths()[1];
    let _gpu = gpu_lock();
    let mut enc = ctx.encoder("invalid");
    let x = Tensor::zeros(&mut enc, DType::F32, &[8, 9, 4], MemoryCategory::Other, "x").unwrap();
    let rgb = Tensor::zeros(
        &mut enc,
        DType::F32,
        &[8, 9, 3],
        MemoryCategory::Other,
        "rgb",
    )
    .unwrap();
    let small = Tensor::zeros(
        &mut enc,
        DType::F32,
        &[8, 8, 4],
        MemoryCategory::Other,
        "small",
    )
    .unwrap();
    let packed_wrong = Tensor::zeros(
        &mut enc,
        DType::U32,
        &[8, 9, 4],
        MemoryCategory::Other,
        "packed",
    )
    .unwrap();
    let ints = Tensor::zeros(
        &mut enc,
        DType::I32,
        &[8, 9, 4],
        MemoryCategory::Other,
        "ints",
    )
    .unwrap();
    let default = LossOptions::default();
    let shape_errors = [
        (&rgb, &x),
        (&x, &rgb),
        (&x, &small),
        (&x, &packed_wrong),
        (&x, &ints),
    ];
    for (rendered, gt) in shape_errors {
        let err = loss::loss_and_grad(&mut enc, rendered, gt, &default)
            .expect_err("bad shapes are rejected");
        assert!(
            matches!(
                err,
                wgsplat::Error::Shape { .. } | wgsplat::Error::DType { .. }
            ),
            "{err}"
        );
    }
    for opts in [
        LossOptions {
            ssim_weight: 1.5,
            ..default
        },
        LossOptions {
            background: Some([f32::NAN, 0.0, 0.0]),
            ..default
        },
    ] {
        let err = loss::loss_stats(&mut enc, &x, &x, &opts).expect_err("bad options are rejected");
        assert!(
            matches!(err, wgsplat::Error::InvalidArgument { .. }),
            "{err}"
        );
    }
    ctx.submit(enc).unwrap();
}

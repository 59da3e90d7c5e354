//! The fused L1 + SSIM loss, its gradient and the image metrics against the f64 CPU reference
//! (src/loss/reference.rs), finite differences and a scikit-image fixture table, on both kernel
//! paths and on small pages (row bands).

use wgsplat::loss::reference::{self, ReferenceGt, ReferenceLoss};
use wgsplat::loss::{self, LossOptions, SsimPadding};
use wgsplat::testing::{TestRng, both_paths, both_paths_small_pages, compare_close};
use wgsplat::{DType, Encoder, GpuContext, MemoryCategory, Tensor};

/// Ground truth in either accepted format.
#[derive(Clone)]
enum Gt {
    F32(Vec<f32>),
    Rgba8(Vec<u32>),
}

/// A rendered image `[H, W, 4]` and its ground truth.
#[derive(Clone)]
struct Case {
    width: usize,
    height: usize,
    rendered: Vec<f32>,
    gt: Gt,
}

impl Case {
    fn new(width: usize, height: usize, rendered: Vec<f32>, gt: Vec<f32>) -> Self {
        Case {
            width,
            height,
            rendered,
            gt: Gt::F32(gt),
        }
    }

    fn reference_gt(&self) -> ReferenceGt<'_> {
        match &self.gt {
            Gt::F32(v) => ReferenceGt::Rgba32F(v),
            Gt::Rgba8(v) => ReferenceGt::Rgba8(v),
        }
    }

    fn cpu(&self, options: &LossOptions, with_grad: bool) -> ReferenceLoss {
        reference::reference_loss(
            &self.rendered,
            self.reference_gt(),
            self.width,
            self.height,
            options,
            with_grad,
        )
    }

    /// Records uploads of both images into `enc`.
    fn upload(&self, enc: &mut Encoder) -> (Tensor, Tensor) {
        let shape = [self.height, self.width, 4];
        let x = Tensor::from_slice(
            enc,
            &self.rendered,
            &shape,
            MemoryCategory::Other,
            "rendered",
        )
        .unwrap();
        let y = match &self.gt {
            Gt::F32(v) => Tensor::from_slice(enc, v, &shape, MemoryCategory::Other, "gt").unwrap(),
            Gt::Rgba8(v) => Tensor::from_slice(
                enc,
                v,
                &[self.height, self.width],
                MemoryCategory::Other,
                "gt8",
            )
            .unwrap(),
        };
        (x, y)
    }

    /// GPU `[loss, l1, ssim, mse]` from the forward kernel.
    fn gpu_stats(&self, ctx: &GpuContext, options: &LossOptions) -> Vec<f32> {
        let _gpu = gpu_lock();
        let mut enc = ctx.encoder("loss stats");
        let (x, y) = self.upload(&mut enc);
        let stats = loss::loss_stats(&mut enc, &x, &y, options).unwrap();
        let pending = stats.record_read(&mut enc).unwrap();
        ctx.submit(enc).unwrap();
        pending.wait(ctx).unwrap()
    }

    /// GPU `[loss, l1, ssim, mse]` and gradient from the fused backward kernel.
    fn gpu_grad(&self, ctx: &GpuContext, options: &LossOptions) -> (Vec<f32>, Vec<f32>) {
        let _gpu = gpu_lock();
        let mut enc = ctx.encoder("loss grad");
        let (x, y) = self.upload(&mut enc);
        let out = loss::loss_and_grad(&mut enc, &x, &y, options).unwrap();
        assert_eq!(out.loss.len(), 1);
        assert_eq!(out.grad.shape(), &[self.height, self.width, 4]);
        let stats = out.stats.record_read(&mut enc).unwrap();
        let grad = out.grad.record_read(&mut enc).unwrap();
        ctx.submit(enc).unwrap();
        (stats.wait(ctx).unwrap(), grad.wait(ctx).unwrap())
    }
}

/// Serialises GPU work across this file's tests. The allocator's pool may hand a buffer that an
/// open, unsubmitted encoder released to another encoder; if that buffer then lives across a
/// submit, the first encoder's later submit can overwrite it. Holding this lock from encoder
/// creation to readback keeps one encoder open at a time (each case is also one submit).
fn gpu_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn random_image(rng: &mut TestRng, width: usize, height: usize) -> Vec<f32> {
    rng.vec_f32(width * height * 4, 0.0, 1.0)
}

/// Structured test images from formulas: `(row, col, channel) -> value`.
fn image_from(width: usize, height: usize, f: impl Fn(usize, usize, usize) -> f32) -> Vec<f32> {
    let mut out = Vec::with_capacity(width * height * 4);
    for r in 0..height {
        for c in 0..width {
            out.extend([f(r, c, 0), f(r, c, 1), f(r, c, 2), 1.0]);
        }
    }
    out
}

fn gradient_image(width: usize, height: usize) -> Vec<f32> {
    let span = (height + 2 * width + 9) as f32;
    image_from(width, height, |r, c, ch| (r + 2 * c + 3 * ch) as f32 / span)
}

fn checkerboard(width: usize, height: usize) -> Vec<f32> {
    image_from(width, height, |r, c, ch| {
        if (r / 3 + c / 3 + ch) % 2 == 0 {
            0.9
        } else {
            0.1
        }
    })
}

fn constant(width: usize, height: usize, value: f32) -> Vec<f32> {
    image_from(width, height, |_, _, _| value)
}

/// `[loss, l1, ssim, mse]` of the reference.
fn reference_stats(r: &ReferenceLoss) -> Vec<f32> {
    vec![r.loss as f32, r.l1 as f32, r.ssim as f32, r.mse as f32]
}

fn f32s(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// Gradient comparison: each entry within 1e-4 of the largest reference entry plus 1e-4
/// relative (the f32 kernels land within ~3e-6 of the largest entry on lavapipe).
fn compare_grad(what: &str, got: &[f32], want: &[f64]) -> Result<(), String> {
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs())) as f32;
    compare_close(what, got, &f32s(want), 1e-4 * scale + 1e-12, 1e-4)
}

const STATS_ATOL: f32 = 1e-5;

#[test]
fn ssim_and_l1_match_cpu_reference_at_awkward_sizes() {
    let mut rng = TestRng::new(11);
    for (width, height) in [(1, 1), (7, 13), (16, 16), (123, 82), (257, 255)] {
        let mut cases = vec![
            (
                "random",
                Case::new(
                    width,
                    height,
                    random_image(&mut rng, width, height),
                    random_image(&mut rng, width, height),
                ),
            ),
            (
                "gradient/checker",
                Case::new(
                    width,
                    height,
                    gradient_image(width, height),
                    checkerboard(width, height),
                ),
            ),
        ];
        if width * height < 20_000 {
            cases.push((
                "constants",
                Case::new(
                    width,
                    height,
                    constant(width, height, 0.37),
                    constant(width, height, 0.62),
                ),
            ));
            cases.push((
                "constant/random",
                Case::new(
                    width,
                    height,
                    constant(width, height, 0.5),
                    random_image(&mut rng, width, height),
                ),
            ));
        }
        let options = LossOptions::default();
        for (name, case) in &cases {
            let want = reference_stats(&case.cpu(&options, false));
            for ctx in both_paths() {
                let what = format!("{name} {width}x{height} {}", ctx.info().kernel_path());
                compare_close(
                    &format!("forward {what}"),
                    &case.gpu_stats(ctx, &options),
                    &want,
                    STATS_ATOL,
                    0.0,
                )
                .unwrap();
            }
        }
    }
}

#[test]
fn gradient_matches_cpu_reference() {
    let mut rng = TestRng::new(12);
    let options = [
        LossOptions::default(),
        LossOptions {
            ssim_weight: 1.0,
            padding: SsimPadding::Valid,
            ..Default::default()
        },
        LossOptions {
            ssim_weight: 0.5,
            ..Default::default()
        },
    ];
    for (width, height) in [(1, 1), (7, 13), (40, 33), (123, 82)] {
        let case = Case::new(
            width,
            height,
            random_image(&mut rng, width, height),
            random_image(&mut rng, width, height),
        );
        let structured = Case::new(
            width,
            height,
            gradient_image(width, height),
            checkerboard(width, height),
        );
        for opts in &options {
            if opts.padding == SsimPadding::Valid && width.min(height) < 11 {
                continue;
            }
            for (name, case) in [("random", &case), ("structured", &structured)] {
                let want = case.cpu(opts, true);
                for ctx in both_paths() {
                    let what = format!(
                        "{name} {width}x{height} {opts:?} {}",
                        ctx.info().kernel_path()
                    );
                    let (stats, grad) = case.gpu_grad(ctx, opts);
                    compare_close(
                        &format!("stats {what}"),
                        &stats,
                        &reference_stats(&want),
                        STATS_ATOL,
                        0.0,
                    )
                    .unwrap();
                    compare_grad(&format!("grad {what}"), &grad, &want.grad).unwrap();
                }
            }
        }
    }
}

#[test]
fn ssim_of_identical_images_is_one() {
    let mut rng = TestRng::new(13);
    for (width, height) in [(1, 1), (37, 29)] {
        for image in [
            random_image(&mut rng, width, height),
            checkerboard(width, height),
            constant(width, height, 0.25),
        ] {
            let case = Case::new(width, height, image.clone(), image);
            for ctx in both_paths() {
                let opts = LossOptions::default();
                let (stats, grad) = case.gpu_grad(ctx, &opts);
                let what = format!("{width}x{height} {}", ctx.info().kernel_path());
                assert!(
                    (stats[2] - 1.0).abs() <= 1e-6,
                    "SSIM(x, x) = {} {what}",
                    stats[2]
                );
                assert!(
                    stats[0].abs() <= 1e-6 && stats[1] == 0.0 && stats[3] == 0.0,
                    "loss terms {stats:?} {what}"
                );
                assert!(
                    (case.gpu_stats(ctx, &opts)[2] - 1.0).abs() <= 1e-6,
                    "forward SSIM(x, x) {what}"
                );
                // SSIM has its maximum at y = x and sign(0) = 0: the gradient vanishes.
                let largest = grad.iter().fold(0.0f32, |m, g| m.max(g.abs()));
                assert!(
                    largest <= 1e-6,
                    "gradient at x = y reaches {largest} {what}"
                );
            }
        }
    }
}

#[test]
fn l1_term_alone_is_exact() {
    let mut rng = TestRng::new(14);
    let (width, height) = (21, 18);
    let mut case = Case::new(
        width,
        height,
        random_image(&mut rng, width, height),
        random_image(&mut rng, width, height),
    );
    case.rendered[4 * 7] = 0.5; // one exact tie: sign(0) = 0
    if let Gt::F32(gt) = &mut case.gt {
        gt[4 * 7] = 0.5;
    }
    let opts = LossOptions {
        ssim_weight: 0.0,
        ..Default::default()
    };
    let want = case.cpu(&opts, true);
    for ctx in both_paths() {
        let (stats, grad) = case.gpu_grad(ctx, &opts);
        let path = ctx.info().kernel_path();
        compare_close(
            &format!("L1 stats {path}"),
            &stats,
            &reference_stats(&want),
            1e-6,
            1e-6,
        )
        .unwrap();
        assert_eq!(stats[0], stats[1], "with lambda 0 the loss is the L1 mean");
        let n = (3 * width * height) as f32;
        let Gt::F32(gt) = &case.gt else {
            unreachable!()
        };
        for (i, &g) in grad.iter().enumerate() {
            let d = case.rendered[i] - gt[i];
            let sign = if d > 0.0 {
                1.0
            } else if d < 0.0 {
                -1.0
            } else {
                0.0
            };
            let expected = if i % 4 == 3 { 0.0 } else { sign / n };
            assert!(
                (g - expected).abs() <= 1e-6 / n,
                "grad[{i}] = {g}, expected sign(x - y) / {n} = {expected} ({path})"
            );
        }
        assert_eq!(grad[4 * 7], 0.0, "sign(0) is 0");
    }
}

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

/// Random RGBA ground truth whose alpha covers 0, 1 and values in between.
fn random_rgba_with_alpha(rng: &mut TestRng, width: usize, height: usize) -> Vec<f32> {
    let mut gt = random_image(rng, width, height);
    for p in 0..width * height {
        gt[4 * p + 3] = match p % 5 {
            0 => 0.0,
            1 => 1.0,
            _ => rng.unit(),
        };
    }
    gt
}

/// Packs RGBA bytes one pixel per u32, red in the low byte.
fn pack_rgba8(rng: &mut TestRng, pixels: usize) -> Vec<u32> {
    (0..pixels).map(|_| rng.next_u32()).collect()
}

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
                let (stats, grad) = case.gpu_grad(ctx, opts);
                compare_close(
                    &format!("stats {what}"),
                    &stats,
                    &reference_stats(&want),
                    STATS_ATOL,
                    0.0,
                )
                .unwrap();
                compare_close(
                    &format!("forward stats {what}"),
                    &case.gpu_stats(ctx, opts),
                    &reference_stats(&want),
                    STATS_ATOL,
                    0.0,
                )
                .unwrap();
                compare_grad(&format!("grad {what}"), &grad, &want.grad).unwrap();
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

/// SSIM of 64x64 images computed ONCE with scikit-image 0.26.0 by tests/fixtures/ssim_skimage.py
/// (`structural_similarity(x, y, gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
/// data_range=1.0, channel_axis=-1)` on float64 copies of the float32 images):
/// - "same": both images zero-padded by 5 pixels, `full=True`, and the SSIM map averaged over the
///   original 64x64 region and the channels (the 3DGS definition with zero padding);
/// - "valid": skimage's own mean (its map cropped by the radius 5).
///
/// Rows: (case, same, valid); rendered = the case applied to `fixture_structured()`, ground truth
/// = `fixture_structured()`.
const SKIMAGE_TABLE: [(&str, f64, f64); 4] = [
    ("noise 0.05 seed 1", 0.945289864331, 0.936767871664),
    ("noise 0.25 seed 2", 0.476810130785, 0.413935260079),
    ("blur x1", 0.948701032561, 0.934451338407),
    ("blur x4", 0.869561370202, 0.834061829278),
];

const FIXTURE_SIZE: usize = 64;

/// `[row][col][channel]` in f64, the same formula as `structured()` in the Python script.
fn fixture_structured() -> Vec<f64> {
    let mut out = Vec::with_capacity(FIXTURE_SIZE * FIXTURE_SIZE * 3);
    for i in 0..FIXTURE_SIZE {
        for j in 0..FIXTURE_SIZE {
            for c in 0..3 {
                let (fi, fj, fc) = (i as f64, j as f64, c as f64);
                let checker = ((i / 8 + j / 8 + c) % 2) as f64 - 0.5;
                out.push(
                    0.5 + 0.3
                        * (0.21 * fi + 0.13 * fj + 1.7 * fc).sin()
                        * (0.07 * fi - 0.11 * fj).cos()
                        + 0.15 * checker,
                );
            }
        }
    }
    out
}

/// Uniform [0, 1) from the script's 32-bit integer hash of (row, column, channel, seed).
fn fixture_hash_unit(index: usize, seed: u32) -> f64 {
    let mut h = (index as u32).wrapping_add(seed.wrapping_mul(1_000_003));
    h = h.wrapping_mul(0x9E37_79B1);
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^= h >> 16;
    f64::from(h >> 8) / f64::from(1u32 << 24)
}

fn fixture_noisy(image: &[f64], amplitude: f64, seed: u32) -> Vec<f64> {
    image
        .iter()
        .enumerate()
        .map(|(k, &v)| (v + amplitude * (2.0 * fixture_hash_unit(k, seed) - 1.0)).clamp(0.0, 1.0))
        .collect()
}

/// [1/4, 1/2, 1/4] along columns then rows with clamped edges, `times` times.
fn fixture_blur(image: &[f64], times: usize) -> Vec<f64> {
    let n = FIXTURE_SIZE;
    let at = |i: usize, j: usize, c: usize| (i * n + j) * 3 + c;
    let mut out = image.to_vec();
    for _ in 0..times {
        let mut rows = out.clone();
        for i in 0..n {
            for j in 0..n {
                for c in 0..3 {
                    let (l, r) = (j.saturating_sub(1), (j + 1).min(n - 1));
                    rows[at(i, j, c)] =
                        0.25 * out[at(i, l, c)] + 0.5 * out[at(i, j, c)] + 0.25 * out[at(i, r, c)];
                }
            }
        }
        for i in 0..n {
            for j in 0..n {
                for c in 0..3 {
                    let (u, d) = (i.saturating_sub(1), (i + 1).min(n - 1));
                    out[at(i, j, c)] = 0.25 * rows[at(u, j, c)]
                        + 0.5 * rows[at(i, j, c)]
                        + 0.25 * rows[at(d, j, c)];
                }
            }
        }
    }
    out
}

/// RGB f64 `[row][col][c]` -> RGBA f32 with alpha 1.
fn fixture_rgba(rgb: &[f64]) -> Vec<f32> {
    rgb.chunks(3)
        .flat_map(|p| [p[0] as f32, p[1] as f32, p[2] as f32, 1.0])
        .collect()
}

#[test]
fn skimage_fixture_table() {
    let gt = fixture_structured();
    let cases = [
        fixture_noisy(&gt, 0.05, 1),
        fixture_noisy(&gt, 0.25, 2),
        fixture_blur(&gt, 1),
        fixture_blur(&gt, 4),
    ];
    for ((name, same, valid), rendered) in SKIMAGE_TABLE.iter().zip(&cases) {
        let case = Case::new(
            FIXTURE_SIZE,
            FIXTURE_SIZE,
            fixture_rgba(rendered),
            fixture_rgba(&gt),
        );
        for (padding, expected) in [(SsimPadding::Same, *same), (SsimPadding::Valid, *valid)] {
            let opts = LossOptions {
                padding,
                ..Default::default()
            };
            let cpu = case.cpu(&opts, false).ssim;
            assert!(
                (cpu - expected).abs() < 1e-9,
                "{name} {padding:?}: CPU reference {cpu} vs scikit-image {expected}"
            );
            for ctx in both_paths() {
                let got = f64::from(case.gpu_stats(ctx, &opts)[2]);
                assert!(
                    (got - expected).abs() < 1e-5,
                    "{name} {padding:?} {}: GPU {got} vs scikit-image {expected}",
                    ctx.info().kernel_path()
                );
            }
        }
    }
}

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
                let (stats, grad) = case.gpu_grad(ctx, opts);
                compare_close(
                    &format!("stats {what}"),
                    &stats,
                    &reference_stats(&want),
                    STATS_ATOL,
                    0.0,
                )
                .unwrap();
                compare_close(
                    &format!("forward {what}"),
                    &case.gpu_stats(ctx, opts),
                    &reference_stats(&want),
                    STATS_ATOL,
                    0.0,
                )
                .unwrap();
                compare_grad(&format!("grad {what}"), &grad, &want.grad).unwrap();
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

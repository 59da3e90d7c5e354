//! The fused L1 + SSIM loss, its gradient and the image metrics against the f64 CPU reference
//! (src/loss/reference.rs), finite differences and a scikit-image fixture table, on both kernel
//! paths and on small pages (row bands).

use wgsplat::loss::reference::{self, ReferenceGt, ReferenceLoss};
use wgsplat::loss::{self, LossOptions, SsimPadding};
use wgsplat::testing::{TestRng, both_paths, both_paths_small_pages, compare_close};
use wgsplat::{DType, Encoder, GpuContext, MemoryCategory, Tensor};

mod finite_differences;
mod masks;
mod metrics;
mod skimage;

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

    /// Panics, naming `what`, unless the backward kernel's statistics and gradient and the
    /// forward kernel's statistics match the reference `want`.
    fn assert_both_kernels_match(
        &self,
        ctx: &GpuContext,
        options: &LossOptions,
        want: &ReferenceLoss,
        what: &str,
    ) {
        let (stats, grad) = self.gpu_grad(ctx, options);
        assert_stats_close(what, &stats, want);
        assert_stats_close(
            &format!("forward {what}"),
            &self.gpu_stats(ctx, options),
            want,
        );
        compare_grad(&format!("grad {what}"), &grad, &want.grad).unwrap();
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

/// Largest difference allowed between the GPU's and the reference's `[loss, l1, ssim, mse]`.
const STATS_ATOL: f32 = 1e-5;

/// Panics, naming `what` and the worst entry, unless the GPU's `[loss, l1, ssim, mse]` match the
/// reference's within [`STATS_ATOL`].
fn assert_stats_close(what: &str, stats: &[f32], want: &ReferenceLoss) {
    compare_close(
        &format!("stats {what}"),
        stats,
        &reference_stats(want),
        STATS_ATOL,
        0.0,
    )
    .unwrap();
}

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
                    assert_stats_close(&what, &stats, &want);
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

//! CPU reference of the loss, its gradient and the metrics, in f64 with straightforward
//! double loops over the 11×11 window and zero padding (the definitions are in the
//! [module docs](super)). Slow; meant for tests and the benchmark's baseline.

use super::{LossOptions, SsimPadding};

/// Window radius and the SSIM constants.
const RADIUS: i64 = 5;
const C1: f64 = 0.01 * 0.01;
const C2: f64 = 0.03 * 0.03;

/// Ground truth as the GPU accepts it.
#[derive(Clone, Copy, Debug)]
pub enum ReferenceGt<'a> {
    /// f32 RGBA, 4 values per pixel.
    Rgba32F(&'a [f32]),
    /// 8-bit RGBA packed one pixel per u32, red in the low byte.
    Rgba8(&'a [u32]),
}

/// Loss terms (and optionally the gradient) computed on the CPU.
#[derive(Clone, Debug, Default)]
pub struct ReferenceLoss {
    /// `(1 - λ)·L1 + λ·(1 - SSIM)`.
    pub loss: f64,
    /// (Weighted) mean absolute error over RGB.
    pub l1: f64,
    /// (Weighted) mean SSIM.
    pub ssim: f64,
    /// (Weighted) mean squared error over RGB.
    pub mse: f64,
    /// dLoss/dRendered as `[H, W, 4]` (alpha 0); empty unless asked for.
    pub grad: Vec<f64>,
}

/// The normalised 11-tap Gaussian, σ = 1.5.
pub fn gaussian_window() -> [f64; 11] {
    let mut g = [0.0; 11];
    for (i, v) in g.iter_mut().enumerate() {
        let d = i as f64 - RADIUS as f64;
        *v = (-d * d / (2.0 * 1.5 * 1.5)).exp();
    }
    let sum: f64 = g.iter().sum();
    g.map(|v| v / sum)
}

/// Ground-truth RGB planes (`[c][pixel]`) and per-pixel weights after decoding, compositing
/// and masking as the options say (with a mask, the planes are multiplied by the weights).
pub fn ground_truth_planes(
    gt: ReferenceGt<'_>,
    pixels: usize,
    options: &LossOptions,
) -> ([Vec<f64>; 3], Vec<f64>) {
    let mut planes = [vec![0.0; pixels], vec![0.0; pixels], vec![0.0; pixels]];
    let mut weights = vec![1.0; pixels];
    for p in 0..pixels {
        let rgba: [f64; 4] = match gt {
            ReferenceGt::Rgba32F(v) => [0, 1, 2, 3].map(|c| f64::from(v[4 * p + c])),
            ReferenceGt::Rgba8(v) => {
                [0, 8, 16, 24].map(|shift| f64::from((v[p] >> shift) & 255) / 255.0)
            }
        };
        let alpha = rgba[3];
        for c in 0..3 {
            planes[c][p] = match options.background {
                Some(bg) => alpha * rgba[c] + (1.0 - alpha) * f64::from(bg[c]),
                None => rgba[c],
            };
        }
        if options.mask_by_alpha {
            weights[p] = alpha;
            for plane in &mut planes {
                plane[p] *= alpha;
            }
        }
    }
    (planes, weights)
}

/// Gaussian-weighted local statistics at one position, zeros outside the image.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalStats {
    /// Means.
    pub mu_x: f64,
    /// Mean of y.
    pub mu_y: f64,
    /// Variance of x.
    pub var_x: f64,
    /// Variance of y.
    pub var_y: f64,
    /// Covariance.
    pub cov: f64,
}

/// Statistics of the window centred at (row, col).
pub fn local_stats(
    x: &[f64],
    y: &[f64],
    width: usize,
    height: usize,
    row: usize,
    col: usize,
) -> LocalStats {
    let g = gaussian_window();
    let (mut sx, mut sy, mut sxx, mut syy, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for dr in -RADIUS..=RADIUS {
        for dc in -RADIUS..=RADIUS {
            let (r, c) = (row as i64 + dr, col as i64 + dc);
            if r < 0 || c < 0 || r >= height as i64 || c >= width as i64 {
                continue;
            }
            let weight = g[(dr + RADIUS) as usize] * g[(dc + RADIUS) as usize];
            let i = r as usize * width + c as usize;
            sx += weight * x[i];
            sy += weight * y[i];
            sxx += weight * x[i] * x[i];
            syy += weight * y[i] * y[i];
            sxy += weight * x[i] * y[i];
        }
    }
    LocalStats {
        mu_x: sx,
        mu_y: sy,
        var_x: sxx - sx * sx,
        var_y: syy - sy * sy,
        cov: sxy - sx * sy,
    }
}

/// SSIM of local statistics and its partial derivatives `(m, ∂m/∂μx, ∂m/∂σx², ∂m/∂σxy)`.
pub fn ssim_and_partials(s: &LocalStats) -> (f64, f64, f64, f64) {
    let a1 = 2.0 * s.mu_x * s.mu_y + C1;
    let a2 = 2.0 * s.cov + C2;
    let b1 = s.mu_x * s.mu_x + s.mu_y * s.mu_y + C1;
    let b2 = s.var_x + s.var_y + C2;
    let m = a1 * a2 / (b1 * b2);
    (
        m,
        2.0 * s.mu_y * a2 / (b1 * b2) - 2.0 * s.mu_x * m / b1,
        -m / b2,
        2.0 * a1 / (b1 * b2),
    )
}

/// Whether the SSIM map at (row, col) enters the mean.
pub fn position_counts(
    padding: SsimPadding,
    width: usize,
    height: usize,
    row: usize,
    col: usize,
) -> bool {
    let r = RADIUS as usize;
    match padding {
        SsimPadding::Same => true,
        SsimPadding::Valid => row >= r && col >= r && row + r < height && col + r < width,
    }
}

/// The loss, its terms and (with `with_grad`) the gradient, for `rendered` `[H, W, 4]`.
pub fn reference_loss(
    rendered: &[f32],
    gt: ReferenceGt<'_>,
    width: usize,
    height: usize,
    options: &LossOptions,
    with_grad: bool,
) -> ReferenceLoss {
    let pixels = width * height;
    let (y, weights) = ground_truth_planes(gt, pixels, options);
    let x: [Vec<f64>; 3] = [0, 1, 2].map(|c| {
        (0..pixels)
            .map(|p| f64::from(rendered[4 * p + c]) * weights[p])
            .collect()
    });
    let lambda = f64::from(options.ssim_weight);
    let counted = |p: usize| position_counts(options.padding, width, height, p / width, p % width);
    let w_l1: f64 = weights.iter().sum();
    let w_ssim: f64 = (0..pixels)
        .filter(|&p| counted(p))
        .map(|p| weights[p])
        .sum();
    let inv = |total: f64| if total > 0.0 { 1.0 / total } else { 0.0 };
    let (mut abs_sum, mut sq_sum, mut ssim_sum) = (0.0, 0.0, 0.0);
    // Coefficients A, B, C of the SSIM gradient per channel and position (module docs).
    let mut coeffs = vec![[0.0f64; 3]; if with_grad { 3 * pixels } else { 0 }];
    for c in 0..3 {
        for p in 0..pixels {
            let d = x[c][p] - y[c][p];
            abs_sum += d.abs();
            sq_sum += d * d;
            if !counted(p) {
                continue;
            }
            let stats = local_stats(&x[c], &y[c], width, height, p / width, p % width);
            let (m, d_mu, d_var, d_cov) = ssim_and_partials(&stats);
            ssim_sum += weights[p] * m;
            if with_grad {
                let s = -lambda * weights[p] * inv(w_ssim) / 3.0;
                coeffs[c * pixels + p] = [
                    s * (d_mu - 2.0 * stats.mu_x * d_var - stats.mu_y * d_cov),
                    s * d_var,
                    s * d_cov,
                ];
            }
        }
    }
    let l1 = if w_l1 > 0.0 {
        abs_sum / (3.0 * w_l1)
    } else {
        0.0
    };
    let mse = if w_l1 > 0.0 {
        sq_sum / (3.0 * w_l1)
    } else {
        0.0
    };
    let ssim = if w_ssim > 0.0 {
        ssim_sum / (3.0 * w_ssim)
    } else {
        1.0
    };
    let mut out = ReferenceLoss {
        loss: (1.0 - lambda) * l1 + lambda * (1.0 - ssim),
        l1,
        ssim,
        mse,
        grad: Vec::new(),
    };
    if with_grad {
        out.grad = gradient(
            &x,
            &y,
            &weights,
            &coeffs,
            width,
            height,
            (1.0 - lambda) * inv(w_l1) / 3.0,
        );
    }
    out
}

/// `Σ_q G(q - p)·(A_q + 2 x_p B_q + y_p C_q)` plus the L1 term, as `[H, W, 4]`.
fn gradient(
    x: &[Vec<f64>; 3],
    y: &[Vec<f64>; 3],
    weights: &[f64],
    coeffs: &[[f64; 3]],
    width: usize,
    height: usize,
    l1_scale: f64,
) -> Vec<f64> {
    let g = gaussian_window();
    let pixels = width * height;
    let mut grad = vec![0.0; 4 * pixels];
    for c in 0..3 {
        for p in 0..pixels {
            let (row, col) = ((p / width) as i64, (p % width) as i64);
            let mut sum = 0.0;
            for dr in -RADIUS..=RADIUS {
                for dc in -RADIUS..=RADIUS {
                    let (r, cc) = (row + dr, col + dc);
                    if r < 0 || cc < 0 || r >= height as i64 || cc >= width as i64 {
                        continue;
                    }
                    let [a, b, k] = coeffs[c * pixels + r as usize * width + cc as usize];
                    let weight = g[(dr + RADIUS) as usize] * g[(dc + RADIUS) as usize];
                    sum += weight * (a + 2.0 * x[c][p] * b + y[c][p] * k);
                }
            }
            let d = x[c][p] - y[c][p];
            let sign = if d > 0.0 {
                1.0
            } else if d < 0.0 {
                -1.0
            } else {
                0.0
            };
            grad[4 * p + c] = weights[p] * (sum + l1_scale * sign);
        }
    }
    grad
}

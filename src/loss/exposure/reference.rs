//! The CPU twin of the exposure kernels (f64 inside), and the least-squares fit of a transform
//! that evaluation uses on a held-out view's left half.

use super::TERMS;

/// `T(image)` for an `[H, W, 4]` image (alpha copied).
pub fn apply(image: &[f32], transform: &[f32; TERMS]) -> Vec<f32> {
    let mut out = Vec::with_capacity(image.len());
    for p in image.chunks_exact(4) {
        for c in 0..3 {
            let t = &transform[4 * c..4 * c + 4];
            let v = f64::from(t[0]) * f64::from(p[0])
                + f64::from(t[1]) * f64::from(p[1])
                + f64::from(t[2]) * f64::from(p[2])
                + f64::from(t[3]);
            out.push(v as f32);
        }
        out.push(p[3]);
    }
    out
}

/// The backward pass: the image's gradient `Tᵀ·g` (alpha: `d_out`'s) and `dL/dT`.
pub fn backward(
    image: &[f32],
    d_out: &[f32],
    transform: &[f32; TERMS],
) -> (Vec<f32>, [f32; TERMS]) {
    let mut d_image = Vec::with_capacity(image.len());
    let mut d_t = [0.0f64; TERMS];
    for (p, g) in image.chunks_exact(4).zip(d_out.chunks_exact(4)) {
        for k in 0..3 {
            let v: f64 = (0..3)
                .map(|c| f64::from(transform[4 * c + k]) * f64::from(g[c]))
                .sum();
            d_image.push(v as f32);
        }
        d_image.push(g[3]);
        for c in 0..3 {
            for k in 0..3 {
                d_t[4 * c + k] += f64::from(g[c]) * f64::from(p[k]);
            }
            d_t[4 * c + 3] += f64::from(g[c]);
        }
    }
    (d_image, d_t.map(|v| v as f32))
}

/// One Adam step of `transform` with `moments` (m then v, 24 floats) at step `step` (≥ 1).
pub fn adam(
    transform: &mut [f32; TERMS],
    moments: &mut [f32; 2 * TERMS],
    gradient: &[f32; TERMS],
    step: u64,
    settings: super::ExposureAdam,
) {
    let t = step.min(i32::MAX as u64) as i32;
    let bias1 = 1.0 - settings.beta1.powi(t);
    let bias2 = 1.0 - settings.beta2.powi(t);
    for k in 0..TERMS {
        let g = gradient[k];
        let m = settings.beta1 * moments[k] + (1.0 - settings.beta1) * g;
        let v = settings.beta2 * moments[TERMS + k] + (1.0 - settings.beta2) * g * g;
        moments[k] = m;
        moments[TERMS + k] = v;
        transform[k] -= settings.lr * (m / bias1) / ((v / bias2).sqrt() + settings.eps);
    }
}

/// The transform that best maps `render` onto `target` in the least-squares sense over the pixels
/// `x < columns` of `[H, W, 4]` images `width` wide (INRIA's evaluation with exposure: fitted on a
/// test view's left half). Falls back to the identity where the fit is singular (a flat image).
pub fn fit_left(render: &[f32], target: &[f32], width: usize, columns: usize) -> [f32; TERMS] {
    // Normal equations (XᵀX) t_c = Xᵀ y_c with rows x = [r, g, b, 1].
    let mut xtx = [[0.0f64; 4]; 4];
    let mut xty = [[0.0f64; 4]; 3];
    for (i, (p, q)) in render
        .chunks_exact(4)
        .zip(target.chunks_exact(4))
        .enumerate()
    {
        if i % width.max(1) >= columns {
            continue;
        }
        let x = [f64::from(p[0]), f64::from(p[1]), f64::from(p[2]), 1.0];
        for a in 0..4 {
            for b in 0..4 {
                xtx[a][b] += x[a] * x[b];
            }
            for c in 0..3 {
                xty[c][a] += x[a] * f64::from(q[c]);
            }
        }
    }
    let mut out = super::IDENTITY;
    // A small ridge towards the identity keeps near-singular fits (flat regions) sane.
    let ridge = 1e-6 * (xtx[3][3].max(1.0));
    for c in 0..3 {
        let mut m = xtx;
        let mut rhs = xty[c];
        for a in 0..4 {
            m[a][a] += ridge;
            rhs[a] += ridge * f64::from(super::IDENTITY[4 * c + a]);
        }
        if let Some(solution) = solve4(m, rhs) {
            for a in 0..4 {
                out[4 * c + a] = solution[a] as f32;
            }
        }
    }
    out
}

/// Solves a 4×4 linear system by Gaussian elimination with partial pivoting.
fn solve4(mut m: [[f64; 4]; 4], mut rhs: [f64; 4]) -> Option<[f64; 4]> {
    for col in 0..4 {
        let pivot = (col..4).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        rhs.swap(col, pivot);
        for row in col + 1..4 {
            let f = m[row][col] / m[col][col];
            let pivot_row = m[col];
            for (value, pivot_value) in m[row].iter_mut().zip(pivot_row).skip(col) {
                *value -= f * pivot_value;
            }
            rhs[row] -= f * rhs[col];
        }
    }
    let mut x = [0.0; 4];
    for row in (0..4).rev() {
        let s: f64 = (row + 1..4).map(|k| m[row][k] * x[k]).sum();
        x[row] = (rhs[row] - s) / m[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_transform_is_fitted_back_from_the_left_half() {
        let (w, h) = (8usize, 6usize);
        let render: Vec<f32> = (0..w * h)
            .flat_map(|i| {
                let f = i as f32;
                [
                    (f * 0.37).sin() * 0.5 + 0.5,
                    (f * 0.11).cos() * 0.5 + 0.5,
                    (f * 0.05) % 1.0,
                    1.0,
                ]
            })
            .collect();
        let truth = [
            1.2, 0.05, 0.0, 0.02, //
            0.0, 0.9, 0.1, -0.03, //
            0.02, 0.0, 1.1, 0.01,
        ];
        let target = apply(&render, &truth);
        let fitted = fit_left(&render, &target, w, w / 2);
        for k in 0..TERMS {
            assert!((fitted[k] - truth[k]).abs() < 1e-3, "{fitted:?}");
        }
        // A flat image cannot be fitted: the identity stays (up to the ridge).
        let flat = vec![0.5f32; w * h * 4];
        let fitted = fit_left(&flat, &flat, w, w / 2);
        assert!(
            apply(&flat, &fitted)
                .iter()
                .zip(&flat)
                .all(|(a, b)| (a - b).abs() < 1e-4)
        );
    }
}

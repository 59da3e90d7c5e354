//! SSIM against a table computed once with scikit-image.

use super::*;

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

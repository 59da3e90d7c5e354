//! Helpers shared by the test suites: comparison of GPU results against CPU references (exact for
//! integers, atol + rtol for floats, always naming the worst index), deterministic random data, and
//! contexts for both kernel paths.

use crate::gpu::{ContextOptions, GpuContext};
use std::path::PathBuf;
use std::sync::OnceLock;

/// Compares integer (or bit-exact) results. The error names the first differing index, the count of
/// differences and both values.
pub fn compare_exact<T: PartialEq + std::fmt::Debug>(
    what: &str,
    got: &[T],
    want: &[T],
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: length {} != expected {}",
            got.len(),
            want.len()
        ));
    }
    let mut first = None;
    let mut count = 0usize;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g != w {
            count += 1;
            first.get_or_insert(i);
        }
    }
    match first {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: {count} of {} differ; first at index {i}: got {:?}, expected {:?}",
            got.len(),
            got[i],
            want[i]
        )),
    }
}

/// Compares floats with `|got - want| <= atol + rtol * |want|`. NaN never passes (unless both are
/// NaN). The error names the worst index by excess over the tolerance.
pub fn compare_close(
    what: &str,
    got: &[f32],
    want: &[f32],
    atol: f32,
    rtol: f32,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: length {} != expected {}",
            got.len(),
            want.len()
        ));
    }
    let mut worst: Option<(usize, f64)> = None;
    let mut failures = 0usize;
    let mut max_abs = 0f64;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if g.is_nan() && w.is_nan() {
            continue;
        }
        let diff = (f64::from(g) - f64::from(w)).abs();
        let tol = f64::from(atol) + f64::from(rtol) * f64::from(w).abs();
        let excess = if diff.is_nan() || g.is_nan() != w.is_nan() {
            f64::INFINITY
        } else {
            diff - tol
        };
        if diff.is_finite() {
            max_abs = max_abs.max(diff);
        }
        if excess > 0.0 || (g.is_infinite() != w.is_infinite()) {
            failures += 1;
            if worst.is_none_or(|(_, e)| excess > e) {
                worst = Some((i, excess));
            }
        }
    }
    match worst {
        None => Ok(()),
        Some((i, _)) => Err(format!(
            "{what}: {failures} of {} outside atol {atol} + rtol {rtol}; worst at index {i}: got {}, expected {} (max abs err {max_abs:e})",
            got.len(),
            got[i],
            want[i]
        )),
    }
}

/// Largest absolute difference, ignoring positions where both are NaN.
pub fn max_abs_diff(got: &[f32], want: &[f32]) -> f32 {
    got.iter()
        .zip(want)
        .filter(|(g, w)| !(g.is_nan() && w.is_nan()))
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f32::max)
}

/// The deterministic generator of test data: the runtime's [`SplitMix64`](crate::rng::SplitMix64)
/// (one generator for training and tests, so test data is the same everywhere).
pub type TestRng = crate::rng::SplitMix64;

/// The sizes every op is tested at (the paged case is separate).
pub const TEST_SIZES: [usize; 7] = [0, 1, 255, 256, 257, 65_537, (1 << 20) + 3];

fn open(options: ContextOptions) -> GpuContext {
    match GpuContext::new(options) {
        Ok(ctx) => ctx,
        Err(e) => panic!(
            "tests need a GPU adapter (lavapipe works: apt-get install mesa-vulkan-drivers): {e}"
        ),
    }
}

/// Shared contexts for both kernel paths: `[fast (whatever the adapter offers), portable]`.
pub fn both_paths() -> [&'static GpuContext; 2] {
    static FAST: OnceLock<GpuContext> = OnceLock::new();
    static PORTABLE: OnceLock<GpuContext> = OnceLock::new();
    let base = || ContextOptions::from_env().unwrap_or_default();
    [
        FAST.get_or_init(|| open(base().with_portable(false))),
        PORTABLE.get_or_init(|| open(base().with_portable(true))),
    ]
}

/// Shared contexts with 64 KiB pages (16,384 elements), for the paged case of every op:
/// `[fast, portable]`.
pub fn both_paths_small_pages() -> [&'static GpuContext; 2] {
    static FAST: OnceLock<GpuContext> = OnceLock::new();
    static PORTABLE: OnceLock<GpuContext> = OnceLock::new();
    let base = || {
        ContextOptions::from_env()
            .unwrap_or_default()
            .with_max_page_bytes(SMALL_PAGE_BYTES)
    };
    [
        FAST.get_or_init(|| open(base().with_portable(false))),
        PORTABLE.get_or_init(|| open(base().with_portable(true))),
    ]
}

/// Contexts for both kernel paths in the adapter's workgroup layouts and in the other ones
/// (`ShaderFlag::CpuLayout` on and off), so kernels with a CPU-adapter layout are tested in both
/// on any adapter: `[fast, portable, fast other layout, portable other layout]`. With `small_pages`,
/// pages of [`SMALL_PAGE_BYTES`].
pub fn both_paths_both_layouts(small_pages: bool) -> [&'static GpuContext; 4] {
    static OTHER: [OnceLock<GpuContext>; 4] = [const { OnceLock::new() }; 4];
    let [fast, portable] = if small_pages {
        both_paths_small_pages()
    } else {
        both_paths()
    };
    let other = |slot: usize, ctx: &GpuContext| {
        OTHER[slot].get_or_init(|| {
            let mut options = ContextOptions::from_env()
                .unwrap_or_default()
                .with_portable(ctx.is_portable())
                .with_cpu_layout(!ctx.variant().cpu_layout);
            if small_pages {
                options = options.with_max_page_bytes(SMALL_PAGE_BYTES);
            }
            open(options)
        })
    };
    let base = if small_pages { 2 } else { 0 };
    [fast, portable, other(base, fast), other(base + 1, portable)]
}

/// Page size of [`both_paths_small_pages`].
pub const SMALL_PAGE_BYTES: u64 = 64 << 10;

/// A fresh context (for tests that measure memory and must not share the allocator).
pub fn fresh_context(portable: bool) -> GpuContext {
    open(
        ContextOptions::from_env()
            .unwrap_or_default()
            .with_portable(portable),
    )
}

/// A path under the field data folder `../shared/` beside the repository, when it is there.
/// Where it is not, tests skip with a message, except under CI (`CI` set), where a missing folder
/// is a failure: CI always has `../shared`, and a silently skipped oracle proves nothing.
pub fn shared_data(relative: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(relative);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing, and CI must have ../shared beside the repository",
        path.display()
    );
    eprintln!("skipping: {} is absent", path.display());
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_exact_fails_on_corruption() {
        let want: Vec<u32> = (0..100).collect();
        let mut got = want.clone();
        assert!(compare_exact("x", &got, &want).is_ok());
        got[37] ^= 1;
        let err = compare_exact("x", &got, &want).unwrap_err();
        assert!(err.contains("index 37"), "{err}");
        assert!(compare_exact("x", &got[..99], &want).is_err());
    }

    #[test]
    fn compare_close_fails_on_corruption_and_nan() {
        let want: Vec<f32> = (0..100).map(|i| i as f32 * 0.5).collect();
        let mut got = want.clone();
        got[3] += 1e-7;
        assert!(compare_close("x", &got, &want, 1e-6, 1e-5).is_ok());
        got[50] += 0.1;
        got[60] += 0.01;
        let err = compare_close("x", &got, &want, 1e-6, 1e-5).unwrap_err();
        assert!(
            err.contains("index 50") && err.contains("2 of 100"),
            "{err}"
        );
        got = want.clone();
        got[10] = f32::NAN;
        assert!(
            compare_close("x", &got, &want, 1.0, 1.0)
                .unwrap_err()
                .contains("index 10")
        );
        got = want.clone();
        got[11] = f32::INFINITY;
        assert!(compare_close("x", &got, &want, 1.0, 1.0).is_err());
    }
}

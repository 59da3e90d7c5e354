//! `wgsplat bench ...`: benchmarks that print a table and write JSON under `target/bench/`.
//! Each benchmark runs a CPU baseline in the same process and reports the ratio.

mod formats;
mod knn;
mod lod;
mod longrun;
mod loss;
mod memory;
mod render;
mod runtime;
mod train;

use anyhow::Context as _;
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Radix sort and scan throughput against CPU sorts and a CPU scan.
    Runtime(runtime::RuntimeArgs),
    /// Forward and backward time of the splat rasterizer over scene sizes and resolutions.
    Render(render::RenderArgs),
    /// Fused L1 + SSIM loss forward + backward at 256², 1080p and 4K against the CPU reference.
    Loss(loss::LossArgs),
    /// Exact k-NN initialisation (mean squared distance to the 3 nearest points) against a CPU k-d tree.
    Knn(knn::KnnArgs),
    /// Persistent bytes per Gaussian and transient peaks of a training step, a 50% split and a 30% prune.
    Memory(memory::MemoryArgs),
    /// Training iterations per second and milliseconds per stage, fast path against portable.
    Train(train::TrainBenchArgs),
    /// Each model format's bytes per Gaussian, write and read times, and render PSNR against the
    /// PLY it was written from, on a dataset's views.
    Formats(formats::FormatsArgs),
    /// A level of detail's PSNR and frame time at 5 to 100% of the Gaussians, far and near, on a
    /// model tiled into a city; and the frame-to-frame PSNR of a camera moving through the
    /// threshold.
    Lod(lod::LodBenchArgs),
    /// A long training run sampled every N iterations: process RSS beside the allocator's bytes
    /// and wgpu's live objects, all flat after warm-up.
    Longrun(longrun::LongrunArgs),
}

/// Runs one benchmark.
pub fn run(command: BenchCommand, portable_only: bool) -> anyhow::Result<()> {
    match command {
        BenchCommand::Runtime(args) => runtime::run(args, portable_only),
        BenchCommand::Render(args) => render::run(args, portable_only),
        BenchCommand::Loss(args) => loss::run(args, portable_only),
        BenchCommand::Knn(args) => knn::run(args, portable_only),
        BenchCommand::Train(args) => train::run(args, portable_only),
        BenchCommand::Memory(args) => memory::run(args, portable_only),
        BenchCommand::Longrun(args) => longrun::run(args, portable_only),
        BenchCommand::Formats(args) => formats::run(args, portable_only),
        BenchCommand::Lod(args) => lod::run(args, portable_only),
    }
}

/// Median of a list of durations in milliseconds.
pub fn median_ms(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    match samples.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => samples[n / 2],
        n => 0.5 * (samples[n / 2 - 1] + samples[n / 2]),
    }
}

/// Times `runs` calls of `f` after one warm-up call; returns the median in ms.
pub fn time_median(runs: usize, mut f: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    f()?;
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        f()?;
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median_ms(&mut samples))
}

/// Parses sizes such as `1M`, `4M`, `65536`, `2^24`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if let Some(exp) = t.strip_prefix("2^") {
        let e: u32 = exp.parse().map_err(|_| format!("bad exponent in {t:?}"))?;
        return 1u64
            .checked_shl(e)
            .filter(|_| e < 63)
            .ok_or_else(|| format!("{t:?} is too large"));
    }
    let (digits, scale) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 1u64 << 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 1u64 << 30),
        _ => (t, 1),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("expected a size like 1M, 65536 or 2^24, got {t:?}"))?;
    n.checked_mul(scale)
        .ok_or_else(|| format!("{t:?} is too large"))
}

/// Where benchmark JSON goes: `target/bench/NAME.json` below the current directory.
pub fn default_json_path(name: &str) -> PathBuf {
    Path::new("target")
        .join("bench")
        .join(format!("{name}.json"))
}

/// Writes `value` as pretty JSON through a temporary file and a rename, so a crash never leaves a
/// truncated file in place of a good one.
pub fn write_json_atomic(path: &Path, value: &serde_json::Value) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(value)?;
    wgsplat::io::write_atomically(path, |w| {
        std::io::Write::write_all(w, text.as_bytes())
            .map_err(|e| wgsplat::io::io_error(path, "write", e))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("2^24"), Ok(1 << 24));
        assert_eq!(parse_size("65537"), Ok(65_537));
        assert!(parse_size("lots").is_err());
        assert_eq!(median_ms(&mut [3.0, 1.0, 2.0]), 2.0);
    }
}

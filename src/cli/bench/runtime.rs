//! `wgsplat bench runtime`: radix sort (32-bit keys with values) and exclusive scan throughput on
//! the GPU, against the standard library's `sort_unstable_by_key`, the parallel CPU radix sort of the
//! `rdst` crate and a sequential CPU scan, all in the same run.

use super::{default_json_path, parse_size, time_median, write_json_atomic};
use anyhow::Context as _;
use rdst::RadixSort as _;
use serde_json::json;
use std::path::PathBuf;
use wgsplat::rng::SplitMix64;
use wgsplat::{GpuContext, MemoryCategory, Tensor, ops};

/// Options of `wgsplat bench runtime`.
#[derive(clap::Args)]
pub struct RuntimeArgs {
    /// Element counts for scan and sort.
    #[arg(long, value_delimiter = ',', default_values = ["1M", "4M", "16M"], value_parser = parse_size)]
    sizes: Vec<u64>,
    /// Extra sizes for the sort only (2^26 by default, as the issue asks).
    #[arg(long, value_delimiter = ',', default_values = ["2^26"], value_parser = parse_size)]
    sort_extra_sizes: Vec<u64>,
    /// Timed runs per measurement (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Run only the sort or only the scan part.
    #[arg(long, value_parser = ["sort", "scan"])]
    only: Option<String>,
    /// Output JSON path.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Clone, Copy)]
struct Pair {
    key: u32,
    #[allow(dead_code)] // carried along like the GPU sort's values, never read
    value: u32,
}

impl rdst::RadixKey for Pair {
    const LEVELS: usize = 4;
    #[inline]
    fn get_level(&self, level: usize) -> u8 {
        (self.key >> (level * 8)) as u8
    }
}

fn melem_per_s(n: u64, ms: f64) -> f64 {
    n as f64 / (ms * 1e-3) / 1e6
}

fn gpu_sort_ms(ctx: &GpuContext, keys: &[u32], runs: usize) -> anyhow::Result<f64> {
    let n = keys.len();
    let mut enc = ctx.encoder("bench sort input");
    let k = Tensor::from_slice(&mut enc, keys, &[n], MemoryCategory::Other, "bench keys")?;
    let v = Tensor::uninit(
        &mut enc,
        wgsplat::DType::U32,
        &[n],
        MemoryCategory::Other,
        "bench values",
    )?;
    ops::arange(&mut enc, &v, 0u32, 1)?;
    ctx.submit(enc)?;
    ctx.wait_idle()?;
    let ms = time_median(runs, || {
        let mut enc = ctx.encoder("bench sort");
        let sorted = ops::radix_sort::sort_pairs(&mut enc, &k, &v, 32)?;
        ctx.submit(enc)?;
        ctx.wait_idle()?;
        drop(sorted);
        Ok(())
    })?;
    Ok(ms)
}

fn gpu_scan_ms(ctx: &GpuContext, n: usize, runs: usize) -> anyhow::Result<f64> {
    let mut enc = ctx.encoder("bench scan input");
    let input = Tensor::uninit(
        &mut enc,
        wgsplat::DType::U32,
        &[n],
        MemoryCategory::Other,
        "bench scan in",
    )?;
    ops::fill(&mut enc, &input, 3u32)?;
    let output = Tensor::uninit(
        &mut enc,
        wgsplat::DType::U32,
        &[n],
        MemoryCategory::Other,
        "bench scan out",
    )?;
    ctx.submit(enc)?;
    ctx.wait_idle()?;
    time_median(runs, || {
        let mut enc = ctx.encoder("bench scan");
        ops::scan::exclusive_scan_u32(&mut enc, &input, &output)?;
        ctx.submit(enc)?;
        ctx.wait_idle()?;
        Ok(())
    })
}

/// Runs the benchmark on the fast path (unless `portable_only`) and the portable path.
pub fn run(args: RuntimeArgs, portable_only: bool) -> anyhow::Result<()> {
    let mut contexts = Vec::new();
    let options = wgsplat::ContextOptions::from_env()?;
    if !portable_only {
        contexts.push(
            GpuContext::new(options.clone().with_portable(false)).context("opening the GPU")?,
        );
    }
    contexts.push(GpuContext::new(options.with_portable(true)).context("opening the GPU")?);
    let adapter = contexts[0].info().name.clone();
    println!(
        "adapter: {adapter}; runs per figure: {} (median)",
        args.runs
    );
    println!(
        "{:<6} {:>10} {:<34} {:>10} {:>10} {:>12} {:>12}",
        "op", "n", "path", "gpu ms", "Melem/s", "cpu std ms", "cpu rdst ms"
    );
    let mut rows = Vec::new();
    let mut rng = SplitMix64::new(7);
    let mut sort_sizes = args.sizes.clone();
    sort_sizes.extend(args.sort_extra_sizes.iter().copied());
    if args.only.as_deref() == Some("scan") {
        sort_sizes.clear();
    }
    let scan_sizes = if args.only.as_deref() == Some("sort") {
        Vec::new()
    } else {
        args.sizes.clone()
    };
    for &n in &sort_sizes {
        let keys = rng.vec_u32(n as usize, 0);
        let mut pairs: Vec<Pair> = keys
            .iter()
            .enumerate()
            .map(|(i, &key)| Pair {
                key,
                value: i as u32,
            })
            .collect();
        let cpu_std = time_median(args.runs.min(3), || {
            let mut p = pairs.clone();
            p.sort_unstable_by_key(|x| x.key);
            std::hint::black_box(&p);
            Ok(())
        })?;
        let cpu_rdst = time_median(args.runs.min(3), || {
            let mut p = pairs.clone();
            p.radix_sort_unstable();
            std::hint::black_box(&p);
            Ok(())
        })?;
        // Clone cost is part of both CPU timings; measure it once and subtract.
        let clone_ms = time_median(args.runs.min(3), || {
            std::hint::black_box(pairs.clone());
            Ok(())
        })?;
        pairs.clear();
        let (cpu_std, cpu_rdst) = (
            (cpu_std - clone_ms).max(1e-3),
            (cpu_rdst - clone_ms).max(1e-3),
        );
        for ctx in &contexts {
            let ms = gpu_sort_ms(ctx, &keys, args.runs)?;
            let path = ctx.info().kernel_path();
            println!(
                "{:<6} {:>10} {:<34} {:>10.2} {:>10.1} {:>12.2} {:>12.2}",
                "sort",
                n,
                path,
                ms,
                melem_per_s(n, ms),
                cpu_std,
                cpu_rdst
            );
            rows.push(json!({
                "op": "radix_sort_pairs_32bit", "n": n, "path": path, "gpu_ms": ms, "gpu_melem_per_s": melem_per_s(n, ms),
                "cpu_sort_unstable_ms": cpu_std, "cpu_rdst_ms": cpu_rdst,
                "speedup_vs_sort_unstable": cpu_std / ms, "speedup_vs_rdst": cpu_rdst / ms,
            }));
        }
    }
    for &n in &scan_sizes {
        let input = vec![3u32; n as usize];
        let mut output = vec![0u32; n as usize];
        let cpu = time_median(args.runs, || {
            let mut acc = 0u32;
            for (o, &x) in output.iter_mut().zip(&input) {
                *o = acc;
                acc = acc.wrapping_add(x);
            }
            std::hint::black_box(&output);
            Ok(())
        })?;
        for ctx in &contexts {
            let ms = gpu_scan_ms(ctx, n as usize, args.runs)?;
            let path = ctx.info().kernel_path();
            println!(
                "{:<6} {:>10} {:<34} {:>10.2} {:>10.1} {:>12.2} {:>12}",
                "scan",
                n,
                path,
                ms,
                melem_per_s(n, ms),
                cpu,
                "-"
            );
            rows.push(json!({
                "op": "exclusive_scan_u32", "n": n, "path": path, "gpu_ms": ms, "gpu_melem_per_s": melem_per_s(n, ms),
                "cpu_sequential_ms": cpu, "speedup_vs_cpu": cpu / ms,
            }));
        }
    }
    let path = args.json.unwrap_or_else(|| default_json_path("runtime"));
    let report = json!({ "benchmark": "runtime", "adapter": adapter, "runs": args.runs, "statistic": "median", "results": rows });
    write_json_atomic(&path, &report)?;
    println!("wrote {}", path.display());
    Ok(())
}

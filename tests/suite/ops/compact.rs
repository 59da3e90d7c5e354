//! Stable stream compaction of values and of indices against a CPU reference, on both kernel paths
//! at every test size and paged (where kept elements move to earlier pages).

use wgsplat::ops::{self, Compacted};
use wgsplat::testing::{TEST_SIZES, TestRng, both_paths, both_paths_small_pages, compare_exact};
use wgsplat::{DType, GpuContext, MemoryCategory, Tensor};

/// Flags with about `percent`% set, using arbitrary nonzero values.
fn random_flags(n: usize, percent: u32, seed: u64) -> Vec<u32> {
    let mut rng = TestRng::new(seed);
    (0..n)
        .map(|_| {
            if rng.next_u32() % 100 < percent {
                rng.next_u32() | 1
            } else {
                0
            }
        })
        .collect()
}

fn read_kept(ctx: &GpuContext, c: &Compacted) -> Vec<u32> {
    c.kept(ctx)
        .unwrap()
        .bitcast(DType::U32)
        .read::<u32>(ctx)
        .unwrap()
}

/// Compacts random f32 values and their indices by `flags` and checks both against the CPU.
fn check_compact(ctx: &GpuContext, flags: &[u32], seed: u64) {
    let n = flags.len();
    let values = TestRng::new(seed).vec_f32(n, -1e6, 1e6);
    let kept: Vec<usize> = (0..n).filter(|&i| flags[i] != 0).collect();
    let want_values: Vec<u32> = kept.iter().map(|&i| values[i].to_bits()).collect();
    let want_indices: Vec<u32> = kept.iter().map(|&i| i as u32).collect();

    let mut enc = ctx.encoder("test");
    let v = Tensor::from_slice(&mut enc, &values, &[n], MemoryCategory::Other, "values").unwrap();
    let f = Tensor::from_slice(&mut enc, flags, &[n], MemoryCategory::Other, "flags").unwrap();
    let by_value = ops::compact(&mut enc, &v, &f).unwrap();
    let by_index = ops::compact_indices(&mut enc, &f).unwrap();
    ctx.submit(enc).unwrap();

    let path = ctx.info().kernel_path();
    assert_eq!(by_value.values.dtype(), DType::F32);
    assert_eq!(
        by_value.values.len(),
        n as u64,
        "capacity is the input length"
    );
    assert_eq!(
        by_value.read_count(ctx).unwrap(),
        kept.len() as u64,
        "count n={n} {path}"
    );
    compare_exact(
        &format!("compact n={n} {path}"),
        &read_kept(ctx, &by_value),
        &want_values,
    )
    .unwrap();
    assert_eq!(
        by_index.read_count(ctx).unwrap(),
        kept.len() as u64,
        "index count n={n} {path}"
    );
    compare_exact(
        &format!("compact_indices n={n} {path}"),
        &read_kept(ctx, &by_index),
        &want_indices,
    )
    .unwrap();
}

#[test]
fn compact_matches_cpu_at_every_size() {
    for ctx in both_paths() {
        for n in TEST_SIZES {
            check_compact(ctx, &random_flags(n, 30, n as u64), 1 + n as u64);
        }
    }
}

#[test]
fn compact_edge_densities() {
    for ctx in both_paths() {
        let n = 70_001;
        check_compact(ctx, &vec![0; n], 1);
        check_compact(ctx, &vec![5; n], 2);
        let mut last_only = vec![0; n];
        last_only[n - 1] = 1;
        check_compact(ctx, &last_only, 3);
    }
}

#[test]
fn compact_paged() {
    // 16,384 elements per page, 3 to 5 pages, lengths not multiples of the page. Dense flags keep
    // most elements in place; sparse ones move late pages' elements to the first page; "only the
    // last page" moves a whole page's worth to the front.
    for ctx in both_paths_small_pages() {
        for n in [3 * 16_384 + 100, 4 * 16_384 + 9_999] {
            check_compact(ctx, &random_flags(n, 90, n as u64), 10);
            check_compact(ctx, &random_flags(n, 3, 2 * n as u64), 11);
            let only_last_page: Vec<u32> = (0..n).map(|i| u32::from(i >= 3 * 16_384)).collect();
            check_compact(ctx, &only_last_page, 12);
            check_compact(ctx, &vec![1; n], 13);
        }
    }
}

/// Values = arange, so a stable compaction yields strictly increasing values; generated on the GPU.
#[test]
fn compact_is_stable() {
    let n = (1 << 20) + 3;
    let flags = random_flags(n, 50, 99);
    for ctx in both_paths() {
        let mut enc = ctx.encoder("test");
        let values =
            Tensor::uninit(&mut enc, DType::U32, &[n], MemoryCategory::Other, "arange").unwrap();
        ops::arange(&mut enc, &values, 0u32, 1u32).unwrap();
        let f = Tensor::from_slice(&mut enc, &flags, &[n], MemoryCategory::Other, "flags").unwrap();
        let compacted = ops::compact(&mut enc, &values, &f).unwrap();
        ctx.submit(enc).unwrap();
        let kept = read_kept(ctx, &compacted);
        assert!(
            kept.windows(2).all(|w| w[0] < w[1]),
            "order not preserved on {}",
            ctx.info().kernel_path()
        );
        assert_eq!(kept.len(), flags.iter().filter(|&&f| f != 0).count());
        assert!(kept.iter().all(|&i| flags[i as usize] != 0));
    }
}

#[test]
fn compact_blocking_returns_exactly_the_kept_elements() {
    let ctx = both_paths()[1];
    let mut enc = ctx.encoder("test");
    let values = Tensor::from_slice(
        &mut enc,
        &[10i32, -20, 30, -40, 50],
        &[5],
        MemoryCategory::Other,
        "v",
    )
    .unwrap();
    let flags = Tensor::from_slice(
        &mut enc,
        &[0u32, 3, 0, 1, 1],
        &[5],
        MemoryCategory::Other,
        "f",
    )
    .unwrap();
    ctx.submit(enc).unwrap();
    let kept = ops::compact_blocking(ctx, &values, &flags).unwrap();
    assert_eq!(kept.read::<i32>(ctx).unwrap(), vec![-20, -40, 50]);
}

#[test]
fn compact_rejects_bad_arguments() {
    let ctx = both_paths()[0];
    let mut enc = ctx.encoder("test");
    let v = Tensor::zeros(&mut enc, DType::F32, &[10], MemoryCategory::Other, "v").unwrap();
    let short = Tensor::zeros(&mut enc, DType::U32, &[9], MemoryCategory::Other, "short").unwrap();
    let float_flags =
        Tensor::zeros(&mut enc, DType::F32, &[10], MemoryCategory::Other, "ff").unwrap();
    assert!(ops::compact(&mut enc, &v, &short).is_err());
    assert!(ops::compact(&mut enc, &v, &float_flags).is_err());
}

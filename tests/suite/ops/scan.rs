//! Prefix scans against a CPU reference: exclusive and inclusive, out of place, in place and with
//! the grand total, on both kernel paths at every test size, paged, and exactly at 2^26 elements.

use std::time::Instant;
use wgsplat::ops::{self, ScanKind};
use wgsplat::testing::{TEST_SIZES, TestRng, both_paths, both_paths_small_pages, compare_exact};
use wgsplat::{DType, GpuContext, MemoryCategory, Tensor};

fn cpu_scan(data: &[u32], kind: ScanKind) -> Vec<u32> {
    let mut running = 0u32;
    data.iter()
        .map(|&x| {
            let before = running;
            running = running.wrapping_add(x);
            if kind == ScanKind::Inclusive {
                running
            } else {
                before
            }
        })
        .collect()
}

fn upload(enc: &mut wgsplat::Encoder, data: &[u32], label: &str) -> Tensor {
    Tensor::from_slice(enc, data, &[data.len()], MemoryCategory::Other, label).unwrap()
}

/// Runs every form of the scan on random full-range data (so sums wrap) and checks each.
fn check_all_forms(ctx: &GpuContext, n: usize, seed: u64) {
    let data = TestRng::new(seed).vec_u32(n, 0);
    let path = ctx.info().kernel_path();
    let mut enc = ctx.encoder("test");
    let input = upload(&mut enc, &data, "input");
    let exclusive = Tensor::uninit(
        &mut enc,
        DType::U32,
        &[n],
        MemoryCategory::Other,
        "exclusive",
    )
    .unwrap();
    let total = Tensor::uninit(&mut enc, DType::U32, &[1], MemoryCategory::Other, "total").unwrap();
    ops::scan_with_total(&mut enc, &input, &exclusive, ScanKind::Exclusive, &total).unwrap();
    let inclusive = ops::inclusive_scan(&mut enc, &input).unwrap();
    let exclusive_in_place = upload(&mut enc, &data, "exclusive in place");
    ops::exclusive_scan_u32_in_place(&mut enc, &exclusive_in_place).unwrap();
    let inclusive_in_place = upload(&mut enc, &data, "inclusive in place");
    let total_in_place = Tensor::uninit(
        &mut enc,
        DType::U32,
        &[1],
        MemoryCategory::Other,
        "total in place",
    )
    .unwrap();
    ops::scan_u32_in_place(
        &mut enc,
        &inclusive_in_place,
        ScanKind::Inclusive,
        Some(&total_in_place),
    )
    .unwrap();
    ctx.submit(enc).unwrap();

    let want_exclusive = cpu_scan(&data, ScanKind::Exclusive);
    let want_inclusive = cpu_scan(&data, ScanKind::Inclusive);
    let want_total = data.iter().fold(0u32, |a, &x| a.wrapping_add(x));
    let what = |form: &str| format!("{form} n={n} {path}");
    compare_exact(
        &what("exclusive"),
        &exclusive.read::<u32>(ctx).unwrap(),
        &want_exclusive,
    )
    .unwrap();
    compare_exact(
        &what("inclusive"),
        &inclusive.read::<u32>(ctx).unwrap(),
        &want_inclusive,
    )
    .unwrap();
    compare_exact(
        &what("exclusive in place"),
        &exclusive_in_place.read::<u32>(ctx).unwrap(),
        &want_exclusive,
    )
    .unwrap();
    compare_exact(
        &what("inclusive in place"),
        &inclusive_in_place.read::<u32>(ctx).unwrap(),
        &want_inclusive,
    )
    .unwrap();
    assert_eq!(
        total.read::<u32>(ctx).unwrap(),
        vec![want_total],
        "{}",
        what("total")
    );
    assert_eq!(
        total_in_place.read::<u32>(ctx).unwrap(),
        vec![want_total],
        "{}",
        what("total in place")
    );
    // The input of the out-of-place scans is untouched.
    compare_exact(
        &what("input after scan"),
        &input.read::<u32>(ctx).unwrap(),
        &data,
    )
    .unwrap();
}

#[test]
fn scan_matches_cpu_at_every_size() {
    for ctx in both_paths() {
        for n in TEST_SIZES {
            check_all_forms(ctx, n, n as u64 + 1);
        }
    }
}

#[test]
fn scan_paged() {
    // 16,384 elements per page: 3 and 5 pages, neither a multiple of the page.
    for ctx in both_paths_small_pages() {
        for n in [3 * 16_384 + 17, 4 * 16_384 + 2_049] {
            check_all_forms(ctx, n, 7 + n as u64);
        }
    }
}

#[test]
fn scan_rejects_aliasing_and_wrong_dtypes() {
    let ctx = both_paths()[0];
    let mut enc = ctx.encoder("test");
    let a = Tensor::zeros(&mut enc, DType::U32, &[100], MemoryCategory::Other, "a").unwrap();
    let f = Tensor::zeros(&mut enc, DType::F32, &[100], MemoryCategory::Other, "f").unwrap();
    let short = Tensor::zeros(&mut enc, DType::U32, &[99], MemoryCategory::Other, "short").unwrap();
    assert!(ops::exclusive_scan_u32(&mut enc, &a, &a).is_err());
    assert!(ops::exclusive_scan_u32(&mut enc, &f, &a).is_err());
    assert!(ops::inclusive_scan_u32(&mut enc, &a, &short).is_err());
    assert!(ops::inclusive_scan_u32_in_place(&mut enc, &f).is_err());
}

/// 2^26 elements (two pages of the default 128 MiB binding on lavapipe, three scan levels per page):
/// small random values keep the sums below 2^32, so the check proves exactness without wrapping.
#[test]
fn scan_exact_at_2_pow_26() {
    let n = 1usize << 26;
    let data = TestRng::new(26).vec_u32(n, 16);
    let want_exclusive = cpu_scan(&data, ScanKind::Exclusive);
    let sum: u64 = data.iter().map(|&x| u64::from(x)).sum();
    assert!(sum < 1 << 32, "the test data must not wrap");
    for ctx in both_paths() {
        let path = ctx.info().kernel_path();
        let start = Instant::now();
        let mut enc = ctx.encoder("test");
        let input = upload(&mut enc, &data, "input");
        let output =
            Tensor::uninit(&mut enc, DType::U32, &[n], MemoryCategory::Other, "output").unwrap();
        let total =
            Tensor::uninit(&mut enc, DType::U32, &[1], MemoryCategory::Other, "total").unwrap();
        ops::scan_with_total(&mut enc, &input, &output, ScanKind::Exclusive, &total).unwrap();
        ctx.submit(enc).unwrap();
        assert_eq!(
            u64::from(total.read::<u32>(ctx).unwrap()[0]),
            sum,
            "total {path}"
        );
        let scanned = Instant::now();
        compare_exact(
            &format!("exclusive 2^26 {path}"),
            &output.read::<u32>(ctx).unwrap(),
            &want_exclusive,
        )
        .unwrap();
        println!(
            "{path}: upload + scan {:?}, check {:?}",
            scanned - start,
            scanned.elapsed()
        );
        drop((input, output));
        ctx.trim();
    }
}

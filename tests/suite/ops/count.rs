//! Exact counts of nonzero flags against a CPU reference, on both kernel paths at every test size,
//! paged, and at 2^25 + 1 set flags.

use wgsplat::ops;
use wgsplat::ops::count::read_u64;
use wgsplat::testing::{TEST_SIZES, TestRng, both_paths, both_paths_small_pages};
use wgsplat::{DType, GpuContext, MemoryCategory, Tensor};

/// Random flags: about a third set, with arbitrary nonzero values (not just 1).
fn random_flags(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = TestRng::new(seed);
    (0..n)
        .map(|_| {
            if rng.next_u32().is_multiple_of(3) {
                rng.next_u32() | 1 << (rng.next_u32() % 32)
            } else {
                0
            }
        })
        .collect()
}

fn check_count(ctx: &GpuContext, flags: &[u32]) {
    let want = flags.iter().filter(|&&f| f != 0).count() as u64;
    let mut enc = ctx.encoder("test");
    let t = Tensor::from_slice(
        &mut enc,
        flags,
        &[flags.len()],
        MemoryCategory::Other,
        "flags",
    )
    .unwrap();
    let pair = ops::count_nonzero(&mut enc, &t).unwrap();
    ctx.submit(enc).unwrap();
    let path = ctx.info().kernel_path();
    assert_eq!(
        read_u64(ctx, &pair).unwrap(),
        want,
        "count n={} {path}",
        flags.len()
    );
    assert_eq!(
        ops::count_nonzero_blocking(ctx, &t).unwrap(),
        want,
        "blocking count n={} {path}",
        flags.len()
    );
}

#[test]
fn count_matches_cpu_at_every_size() {
    for ctx in both_paths() {
        for n in TEST_SIZES {
            check_count(ctx, &random_flags(n, n as u64));
        }
    }
}

#[test]
fn count_paged() {
    // 16,384 elements per page: 3 and 6 pages, neither a multiple of the page; dense, sparse, full.
    for ctx in both_paths_small_pages() {
        for n in [3 * 16_384 + 5, 5 * 16_384 + 4_097] {
            check_count(ctx, &random_flags(n, 3 + n as u64));
            let mut sparse = vec![0u32; n];
            sparse[0] = 1;
            sparse[16_384] = 7;
            sparse[n - 1] = u32::MAX;
            check_count(ctx, &sparse);
            check_count(ctx, &vec![2u32; n]);
        }
    }
}

/// 2^25 + 1 set flags, generated on the GPU: one more than a full page of the default 128 MiB
/// binding, so the count spans two pages.
#[test]
fn count_exact_at_2_pow_25_plus_1() {
    let n = (1usize << 25) + 1;
    for ctx in both_paths() {
        let path = ctx.info().kernel_path();
        let mut enc = ctx.encoder("test");
        let all_set =
            Tensor::uninit(&mut enc, DType::U32, &[n], MemoryCategory::Other, "all set").unwrap();
        ops::fill(&mut enc, &all_set, 0x8000_0000u32).unwrap();
        let count = ops::count_nonzero(&mut enc, &all_set).unwrap();
        ctx.submit(enc).unwrap();
        assert_eq!(read_u64(ctx, &count).unwrap(), n as u64, "{path}");
    }
}

#[test]
fn count_rejects_non_u32_flags() {
    let ctx = both_paths()[0];
    let mut enc = ctx.encoder("test");
    let f = Tensor::zeros(&mut enc, DType::F32, &[10], MemoryCategory::Other, "f").unwrap();
    assert!(ops::count_nonzero(&mut enc, &f).is_err());
}

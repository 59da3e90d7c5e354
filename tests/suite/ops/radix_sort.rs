//! Radix sort against a CPU stable sort, on both kernel paths: every test size, duplicates
//! (stability), partial key widths, permutations, a 2^24 case and a multi-page case.

use std::time::Instant;
use wgsplat::testing::{TEST_SIZES, TestRng, both_paths, both_paths_small_pages, compare_exact};
use wgsplat::{DType, GpuContext, MemoryCategory, Tensor, ops};

fn low_bits_mask(bits: u32) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

/// The reference: a stable sort by the low `bits` bits (`sort_by_key` is stable).
fn cpu_stable_sort(keys: &[u32], values: &[u32], bits: u32) -> (Vec<u32>, Vec<u32>) {
    let mask = low_bits_mask(bits);
    let mut pairs: Vec<(u32, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
    pairs.sort_by_key(|&(k, _)| k & mask);
    pairs.into_iter().unzip()
}

fn gpu_sort_pairs(
    ctx: &GpuContext,
    keys: &[u32],
    values: &[u32],
    bits: u32,
) -> (Vec<u32>, Vec<u32>) {
    let mut enc = ctx.encoder("radix sort test");
    let k =
        Tensor::from_slice(&mut enc, keys, &[keys.len()], MemoryCategory::Other, "keys").unwrap();
    let v = Tensor::from_slice(
        &mut enc,
        values,
        &[values.len()],
        MemoryCategory::Other,
        "values",
    )
    .unwrap();
    let (sorted_k, sorted_v) = ops::sort_pairs(&mut enc, &k, &v, bits).unwrap();
    ctx.submit(enc).unwrap();
    (
        sorted_k.read::<u32>(ctx).unwrap(),
        sorted_v.read::<u32>(ctx).unwrap(),
    )
}

fn gpu_sort_keys(ctx: &GpuContext, keys: &[u32], bits: u32) -> Vec<u32> {
    let mut enc = ctx.encoder("radix sort test");
    let k =
        Tensor::from_slice(&mut enc, keys, &[keys.len()], MemoryCategory::Other, "keys").unwrap();
    let sorted = ops::sort_keys(&mut enc, &k, bits).unwrap();
    ctx.submit(enc).unwrap();
    sorted.read::<u32>(ctx).unwrap()
}

fn check_pairs(ctx: &GpuContext, what: &str, keys: &[u32], values: &[u32], bits: u32) {
    let path = ctx.info().kernel_path();
    let (want_k, want_v) = cpu_stable_sort(keys, values, bits);
    let (got_k, got_v) = gpu_sort_pairs(ctx, keys, values, bits);
    compare_exact(
        &format!("{what} keys, bits={bits}, n={} {path}", keys.len()),
        &got_k,
        &want_k,
    )
    .unwrap();
    compare_exact(
        &format!("{what} values, bits={bits}, n={} {path}", keys.len()),
        &got_v,
        &want_v,
    )
    .unwrap();
}

fn arange(n: usize) -> Vec<u32> {
    (0..n as u32).collect()
}

#[test]
fn sort_pairs_and_keys_match_cpu_at_every_size() {
    for ctx in both_paths() {
        for n in TEST_SIZES {
            let mut rng = TestRng::new(n as u64 + 1);
            let keys = rng.vec_u32(n, 0);
            let values = rng.vec_u32(n, 0);
            check_pairs(ctx, "random", &keys, &values, 32);
            let path = ctx.info().kernel_path();
            let want = cpu_stable_sort(&keys, &values, 32).0;
            compare_exact(
                &format!("sort_keys n={n} {path}"),
                &gpu_sort_keys(ctx, &keys, 32),
                &want,
            )
            .unwrap();
        }
    }
}

#[test]
fn equal_keys_keep_their_input_order() {
    for ctx in both_paths() {
        for (n, distinct) in [(3000usize, 1u32), (70_000, 3), (200_000, 17)] {
            let mut rng = TestRng::new(u64::from(distinct));
            // Few distinct keys, spread over all 32 bits so every pass sees ties.
            let keys: Vec<u32> = rng
                .vec_u32(n, distinct)
                .into_iter()
                .map(|k| k.wrapping_mul(0x9E37_79B9))
                .collect();
            check_pairs(ctx, "duplicates", &keys, &arange(n), 32);
        }
    }
}

#[test]
fn only_the_low_bits_decide_the_order() {
    for ctx in both_paths() {
        for bits in [1u32, 4, 8, 13, 20, 31] {
            let n = 100_003;
            let mut rng = TestRng::new(u64::from(bits) * 7);
            // Full 32-bit keys: the bits above `bits` must ride along without affecting the order.
            let keys = rng.vec_u32(n, 0);
            check_pairs(ctx, "low bits", &keys, &arange(n), bits);
            let path = ctx.info().kernel_path();
            let want = cpu_stable_sort(&keys, &arange(n), bits).0;
            compare_exact(
                &format!("sort_keys bits={bits} {path}"),
                &gpu_sort_keys(ctx, &keys, bits),
                &want,
            )
            .unwrap();
        }
    }
}

#[test]
fn sorting_a_permutation_gives_the_identity_and_its_inverse() {
    for ctx in both_paths() {
        let n = 300_000usize;
        let mut rng = TestRng::new(99);
        let mut keys = arange(n);
        for i in (1..n).rev() {
            keys.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        let bits = 32 - (n as u32).leading_zeros();
        let (got_k, got_v) = gpu_sort_pairs(ctx, &keys, &arange(n), bits);
        let path = ctx.info().kernel_path();
        compare_exact(&format!("permutation keys {path}"), &got_k, &arange(n)).unwrap();
        let inverse: Vec<u32> = got_v.iter().map(|&i| keys[i as usize]).collect();
        compare_exact(&format!("permutation values {path}"), &inverse, &arange(n)).unwrap();
    }
}

#[test]
fn sorts_two_to_the_24_keys() {
    // One path only: it is the slowest test on a software rasterizer.
    let ctx = both_paths()[0];
    let n = 1usize << 24;
    let mut rng = TestRng::new(24);
    let keys = rng.vec_u32(n, 0);
    let values = arange(n);
    let start = Instant::now();
    let (got_k, got_v) = gpu_sort_pairs(ctx, &keys, &values, 32);
    println!(
        "GPU sort of 2^24 pairs incl. upload/readback: {:?} ({})",
        start.elapsed(),
        ctx.info().kernel_path()
    );
    let (want_k, want_v) = cpu_stable_sort(&keys, &values, 32);
    compare_exact("2^24 keys", &got_k, &want_k).unwrap();
    compare_exact("2^24 values", &got_v, &want_v).unwrap();
}

#[test]
fn sorts_across_pages() {
    for ctx in both_paths_small_pages() {
        // 16,384 elements per page: 4 pages, the last one partial.
        let n = 3 * 16_384 + 777;
        let mut rng = TestRng::new(5);
        let keys: Vec<u32> = rng.vec_u32(n, 5000);
        check_pairs(ctx, "paged", &keys, &arange(n), 13);
        let keys = rng.vec_u32(n, 0);
        check_pairs(ctx, "paged", &keys, &arange(n), 32);
        let path = ctx.info().kernel_path();
        let want = cpu_stable_sort(&keys, &arange(n), 32).0;
        compare_exact(
            &format!("paged sort_keys {path}"),
            &gpu_sort_keys(ctx, &keys, 32),
            &want,
        )
        .unwrap();
    }
}

#[test]
fn rejects_bad_arguments() {
    let ctx = both_paths()[1];
    let mut enc = ctx.encoder("radix sort errors");
    let keys = Tensor::zeros(&mut enc, DType::U32, &[10], MemoryCategory::Other, "keys").unwrap();
    let floats =
        Tensor::zeros(&mut enc, DType::F32, &[10], MemoryCategory::Other, "floats").unwrap();
    let short = Tensor::zeros(&mut enc, DType::U32, &[9], MemoryCategory::Other, "short").unwrap();
    assert!(ops::sort_keys(&mut enc, &keys, 0).is_err());
    assert!(ops::sort_keys(&mut enc, &keys, 33).is_err());
    assert!(ops::sort_keys(&mut enc, &floats, 32).is_err());
    assert!(ops::sort_pairs(&mut enc, &keys, &short, 32).is_err());
    // Float values ride along bit for bit.
    let (k, v) = ops::sort_pairs(&mut enc, &keys, &floats, 32).unwrap();
    assert_eq!(v.dtype(), DType::F32);
    ctx.submit(enc).unwrap();
    assert_eq!(k.read::<u32>(ctx).unwrap(), vec![0; 10]);
}

#[test]
fn sorts_with_pages_smaller_than_a_block() {
    // 4 KiB pages hold 1,024 keys, half a sort block: every page is one partial block.
    let options = wgsplat::ContextOptions::from_env()
        .unwrap_or_default()
        .with_portable(true)
        .with_max_page_bytes(4096);
    let ctx = GpuContext::new(options).expect("a GPU adapter (lavapipe works)");
    let n = 10 * 1024 + 5;
    let mut rng = TestRng::new(11);
    let keys = rng.vec_u32(n, 300);
    check_pairs(&ctx, "tiny pages", &keys, &arange(n), 9);
}

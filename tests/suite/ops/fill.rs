//! fill and arange against CPU references, on both kernel paths, at every test size and paged.

use wgsplat::testing::{TEST_SIZES, both_paths, both_paths_small_pages, compare_exact};
use wgsplat::{DType, GpuContext, MemoryCategory, Tensor, ops};

fn check_fill_arange(ctx: &GpuContext, n: usize) {
    let mut enc = ctx.encoder("test");
    let a = Tensor::uninit(&mut enc, DType::U32, &[n], MemoryCategory::Other, "a").unwrap();
    let b = Tensor::uninit(&mut enc, DType::F32, &[n], MemoryCategory::Other, "b").unwrap();
    let c = Tensor::uninit(&mut enc, DType::I32, &[n], MemoryCategory::Other, "c").unwrap();
    ops::fill(&mut enc, &a, 0xDEAD_BEEFu32).unwrap();
    ops::arange(&mut enc, &b, 0.5f32, 0.25f32).unwrap();
    ops::arange(&mut enc, &c, 7i32, -3i32).unwrap();
    ctx.submit(enc).unwrap();
    let path = ctx.info().kernel_path();
    compare_exact(
        &format!("fill n={n} {path}"),
        &a.read::<u32>(ctx).unwrap(),
        &vec![0xDEAD_BEEF; n],
    )
    .unwrap();
    let want_b: Vec<f32> = (0..n).map(|i| 0.5 + i as f32 * 0.25).collect();
    compare_exact(
        &format!("arange f32 n={n} {path}"),
        &b.read::<f32>(ctx).unwrap(),
        &want_b,
    )
    .unwrap();
    let want_c: Vec<i32> = (0..n)
        .map(|i| 7i32.wrapping_add((i as i32).wrapping_mul(-3)))
        .collect();
    compare_exact(
        &format!("arange i32 n={n} {path}"),
        &c.read::<i32>(ctx).unwrap(),
        &want_c,
    )
    .unwrap();
}

#[test]
fn fill_and_arange_match_cpu() {
    for ctx in both_paths() {
        for n in TEST_SIZES {
            check_fill_arange(ctx, n);
        }
    }
}

#[test]
fn fill_and_arange_paged() {
    for ctx in both_paths_small_pages() {
        check_fill_arange(ctx, 3 * 16_384 + 17);
    }
}

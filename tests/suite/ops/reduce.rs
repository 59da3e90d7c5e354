//! Reductions against CPU references (an f64 sum with the documented error bound, exact min/max
//! and integer results), on both kernel paths, at every test size, paged, and on a tensor larger
//! than 300 MiB with the real page size.

use wgsplat::ops::{self, ReduceOp, reduce::sum_f32_error_bound};
use wgsplat::testing::{
    TEST_SIZES, TestRng, both_paths, both_paths_small_pages, compare_exact, fresh_context,
};
use wgsplat::{DType, Element, Encoder, Error, GpuContext, MemoryCategory, Tensor};

fn upload<T: Element>(enc: &mut Encoder, data: &[T]) -> Tensor {
    Tensor::from_slice(enc, data, &[data.len()], MemoryCategory::Other, "test").unwrap()
}

/// Checks a GPU f32 sum against the f64 sum of the same values with the documented bound.
fn check_sum(ctx: &GpuContext, what: &str, got: f32, values: &[f32]) {
    let exact: f64 = values.iter().map(|&x| f64::from(x)).sum();
    let sum_abs: f64 = values.iter().map(|&x| f64::from(x).abs()).sum();
    let bound = sum_f32_error_bound(ctx, values.len() as u64, sum_abs);
    let err = (f64::from(got) - exact).abs();
    assert!(
        err <= bound,
        "{what}: sum {got} vs exact {exact}: error {err:e} above the bound {bound:e}"
    );
}

fn check_reductions(ctx: &GpuContext, n: usize) {
    let path = ctx.info().kernel_path();
    let mut rng = TestRng::new(n as u64 + 3);
    let floats = rng.vec_f32(n, -1.0, 1.0);
    // Ill-conditioned: large values that cancel, plus small ones.
    let cancelling: Vec<f32> = (0..n)
        .map(|i| if i % 2 == 0 { 1.0e4 } else { -1.0e4 } + rng.range(-1e-3, 1e-3))
        .collect();
    let uints = rng.vec_u32(n, 0);
    let ints: Vec<i32> = rng.vec_u32(n, 0).into_iter().map(|x| x as i32).collect();
    let mut enc = ctx.encoder("test");
    let (gf, gc, gu, gi) = (
        upload(&mut enc, &floats),
        upload(&mut enc, &cancelling),
        upload(&mut enc, &uints),
        upload(&mut enc, &ints),
    );
    let mut results = Vec::new();
    for (t, op) in [
        (&gf, ReduceOp::Sum),
        (&gf, ReduceOp::Min),
        (&gf, ReduceOp::Max),
        (&gc, ReduceOp::Sum),
        (&gu, ReduceOp::Sum),
        (&gu, ReduceOp::Min),
        (&gu, ReduceOp::Max),
        (&gi, ReduceOp::Sum),
        (&gi, ReduceOp::Min),
        (&gi, ReduceOp::Max),
    ] {
        let out = ops::reduce(&mut enc, t, op).unwrap();
        assert_eq!(out.len(), 1);
        results.push(out.record_read(&mut enc).unwrap());
    }
    ctx.submit(enc).unwrap();
    let mut results = results.into_iter();
    let mut next_f32 = || results.next().unwrap().wait::<f32>(ctx).unwrap()[0];
    check_sum(ctx, &format!("sum n={n} {path}"), next_f32(), &floats);
    let want_min = floats.iter().copied().fold(f32::INFINITY, f32::min);
    let want_max = floats.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    compare_exact(&format!("min n={n} {path}"), &[next_f32()], &[want_min]).unwrap();
    compare_exact(&format!("max n={n} {path}"), &[next_f32()], &[want_max]).unwrap();
    check_sum(
        ctx,
        &format!("cancelling sum n={n} {path}"),
        next_f32(),
        &cancelling,
    );
    let mut next_u32 = || results.next().unwrap().wait::<u32>(ctx).unwrap()[0];
    let want_u = [
        uints.iter().fold(0u32, |s, &x| s.wrapping_add(x)),
        uints.iter().copied().min().unwrap_or(u32::MAX),
        uints.iter().copied().max().unwrap_or(0),
    ];
    compare_exact(
        &format!("u32 sum/min/max n={n} {path}"),
        &[next_u32(), next_u32(), next_u32()],
        &want_u,
    )
    .unwrap();
    let mut next_i32 = || results.next().unwrap().wait::<i32>(ctx).unwrap()[0];
    let want_i = [
        ints.iter().fold(0i32, |s, &x| s.wrapping_add(x)),
        ints.iter().copied().min().unwrap_or(i32::MAX),
        ints.iter().copied().max().unwrap_or(i32::MIN),
    ];
    compare_exact(
        &format!("i32 sum/min/max n={n} {path}"),
        &[next_i32(), next_i32(), next_i32()],
        &want_i,
    )
    .unwrap();
}

#[test]
fn reductions_match_cpu() {
    for ctx in both_paths() {
        for n in TEST_SIZES {
            check_reductions(ctx, n);
        }
    }
}

#[test]
fn reductions_paged() {
    for ctx in both_paths_small_pages() {
        check_reductions(ctx, 3 * 16_384 + 17);
        check_reductions(ctx, (1 << 20) + 3);
    }
}

#[test]
fn empty_tensor_gives_identities() {
    for ctx in both_paths() {
        let mut enc = ctx.encoder("test");
        let empty = upload::<f32>(&mut enc, &[]);
        ctx.submit(enc).unwrap();
        assert_eq!(ops::sum_f32_value(ctx, &empty).unwrap(), 0.0);
        assert_eq!(ops::min_f32_value(ctx, &empty).unwrap(), f32::INFINITY);
        assert_eq!(ops::max_f32_value(ctx, &empty).unwrap(), f32::NEG_INFINITY);
    }
}

#[test]
fn nan_propagates_through_min_and_max() {
    for ctx in both_paths() {
        let path = ctx.info().kernel_path();
        for (n, at) in [(5usize, 2usize), (70_000, 65_536), (70_000, 3)] {
            let mut values: Vec<f32> = (0..n).map(|i| i as f32).collect();
            values[at] = f32::NAN;
            let mut enc = ctx.encoder("test");
            let t = upload(&mut enc, &values);
            ctx.submit(enc).unwrap();
            assert!(
                ops::min_f32_value(ctx, &t).unwrap().is_nan(),
                "min n={n} NaN at {at} {path}"
            );
            assert!(
                ops::max_f32_value(ctx, &t).unwrap().is_nan(),
                "max n={n} NaN at {at} {path}"
            );
        }
    }
}

#[test]
fn wrong_dtype_is_rejected() {
    let ctx = both_paths()[1];
    let mut enc = ctx.encoder("test");
    let ints = upload(&mut enc, &[1u32, 2]);
    assert!(matches!(
        ops::sum_f32(&mut enc, &ints),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        ops::max_f32(&mut enc, &ints),
        Err(Error::DType { .. })
    ));
    ctx.submit(enc).unwrap();
    assert!(matches!(
        ops::reduce_value::<f32>(ctx, &ints, ReduceOp::Sum),
        Err(Error::DType { .. })
    ));
}

/// A 320 MB f32 tensor on the real page size (several pages on a 128 MiB binding limit): arange,
/// one planted maximum in a middle page, then sum and max, checked against the read-back values.
#[test]
fn reduce_tensor_larger_than_300_mib() {
    let ctx = fresh_context(false);
    let n: usize = 80_000_000;
    let planted_at = 40_000_001u64;
    let mut enc = ctx.encoder("big");
    let t = Tensor::uninit(&mut enc, DType::F32, &[n], MemoryCategory::Other, "big").unwrap();
    println!("{} pages of {} bytes", t.num_pages(), ctx.page_bytes());
    assert!(t.num_pages() >= 2 || ctx.page_bytes() >= 320_000_000);
    ops::arange(&mut enc, &t, 0.0f32, 1.0f32).unwrap();
    let planted = upload(&mut enc, &[1.0e9f32]);
    ops::copy_range(&mut enc, &planted, 0, &t, planted_at, 1).unwrap();
    let sum = ops::sum_f32(&mut enc, &t).unwrap();
    let max = ops::max_f32(&mut enc, &t).unwrap();
    let (sum_read, max_read) = (
        sum.record_read(&mut enc).unwrap(),
        max.record_read(&mut enc).unwrap(),
    );
    ctx.submit(enc).unwrap();
    let (sum, max) = (
        sum_read.wait::<f32>(&ctx).unwrap()[0],
        max_read.wait::<f32>(&ctx).unwrap()[0],
    );
    let values = t.read::<f32>(&ctx).unwrap();
    assert_eq!(values.len(), n);
    for (i, &v) in values.iter().enumerate() {
        if i as u64 == planted_at {
            assert_eq!(v, 1.0e9);
        } else {
            // u32 -> f32 conversion may round either way past 2^24.
            assert!((v - i as f32).abs() <= 8.0, "element {i}: {v}");
        }
    }
    assert_eq!(max, 1.0e9);
    check_sum(&ctx, "sum of 80M", sum, &values);
}

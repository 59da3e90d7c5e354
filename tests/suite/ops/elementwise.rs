//! Element-wise ops and copies against CPU references, on both kernel paths, at every test size
//! and paged.

use wgsplat::ops::{self, BinaryOp, UnaryOp};
use wgsplat::testing::{
    TEST_SIZES, TestRng, both_paths, both_paths_small_pages, compare_close, compare_exact,
};
use wgsplat::{DType, Element, Encoder, Error, GpuContext, MemoryCategory, Tensor};

fn upload<T: Element>(enc: &mut Encoder, data: &[T]) -> Tensor {
    Tensor::from_slice(enc, data, &[data.len()], MemoryCategory::Other, "test").unwrap()
}

fn uninit(enc: &mut Encoder, dtype: DType, n: usize) -> Tensor {
    Tensor::uninit(enc, dtype, &[n], MemoryCategory::Other, "test").unwrap()
}

const ATOL: f32 = 1e-6;

/// An op with its CPU reference.
type Case<T> = (BinaryOp, fn(T, T) -> T);
const RTOL: f32 = 1e-5;

fn check_binary(ctx: &GpuContext, n: usize) {
    let path = ctx.info().kernel_path();
    let mut rng = TestRng::new(n as u64 + 1);
    let a = rng.vec_f32(n, -4.0, 4.0);
    let b: Vec<f32> = rng
        .vec_f32(n, 0.5, 2.0)
        .into_iter()
        .map(|x| if rng.unit() < 0.5 { -x } else { x })
        .collect();
    let (ua, ub) = (rng.vec_u32(n, 0), rng.vec_u32(n, 0));
    let (ia, ib): (Vec<i32>, Vec<i32>) = (
        ua.iter().map(|&x| x as i32).collect(),
        ub.iter().map(|&x| x as i32).collect(),
    );
    let float_ops: Vec<Case<f32>> = vec![
        (BinaryOp::Add, |x, y| x + y),
        (BinaryOp::Sub, |x, y| x - y),
        (BinaryOp::Mul, |x, y| x * y),
        (BinaryOp::Div, |x, y| x / y),
        (BinaryOp::Min, f32::min),
        (BinaryOp::Max, f32::max),
        (
            BinaryOp::LinearCombination {
                lhs_scale: 0.9,
                rhs_scale: 0.1,
            },
            |x, y| 0.9 * x + 0.1 * y,
        ),
        (
            BinaryOp::LinearCombinationSquared {
                lhs_scale: 0.999,
                rhs_scale: 0.001,
            },
            |x, y| 0.999 * x + 0.001 * y * y,
        ),
    ];
    let u32_ops: Vec<Case<u32>> = vec![
        (BinaryOp::Add, u32::wrapping_add),
        (BinaryOp::Sub, u32::wrapping_sub),
        (BinaryOp::Mul, u32::wrapping_mul),
        (BinaryOp::Min, Ord::min),
        (BinaryOp::Max, Ord::max),
    ];
    let i32_ops: Vec<Case<i32>> = vec![
        (BinaryOp::Add, i32::wrapping_add),
        (BinaryOp::Sub, i32::wrapping_sub),
        (BinaryOp::Min, Ord::min),
        (BinaryOp::Max, Ord::max),
    ];
    let mut enc = ctx.encoder("test");
    let (ga, gb) = (upload(&mut enc, &a), upload(&mut enc, &b));
    let (gua, gub) = (upload(&mut enc, &ua), upload(&mut enc, &ub));
    let (gia, gib) = (upload(&mut enc, &ia), upload(&mut enc, &ib));
    let mut float_outs = Vec::new();
    for (op, _) in &float_ops {
        let out = uninit(&mut enc, DType::F32, n);
        ops::binary(&mut enc, *op, &ga, &gb, &out).unwrap();
        float_outs.push(out);
    }
    let mut u32_outs = Vec::new();
    for (op, _) in &u32_ops {
        let out = uninit(&mut enc, DType::U32, n);
        ops::binary(&mut enc, *op, &gua, &gub, &out).unwrap();
        u32_outs.push(out);
    }
    let mut i32_outs = Vec::new();
    for (op, _) in &i32_ops {
        let out = uninit(&mut enc, DType::I32, n);
        ops::binary(&mut enc, *op, &gia, &gib, &out).unwrap();
        i32_outs.push(out);
    }
    ctx.submit(enc).unwrap();
    for ((op, f), out) in float_ops.iter().zip(&float_outs) {
        let want: Vec<f32> = a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect();
        compare_close(
            &format!("{op:?} n={n} {path}"),
            &out.read::<f32>(ctx).unwrap(),
            &want,
            ATOL,
            RTOL,
        )
        .unwrap();
    }
    for ((op, f), out) in u32_ops.iter().zip(&u32_outs) {
        let want: Vec<u32> = ua.iter().zip(&ub).map(|(&x, &y)| f(x, y)).collect();
        compare_exact(
            &format!("u32 {op:?} n={n} {path}"),
            &out.read::<u32>(ctx).unwrap(),
            &want,
        )
        .unwrap();
    }
    for ((op, f), out) in i32_ops.iter().zip(&i32_outs) {
        let want: Vec<i32> = ia.iter().zip(&ib).map(|(&x, &y)| f(x, y)).collect();
        compare_exact(
            &format!("i32 {op:?} n={n} {path}"),
            &out.read::<i32>(ctx).unwrap(),
            &want,
        )
        .unwrap();
    }
}

fn check_unary(ctx: &GpuContext, n: usize) {
    let path = ctx.info().kernel_path();
    let mut rng = TestRng::new(n as u64 + 7);
    let signed = rng.vec_f32(n, -4.0, 4.0);
    let positive = rng.vec_f32(n, 0.25, 8.0);
    let ints = rng.vec_u32(n, 0);
    type Reference = fn(f32) -> f32;
    let cases: Vec<(UnaryOp, bool, Reference)> = vec![
        (UnaryOp::Scale(-2.5), false, |x| x * -2.5),
        (UnaryOp::AddScalar(1.25), false, |x| x + 1.25),
        (
            UnaryOp::Affine {
                scale: 3.0,
                offset: -0.5,
            },
            false,
            |x| x * 3.0 - 0.5,
        ),
        (UnaryOp::Clamp { lo: -1.0, hi: 2.0 }, false, |x| {
            x.clamp(-1.0, 2.0)
        }),
        (UnaryOp::Abs, false, f32::abs),
        (UnaryOp::Neg, false, |x| -x),
        (UnaryOp::Exp, false, f32::exp),
        (UnaryOp::Log, true, f32::ln),
        (UnaryOp::Sqrt, true, f32::sqrt),
        (UnaryOp::Rsqrt, true, |x| 1.0 / x.sqrt()),
        (UnaryOp::Square, false, |x| x * x),
        (UnaryOp::Recip, true, |x| 1.0 / x),
        (UnaryOp::Sigmoid, false, |x| 1.0 / (1.0 + (-x).exp())),
        (UnaryOp::PowScalar(1.5), true, |x| x.powf(1.5)),
    ];
    let mut enc = ctx.encoder("test");
    let (g_signed, g_positive) = (upload(&mut enc, &signed), upload(&mut enc, &positive));
    let mut outs = Vec::new();
    for (op, needs_positive, _) in &cases {
        let out = uninit(&mut enc, DType::F32, n);
        ops::unary(
            &mut enc,
            *op,
            if *needs_positive {
                &g_positive
            } else {
                &g_signed
            },
            &out,
        )
        .unwrap();
        outs.push(out);
    }
    let g_ints = upload(&mut enc, &ints);
    ops::unary_inplace(&mut enc, UnaryOp::AddScalarU32(0xF000_0000), &g_ints).unwrap();
    ctx.submit(enc).unwrap();
    for ((op, needs_positive, f), out) in cases.iter().zip(&outs) {
        let input = if *needs_positive { &positive } else { &signed };
        let want: Vec<f32> = input.iter().map(|&x| f(x)).collect();
        compare_close(
            &format!("{op:?} n={n} {path}"),
            &out.read::<f32>(ctx).unwrap(),
            &want,
            1e-5,
            1e-5,
        )
        .unwrap();
    }
    let want: Vec<u32> = ints.iter().map(|x| x.wrapping_add(0xF000_0000)).collect();
    compare_exact(
        &format!("u32 add scalar n={n} {path}"),
        &g_ints.read::<u32>(ctx).unwrap(),
        &want,
    )
    .unwrap();
}

/// In-place forms and every aliasing pattern (out = lhs, out = rhs, lhs = rhs, all three).
fn check_inplace_and_aliasing(ctx: &GpuContext, n: usize) {
    let path = ctx.info().kernel_path();
    let mut rng = TestRng::new(n as u64 + 11);
    let a = rng.vec_f32(n, -2.0, 2.0);
    let b = rng.vec_f32(n, 0.5, 2.0);
    let mut enc = ctx.encoder("test");
    let (ga, gb) = (upload(&mut enc, &a), upload(&mut enc, &b));
    let sub_into_rhs = upload(&mut enc, &b); // a - b written over b (swap path)
    ops::sub(&mut enc, &ga, &sub_into_rhs, &sub_into_rhs).unwrap();
    let div_into_lhs = upload(&mut enc, &a); // a / b written over a
    ops::div(&mut enc, &div_into_lhs, &gb, &div_into_lhs).unwrap();
    let self_mul = upload(&mut enc, &a); // x = x * x, all three the same
    ops::mul(&mut enc, &self_mul, &self_mul, &self_mul).unwrap();
    let negated = upload(&mut enc, &a); // unary with out = x
    ops::unary(&mut enc, UnaryOp::Neg, &negated, &negated).unwrap();
    let twice = uninit(&mut enc, DType::F32, n); // a + a, both inputs the same
    ops::add(&mut enc, &ga, &ga, &twice).unwrap();
    let chain = upload(&mut enc, &a);
    ops::add_inplace(&mut enc, &chain, &gb).unwrap();
    ops::mul_inplace(&mut enc, &chain, &gb).unwrap();
    ops::sub_inplace(&mut enc, &chain, &ga).unwrap();
    ops::div_inplace(&mut enc, &chain, &gb).unwrap();
    ops::axpy(&mut enc, -0.5, &ga, &chain).unwrap();
    ops::scale_inplace(&mut enc, &chain, 2.0).unwrap();
    ops::add_scalar_inplace(&mut enc, &chain, 0.25).unwrap();
    ops::clamp_inplace(&mut enc, &chain, -3.0, 3.0).unwrap();
    let chain_before = uninit(&mut enc, DType::F32, n);
    ops::copy(&mut enc, &chain, &chain_before).unwrap();
    ops::sub_inplace(&mut enc, &chain, &chain.reshape(&[n]).unwrap()).unwrap(); // x - x through a view
    let copied = uninit(&mut enc, DType::F32, n);
    ops::copy(&mut enc, &ga, &copied).unwrap();
    ctx.submit(enc).unwrap();
    let check = |what: &str, t: &Tensor, want: Vec<f32>| {
        compare_close(
            &format!("{what} n={n} {path}"),
            &t.read::<f32>(ctx).unwrap(),
            &want,
            ATOL,
            RTOL,
        )
        .unwrap();
    };
    check(
        "sub into rhs",
        &sub_into_rhs,
        a.iter().zip(&b).map(|(x, y)| x - y).collect(),
    );
    check(
        "div into lhs",
        &div_into_lhs,
        a.iter().zip(&b).map(|(x, y)| x / y).collect(),
    );
    check("self mul", &self_mul, a.iter().map(|x| x * x).collect());
    check("negated in place", &negated, a.iter().map(|x| -x).collect());
    check("a + a", &twice, a.iter().map(|x| x + x).collect());
    let chain_want: Vec<f32> = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| ((((x + y) * y - x) / y + -0.5 * x) * 2.0 + 0.25).clamp(-3.0, 3.0))
        .collect();
    compare_close(
        &format!("chain n={n} {path}"),
        &chain_before.read::<f32>(ctx).unwrap(),
        &chain_want,
        1e-5,
        RTOL,
    )
    .unwrap();
    check("x - x", &chain, vec![0.0; n]);
    compare_exact(
        &format!("copy n={n} {path}"),
        &copied.read::<f32>(ctx).unwrap(),
        &a,
    )
    .unwrap();
}

#[test]
fn binary_ops_match_cpu() {
    for ctx in both_paths() {
        for n in TEST_SIZES {
            check_binary(ctx, n);
        }
    }
}

#[test]
fn unary_ops_match_cpu() {
    for ctx in both_paths() {
        for n in TEST_SIZES {
            check_unary(ctx, n);
        }
    }
}

#[test]
fn inplace_forms_and_aliasing_match_cpu() {
    for ctx in both_paths() {
        for n in TEST_SIZES {
            check_inplace_and_aliasing(ctx, n);
        }
    }
}

#[test]
fn elementwise_paged() {
    for ctx in both_paths_small_pages() {
        let n = 3 * 16_384 + 17;
        check_binary(ctx, n);
        check_unary(ctx, n);
        check_inplace_and_aliasing(ctx, n);
    }
}

#[test]
fn copy_range_splits_at_page_boundaries_paged() {
    for ctx in both_paths_small_pages() {
        let path = ctx.info().kernel_path();
        let src: Vec<u32> = (0..3 * 16_384 + 100).collect();
        let dst_init: Vec<u32> = (0..4 * 16_384 + 3).map(|i| 1_000_000 + i).collect();
        let mut enc = ctx.encoder("test");
        let gsrc = upload(&mut enc, &src);
        let gdst = upload(&mut enc, &dst_init);
        let overlapping = upload(&mut enc, &src);
        // Different offsets within the page on each side, crossing two boundaries of each.
        let (src_offset, dst_offset, len) = (16_380u64, 7u64, 2 * 16_384 + 50);
        ops::copy_range(&mut enc, &gsrc, src_offset, &gdst, dst_offset, len).unwrap();
        ops::copy_range(&mut enc, &gsrc, 0, &gdst, 4 * 16_384 - 1, 4).unwrap();
        // Overlapping ranges in one tensor move like memmove.
        ops::copy_range(&mut enc, &overlapping, 10, &overlapping, 16_390, 20_000).unwrap();
        ctx.submit(enc).unwrap();
        let mut want = dst_init.clone();
        want[dst_offset as usize..(dst_offset + len) as usize]
            .copy_from_slice(&src[src_offset as usize..(src_offset + len) as usize]);
        want[4 * 16_384 - 1..4 * 16_384 + 3].copy_from_slice(&src[..4]);
        compare_exact(
            &format!("copy_range {path}"),
            &gdst.read::<u32>(ctx).unwrap(),
            &want,
        )
        .unwrap();
        let mut want_overlap = src.clone();
        want_overlap.copy_within(10..20_010, 16_390);
        compare_exact(
            &format!("copy_range overlapping {path}"),
            &overlapping.read::<u32>(ctx).unwrap(),
            &want_overlap,
        )
        .unwrap();
    }
}

#[test]
fn mismatched_operands_are_rejected() {
    let ctx = both_paths()[1];
    let mut enc = ctx.encoder("test");
    let a = upload(&mut enc, &[1.0f32, 2.0, 3.0]);
    let short = upload(&mut enc, &[1.0f32, 2.0]);
    let ints = upload(&mut enc, &[1u32, 2, 3]);
    assert!(matches!(
        ops::add(&mut enc, &a, &short, &a),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ops::add_inplace(&mut enc, &a, &short),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ops::add(&mut enc, &a, &ints, &a),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        ops::div(&mut enc, &ints, &ints, &ints),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        ops::unary_inplace(&mut enc, UnaryOp::Exp, &ints),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        ops::unary_inplace(&mut enc, UnaryOp::AddScalarI32(1), &ints),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        ops::copy(&mut enc, &a, &short),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ops::copy_range(&mut enc, &a, 2, &short, 0, 2),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ops::copy_range(&mut enc, &a, 0, &ints, 0, 1),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        ops::clamp_inplace(&mut enc, &a, 1.0, 0.0),
        Err(Error::InvalidArgument { .. })
    ));
    ctx.submit(enc).unwrap();
}

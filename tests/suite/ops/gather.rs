//! Gather, scatter (element and row forms) and concat against CPU references, on both kernel
//! paths, at every test size, and paged with rows that straddle page boundaries.

use wgsplat::ops;
use wgsplat::testing::{TEST_SIZES, TestRng, both_paths, both_paths_small_pages, compare_exact};
use wgsplat::{DType, Element, Encoder, Error, GpuContext, MemoryCategory, Tensor};

fn upload<T: Element>(enc: &mut Encoder, data: &[T]) -> Tensor {
    Tensor::from_slice(enc, data, &[data.len()], MemoryCategory::Other, "test").unwrap()
}

/// Row indices below `rows`, with roughly one in 16 out of range (just past the end, or huge).
fn indices_with_out_of_range(rng: &mut TestRng, count: usize, rows: usize) -> Vec<u32> {
    (0..count)
        .map(|_| match rng.next_u32() % 16 {
            0 => rows as u32 + rng.next_u32() % 3,
            1 => u32::MAX - rng.next_u32() % 3,
            _ if rows == 0 => u32::MAX,
            _ => rng.next_u32() % rows as u32,
        })
        .collect()
}

/// A permutation of `0..rows` (Fisher-Yates), so scatter targets are unique.
fn permutation(rng: &mut TestRng, rows: usize) -> Vec<u32> {
    let mut p: Vec<u32> = (0..rows as u32).collect();
    for i in (1..rows).rev() {
        p.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    p
}

fn cpu_gather_rows(src: &[u32], index: &[u32], width: usize) -> Vec<u32> {
    let rows = src.len() / width;
    let mut out = Vec::with_capacity(index.len() * width);
    for &r in index {
        if (r as usize) < rows {
            out.extend_from_slice(&src[r as usize * width..(r as usize + 1) * width]);
        } else {
            out.extend(std::iter::repeat_n(0, width));
        }
    }
    out
}

fn cpu_scatter_rows(src: &[u32], index: &[u32], width: usize, dst: &mut [u32]) {
    let rows = dst.len() / width;
    for (i, &r) in index.iter().enumerate() {
        if (r as usize) < rows {
            dst[r as usize * width..(r as usize + 1) * width]
                .copy_from_slice(&src[i * width..(i + 1) * width]);
        }
    }
}

/// Gathers `index_count` rows of `width` from a source of `rows` rows, and scatters a permutation
/// (plus out-of-range rows) back; also checks the f32 view moves bit patterns unchanged.
fn check_gather_scatter(ctx: &GpuContext, rows: usize, index_count: usize, width: usize) {
    let path = ctx.info().kernel_path();
    let what = format!("rows={rows} index={index_count} width={width} {path}");
    let mut rng = TestRng::new((rows * 31 + index_count * 7 + width) as u64);
    let src = rng.vec_u32(rows * width, 0);
    let index = indices_with_out_of_range(&mut rng, index_count, rows);
    let mut scatter_index = permutation(&mut rng, rows);
    for (i, slot) in scatter_index.iter_mut().enumerate() {
        if i % 13 == 5 {
            *slot = rows as u32 + i as u32; // out of range: skipped
        }
    }
    let dst_init = rng.vec_u32(rows * width, 0);
    let mut enc = ctx.encoder("test");
    let (gsrc, gindex, gscatter_index) = (
        upload(&mut enc, &src),
        upload(&mut enc, &index),
        upload(&mut enc, &scatter_index),
    );
    let gathered = if width == 1 {
        ops::gather(&mut enc, &gsrc.bitcast(DType::F32), &gindex).unwrap()
    } else {
        ops::gather_rows(&mut enc, &gsrc, &gindex, width as u64).unwrap()
    };
    let gdst = upload(&mut enc, &dst_init);
    if width == 1 {
        ops::scatter(&mut enc, &gsrc, &gscatter_index, &gdst).unwrap();
    } else {
        ops::scatter_rows(&mut enc, &gsrc, &gscatter_index, width as u64, &gdst).unwrap();
    }
    ctx.submit(enc).unwrap();
    let got = gathered.bitcast(DType::U32).read::<u32>(ctx).unwrap();
    compare_exact(
        &format!("gather {what}"),
        &got,
        &cpu_gather_rows(&src, &index, width),
    )
    .unwrap();
    let mut want = dst_init.clone();
    cpu_scatter_rows(&src, &scatter_index, width, &mut want);
    compare_exact(
        &format!("scatter {what}"),
        &gdst.read::<u32>(ctx).unwrap(),
        &want,
    )
    .unwrap();
}

#[test]
fn gather_and_scatter_match_cpu() {
    for ctx in both_paths() {
        for n in TEST_SIZES {
            check_gather_scatter(ctx, n, n, 1);
        }
        check_gather_scatter(ctx, 0, 300, 1); // empty source: every index out of range
        check_gather_scatter(ctx, 1000, 0, 1);
    }
}

#[test]
fn gather_and_scatter_rows_match_cpu() {
    for ctx in both_paths() {
        for (rows, width) in [(1, 3), (255, 3), (257, 48), (5_000, 48), (65_537, 3)] {
            check_gather_scatter(ctx, rows, rows + 3, width);
        }
    }
}

#[test]
fn gather_and_scatter_paged_with_straddling_rows() {
    for ctx in both_paths_small_pages() {
        check_gather_scatter(ctx, 3 * 16_384 + 17, 3 * 16_384 + 100, 1);
        check_gather_scatter(ctx, 20_000, 17_000, 3); // 60,000 elements: rows straddle every page
        check_gather_scatter(ctx, 1_100, 1_200, 48); // 52,800 elements, index over one page
        check_gather_scatter(ctx, 1_500, 40_000, 7); // index spans 3 pages, output 17 pages
    }
}

fn check_concat(ctx: &GpuContext, a_len: usize, b_len: usize) {
    let path = ctx.info().kernel_path();
    let a: Vec<i32> = (0..a_len as i32).collect();
    let b: Vec<i32> = (0..b_len as i32).map(|x| -x - 1).collect();
    let mut enc = ctx.encoder("test");
    let (ga, gb) = (upload(&mut enc, &a), upload(&mut enc, &b));
    let joined = ops::append(&mut enc, &ga, &gb).unwrap();
    let three = ops::concat(&mut enc, &[&gb, &ga, &gb]).unwrap();
    ctx.submit(enc).unwrap();
    assert_eq!(joined.shape(), &[a_len + b_len]);
    let want: Vec<i32> = a.iter().chain(&b).copied().collect();
    compare_exact(
        &format!("append {a_len}+{b_len} {path}"),
        &joined.read::<i32>(ctx).unwrap(),
        &want,
    )
    .unwrap();
    let want3: Vec<i32> = b.iter().chain(&a).chain(&b).copied().collect();
    compare_exact(
        &format!("concat3 {a_len}+{b_len} {path}"),
        &three.read::<i32>(ctx).unwrap(),
        &want3,
    )
    .unwrap();
}

#[test]
fn concat_matches_cpu() {
    for ctx in both_paths() {
        for n in TEST_SIZES {
            check_concat(ctx, n, n / 3 + 1);
        }
    }
}

#[test]
fn concat_paged_and_rows() {
    for ctx in both_paths_small_pages() {
        check_concat(ctx, 2 * 16_384 + 5, 20_000);
        let mut enc = ctx.encoder("test");
        let a = Tensor::from_slice(&mut enc, &[1.0f32; 6], &[2, 3], MemoryCategory::Other, "a")
            .unwrap();
        let b = Tensor::from_slice(&mut enc, &[2.0f32; 3], &[1, 3], MemoryCategory::Other, "b")
            .unwrap();
        let c = ops::concat(&mut enc, &[&a, &b]).unwrap();
        let wrong = Tensor::from_slice(
            &mut enc,
            &[2.0f32; 4],
            &[1, 4],
            MemoryCategory::Other,
            "wrong",
        )
        .unwrap();
        assert!(matches!(
            ops::concat(&mut enc, &[&a, &wrong]),
            Err(Error::Shape { .. })
        ));
        ctx.submit(enc).unwrap();
        assert_eq!(c.shape(), &[3, 3]);
        compare_exact(
            "concat rows",
            &c.read::<f32>(ctx).unwrap(),
            &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0],
        )
        .unwrap();
    }
}

#[test]
fn bad_arguments_are_rejected() {
    let ctx = both_paths()[1];
    let mut enc = ctx.encoder("test");
    let src = upload(&mut enc, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let float_index = upload(&mut enc, &[0.0f32]);
    let index = upload(&mut enc, &[0u32, 1]);
    let ints = upload(&mut enc, &[0u32; 6]);
    assert!(matches!(
        ops::gather(&mut enc, &src, &float_index),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        ops::gather_rows(&mut enc, &src, &index, 4),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ops::gather_rows(&mut enc, &src, &index, 0),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        ops::gather_rows_into(&mut enc, &src, &index, 3, &src),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        ops::scatter_rows(&mut enc, &src, &index, 2, &ints),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        ops::scatter_rows(&mut enc, &src, &index, 2, &src.prefix(4).unwrap()),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        ops::scatter_rows(&mut enc, &src, &index, 3, &src),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        ops::append(&mut enc, &src, &ints),
        Err(Error::DType { .. })
    ));
    assert!(matches!(
        ops::concat(&mut enc, &[]),
        Err(Error::InvalidArgument { .. })
    ));
    ctx.submit(enc).unwrap();
}

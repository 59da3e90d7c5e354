//! Tensor handles: shapes, views, dtype checks, uploads across pages, and row paging.

use wgsplat::testing::{both_paths_small_pages, compare_exact};
use wgsplat::{DType, Error, MemoryCategory, Tensor};

#[test]
fn uploads_and_reads_span_pages_exactly() {
    for ctx in both_paths_small_pages() {
        let n = 5 * 16_384 + 77;
        let data: Vec<i32> = (0..n as i32).map(|i| i.wrapping_mul(-7919)).collect();
        let mut enc = ctx.encoder("upload");
        let t = Tensor::from_slice(&mut enc, &data, &[n], MemoryCategory::Other, "paged").unwrap();
        ctx.submit(enc).unwrap();
        assert_eq!(t.num_pages(), 6);
        compare_exact("paged upload", &t.read::<i32>(ctx).unwrap(), &data).unwrap();
        let view = t.prefix(20_000).unwrap();
        compare_exact("prefix", &view.read::<i32>(ctx).unwrap(), &data[..20_000]).unwrap();
        assert!(view.shares_storage_with(&t));
    }
}

#[test]
fn row_tensors_page_on_row_boundaries_with_a_shared_row_count() {
    let ctx = both_paths_small_pages()[1];
    let rows_per_page = ctx.rows_per_page(48);
    assert!(rows_per_page.is_power_of_two() && rows_per_page * 48 * 4 <= ctx.page_bytes());
    let rows = 3 * rows_per_page as usize + 5;
    let mut enc = ctx.encoder("rows");
    let means = Tensor::uninit_rows(
        &mut enc,
        DType::F32,
        &[rows, 3],
        rows_per_page,
        MemoryCategory::Parameters,
        "means",
    )
    .unwrap();
    let sh = Tensor::uninit_rows(
        &mut enc,
        DType::F32,
        &[rows, 16, 3],
        rows_per_page,
        MemoryCategory::Parameters,
        "sh",
    )
    .unwrap();
    assert_eq!(means.num_pages(), sh.num_pages());
    assert_eq!(means.page_elems(), rows_per_page * 3);
    assert_eq!(sh.page_elems(), rows_per_page * 48);
    let flat = Tensor::uninit(
        &mut enc,
        DType::F32,
        &[rows * 3],
        MemoryCategory::Other,
        "flat",
    )
    .unwrap();
    assert!(matches!(
        means.expect_same_layout("test", &flat),
        Err(Error::Shape { .. })
    ));
    let err = Tensor::uninit_rows(
        &mut enc,
        DType::F32,
        &[rows, 48],
        rows_per_page * 4,
        MemoryCategory::Other,
        "big",
    )
    .unwrap_err();
    assert!(err.to_string().contains("rows_per_page"), "{err}");
    ctx.submit(enc).unwrap();
}

#[test]
fn misuse_is_an_error_not_a_panic() {
    let ctx = both_paths_small_pages()[0];
    let mut enc = ctx.encoder("misuse");
    let err =
        Tensor::from_slice(&mut enc, &[1.0f32, 2.0], &[3], MemoryCategory::Other, "x").unwrap_err();
    assert!(matches!(err, Error::Shape { .. }), "{err}");
    let t = Tensor::from_slice(
        &mut enc,
        &[1u32, 2, 3, 4],
        &[2, 2],
        MemoryCategory::Other,
        "t",
    )
    .unwrap();
    assert!(t.reshape(&[3]).is_err());
    assert_eq!(t.reshape(&[4, 1]).unwrap().shape(), &[4, 1]);
    assert!(t.prefix(5).is_err());
    ctx.submit(enc).unwrap();
    assert!(matches!(t.read::<f32>(ctx), Err(Error::DType { .. })));
    let empty = {
        let mut enc = ctx.encoder("empty");
        let e = Tensor::uninit(
            &mut enc,
            DType::F32,
            &[0, 3],
            MemoryCategory::Other,
            "empty",
        )
        .unwrap();
        ctx.submit(enc).unwrap();
        e
    };
    assert!(empty.is_empty() && empty.num_pages() == 0);
    assert!(empty.read::<f32>(ctx).unwrap().is_empty());
}

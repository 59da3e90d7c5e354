//! The allocator's promises: exact accounting by category and label, buffers returned on drop,
//! reuse through size classes, a bounded pool that can be trimmed (and is, automatically, when an
//! allocation fails), leak reports, and poisoned new buffers.

/// The budget's plan against a measured run at a photograph's size.
mod budget;
/// Training images past the host memory kept for them, read from disk at each upload.
mod host_images;
/// The GPU cache of training images: its policy, its bound and results independent of its size.
mod image_cache;
/// Long training runs: nothing allocated after warm-up, the process's memory flat, every byte
/// given back.
mod longrun;
/// The `--memory-budget` plan against the allocator.
mod plan;

use wgsplat::gpu::POISON_WORD;
use wgsplat::gpu::memory::size_class;
use wgsplat::testing::fresh_context;
use wgsplat::{DType, Error, GpuContext, MemoryCategory, Tensor, ops};

/// One iteration of a workload touching every allocation path: uninit, zeros, upload, kernels,
/// readback staging and the upload arena.
fn workload(ctx: &GpuContext, iteration: u32) {
    let n = 70_000 + (iteration as usize % 3) * 1000;
    let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut enc = ctx.encoder("workload");
    let a =
        Tensor::from_slice(&mut enc, &data, &[n], MemoryCategory::Parameters, "params").unwrap();
    let g = Tensor::zeros(
        &mut enc,
        DType::F32,
        &[n],
        MemoryCategory::Gradients,
        "grads",
    )
    .unwrap();
    let s = Tensor::uninit(
        &mut enc,
        DType::U32,
        &[n * 2],
        MemoryCategory::SortScratch,
        "scratch",
    )
    .unwrap();
    ops::fill(&mut enc, &s, iteration).unwrap();
    ops::arange(&mut enc, &g, 0.0f32, 1.0).unwrap();
    // The generic ops, each allocating and dropping its own scratch.
    let m = 3000 + (iteration as usize % 5) * 100;
    let keys = Tensor::uninit(
        &mut enc,
        DType::U32,
        &[m],
        MemoryCategory::SortScratch,
        "keys",
    )
    .unwrap();
    ops::arange(&mut enc, &keys, 7u32, 2_654_435_761).unwrap();
    let (sorted, order) = ops::radix_sort::sort_pairs(&mut enc, &keys, &keys, 32).unwrap();
    let scanned = ops::scan::exclusive_scan(&mut enc, &order).unwrap();
    let kept = ops::compact::compact_indices(&mut enc, &sorted).unwrap();
    let count = ops::count::count_nonzero(&mut enc, &kept.values).unwrap();
    let gathered = ops::gather::gather(&mut enc, &a, &kept.values.prefix(100).unwrap()).unwrap();
    let total = ops::reduce::sum_f32(&mut enc, &gathered).unwrap();
    drop((sorted, scanned, count));
    ctx.submit(enc).unwrap();
    assert_eq!(a.read::<f32>(ctx).unwrap()[n - 1], (n - 1) as f32);
    assert_eq!(s.read::<u32>(ctx).unwrap()[0], iteration);
    assert!(total.read::<f32>(ctx).unwrap()[0].is_finite());
}

#[test]
fn live_bytes_return_to_baseline_and_growth_stops_after_warmup() {
    let ctx = fresh_context(false);
    let baseline = ctx.memory_report();
    let mut after_warmup = None;
    for iteration in 0..200 {
        workload(&ctx, iteration);
        let report = ctx.memory_report();
        assert_eq!(
            report.total.live_bytes, baseline.total.live_bytes,
            "iteration {iteration}: live bytes did not return"
        );
        assert_eq!(
            report.total.live_buffers, baseline.total.live_buffers,
            "iteration {iteration}"
        );
        if iteration == 9 {
            after_warmup = Some(report.clone());
        }
        if let Some(warm) = &after_warmup {
            assert_eq!(
                report.total.peak_bytes, warm.total.peak_bytes,
                "iteration {iteration}: peak grew after warm-up"
            );
            assert_eq!(
                report.buffers_created, warm.buffers_created,
                "iteration {iteration}: buffers created after warm-up"
            );
        }
    }
    assert!(ctx.leak_check().is_empty(), "{:?}", ctx.leak_check());
    let pooled = ctx.memory_report().pooled_bytes;
    assert!(pooled > 0);
    assert_eq!(ctx.trim(), pooled);
    assert_eq!(ctx.memory_report().pooled_bytes, 0);
}

#[test]
fn accounting_is_exact_by_category_and_label() {
    let ctx = fresh_context(true);
    let before = ctx.memory_report();
    let mut enc = ctx.encoder("acct");
    let p = Tensor::zeros(
        &mut enc,
        DType::F32,
        &[1000, 3],
        MemoryCategory::Parameters,
        "means",
    )
    .unwrap();
    let g = Tensor::zeros(
        &mut enc,
        DType::F32,
        &[1000, 3],
        MemoryCategory::Gradients,
        "means.grad",
    )
    .unwrap();
    ctx.submit(enc).unwrap();
    let report = ctx.memory_report();
    let bytes = size_class(12_000);
    assert_eq!(
        report.live(MemoryCategory::Parameters) - before.live(MemoryCategory::Parameters),
        bytes
    );
    assert_eq!(
        report.live(MemoryCategory::Gradients),
        report.live(MemoryCategory::Parameters)
    );
    assert_eq!(report.by_label["means"].live_bytes, bytes);
    assert_eq!(report.by_label["means"].requested_bytes, 12_000);
    let text = report.to_string();
    assert!(
        text.contains("parameters") && text.contains("gradients"),
        "{text}"
    );
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains("\"Parameters\""), "{json}");
    let leaks = ctx.leak_check();
    assert!(
        leaks.iter().any(|l| l.label == "means" && l.bytes == bytes),
        "{leaks:?}"
    );
    let clone = p.clone();
    drop(p);
    assert_eq!(
        ctx.memory_report().by_label["means"].live_bytes,
        bytes,
        "a clone keeps storage alive"
    );
    drop((clone, g));
    let after = ctx.memory_report();
    assert_eq!(after.live(MemoryCategory::Parameters), 0);
    assert!(ctx.leak_check().is_empty());
}

#[test]
fn buffers_are_reused_by_size_class() {
    let ctx = fresh_context(true);
    let mut enc = ctx.encoder("reuse");
    let a = Tensor::uninit(&mut enc, DType::U32, &[10_000], MemoryCategory::Other, "a").unwrap();
    drop(a);
    let created = ctx.memory_report().buffers_created;
    let b = Tensor::uninit(&mut enc, DType::U32, &[9_990], MemoryCategory::Other, "b").unwrap();
    assert_eq!(
        ctx.memory_report().buffers_created,
        created,
        "same size class must come from the pool"
    );
    assert!(ctx.memory_report().pool_hits >= 1);
    drop(b);
    ctx.submit(enc).unwrap();
}

#[test]
fn failed_allocation_trims_the_pool_and_retries_once() {
    let ctx = fresh_context(true);
    let mut enc = ctx.encoder("oom");
    drop(
        Tensor::uninit(
            &mut enc,
            DType::F32,
            &[1 << 16],
            MemoryCategory::Other,
            "pooled",
        )
        .unwrap(),
    );
    assert!(ctx.memory_report().pooled_bytes > 0);
    let trims = ctx.memory_report().trims;
    ctx.allocator().inject_creation_failures(1);
    let t = Tensor::uninit(
        &mut enc,
        DType::F32,
        &[12_345],
        MemoryCategory::Parameters,
        "retry",
    )
    .unwrap();
    let report = ctx.memory_report();
    assert_eq!(report.trims, trims + 1, "the failure must trim the pool");
    assert_eq!(report.pooled_bytes, 0);
    ctx.allocator().inject_creation_failures(2);
    let err = Tensor::uninit(
        &mut enc,
        DType::F32,
        &[54_321],
        MemoryCategory::Gradients,
        "doomed",
    )
    .unwrap_err();
    match &err {
        Error::OutOfMemory {
            requested,
            label,
            report,
            ..
        } => {
            assert_eq!(*requested, size_class(54_321 * 4));
            assert_eq!(label, "doomed");
            assert_eq!(report.live(MemoryCategory::Parameters), t.page(0).size());
        }
        other => panic!("expected OutOfMemory, got {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("doomed") && text.contains("parameters"),
        "{text}"
    );
    drop(t);
    ctx.submit(enc).unwrap();
}

#[test]
fn a_buffer_above_the_adapter_limit_is_an_error_not_a_panic() {
    let ctx = fresh_context(true);
    let max = ctx.info().limits.max_buffer_size;
    let err = ctx
        .allocator()
        .allocate(wgsplat::gpu::allocator::AllocRequest {
            bytes: max + 1,
            kind: wgsplat::gpu::BufferKind::Storage,
            category: MemoryCategory::Other,
            label: "huge",
            encoder: None,
        })
        .unwrap_err();
    assert!(matches!(err, Error::BindingTooLarge { .. }), "{err}");
}

#[test]
fn the_pool_is_bounded() {
    let options = wgsplat::ContextOptions {
        pool_limit_bytes: 1 << 20,
        ..wgsplat::ContextOptions::from_env().unwrap()
    };
    let ctx = GpuContext::new(options).unwrap();
    let mut enc = ctx.encoder("bounded");
    let tensors: Vec<Tensor> = (0..8)
        .map(|i| {
            Tensor::uninit(
                &mut enc,
                DType::F32,
                &[60_000 + i * 4_000],
                MemoryCategory::Other,
                "t",
            )
            .unwrap()
        })
        .collect();
    ctx.submit(enc).unwrap();
    drop(tensors);
    let report = ctx.memory_report();
    assert!(report.pooled_bytes <= 1 << 20, "{report}");
    assert!(report.pooled_buffers >= 1);
}

#[test]
fn new_buffers_are_poisoned_in_debug_builds() {
    let ctx = fresh_context(true);
    if !ctx.info().poison {
        return; // release build without WGSPLAT_POISON
    }
    let mut enc = ctx.encoder("poison");
    let t = Tensor::uninit(
        &mut enc,
        DType::U32,
        &[300_000],
        MemoryCategory::Other,
        "fresh",
    )
    .unwrap();
    ctx.submit(enc).unwrap();
    assert!(
        t.read::<u32>(&ctx)
            .unwrap()
            .iter()
            .all(|&w| w == POISON_WORD)
    );
    // Reused buffers are poisoned again.
    let mut enc = ctx.encoder("poison");
    ops::fill(&mut enc, &t, 5u32).unwrap();
    drop(t);
    let again = Tensor::uninit(
        &mut enc,
        DType::U32,
        &[300_000],
        MemoryCategory::Other,
        "reused",
    )
    .unwrap();
    ctx.submit(enc).unwrap();
    assert!(
        again
            .read::<u32>(&ctx)
            .unwrap()
            .iter()
            .all(|&w| w == POISON_WORD)
    );
    let f = again.bitcast(DType::F32).read::<f32>(&ctx).unwrap();
    assert!(
        f.iter().all(|x| x.is_nan()),
        "the poison pattern is a NaN for f32"
    );
}

/// Growing a paged row tensor keeps its full pages (the same buffers, not copied) and allocates
/// only the pages past them; its rows survive. A tensor another handle shares is copied whole.
#[test]
fn growing_rows_allocates_only_the_pages_past_the_full_ones() {
    let options = wgsplat::ContextOptions::from_env()
        .unwrap()
        .with_max_page_bytes(wgsplat::testing::SMALL_PAGE_BYTES);
    let ctx = GpuContext::new(options).unwrap();
    // 48 KiB pages of 4,096 rows of 3 floats: three full pages and 100 rows.
    let (width, per_page, rows) = (3usize, 4096u64, 3 * 4096 + 100);
    let data: Vec<f32> = (0..rows * width).map(|i| i as f32).collect();
    let category = MemoryCategory::Parameters;
    let mut enc = ctx.encoder("grow");
    let mut t = Tensor::uninit_rows(
        &mut enc,
        DType::F32,
        &[rows, width],
        per_page,
        category,
        "t",
    )
    .unwrap();
    t.write(&mut enc, &data).unwrap();
    ctx.submit(enc).unwrap();
    let full_pages: Vec<wgpu::Buffer> = (0..3).map(|p| t.page(p).raw().clone()).collect();
    let before = ctx.memory_report().live(category);
    let page_bytes = |rows: u64| size_class(rows * width as u64 * 4);
    assert_eq!(before, 3 * page_bytes(per_page) + page_bytes(100));
    ctx.allocator().reset_peaks();
    let mut enc = ctx.encoder("grow");
    t.grow_rows(&mut enc, rows as u64 + 5000, "t").unwrap();
    ctx.submit(enc).unwrap();
    // The old partial page and the two new ones are the only allocations.
    let report = ctx.memory_report();
    assert_eq!(
        report.live(category),
        4 * page_bytes(per_page) + page_bytes(1004)
    );
    assert_eq!(
        report.peak(category),
        before + page_bytes(per_page) + page_bytes(1004),
        "growing allocated more than the pages past the full ones"
    );
    for (p, buffer) in full_pages.iter().enumerate() {
        assert!(t.page(p).raw() == buffer, "full page {p} was replaced");
    }
    assert_eq!(t.shape(), &[rows + 5000, width]);
    let got = t.read::<f32>(&ctx).unwrap();
    assert_eq!(&got[..data.len()], &data[..], "the old rows moved");
    // A shared tensor: both handles keep the old rows, and the grown one has its own pages.
    let shared = t.clone();
    let mut enc = ctx.encoder("grow shared");
    t.grow_rows(&mut enc, rows as u64 + 6000, "t").unwrap();
    ctx.submit(enc).unwrap();
    assert!(t.page(0).raw() != shared.page(0).raw());
    assert_eq!(&t.read::<f32>(&ctx).unwrap()[..data.len()], &data[..]);
    assert_eq!(shared.read::<f32>(&ctx).unwrap()[..data.len()], data[..]);
    let mut enc = ctx.encoder("shrink");
    assert!(
        t.grow_rows(&mut enc, 10, "t").is_err(),
        "growing to fewer rows is refused"
    );
}

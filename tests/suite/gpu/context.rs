//! Adapter selection, settings, `wgsplat info`, async readback, and 2D dispatch grids.

use wgsplat::gpu::kernels::compact;
use wgsplat::testing::{both_paths, compare_exact, fresh_context};
use wgsplat::{ContextOptions, DType, Error, GpuContext, MemoryCategory, Tensor, ops};

#[test]
fn an_unmatched_adapter_filter_lists_what_was_found_and_how_to_fix_it() {
    let options = ContextOptions {
        adapter_filter: Some("no-such-gpu-anywhere".into()),
        ..ContextOptions::default()
    };
    match GpuContext::new(options) {
        Err(err @ Error::NoAdapter { .. }) => {
            let text = err.to_string();
            assert!(text.contains("no-such-gpu-anywhere"), "{text}");
            assert!(text.contains("mesa-vulkan-drivers"), "{text}");
            if let Error::NoAdapter { found, .. } = &err {
                assert!(!found.is_empty(), "the adapters seen must be listed");
            }
        }
        Err(other) => panic!("expected NoAdapter, got {other}"),
        Ok(_) => panic!("a filter matching nothing must fail"),
    }
}

#[test]
fn no_backend_means_no_adapter_not_a_hang() {
    let options = ContextOptions {
        backends: wgpu::Backends::empty(),
        ..ContextOptions::default()
    };
    assert!(matches!(
        GpuContext::new(options),
        Err(Error::NoAdapter { .. })
    ));
}

#[test]
fn portable_contexts_use_no_optional_features() {
    let [fast, portable] = both_paths();
    assert!(portable.is_portable());
    assert!(
        !portable.info().features_used.subgroups && !portable.info().features_used.float_atomics
    );
    assert!(
        !portable
            .device()
            .features()
            .contains(wgpu::Features::SUBGROUP)
    );
    assert!(
        !portable
            .device()
            .features()
            .contains(wgpu::Features::SHADER_FLOAT32_ATOMIC)
    );
    // The fast context takes subgroups where the adapter offers them, and never f32 atomics (no
    // kernel needs them: every float sum has a fixed order).
    let available = fast.info().features_available;
    assert_eq!(fast.info().features_used.subgroups, available.subgroups);
    assert!(!fast.info().features_used.float_atomics);
    assert!(fast.page_bytes() <= fast.info().limits.max_storage_buffer_binding_size);
    assert!(fast.page_bytes().is_power_of_two());
}

#[test]
fn info_command_prints_json() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wgsplat"))
        .args(["info", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        info["adapter"]["name"]
            .as_str()
            .is_some_and(|n| !n.is_empty())
    );
    assert!(
        info["limits"]["max_storage_buffer_binding_size"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_wgsplat"))
        .args(["--portable", "info"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("kernel path    portable (forced)"), "{text}");
}

#[test]
fn bad_settings_are_errors_that_name_the_variable() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wgsplat"))
        .arg("info")
        .env("WGSPLAT_BACKEND", "gl")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("WGSPLAT_BACKEND") && err.contains("vulkan"),
        "{err}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wgsplat"))
        .arg("info")
        .env("WGSPLAT_ADAPTER", "no-such-gpu-anywhere")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Adapters seen"));
}

#[test]
fn async_readback_completes_through_the_channel_and_reuses_staging() {
    // Its own context: the staging counts below are per context, and the shared contexts serve
    // other tests' readbacks at the same time.
    let own = fresh_context(true);
    let ctx = &&own;
    let mut enc = ctx.encoder("async");
    let t = Tensor::uninit(
        &mut enc,
        DType::U32,
        &[1000],
        MemoryCategory::Other,
        "async",
    )
    .unwrap();
    ops::arange(&mut enc, &t, 0u32, 2).unwrap();
    ctx.submit(enc).unwrap();
    let mut created = None;
    for _ in 0..3 {
        let mut enc = ctx.encoder("async read");
        let pending = enc.readback(t.page(0).raw(), 0, 4000, "async").unwrap();
        ctx.submit(enc).unwrap();
        let future = pending.receive();
        let poller = {
            let ctx = (*ctx).clone();
            std::thread::spawn(move || ctx.wait_idle())
        };
        let bytes = pollster::block_on(future).unwrap();
        poller.join().unwrap().unwrap();
        let words: &[u32] = bytemuck::cast_slice(&bytes);
        compare_exact(
            "async readback",
            words,
            &(0..1000).map(|i| i * 2).collect::<Vec<u32>>(),
        )
        .unwrap();
        let now = ctx
            .memory_report()
            .by_label
            .get("wgsplat/readback")
            .map(|s| s.live_buffers);
        assert_eq!(now, Some(0), "staging returned after use");
        let made = ctx.memory_report().buffers_created;
        if let Some(before) = created {
            assert_eq!(made, before, "staging buffers are reused");
        }
        created = Some(made);
    }
}

#[test]
fn dispatches_beyond_65535_workgroups_use_a_2d_grid() {
    for ctx in both_paths() {
        let n = 65_535 * 256 + 300;
        let mut enc = ctx.encoder("2d");
        let t = Tensor::uninit(&mut enc, DType::U32, &[n], MemoryCategory::Other, "2d").unwrap();
        ops::arange(&mut enc, &t, 0u32, 1).unwrap();
        ctx.submit(enc).unwrap();
        let got = t.read::<u32>(ctx).unwrap();
        let wrong = got.iter().enumerate().find(|(i, v)| **v != *i as u32);
        assert!(wrong.is_none(), "first wrong element: {wrong:?}");
    }
}

/// One buffer bound read-write and at another binding of the same dispatch is refused when the
/// dispatch is recorded, naming the kernel and the bindings (wgpu would only fail the submission,
/// without naming either). Two read-only bindings of one buffer are fine.
#[test]
fn a_buffer_bound_read_write_twice_in_one_dispatch_is_refused() {
    for ctx in both_paths() {
        let kernel = ctx.typed::<compact::ScatterKept>().unwrap();
        let mut enc = ctx.encoder("aliasing");
        let t = Tensor::zeros(&mut enc, DType::U32, &[64], MemoryCategory::Other, "t").unwrap();
        let other = Tensor::zeros(&mut enc, DType::U32, &[64], MemoryCategory::Other, "o").unwrap();
        let grid = wgsplat::gpu::WorkgroupGrid::for_workgroups(1, 65_535).unwrap();
        let aliased = compact::ScatterKeptBindings {
            flags: t.page_arg(0),
            positions: other.page_arg(0),
            values: other.page_arg(0),
            out: t.page_arg(0),
        };
        let err = enc
            .run(&kernel, &compact::CompactParams::default(), aliased, grid)
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("compact.wgsl:scatter_kept") && text.contains("bindings 1 and 4"),
            "{text}"
        );
    }
}

/// The typed dispatch of the generated kernels.
mod typed_dispatch {
    // The typed dispatch of the generated kernels (src/gpu/kernels.rs): element types are checked
    // against the WGSL, absent buffers get placeholders of their own, and a typed call records the
    // same work as the hand-written positional one it replaced.

    use wgsplat::gpu::kernels::{Arg, densify_split};
    use wgsplat::testing::both_paths;
    use wgsplat::{DType, MemoryCategory, Tensor};

    fn tensor(enc: &mut wgsplat::Encoder, dtype: DType, n: usize) -> Tensor {
        Tensor::zeros(enc, dtype, &[n], MemoryCategory::Other, "kernels test").unwrap()
    }

    fn params(count: u32) -> densify_split::SplitParams {
        densify_split::SplitParams {
            pairs: count,
            seed: 7,
            scale_divisor_log: 1.6f32.ln(),
            ..Default::default()
        }
    }

    #[test]
    fn a_tensor_of_the_wrong_dtype_is_refused_with_the_binding_named() {
        for ctx in both_paths() {
            let kernel = ctx.typed::<densify_split::SplitPairs>().unwrap();
            let mut enc = ctx.encoder("wrong dtype");
            let f = |enc: &mut wgsplat::Encoder| tensor(enc, DType::F32, 12);
            let (log_scales, means) = (f(&mut enc), f(&mut enc));
            let quats = tensor(&mut enc, DType::U32, 16);
            let grid = wgsplat::gpu::WorkgroupGrid { x: 1, y: 1 };
            let err = enc
                .run(
                    &kernel,
                    &params(2),
                    densify_split::SplitPairsBindings {
                        means: means.page_arg(0),
                        log_scales: log_scales.page_arg(0),
                        quats: quats.page_arg(0),
                    },
                    grid,
                )
                .expect_err("a u32 tensor bound to array<f32>");
            let text = err.to_string();
            assert!(text.contains("quats") && text.contains("U32"), "{text}");
            assert_eq!(enc.dispatch_count(), 0, "nothing recorded");
        }
    }

    #[test]
    fn absent_buffers_get_distinct_placeholders() {
        for ctx in both_paths() {
            let kernel = ctx.typed::<densify_split::SplitPairs>().unwrap();
            let mut enc = ctx.encoder("absent");
            let quats = tensor(&mut enc, DType::F32, 16);
            let grid = wgsplat::gpu::WorkgroupGrid { x: 1, y: 1 };
            // Two written bindings absent at once: each needs its own placeholder, or the dispatch
            // would alias a read-write buffer.
            enc.run(
                &kernel,
                &params(2),
                densify_split::SplitPairsBindings {
                    means: Arg::Absent,
                    log_scales: Arg::Absent,
                    quats: quats.page_arg(0),
                },
                grid,
            )
            .unwrap();
            assert_eq!(enc.dispatch_count(), 1);
            ctx.submit(enc).unwrap();
            ctx.wait_idle().unwrap();
        }
    }

    /// WGSL overrides specialise a kernel: each distinct set of values is its own cached
    /// pipeline, named after the values, and the same values give back the cached one.
    #[test]
    fn overrides_build_one_cached_pipeline_per_value_set() {
        use wgsplat::gpu::kernels::{KernelSpec, PipelineOverrides, shared_ssim, ssim_backward};
        for ctx in both_paths() {
            let defaults = shared_ssim::Overrides::default();
            assert!(defaults.gt_packed && !defaults.mask, "{defaults:?}");
            let masked = shared_ssim::Overrides {
                mask: true,
                ..defaults
            };
            let plain = ctx
                .typed_with::<ssim_backward::SsimLossBackward>(&defaults)
                .unwrap();
            let again = ctx.typed::<ssim_backward::SsimLossBackward>().unwrap();
            let specialised = ctx
                .typed_with::<ssim_backward::SsimLossBackward>(&masked)
                .unwrap();
            assert!(std::ptr::eq(plain.raw(), again.raw()), "defaults rebuilt");
            assert!(
                !std::ptr::eq(plain.raw(), specialised.raw()),
                "overrides ignored"
            );
            assert!(
                specialised.raw().name.contains("MASK=1") && plain.raw().name.contains("MASK=0"),
                "{} / {}",
                specialised.raw().name,
                plain.raw().name
            );
            let names: Vec<_> = masked.constants().iter().map(|c| c.0).collect();
            assert_eq!(
                names,
                [
                    "CLAMP_RENDERED",
                    "COMPOSITE",
                    "GT_PACKED",
                    "MASK",
                    "VALID_PADDING"
                ],
                "{}",
                ssim_backward::SsimLossBackward::FILE
            );
        }
    }
}

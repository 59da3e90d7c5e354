//! The typed dispatch of the generated kernels (src/gpu/kernels.rs): element types are checked
//! against the WGSL, absent buffers get placeholders of their own, and a typed call records the
//! same work as the hand-written positional one it replaced.

use wgsplat::gpu::kernels::{Arg, densify_split};
use wgsplat::testing::both_paths;
use wgsplat::{DType, MemoryCategory, Tensor};

fn tensor(enc: &mut wgsplat::Encoder, dtype: DType, n: usize) -> Tensor {
    Tensor::zeros(enc, dtype, &[n], MemoryCategory::Other, "kernels test").unwrap()
}

fn params(count: u32) -> densify_split::SplitParams {
    densify_split::SplitParams {
        count,
        seed: 7,
        scale_divisor_log: 1.6f32.ln(),
        ..Default::default()
    }
}

#[test]
fn a_tensor_of_the_wrong_dtype_is_refused_with_the_binding_named() {
    for ctx in both_paths() {
        let kernel = ctx.typed::<densify_split::Split>().unwrap();
        let mut enc = ctx.encoder("wrong dtype");
        let f = |enc: &mut wgsplat::Encoder| tensor(enc, DType::F32, 12);
        let (log_scales, means_a, means_b, log_scales_a) =
            (f(&mut enc), f(&mut enc), f(&mut enc), f(&mut enc));
        let quats = tensor(&mut enc, DType::U32, 16);
        let grid = wgsplat::gpu::WorkgroupGrid { x: 1, y: 1 };
        let err = enc
            .run(
                &kernel,
                &params(4),
                densify_split::SplitBindings {
                    log_scales: log_scales.page_arg(0),
                    quats: quats.page_arg(0),
                    means_a: means_a.page_arg(0),
                    means_b: means_b.page_arg(0),
                    log_scales_a: log_scales_a.page_arg(0),
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
        let kernel = ctx.typed::<densify_split::Split>().unwrap();
        let mut enc = ctx.encoder("absent");
        let quats = tensor(&mut enc, DType::F32, 16);
        let log_scales_a = tensor(&mut enc, DType::F32, 12);
        let grid = wgsplat::gpu::WorkgroupGrid { x: 1, y: 1 };
        // Two written bindings absent at once: each needs its own placeholder, or the dispatch
        // would alias a read-write buffer.
        enc.run(
            &kernel,
            &params(4),
            densify_split::SplitBindings {
                log_scales: Arg::Absent,
                quats: quats.page_arg(0),
                means_a: Arg::Absent,
                means_b: Arg::Absent,
                log_scales_a: log_scales_a.page_arg(0),
            },
            grid,
        )
        .unwrap();
        assert_eq!(enc.dispatch_count(), 1);
        ctx.submit(enc).unwrap();
        ctx.wait_idle().unwrap();
    }
}

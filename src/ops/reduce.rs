//! Reductions to one element: sum, min and max of f32, u32 and i32 tensors (shaders/reduce.wgsl).
//!
//! Each pass combines blocks of [`ITEMS_PER_WORKGROUP`] elements into one partial per workgroup;
//! every page of the input writes its partials into one partial tensor, which the next pass reduces
//! the same way, until one element is left. The result is a 1-element GPU tensor, so the reduction
//! can feed later GPU work without a readback; `*_value` functions are blocking conveniences.
//!
//! # Semantics
//! - Empty input: sum `0`, f32 min `+inf`, f32 max `-inf`, u32 min `u32::MAX`, u32 max `0`,
//!   i32 min `i32::MAX`, i32 max `i32::MIN` (the identities of the operations).
//! - f32 min/max propagate NaN: if any element is NaN the result is a NaN (which NaN is
//!   unspecified). The sign of a zero result (`-0.0` vs `0.0`) is unspecified.
//! - Integer sums wrap.
//!
//! # Error bound of the f32 sum
//! The summation is a tree: within a workgroup each invocation adds its 4 elements pairwise and
//! the 256 invocation values are combined by a binary tree (depth 8), so on the portable path each
//! pass adds at most [`PORTABLE_DEPTH_PER_PASS`] = 10 = log2(1024) levels. With subgroups, the
//! order inside `subgroupAdd` is the hardware's, so a subgroup of size `s` is assumed to add up
//! to `s - 1` levels, and the tree over the `256 / s` subgroup results `log2(256 / s)` more.
//! With `D` the total depth over all passes (see [`sum_f32_depth`]), the classic bound for
//! floating-point summation along a tree of depth `D` gives
//!
//! `|computed - exact| <= gamma(D) * sum(|x_i|)`, where `gamma(D) = D*u / (1 - D*u)`, `u = 2^-24`.
//!
//! On the portable path with pages of at least 1024 elements, `passes = max(1, ceil(log_1024 n))`,
//! so `D = 10 * passes <= max(10, ceil(log2 n) + 9)`. Overflow to infinity is not covered. [`sum_f32_error_bound`] evaluates the bound for a context.

use crate::error::{Error, Result};
use crate::gpu::kernels;
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::tensor::{DType, Element, Tensor};

/// Elements one workgroup reduces per pass (256 invocations x 4 elements).
pub const ITEMS_PER_WORKGROUP: u64 = kernels::reduce::ITEMS_PER_WORKGROUP as u64;
/// Invocations per workgroup.
const WORKGROUP_SIZE: u64 = kernels::reduce::WG as u64;
/// Tree depth of one pass on the portable path: 2 (4 elements pairwise) + 8 (256-way tree).
pub const PORTABLE_DEPTH_PER_PASS: u64 = 10;

/// What to reduce with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum (integers wrap; see the module docs for the f32 error bound).
    Sum,
    /// Smallest element (f32: NaN propagates).
    Min,
    /// Largest element (f32: NaN propagates).
    Max,
}

/// The `OP_*` code of reduce.wgsl and the identity (result for an empty tensor) as bits.
fn op_code(op: ReduceOp, dtype: DType) -> (u32, u32) {
    use kernels::reduce as code;
    match (op, dtype) {
        (ReduceOp::Sum, DType::F32) => (code::OP_F32_SUM, 0),
        (ReduceOp::Min, DType::F32) => (code::OP_F32_MIN, f32::INFINITY.to_bits()),
        (ReduceOp::Max, DType::F32) => (code::OP_F32_MAX, f32::NEG_INFINITY.to_bits()),
        (ReduceOp::Sum, DType::U32 | DType::I32) => (code::OP_U32_SUM, 0),
        (ReduceOp::Min, DType::U32) => (code::OP_U32_MIN, u32::MAX),
        (ReduceOp::Max, DType::U32) => (code::OP_U32_MAX, 0),
        (ReduceOp::Min, DType::I32) => (code::OP_I32_MIN, i32::MAX as u32),
        (ReduceOp::Max, DType::I32) => (code::OP_I32_MAX, i32::MIN as u32),
    }
}

/// Partial slots each full page of `t` owns in one pass: `ceil(page_elems / 1024)`. A page's
/// partials are consecutive and never straddle a page of the partial tensor (this count and the
/// page size are both powers of two).
fn partials_per_full_page(t: &Tensor) -> u64 {
    t.page_elems().div_ceil(ITEMS_PER_WORKGROUP)
}

/// Length of the partial tensor after one pass over `len` elements with pages of `page_elems`.
fn partial_len(len: u64, page_elems: u64) -> u64 {
    let full_pages = len / page_elems;
    full_pages * page_elems.div_ceil(ITEMS_PER_WORKGROUP)
        + (len % page_elems).div_ceil(ITEMS_PER_WORKGROUP)
}

/// Records one pass: every page of `src` writes its partials into a new tensor.
fn reduce_pass(enc: &mut Encoder, src: &Tensor, code: u32) -> Result<Tensor> {
    let kernel = enc.ctx().typed::<kernels::reduce::ReducePass>()?;
    let out_len = partial_len(src.len(), src.page_elems());
    let out = Tensor::uninit(
        enc,
        src.dtype(),
        &[out_len as usize],
        MemoryCategory::Other,
        "reduce partials",
    )?;
    for page in 0..src.num_pages() {
        let per_full_page = partials_per_full_page(src);
        let first = page as u64 * per_full_page;
        let (out_page, out_offset) = (
            (first / out.page_elems()) as usize,
            first % out.page_elems(),
        );
        let params = kernels::reduce::ReduceParams {
            n: src.page_len(page) as u32,
            op: code,
            out_offset: out_offset as u32,
            _pad0: 0,
        };
        let grid = super::grid(
            enc,
            src.page_len(page),
            kernels::reduce::ITEMS_PER_WORKGROUP,
        )?;
        // Any dtype: the kernel reads and writes 32-bit patterns, bound raw.
        let bindings = kernels::reduce::ReducePassBindings {
            src: src.page_raw(page),
            partials: out.page_raw(out_page),
        };
        enc.run(&kernel, &params, bindings, grid)?;
    }
    Ok(out)
}

/// Records the reduction of `x` into a new 1-element tensor of the same dtype.
pub fn reduce(enc: &mut Encoder, x: &Tensor, op: ReduceOp) -> Result<Tensor> {
    let (code, identity) = op_code(op, x.dtype());
    if x.is_empty() {
        let out = Tensor::uninit(enc, x.dtype(), &[1], MemoryCategory::Other, "reduce result")?;
        enc.upload(out.page(0).raw(), 0, &identity.to_le_bytes())?;
        return Ok(out);
    }
    let mut current = reduce_pass(enc, x, code)?;
    while current.len() > 1 {
        current = reduce_pass(enc, &current, code)?;
    }
    Ok(current)
}

/// Sum of an f32 tensor as a 1-element tensor (error bound in the module docs).
pub fn sum_f32(enc: &mut Encoder, x: &Tensor) -> Result<Tensor> {
    x.expect_dtype("sum_f32", DType::F32)?;
    reduce(enc, x, ReduceOp::Sum)
}

/// Smallest element of an f32 tensor (`+inf` when empty, NaN if any element is NaN).
pub fn min_f32(enc: &mut Encoder, x: &Tensor) -> Result<Tensor> {
    x.expect_dtype("min_f32", DType::F32)?;
    reduce(enc, x, ReduceOp::Min)
}

/// Largest element of an f32 tensor (`-inf` when empty, NaN if any element is NaN).
pub fn max_f32(enc: &mut Encoder, x: &Tensor) -> Result<Tensor> {
    x.expect_dtype("max_f32", DType::F32)?;
    reduce(enc, x, ReduceOp::Max)
}

/// Reduces `x` and reads the scalar back, blocking (submits an encoder of its own).
pub fn reduce_value<T: Element>(ctx: &GpuContext, x: &Tensor, op: ReduceOp) -> Result<T> {
    x.expect_dtype("reduce_value", T::DTYPE)?;
    let mut enc = ctx.encoder("reduce_value");
    let result = reduce(&mut enc, x, op)?;
    let pending = result.record_read(&mut enc)?;
    ctx.submit(enc)?;
    let values: Vec<T> = pending.wait(ctx)?;
    values.first().copied().ok_or_else(|| Error::Readback {
        label: "reduce result".into(),
        message: "no element read".into(),
    })
}

/// Sum of an f32 tensor, read back (blocking).
pub fn sum_f32_value(ctx: &GpuContext, x: &Tensor) -> Result<f32> {
    reduce_value(ctx, x, ReduceOp::Sum)
}

/// Smallest element of an f32 tensor, read back (blocking).
pub fn min_f32_value(ctx: &GpuContext, x: &Tensor) -> Result<f32> {
    reduce_value(ctx, x, ReduceOp::Min)
}

/// Largest element of an f32 tensor, read back (blocking).
pub fn max_f32_value(ctx: &GpuContext, x: &Tensor) -> Result<f32> {
    reduce_value(ctx, x, ReduceOp::Max)
}

/// Worst-case summation-tree depth `D` of [`sum_f32`] over `n` elements on this context: the
/// number of passes times the depth of one pass (module docs).
pub fn sum_f32_depth(ctx: &GpuContext, n: u64) -> u64 {
    let page_elems = ctx.page_bytes() / DType::F32.size();
    let mut passes = 0;
    let mut len = n;
    while len > 1 || passes == 0 {
        len = partial_len(len, page_elems);
        passes += 1;
    }
    let per_pass = if ctx.variant().subgroups {
        // Largest subgroup size is the worst case: (s - 1) + log2(256 / s) grows with s.
        let reported = u64::from(ctx.info().limits.max_subgroup_size);
        let s = if reported == 0 {
            WORKGROUP_SIZE
        } else {
            reported.min(WORKGROUP_SIZE).next_power_of_two()
        };
        let tree = u64::from((WORKGROUP_SIZE / s).max(1).ilog2());
        2 + (s - 1) + tree
    } else {
        PORTABLE_DEPTH_PER_PASS
    };
    passes * per_pass
}

/// The documented bound on `|sum_f32(x) - exact sum|` for `n` elements whose absolute values sum
/// to `sum_abs`, on this context: `gamma(D) * sum_abs` with `D` from [`sum_f32_depth`].
pub fn sum_f32_error_bound(ctx: &GpuContext, n: u64, sum_abs: f64) -> f64 {
    let unit_roundoff = f64::from(f32::EPSILON) / 2.0;
    let d = sum_f32_depth(ctx, n) as f64;
    d * unit_roundoff / (1.0 - d * unit_roundoff) * sum_abs
}

//! Element-wise arithmetic (shaders/elementwise.wgsl, shaders/elementwise_inplace.wgsl) and
//! page-aware copies.
//!
//! Every op works page by page: tensors of equal length share their page layout, so page `p` of
//! each operand is bound together. One kernel serves every operation; the op code travels in the
//! uniform parameters. Operands must have the same length ([`Error::Shape`] otherwise) and the
//! dtype the operation needs ([`Error::DType`] otherwise).
//!
//! Aliasing is allowed: an output may be one of the inputs (the op then runs in place), and both
//! inputs may be the same tensor. Tensors that share storage and have the same length always hold
//! the same elements, because views only ever start at element 0.
//!
//! Float semantics follow WGSL: `min`/`max` return a NaN operand when there is one (checked on the
//! bit pattern); `div`, `exp`, `log`, `sqrt`, `pow` have WGSL's accuracy (a few ulp) and are
//! unspecified outside their domain (`log`/`sqrt` of negatives, `pow` of a negative base, `clamp`
//! with `lo > hi`). Integer arithmetic wraps.

pub use super::elementwise_codes::{BinaryOp, UnaryOp};
use super::elementwise_codes::{Encoded, encode_binary, encode_unary};
use crate::error::{Error, Result};
use crate::gpu::kernels::{elementwise, elementwise_inplace, shared_elementwise_ops};
use crate::gpu::{Encoder, MemoryCategory};
use crate::tensor::Tensor;

fn check_operands(op: &'static str, tensors: &[&Tensor]) -> Result<()> {
    let first = tensors[0];
    for t in &tensors[1..] {
        t.expect_dtype(op, first.dtype())?;
        first.expect_same_layout(op, t)?;
    }
    Ok(())
}

fn params(n: u64, e: Encoded, swap: bool) -> shared_elementwise_ops::ElementwiseParams {
    shared_elementwise_ops::ElementwiseParams {
        n: n as u32,
        op: e.op,
        swap: u32::from(swap),
        s0_bits: e.s0,
        s1_bits: e.s1,
        ..Default::default()
    }
}

/// `out = op(lhs, rhs)` for distinct `out`; lhs and rhs may be the same tensor.
fn dispatch_out(
    enc: &mut Encoder,
    e: Encoded,
    lhs: &Tensor,
    rhs: &Tensor,
    out: &Tensor,
) -> Result<()> {
    let kernel = enc.ctx().typed::<elementwise::MapOut>()?;
    // The kernels move 32-bit words of any dtype: the buffers are bound raw.
    enc.run_pages(&kernel, out.len(), out.page_elems(), |page| {
        let p = page.page;
        (
            params(page.rows, e, false),
            elementwise::MapOutBindings {
                lhs: lhs.page_raw(p),
                rhs: rhs.page_raw(p),
                out: out.page_raw(p),
            },
        )
    })
}

/// `values = op(values, rhs)` (or `op(rhs, values)` with `swap`) for distinct tensors.
fn dispatch_inplace(
    enc: &mut Encoder,
    e: Encoded,
    values: &Tensor,
    rhs: &Tensor,
    swap: bool,
) -> Result<()> {
    if values.shares_storage_with(rhs) {
        let copy_of_rhs = temporary_copy(enc, rhs)?;
        return dispatch_inplace(enc, e, values, &copy_of_rhs, swap);
    }
    let kernel = enc.ctx().typed::<elementwise_inplace::MapInplace>()?;
    enc.run_pages(&kernel, values.len(), values.page_elems(), |page| {
        let p = page.page;
        (
            params(page.rows, e, swap),
            elementwise_inplace::MapInplaceBindings {
                values: values.page_raw(p),
                rhs: rhs.page_raw(p),
            },
        )
    })
}

fn temporary_copy(enc: &mut Encoder, t: &Tensor) -> Result<Tensor> {
    let tmp = Tensor::uninit(
        enc,
        t.dtype(),
        &[t.len() as usize],
        MemoryCategory::Other,
        "elementwise alias copy",
    )?;
    copy(enc, t, &tmp)?;
    Ok(tmp)
}

/// `out = lhs op rhs`. Any of the three may be the same tensor.
pub fn binary(
    enc: &mut Encoder,
    op: BinaryOp,
    lhs: &Tensor,
    rhs: &Tensor,
    out: &Tensor,
) -> Result<()> {
    check_operands("elementwise binary", &[lhs, rhs, out])?;
    let e = encode_binary(op, lhs.dtype())?;
    if out.shares_storage_with(lhs) {
        dispatch_inplace(enc, e, out, rhs, false)
    } else if out.shares_storage_with(rhs) {
        dispatch_inplace(enc, e, out, lhs, true)
    } else {
        dispatch_out(enc, e, lhs, rhs, out)
    }
}

/// `values = values op rhs`, in place. `rhs` may be `values` itself.
pub fn binary_inplace(
    enc: &mut Encoder,
    op: BinaryOp,
    values: &Tensor,
    rhs: &Tensor,
) -> Result<()> {
    check_operands("elementwise binary in place", &[values, rhs])?;
    let e = encode_binary(op, values.dtype())?;
    dispatch_inplace(enc, e, values, rhs, false)
}

/// `out = op(x)`. `out` may be `x`.
pub fn unary(enc: &mut Encoder, op: UnaryOp, x: &Tensor, out: &Tensor) -> Result<()> {
    check_operands("elementwise unary", &[x, out])?;
    if out.shares_storage_with(x) {
        return unary_inplace(enc, op, out);
    }
    let e = encode_unary(op, x.dtype())?;
    dispatch_out(enc, e, x, x, out)
}

/// `values = op(values)`, in place.
pub fn unary_inplace(enc: &mut Encoder, op: UnaryOp, values: &Tensor) -> Result<()> {
    let e = encode_unary(op, values.dtype())?;
    let kernel = enc.ctx().typed::<elementwise_inplace::MapSelf>()?;
    enc.run_pages(&kernel, values.len(), values.page_elems(), |page| {
        (
            params(page.rows, e, false),
            elementwise_inplace::MapSelfBindings {
                values: values.page_raw(page.page),
            },
        )
    })
}

/// `out = a + b` (f32, u32, i32; integers wrap).
pub fn add(enc: &mut Encoder, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    binary(enc, BinaryOp::Add, a, b, out)
}

/// `out = a - b` (f32, u32, i32; integers wrap).
pub fn sub(enc: &mut Encoder, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    binary(enc, BinaryOp::Sub, a, b, out)
}

/// `out = a * b` (f32, u32, i32; integers wrap).
pub fn mul(enc: &mut Encoder, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    binary(enc, BinaryOp::Mul, a, b, out)
}

/// `out = a / b` (f32).
pub fn div(enc: &mut Encoder, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    binary(enc, BinaryOp::Div, a, b, out)
}

/// `out = min(a, b)` element-wise.
pub fn minimum(enc: &mut Encoder, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    binary(enc, BinaryOp::Min, a, b, out)
}

/// `out = max(a, b)` element-wise.
pub fn maximum(enc: &mut Encoder, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    binary(enc, BinaryOp::Max, a, b, out)
}

/// `a += b`.
pub fn add_inplace(enc: &mut Encoder, a: &Tensor, b: &Tensor) -> Result<()> {
    binary_inplace(enc, BinaryOp::Add, a, b)
}

/// `a -= b`.
pub fn sub_inplace(enc: &mut Encoder, a: &Tensor, b: &Tensor) -> Result<()> {
    binary_inplace(enc, BinaryOp::Sub, a, b)
}

/// `a *= b`.
pub fn mul_inplace(enc: &mut Encoder, a: &Tensor, b: &Tensor) -> Result<()> {
    binary_inplace(enc, BinaryOp::Mul, a, b)
}

/// `a /= b` (f32).
pub fn div_inplace(enc: &mut Encoder, a: &Tensor, b: &Tensor) -> Result<()> {
    binary_inplace(enc, BinaryOp::Div, a, b)
}

/// `y += alpha * x` (f32), in place on `y`.
pub fn axpy(enc: &mut Encoder, alpha: f32, x: &Tensor, y: &Tensor) -> Result<()> {
    binary_inplace(
        enc,
        BinaryOp::LinearCombination {
            lhs_scale: 1.0,
            rhs_scale: alpha,
        },
        y,
        x,
    )
}

/// `x *= s` (f32), in place.
pub fn scale_inplace(enc: &mut Encoder, x: &Tensor, s: f32) -> Result<()> {
    unary_inplace(enc, UnaryOp::Scale(s), x)
}

/// `x += s` (f32), in place.
pub fn add_scalar_inplace(enc: &mut Encoder, x: &Tensor, s: f32) -> Result<()> {
    unary_inplace(enc, UnaryOp::AddScalar(s), x)
}

/// `x = clamp(x, lo, hi)` (f32), in place.
pub fn clamp_inplace(enc: &mut Encoder, x: &Tensor, lo: f32, hi: f32) -> Result<()> {
    if lo.is_nan() || hi.is_nan() || lo > hi {
        return Err(Error::InvalidArgument {
            op: "clamp",
            detail: format!("bounds [{lo}, {hi}] must be ordered and not NaN"),
        });
    }
    unary_inplace(enc, UnaryOp::Clamp { lo, hi }, x)
}

/// Copies every element of `src` into `dst` (same dtype and length), page by page with
/// `copy_buffer_to_buffer`; no kernel.
pub fn copy(enc: &mut Encoder, src: &Tensor, dst: &Tensor) -> Result<()> {
    if src.page_elems() != dst.page_elems() {
        src.expect_same_len("copy", dst)?;
        return copy_range(enc, src, 0, dst, 0, src.len());
    }
    check_operands("copy", &[src, dst])?;
    if src.shares_storage_with(dst) {
        return Ok(()); // same length and storage: the same elements
    }
    for page in 0..src.num_pages() {
        let bytes = src.page_len(page) * src.dtype().size();
        enc.copy(src.page(page).raw(), 0, dst.page(page).raw(), 0, bytes);
    }
    Ok(())
}

/// Copies `len` elements from `src[src_offset..]` to `dst[dst_offset..]` (same dtype), split into
/// segments at the page boundaries of both tensors. Overlapping ranges of one tensor behave like
/// `memmove` (the source range is staged through a temporary).
pub fn copy_range(
    enc: &mut Encoder,
    src: &Tensor,
    src_offset: u64,
    dst: &Tensor,
    dst_offset: u64,
    len: u64,
) -> Result<()> {
    dst.expect_dtype("copy_range", src.dtype())?;
    for (what, t, offset) in [
        ("source", src, src_offset),
        ("destination", dst, dst_offset),
    ] {
        if offset.checked_add(len).is_none_or(|end| end > t.len()) {
            return Err(Error::Shape {
                op: "copy_range",
                detail: format!(
                    "{what} range {offset}..{offset}+{len} exceeds its length {}",
                    t.len()
                ),
            });
        }
    }
    if len == 0 || (src.shares_storage_with(dst) && src_offset == dst_offset) {
        return Ok(());
    }
    if src.shares_storage_with(dst) {
        let staged = Tensor::uninit(
            enc,
            src.dtype(),
            &[len as usize],
            MemoryCategory::Other,
            "copy_range staging",
        )?;
        copy_range(enc, src, src_offset, &staged, 0, len)?;
        return copy_range(enc, &staged, 0, dst, dst_offset, len);
    }
    let elem = src.dtype().size();
    let mut done = 0;
    while done < len {
        let (s, d) = (src_offset + done, dst_offset + done);
        let (src_page, src_in_page) = (s / src.page_elems(), s % src.page_elems());
        let (dst_page, dst_in_page) = (d / dst.page_elems(), d % dst.page_elems());
        let segment = (len - done)
            .min(src.page_elems() - src_in_page)
            .min(dst.page_elems() - dst_in_page);
        let (src_buffer, dst_buffer) = (
            src.page(src_page as usize).raw(),
            dst.page(dst_page as usize).raw(),
        );
        enc.copy(
            src_buffer,
            src_in_page * elem,
            dst_buffer,
            dst_in_page * elem,
            segment * elem,
        );
        done += segment;
    }
    Ok(())
}

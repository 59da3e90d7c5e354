//! Gather, scatter and concatenation of paged tensors (shaders/gather.wgsl).
//!
//! Values are moved as 32-bit patterns, so every dtype works; indices are u32 tensors. The row
//! forms move rows of `width` consecutive elements (`out[i*width + j] = src[index[i]*width + j]`),
//! which densification uses for per-Gaussian parameters such as 48 SH coefficients. Rows may
//! straddle page boundaries (pages hold a power of two of elements, widths need not divide it), so
//! the kernel addresses each element on its own and the Rust side dispatches once per triple of
//! (output page, index page, source page) that can meet.
//!
//! Out-of-range indices (`index[i] >= rows of src`): a gather writes zeros into that row; a scatter
//! skips that row. Nothing panics. When a scatter has duplicate indices, which source row lands is
//! unspecified.
//!
//! The output of a gather (destination of a scatter) must not share storage with the source or
//! the index tensor ([`Error::InvalidArgument`]).

use crate::error::{Error, Result};
use crate::gpu::Encoder;
use crate::gpu::kernels::{self, KernelSpec, TypedKernel};
use crate::tensor::{DType, Tensor};

/// Which way values move.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// linear = output, addressed = source.
    Gather,
    /// linear = source, addressed = destination.
    Scatter,
}

fn check_rows(op: &'static str, t: &Tensor, width: u64) -> Result<u64> {
    if width == 0 || width > u64::from(u32::MAX) {
        return Err(Error::InvalidArgument {
            op,
            detail: format!("row width {width} must be in 1..=u32::MAX"),
        });
    }
    if !t.len().is_multiple_of(width) {
        return Err(Error::Shape {
            op,
            detail: format!("{} elements are not whole rows of width {width}", t.len()),
        });
    }
    let rows = t.len() / width;
    if rows > u64::from(u32::MAX) {
        return Err(Error::Overflow {
            what: format!("{op} row count"),
            needed: rows,
            max: u64::from(u32::MAX),
            hint: "indices are 32-bit".into(),
        });
    }
    Ok(rows)
}

fn check_distinct(op: &'static str, written: &Tensor, read: &[&Tensor]) -> Result<()> {
    if read.iter().any(|t| t.shares_storage_with(written)) {
        return Err(Error::InvalidArgument {
            op,
            detail: "the written tensor must not share storage with an input".into(),
        });
    }
    Ok(())
}

/// Records every dispatch moving rows between `linear` (indexed by row i) and `addressed`
/// (indexed by `index[i]`).
fn move_rows(
    enc: &mut Encoder,
    dir: Direction,
    linear: &Tensor,
    index: &Tensor,
    addressed: &Tensor,
    width: u64,
) -> Result<()> {
    match dir {
        Direction::Gather => {
            let kernel = enc.ctx().typed::<kernels::gather::GatherRows>()?;
            move_rows_with(enc, &kernel, dir, linear, index, addressed, width)
        }
        Direction::Scatter => {
            let kernel = enc.ctx().typed::<kernels::gather::ScatterRows>()?;
            move_rows_with(enc, &kernel, dir, linear, index, addressed, width)
        }
    }
}

/// [`move_rows`] with the entry point of `dir` (both share their params and bindings).
fn move_rows_with<K>(
    enc: &mut Encoder,
    kernel: &TypedKernel<K>,
    dir: Direction,
    linear: &Tensor,
    index: &Tensor,
    addressed: &Tensor,
    width: u64,
) -> Result<()>
where
    K: for<'a> KernelSpec<
            Params = kernels::gather::GatherParams,
            Bindings<'a> = kernels::gather::GatherRowsBindings<'a>,
        >,
{
    let rows_total = (addressed.len() / width) as u32;
    for lin_page in 0..linear.num_pages() {
        let (start, len) = (linear.page_start(lin_page), linear.page_len(lin_page));
        let (first_row, last_row) = (start / width, (start + len - 1) / width);
        let index_pages =
            (first_row / index.page_elems()) as usize..=(last_row / index.page_elems()) as usize;
        for index_page in index_pages {
            for addr_page in 0..addressed.num_pages() {
                let addr_start = addressed.page_start(addr_page);
                let addr_len = addressed.page_len(addr_page);
                let params = kernels::gather::GatherParams {
                    lin_len: len as u32,
                    lin_row0: first_row as u32,
                    lin_col0: (start % width) as u32,
                    width: width as u32,
                    index_row0: index.page_start(index_page) as u32,
                    index_len: index.page_len(index_page) as u32,
                    addr_row0: (addr_start / width) as u32,
                    addr_col0: (addr_start % width) as u32,
                    addr_len: addr_len as u32,
                    addr_rows_span: (addr_len + addr_start % width).div_ceil(width) as u32,
                    rows_total,
                    zero_out_of_range: u32::from(dir == Direction::Gather && addr_page == 0),
                };
                let grid = super::grid(enc, len, kernel.threads())?;
                // Values move as 32-bit patterns of any dtype: bound raw.
                let (values_in, values_out) = match dir {
                    Direction::Gather => (addressed.page_raw(addr_page), linear.page_raw(lin_page)),
                    Direction::Scatter => {
                        (linear.page_raw(lin_page), addressed.page_raw(addr_page))
                    }
                };
                let bindings = kernels::gather::GatherRowsBindings {
                    values_in,
                    row_index: index.page_arg(index_page),
                    values_out,
                };
                enc.run(kernel, &params, bindings, grid)?;
            }
        }
    }
    Ok(())
}

/// `out[i*width + j] = src[index[i]*width + j]` for every row `i` of `index` into an existing
/// `out` of `index.len() * width` elements (same dtype as `src`). Out-of-range rows become zeros.
pub fn gather_rows_into(
    enc: &mut Encoder,
    src: &Tensor,
    index: &Tensor,
    width: u64,
    out: &Tensor,
) -> Result<()> {
    const OP: &str = "gather_rows";
    index.expect_dtype(OP, DType::U32)?;
    out.expect_dtype(OP, src.dtype())?;
    check_rows(OP, src, width)?;
    let out_rows = check_rows(OP, out, width)?;
    if out_rows != index.len() {
        return Err(Error::Shape {
            op: OP,
            detail: format!(
                "output holds {out_rows} rows of width {width}, index has {}",
                index.len()
            ),
        });
    }
    check_distinct(OP, out, &[src, index])?;
    if src.is_empty() {
        // Every index is out of range.
        for page in 0..out.num_pages() {
            enc.clear(
                out.page(page).raw(),
                0,
                out.page_len(page) * out.dtype().size(),
            );
        }
        return Ok(());
    }
    move_rows(enc, Direction::Gather, out, index, src, width)
}

/// Gathers rows of `width` elements into a new tensor of shape `[index.len(), width]`
/// (`[index.len()]` for width 1).
pub fn gather_rows(enc: &mut Encoder, src: &Tensor, index: &Tensor, width: u64) -> Result<Tensor> {
    let rows = index.len() as usize;
    let shape = if width == 1 {
        vec![rows]
    } else {
        vec![rows, width as usize]
    };
    let out = Tensor::uninit(enc, src.dtype(), &shape, src.category(), "gather")?;
    gather_rows_into(enc, src, index, width, &out)?;
    Ok(out)
}

/// `out[i] = src[index[i]]` into a new tensor of `index.len()` elements (0 for out-of-range).
pub fn gather(enc: &mut Encoder, src: &Tensor, index: &Tensor) -> Result<Tensor> {
    gather_rows(enc, src, index, 1)
}

/// `dst[index[i]*width + j] = src[i*width + j]` for every row `i` of `index`; out-of-range rows
/// are skipped, and with duplicate indices the surviving row is unspecified.
pub fn scatter_rows(
    enc: &mut Encoder,
    src: &Tensor,
    index: &Tensor,
    width: u64,
    dst: &Tensor,
) -> Result<()> {
    const OP: &str = "scatter_rows";
    index.expect_dtype(OP, DType::U32)?;
    dst.expect_dtype(OP, src.dtype())?;
    let src_rows = check_rows(OP, src, width)?;
    check_rows(OP, dst, width)?;
    if src_rows != index.len() {
        return Err(Error::Shape {
            op: OP,
            detail: format!(
                "source holds {src_rows} rows of width {width}, index has {}",
                index.len()
            ),
        });
    }
    check_distinct(OP, dst, &[src, index])?;
    if dst.is_empty() {
        return Ok(()); // every index is out of range
    }
    move_rows(enc, Direction::Scatter, src, index, dst, width)
}

/// `dst[index[i]] = src[i]` (see [`scatter_rows`]).
pub fn scatter(enc: &mut Encoder, src: &Tensor, index: &Tensor, dst: &Tensor) -> Result<()> {
    scatter_rows(enc, src, index, 1, dst)
}

/// A new tensor holding the parts one after another, concatenated along the first dimension (all
/// parts need the same dtype and the same trailing dimensions).
pub fn concat(enc: &mut Encoder, parts: &[&Tensor]) -> Result<Tensor> {
    const OP: &str = "concat";
    let first = parts.first().ok_or_else(|| Error::InvalidArgument {
        op: OP,
        detail: "no tensors given".into(),
    })?;
    let trailing = first.shape().get(1..).unwrap_or(&[]).to_vec();
    let mut rows = 0usize;
    for part in parts {
        part.expect_dtype(OP, first.dtype())?;
        if part.shape().is_empty() || part.shape()[1..] != trailing[..] {
            return Err(Error::Shape {
                op: OP,
                detail: format!(
                    "shapes {:?} and {:?} differ past the first dimension",
                    first.shape(),
                    part.shape()
                ),
            });
        }
        rows += part.shape()[0];
    }
    let mut shape = vec![rows];
    shape.extend_from_slice(&trailing);
    let out = Tensor::uninit(enc, first.dtype(), &shape, first.category(), "concat")?;
    let mut offset = 0;
    for part in parts {
        super::elementwise::copy_range(enc, part, 0, &out, offset, part.len())?;
        offset += part.len();
    }
    Ok(out)
}

/// `a ++ b` as a new tensor (see [`concat`]).
pub fn append(enc: &mut Encoder, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    concat(enc, &[a, b])
}

//! Row surgery on [`GaussianTensors`]: keeping rows by index and concatenating sets, always into
//! row-paged tensors with the same rows per page, so the results stay aligned with the other
//! tensors of the model (gradients, moments).
//!
//! The in-place forms ([`keep_rows_in_place`], [`append_rows_in_place`]) replace one attribute
//! tensor at a time and drop the old one at once, so the transient memory of a model-wide row
//! change is one attribute tensor (SH rest at most: 180 of the 944 persistent bytes per
//! Gaussian at SH degree 3), not a second copy of the model.

use crate::error::{Error, Result};
use crate::gpu::Encoder;
use crate::ops::{copy_range, gather_rows_into};
use crate::splat::GaussianTensors;
use crate::splat::gaussians::ATTRIBUTE_NAMES;
use crate::tensor::{DType, Tensor};

/// Elements per row (per Gaussian) of an attribute tensor: the product of its trailing
/// dimensions, 1 for a `[N]` tensor, 0 for SH rest with no coefficients.
pub fn row_width(t: &Tensor) -> u64 {
    t.shape()
        .get(1..)
        .unwrap_or(&[])
        .iter()
        .map(|&d| d as u64)
        .product()
}

/// A new set holding row `index[i]` of `src` as row `i` (`index`: u32 row indices; out-of-range
/// ones give zero rows). The result keeps `src`'s memory category and SH size.
pub fn select_gaussian_rows(
    enc: &mut Encoder,
    src: &GaussianTensors,
    index: &Tensor,
    label: &str,
) -> Result<GaussianTensors> {
    index.expect_dtype("select_gaussian_rows", DType::U32)?;
    let out = GaussianTensors::uninit(
        enc,
        index.len() as usize,
        src.max_sh_degree(),
        src.means.category(),
        label,
    )?;
    check_sh("select_gaussian_rows", src, &out)?;
    for (from, to) in src.attributes().into_iter().zip(out.attributes()) {
        let width = row_width(from);
        if width > 0 && !to.is_empty() {
            gather_rows_into(enc, from, index, width, to)?;
        }
    }
    Ok(out)
}

/// Writes row `i` of `src` over row `index[i]` of `dst`, attribute by attribute (the
/// counterpart of [`select_gaussian_rows`]; both sets need the same SH size).
pub fn scatter_gaussian_rows(
    enc: &mut Encoder,
    src: &GaussianTensors,
    index: &Tensor,
    dst: &GaussianTensors,
) -> Result<()> {
    index.expect_dtype("scatter_gaussian_rows", DType::U32)?;
    check_sh("scatter_gaussian_rows", src, dst)?;
    for (from, to) in src.attributes().into_iter().zip(dst.attributes()) {
        let width = row_width(from);
        if width > 0 {
            crate::ops::gather::scatter_rows(enc, from, index, width, to)?;
        }
    }
    Ok(())
}

/// A new set holding the rows of `a` followed by those of `b` (same SH size), in `a`'s memory
/// category.
pub fn concat_gaussian_rows(
    enc: &mut Encoder,
    a: &GaussianTensors,
    b: &GaussianTensors,
    label: &str,
) -> Result<GaussianTensors> {
    if a.sh_rest_count() != b.sh_rest_count() {
        return Err(Error::Shape {
            op: "concat_gaussian_rows",
            detail: format!(
                "SH rest coefficients differ: {} vs {}",
                a.sh_rest_count(),
                b.sh_rest_count()
            ),
        });
    }
    let out = GaussianTensors::uninit(
        enc,
        (a.len() + b.len()) as usize,
        a.max_sh_degree(),
        a.means.category(),
        label,
    )?;
    check_sh("concat_gaussian_rows", a, &out)?;
    for ((first, second), to) in a
        .attributes()
        .into_iter()
        .zip(b.attributes())
        .zip(out.attributes())
    {
        copy_range(enc, first, 0, to, 0, first.len())?;
        copy_range(enc, second, 0, to, first.len(), second.len())?;
    }
    Ok(out)
}

/// Replaces every attribute of `set` by its rows `index[i]`, one attribute at a time; the new
/// tensors are labelled `{label}.{attribute}`. The encoder is flushed after each attribute
/// ([`Encoder::flush_and_wait`]), so the transient is one attribute tensor in device memory too.
pub fn keep_rows_in_place(
    enc: &mut Encoder,
    set: &mut GaussianTensors,
    index: &Tensor,
    label: &str,
) -> Result<()> {
    index.expect_dtype("keep_rows_in_place", DType::U32)?;
    let rows = set.rows_per_page;
    let k = index.len() as usize;
    for (attr, name) in set.attributes_mut().into_iter().zip(ATTRIBUTE_NAMES) {
        let mut shape = attr.shape().to_vec();
        shape[0] = k;
        let name = format!("{label}.{name}");
        let kept = Tensor::uninit_rows(enc, attr.dtype(), &shape, rows, attr.category(), &name)?;
        let width = row_width(attr);
        if width > 0 && k > 0 {
            gather_rows_into(enc, attr, index, width, &kept)?;
        }
        *attr = kept;
        enc.flush_and_wait()?;
    }
    Ok(())
}

/// Appends `new_rows` to every attribute of `set` (or `zero_rows` zero rows when `new_rows` is
/// `None`), one attribute at a time; the new tensors are labelled `{label}.{attribute}`. The
/// encoder is flushed after each attribute, as in [`keep_rows_in_place`].
pub fn append_rows_in_place(
    enc: &mut Encoder,
    set: &mut GaussianTensors,
    new_rows: Option<&GaussianTensors>,
    zero_rows: u64,
    label: &str,
) -> Result<()> {
    if let Some(new) = new_rows
        && new.sh_rest_count() != set.sh_rest_count()
    {
        return Err(Error::Shape {
            op: "append_rows_in_place",
            detail: format!(
                "SH rest coefficients differ: {} vs {}",
                set.sh_rest_count(),
                new.sh_rest_count()
            ),
        });
    }
    let extra = new_rows.map_or(zero_rows, GaussianTensors::len);
    let sources = new_rows.map(|n| n.attributes());
    let rows = set.rows_per_page;
    for (i, (attr, name)) in set
        .attributes_mut()
        .into_iter()
        .zip(ATTRIBUTE_NAMES)
        .enumerate()
    {
        let mut shape = attr.shape().to_vec();
        shape[0] += extra as usize;
        let name = format!("{label}.{name}");
        let grown = Tensor::uninit_rows(enc, attr.dtype(), &shape, rows, attr.category(), &name)?;
        copy_range(enc, attr, 0, &grown, 0, attr.len())?;
        let tail = grown.len() - attr.len();
        match &sources {
            Some(src) => copy_range(enc, src[i], 0, &grown, attr.len(), tail)?,
            None => zero_range(enc, &grown, attr.len(), tail),
        }
        *attr = grown;
        enc.flush_and_wait()?;
    }
    Ok(())
}

/// Zeroes elements `start..start + len` of `t`, page by page.
fn zero_range(enc: &mut Encoder, t: &Tensor, start: u64, len: u64) {
    let elem = t.dtype().size();
    for page in 0..t.num_pages() {
        let (p0, p1) = (t.page_start(page), t.page_start(page) + t.page_len(page));
        let (a, b) = (start.max(p0), (start + len).min(p1));
        if a < b {
            enc.clear(t.page(page).raw(), (a - p0) * elem, (b - a) * elem);
        }
    }
}

/// The SH size must survive the round trip through `max_sh_degree` (it does for 0, 3, 8, 15).
fn check_sh(op: &'static str, src: &GaussianTensors, out: &GaussianTensors) -> Result<()> {
    if src.sh_rest_count() != out.sh_rest_count() {
        return Err(Error::Shape {
            op,
            detail: format!(
                "{} SH rest coefficients per Gaussian is not a full SH degree (0, 3, 8 or 15)",
                src.sh_rest_count()
            ),
        });
    }
    Ok(())
}

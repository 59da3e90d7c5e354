//! Row surgery on [`GaussianTensors`]: keeping rows by index and concatenating sets, always into
//! row-paged tensors with the same rows per page, so the results stay aligned with the other
//! tensors of the model (gradients, moments).

use crate::error::{Error, Result};
use crate::gpu::Encoder;
use crate::ops::{copy_range, gather_rows_into};
use crate::splat::GaussianTensors;
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

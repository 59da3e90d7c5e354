//! Row surgery on [`GaussianTensors`]: gathering and scattering rows by index, and rebuilding sets
//! in place, always into row-paged tensors with the same rows per page, so the results stay aligned with the other
//! tensors of the model (gradients, moments).
//!
//! The in-place form ([`rebuild_in_place`]) replaces one attribute tensor at a time, widest first,
//! and drops the old one at once, so the transient memory of a model-wide row change is one
//! attribute tensor (SH rest at most: 180 of the 488 persistent bytes per Gaussian at SH degree 3),
//! not a second copy of the model; appending rows keeps the full pages and allocates only the pages
//! past them ([`Tensor::grow_rows`]).

use crate::error::{Error, Result};
use crate::gpu::Encoder;
use crate::ops::{copy_range, gather_rows_into};
use crate::splat::GaussianTensors;
use crate::splat::gaussians::ATTRIBUTE_NAMES;
use crate::tensor::{DType, Tensor};

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
        let width = from.row_elems();
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
        let width = from.row_elems();
        if width > 0 {
            crate::ops::gather::scatter_rows(enc, from, index, width, to)?;
        }
    }
    Ok(())
}

/// Where the new rows of one set come from in [`rebuild_in_place`].
#[derive(Clone, Copy)]
pub enum RowSource<'a> {
    /// Row `i` becomes the old row `index[i]` (u32 indices; out-of-range ones give zero rows).
    Gather(&'a Tensor),
    /// The old rows followed by `rows` (same SH size), or by `zero_rows` zero rows when `None`.
    Append {
        /// Rows to append.
        rows: Option<&'a GaussianTensors>,
        /// Zero rows to append when `rows` is `None`.
        zero_rows: u64,
    },
}

/// Rebuilds the attribute tensors of several aligned sets (parameters and moments) from their
/// sources, one attribute tensor at a time, the widest first across all the sets; the new tensors
/// are labelled `{label}.{attribute}`. The encoder is flushed after each
/// ([`Encoder::flush_and_wait`]), so the transient is one attribute tensor in device memory too,
/// and widest-first makes it largest while the other tensors are still the smaller of old and new.
pub fn rebuild_in_place(
    enc: &mut Encoder,
    sets: &mut [(&mut GaussianTensors, RowSource<'_>, &str)],
) -> Result<()> {
    for (set, source, _) in sets.iter() {
        if let RowSource::Append {
            rows: Some(new), ..
        } = source
            && new.sh_rest_count() != set.sh_rest_count()
        {
            return Err(Error::Shape {
                op: "rebuild_in_place",
                detail: format!(
                    "SH rest coefficients differ: {} vs {}",
                    set.sh_rest_count(),
                    new.sh_rest_count()
                ),
            });
        }
        if let RowSource::Gather(index) = source {
            index.expect_dtype("rebuild_in_place", DType::U32)?;
        }
    }
    let mut order: Vec<(usize, usize, u64)> = Vec::new();
    for (s, (set, _, _)) in sets.iter().enumerate() {
        for (a, attr) in set.attributes().into_iter().enumerate() {
            order.push((s, a, attr.row_elems()));
        }
    }
    order.sort_by_key(|&(s, a, width)| (std::cmp::Reverse(width), s, a));
    for (s, a, width) in order {
        let (set, source, label) = &mut sets[s];
        let rows = set.rows_per_page;
        let attr = &mut set.attributes_mut()[a];
        let name = format!("{label}.{}", ATTRIBUTE_NAMES[a]);
        match *source {
            RowSource::Gather(index) => {
                let mut shape = attr.shape().to_vec();
                shape[0] = index.len() as usize;
                let kept =
                    Tensor::uninit_rows(enc, attr.dtype(), &shape, rows, attr.category(), &name)?;
                if width > 0 && !kept.is_empty() {
                    gather_rows_into(enc, attr, index, width, &kept)?;
                }
                **attr = kept;
            }
            RowSource::Append {
                rows: new,
                zero_rows,
            } => {
                // Full pages stay where they are: only the pages past them are allocated.
                let old_len = attr.len();
                let added = new.map_or(zero_rows, GaussianTensors::len);
                attr.grow_rows(enc, attr.shape()[0] as u64 + added, &name)?;
                match new {
                    Some(src) => {
                        copy_range(enc, src.attributes()[a], 0, attr, old_len, added * width)?
                    }
                    None => zero_range(enc, attr, old_len, added * width),
                }
            }
        }
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

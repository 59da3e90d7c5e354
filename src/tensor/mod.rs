//! GPU tensors: f32, u32 or i32 elements with a shape, stored in **pages**.
//!
//! A tensor's storage is split across as many buffers as needed so that no binding exceeds the
//! adapter's `max_storage_buffer_binding_size`: page `p` holds elements
//! `[p * page_elems, (p + 1) * page_elems)`. The page size is one power of two per context, so
//! tensors of equal length always have the same page layout and element-wise kernels run page by
//! page. Handles are cheap to clone (an `Arc`); the pages go back to the allocator when the last
//! handle drops.

mod pages;
mod read;
mod rows;
mod views;
pub use rows::BINDING_OFFSET_ALIGNMENT;

use crate::error::{Error, Result};
use crate::gpu::allocator::GpuBuffer;
use crate::gpu::encoder::Encoder;
use crate::gpu::memory::MemoryCategory;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub use read::TensorReadback;

/// Element type of a tensor. All are 32 bits wide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 32-bit unsigned integer.
    U32,
    /// 32-bit signed integer.
    I32,
}

impl DType {
    /// Bytes per element.
    pub const fn size(self) -> u64 {
        4
    }
}

/// A Rust type that can live in a tensor.
pub trait Element: bytemuck::Pod + Send + Sync + 'static {
    /// The matching dtype.
    const DTYPE: DType;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
}
impl Element for u32 {
    const DTYPE: DType = DType::U32;
}
impl Element for i32 {
    const DTYPE: DType = DType::I32;
}

/// The pages behind one or more tensor handles.
pub struct Storage {
    pages: Vec<GpuBuffer>,
    page_elems: u64,
    capacity: u64,
    category: MemoryCategory,
}

/// A GPU tensor handle. Clones share storage.
#[derive(Clone)]
pub struct Tensor {
    storage: Arc<Storage>,
    dtype: DType,
    shape: Vec<usize>,
    len: u64,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor({:?}, {:?}, {} pages)",
            self.dtype,
            self.shape,
            self.storage.pages.len()
        )
    }
}

fn element_count(shape: &[usize]) -> Result<u64> {
    shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
        .ok_or_else(|| Error::Overflow {
            what: format!("tensor of shape {shape:?}"),
            needed: u64::MAX,
            max: u64::MAX,
            hint: "use a smaller shape".into(),
        })
}

/// Elements of each page of a tensor of `len` elements paged `page_elems` to a page: what
/// [`Tensor::uninit`] and [`Tensor::uninit_rows`] allocate, and what the memory plan counts in
/// closed form (the same split as the kernels' page loop, [`crate::gpu::kernels::page_rows`]).
fn page_lengths(len: u64, page_elems: u64) -> impl Iterator<Item = u64> {
    crate::gpu::kernels::page_rows(len, page_elems).map(|page| page.rows)
}

/// Device bytes of the pages of `len` elements of `dtype`, `page_elems` to a page, each rounded
/// to the allocator's size class for `category`.
///
/// Counted in closed form (the full pages share one size; the last may be shorter), not page by
/// page: the memory plan bisects over counts up to 2^40, whose tensors have tens of thousands of
/// pages each.
fn planned_page_bytes(category: MemoryCategory, dtype: DType, len: u64, page_elems: u64) -> u64 {
    let per_page = page_elems.max(1);
    let class = |elems: u64| crate::gpu::memory::size_class_in(elems * dtype.size(), category);
    let (full, rest) = (len / per_page, len % per_page);
    let full_bytes = if full > 0 { full * class(per_page) } else { 0 };
    full_bytes + if rest > 0 { class(rest) } else { 0 }
}

impl Tensor {
    /// Device bytes that [`Tensor::uninit_rows`] takes in `category` for `rows` rows of `width`
    /// elements of `dtype`, `rows_per_page` rows to a page: each page rounded to the allocator's
    /// size class.
    pub fn planned_rows_bytes(
        category: MemoryCategory,
        dtype: DType,
        rows: u64,
        width: u64,
        rows_per_page: u64,
    ) -> u64 {
        let width = width.max(1);
        planned_page_bytes(category, dtype, rows * width, rows_per_page * width)
    }

    /// Device bytes that [`Tensor::uninit`] takes for `len` elements of `dtype` in `ctx`, as
    /// frame scratch.
    pub fn planned_bytes(ctx: &crate::gpu::GpuContext, dtype: DType, len: u64) -> u64 {
        let page_elems = ctx.page_bytes() / dtype.size();
        planned_page_bytes(MemoryCategory::FrameScratch, dtype, len, page_elems)
    }

    /// A tensor whose contents are undefined (poisoned in debug builds), paged with the context's
    /// page size.
    pub fn uninit(
        enc: &mut Encoder,
        dtype: DType,
        shape: &[usize],
        category: MemoryCategory,
        label: &str,
    ) -> Result<Tensor> {
        let page_elems = enc.ctx().page_bytes() / dtype.size();
        Self::uninit_with_page_elems(enc, dtype, shape, page_elems, category, label)
    }

    /// A tensor of rows (`shape[0]` rows of `shape[1..]` elements) whose pages hold whole rows:
    /// `rows_per_page` rows each. Tensors created with the same `rows_per_page` (the parameters,
    /// gradients and optimizer state of one model) page identically whatever their row widths, so
    /// a kernel can bind page `p` of each and see the same rows.
    pub fn uninit_rows(
        enc: &mut Encoder,
        dtype: DType,
        shape: &[usize],
        rows_per_page: u64,
        category: MemoryCategory,
        label: &str,
    ) -> Result<Tensor> {
        let width = element_count(shape.get(1..).unwrap_or(&[]))?.max(1);
        let page_elems = rows_per_page
            .checked_mul(width)
            .filter(|&e| e > 0 && e * dtype.size() <= enc.ctx().page_bytes());
        let page_elems = page_elems.ok_or_else(|| Error::Overflow {
            what: format!("a page of {rows_per_page} rows of {width} elements for {label:?}"),
            needed: rows_per_page
                .saturating_mul(width)
                .saturating_mul(dtype.size()),
            max: enc.ctx().page_bytes(),
            hint: "use GpuContext::rows_per_page(width) to choose the rows per page".into(),
        })?;
        Self::uninit_with_page_elems(enc, dtype, shape, page_elems, category, label)
    }

    fn uninit_with_page_elems(
        enc: &mut Encoder,
        dtype: DType,
        shape: &[usize],
        page_elems: u64,
        category: MemoryCategory,
        label: &str,
    ) -> Result<Tensor> {
        let len = element_count(shape)?;
        let mut pages = Vec::with_capacity(len.div_ceil(page_elems) as usize);
        for elems in page_lengths(len, page_elems) {
            pages.push(enc.alloc(elems * dtype.size(), category, label)?);
        }
        Ok(Tensor {
            storage: Arc::new(Storage {
                pages,
                page_elems,
                capacity: len,
                category,
            }),
            dtype,
            shape: shape.to_vec(),
            len,
        })
    }

    /// A tensor of zeros.
    pub fn zeros(
        enc: &mut Encoder,
        dtype: DType,
        shape: &[usize],
        category: MemoryCategory,
        label: &str,
    ) -> Result<Tensor> {
        let t = Self::uninit(enc, dtype, shape, category, label)?;
        for page in 0..t.num_pages() {
            let bytes = t.page_len(page) * dtype.size();
            enc.clear(t.page(page).raw(), 0, bytes);
        }
        Ok(t)
    }

    /// A tensor holding `data` (uploaded through the encoder, so ordered with other work in it).
    pub fn from_slice<T: Element>(
        enc: &mut Encoder,
        data: &[T],
        shape: &[usize],
        category: MemoryCategory,
        label: &str,
    ) -> Result<Tensor> {
        let len = element_count(shape)?;
        if len != data.len() as u64 {
            return Err(Error::Shape {
                op: "from_slice",
                detail: format!(
                    "shape {shape:?} holds {len} elements but {} were given",
                    data.len()
                ),
            });
        }
        let t = Self::uninit(enc, T::DTYPE, shape, category, label)?;
        t.write(enc, data)?;
        Ok(t)
    }

    /// Records an upload of `data` over the whole tensor (ordered with other work in `enc`).
    pub fn write<T: Element>(&self, enc: &mut Encoder, data: &[T]) -> Result<()> {
        self.expect_dtype("write", T::DTYPE)?;
        self.write_bytes(enc, bytemuck::cast_slice(data))
    }

    /// Records an upload of raw bytes over the whole tensor, 4 bytes to an element (ordered with
    /// other work in `enc`): the GPU reads each element's bytes little-endian, so RGBA8 pixels
    /// written here read as [`crate::data::image::pack_rgba8`]'s words, without a packed copy.
    pub fn write_bytes(&self, enc: &mut Encoder, bytes: &[u8]) -> Result<()> {
        let element = self.dtype.size() as usize;
        if bytes.len() as u64 != self.len * self.dtype.size() {
            return Err(Error::Shape {
                op: "write",
                detail: format!(
                    "tensor holds {} elements ({} bytes) but {} bytes were given",
                    self.len,
                    self.len * self.dtype.size(),
                    bytes.len()
                ),
            });
        }
        for page in 0..self.num_pages() {
            let start = self.page_start(page) as usize * element;
            let end = start + self.page_len(page) as usize * element;
            enc.upload(self.page(page).raw(), 0, &bytes[start..end])?;
        }
        Ok(())
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Accounting category of the storage.
    pub fn category(&self) -> MemoryCategory {
        self.storage.category
    }
}

#[cfg(test)]
mod planned_page_bytes_tests {
    use super::*;

    /// The closed form counts what allocating page by page takes, at every remainder.
    #[test]
    fn closed_form_equals_the_sum_over_pages() {
        let categories = [MemoryCategory::FrameScratch, MemoryCategory::Parameters];
        for category in categories {
            for page_elems in [0u64, 1, 7, 1024, 1 << 20, 1 << 25] {
                let lens = [
                    0u64,
                    1,
                    6,
                    7,
                    8,
                    1023,
                    1024,
                    1025,
                    5 << 20,
                    (1 << 25) + 3,
                    3 << 26,
                ];
                // Up to 2^16 pages, so that the page-by-page sum stays quick.
                for len in lens
                    .into_iter()
                    .filter(|l| l / page_elems.max(1) <= 1 << 16)
                {
                    let by_page: u64 = page_lengths(len, page_elems)
                        .map(|e| crate::gpu::memory::size_class_in(e * 4, category))
                        .sum();
                    assert_eq!(
                        planned_page_bytes(category, DType::F32, len, page_elems),
                        by_page,
                        "{category:?}: {len} elements, {page_elems} to a page"
                    );
                }
            }
        }
    }
}

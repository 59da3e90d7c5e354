//! Bindings of a chunk of rows ([`RowChunk`]) of a paged row tensor.

use super::{Storage, Tensor};
use crate::error::{Error, Result};
use crate::gpu::Encoder;
use crate::gpu::kernels::{Arg, RowChunk};
use std::sync::Arc;

/// Alignment of a binding's offset that every adapter accepts (WebGPU's default
/// `minStorageBufferOffsetAlignment`, and the largest any native adapter asks for).
pub const BINDING_OFFSET_ALIGNMENT: u64 = 256;

impl Tensor {
    /// Elements per row: the product of the trailing dimensions (1 for a `[N]` tensor, 0 for an
    /// SH-rest tensor with no coefficients).
    pub fn row_elems(&self) -> u64 {
        self.shape()
            .get(1..)
            .unwrap_or(&[])
            .iter()
            .map(|&d| d as u64)
            .product()
    }

    /// Rows `chunk.offset .. chunk.offset + chunk.rows` of page `chunk.page` as a typed kernel
    /// argument (the kernel sees row 0 at the chunk's first row). The offset must be a multiple of
    /// [`BINDING_OFFSET_ALIGNMENT`] bytes, which chunks of a multiple of 64 rows always are.
    pub fn rows_arg(&self, chunk: &RowChunk) -> Result<Arg<'_>> {
        Ok(Arg::Typed(self.rows_binding(chunk)?, self.dtype()))
    }

    /// The buffer range of [`Tensor::rows_arg`].
    pub fn rows_binding(&self, chunk: &RowChunk) -> Result<wgpu::BufferBinding<'_>> {
        let width = self.row_elems();
        let elem = self.dtype().size();
        let fail = |why: String| Error::InvalidArgument {
            op: "Tensor::rows_arg",
            detail: format!(
                "rows {}..{} of page {} of a {:?} tensor: {why}",
                chunk.offset,
                chunk.offset + chunk.rows,
                chunk.page,
                self.shape()
            ),
        };
        if chunk.page >= self.num_pages() {
            return Err(fail(format!("it has {} pages", self.num_pages())));
        }
        let page = self.page_binding(chunk.page);
        let page_bytes = page.size.map_or(0, |s| s.get());
        let offset = chunk.offset * width * elem;
        let bytes = chunk.rows * width * elem;
        if offset + bytes > page_bytes || bytes == 0 {
            return Err(fail(format!("the page binds {page_bytes} bytes")));
        }
        if !offset.is_multiple_of(BINDING_OFFSET_ALIGNMENT) {
            return Err(fail(format!(
                "offset {offset} is not a multiple of {BINDING_OFFSET_ALIGNMENT} bytes"
            )));
        }
        Ok(wgpu::BufferBinding {
            buffer: page.buffer,
            offset,
            size: std::num::NonZeroU64::new(bytes),
        })
    }
}

impl Tensor {
    /// Grows this row tensor to `rows` rows (at least its own), keeping its rows where they are:
    /// its full pages move into the grown tensor untouched, and only the pages from its last,
    /// partial one on are allocated anew (the partial page's rows copied across). A model that
    /// grows by a few percent thus allocates a few percent, not a second copy of each tensor. The
    /// new rows are undefined. When another handle shares the storage, or this is a prefix view,
    /// every page is copied instead. The old pages' buffers return to the pool when the recorded
    /// copies are submitted, so callers flush before allocating much more.
    pub fn grow_rows(&mut self, enc: &mut Encoder, rows: u64, label: &str) -> Result<()> {
        let old_rows = self.shape.first().copied().unwrap_or(0) as u64;
        if rows < old_rows {
            return Err(Error::Shape {
                op: "Tensor::grow_rows",
                detail: format!("cannot grow {old_rows} rows to {rows}"),
            });
        }
        let mut shape = self.shape.clone();
        shape[0] = rows as usize;
        let len = super::element_count(&shape)?;
        let (dtype, old_len) = (self.dtype, self.len);
        let (page_elems, category) = (self.storage.page_elems, self.storage.category);
        let storage_of = |pages, capacity| Storage {
            pages,
            page_elems,
            capacity,
            category,
        };
        let flat = |storage: Arc<Storage>, len: u64| Tensor {
            storage,
            dtype,
            shape: vec![len as usize],
            len,
        };
        let old = std::mem::replace(&mut self.storage, Arc::new(storage_of(Vec::new(), 0)));
        // The pages kept as they are, and what must be copied into the pages after them.
        let (mut pages, copied) = match Arc::try_unwrap(old) {
            Ok(mut storage) if storage.capacity == old_len => {
                let full = old_len / page_elems;
                let partial = storage.pages.split_off(full as usize);
                let rest = old_len - full * page_elems;
                let tail =
                    (!partial.is_empty()).then(|| flat(Arc::new(storage_of(partial, rest)), rest));
                (std::mem::take(&mut storage.pages), tail)
            }
            Ok(storage) => (Vec::new(), Some(flat(Arc::new(storage), old_len))),
            Err(shared) => (Vec::new(), Some(flat(shared, old_len))),
        };
        let kept = pages.len();
        for elems in super::page_lengths(len, page_elems).skip(kept) {
            pages.push(enc.alloc(elems * dtype.size(), category, label)?);
        }
        // Page p of what is copied (the same page size, from a page boundary) is page kept + p.
        if let Some(from) = &copied {
            for page in 0..from.num_pages() {
                let bytes = from.page_len(page) * dtype.size();
                enc.copy(from.page(page).raw(), 0, pages[kept + page].raw(), 0, bytes);
            }
        }
        self.storage = Arc::new(Storage {
            pages,
            page_elems,
            capacity: len,
            category,
        });
        self.shape = shape;
        self.len = len;
        Ok(())
    }
}

//! Bindings of a chunk of rows ([`RowChunk`]) of a paged row tensor.

use super::Tensor;
use crate::error::{Error, Result};
use crate::gpu::kernels::{Arg, RowChunk};

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

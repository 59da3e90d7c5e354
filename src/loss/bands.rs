//! Row bands: how the loss kernels see images whose tensors span several pages.
//!
//! A kernel binds each image as one storage buffer and addresses it by image row. A tensor that
//! fits one page is bound directly (no copy: the common case, e.g. a 4K RGBA f32 image fits a
//! 128 MiB page). A tensor spread over several pages is *staged*: the image is processed in
//! horizontal bands of whole tile rows, and for each band the rows it reads (the band plus a halo
//! above and below) are copied from the pages into one band buffer; outputs are written to a band
//! buffer and copied back into the pages. Pages may split rows anywhere: copies work on element
//! ranges.

use crate::error::{Error, Result};
use crate::gpu::{Encoder, GpuBuffer, GpuContext, MemoryCategory};
use crate::tensor::Tensor;

/// Output rows of a tile; bands are whole tile rows so tiles never straddle two bands.
pub(crate) const TILE: u64 = 16;

/// An image tensor as a kernel binding: direct when it has one page, else through a band buffer.
pub(crate) struct RowWindow<'a> {
    tensor: &'a Tensor,
    /// 32-bit elements per image row (4 x width for RGBA f32, width for packed RGBA8).
    row_elems: u64,
    staging: Option<GpuBuffer>,
}

impl<'a> RowWindow<'a> {
    /// A window onto `tensor`; multi-page tensors get a band buffer of `max_rows` rows.
    pub(crate) fn new(
        enc: &mut Encoder,
        tensor: &'a Tensor,
        row_elems: u64,
        max_rows: u64,
        label: &str,
    ) -> Result<Self> {
        let staging = if tensor.num_pages() > 1 {
            Some(enc.alloc(
                max_rows * row_elems * 4,
                MemoryCategory::FrameScratch,
                label,
            )?)
        } else {
            None
        };
        Ok(RowWindow {
            tensor,
            row_elems,
            staging,
        })
    }

    /// The binding the kernel reads or writes.
    pub(crate) fn binding(&self) -> wgpu::BufferBinding<'_> {
        match &self.staging {
            Some(buffer) => wgpu::BufferBinding {
                buffer: buffer.raw(),
                offset: 0,
                size: None,
            },
            None => self.tensor.page_binding(0),
        }
    }

    /// Makes image rows `[first, end)` readable; returns the image row at element 0 of
    /// [`binding`](Self::binding).
    pub(crate) fn load(&self, enc: &mut Encoder, first: u64, end: u64) -> u32 {
        match &self.staging {
            Some(buffer) => {
                self.copy_rows(enc, buffer, first, end, true);
                first as u32
            }
            None => 0,
        }
    }

    /// The image row at element 0 of the binding when the kernel writes rows starting at `first`.
    pub(crate) fn output_row0(&self, first: u64) -> u32 {
        if self.staging.is_some() {
            first as u32
        } else {
            0
        }
    }

    /// After a kernel wrote rows `[first, end)`: copies them from the band buffer into the pages.
    pub(crate) fn store(&self, enc: &mut Encoder, first: u64, end: u64) {
        if let Some(buffer) = &self.staging {
            self.copy_rows(enc, buffer, first, end, false);
        }
    }

    /// Copies rows `[first, end)` between the pages and the band buffer (row `first` at offset 0).
    fn copy_rows(
        &self,
        enc: &mut Encoder,
        buffer: &GpuBuffer,
        first: u64,
        end: u64,
        to_band: bool,
    ) {
        let page_elems = self.tensor.page_elems();
        let (start, stop) = (first * self.row_elems, end * self.row_elems);
        let mut at = start;
        while at < stop {
            let page = (at / page_elems) as usize;
            let in_page = at - page as u64 * page_elems;
            let len = (stop - at).min(page_elems - in_page);
            let page_buffer = self.tensor.page(page).raw();
            let (band_offset, page_offset, bytes) = ((at - start) * 4, in_page * 4, len * 4);
            if to_band {
                enc.copy(page_buffer, page_offset, buffer.raw(), band_offset, bytes);
            } else {
                enc.copy(buffer.raw(), band_offset, page_buffer, page_offset, bytes);
            }
            at += len;
        }
    }
}

/// Output rows per band for an image of `height` rows read with `halo` rows above and below.
/// One band when no tensor is staged; otherwise bands of whole tiles whose staged rows fit one
/// page where possible (at least one tile row), and never more than the adapter's binding limit.
pub(crate) fn band_rows(
    ctx: &GpuContext,
    height: u64,
    halo: u64,
    staged_row_bytes: Option<u64>,
) -> Result<u64> {
    let Some(row_bytes) = staged_row_bytes else {
        return Ok(height);
    };
    let tiled_height = height.div_ceil(TILE) * TILE;
    let fitting = (ctx.page_bytes() / row_bytes).saturating_sub(2 * halo) / TILE * TILE;
    let rows = fitting.clamp(TILE, tiled_height);
    let limit = ctx.info().limits.max_storage_buffer_binding_size;
    let bytes = (rows + 2 * halo) * row_bytes;
    if bytes > limit {
        return Err(Error::Overflow {
            what: format!(
                "a band of {} image rows of {row_bytes} bytes for the loss",
                rows + 2 * halo
            ),
            needed: bytes,
            max: limit,
            hint: "the image is too wide for one storage binding per band; use a narrower image"
                .into(),
        });
    }
    Ok(rows)
}

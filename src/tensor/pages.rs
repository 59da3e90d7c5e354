//! A tensor's pages: the buffers it is stored in, and each page as a binding or kernel argument.

use super::Tensor;
use crate::gpu::allocator::GpuBuffer;

impl Tensor {
    /// Elements per full page.
    pub fn page_elems(&self) -> u64 {
        self.storage.page_elems
    }

    /// Pages covering this tensor's elements (a prefix view may use fewer than the storage has).
    pub fn num_pages(&self) -> usize {
        self.len.div_ceil(self.storage.page_elems) as usize
    }

    /// The buffer of page `index`.
    pub fn page(&self, index: usize) -> &GpuBuffer {
        &self.storage.pages[index]
    }

    /// First element index of page `index`.
    pub fn page_start(&self, index: usize) -> u64 {
        index as u64 * self.storage.page_elems
    }

    /// Elements of this tensor in page `index`.
    pub fn page_len(&self, index: usize) -> u64 {
        self.len
            .saturating_sub(self.page_start(index))
            .min(self.storage.page_elems)
    }

    /// Binding of the whole allocated part of page `index` (the kernel is told the length).
    pub fn page_binding(&self, index: usize) -> wgpu::BufferBinding<'_> {
        let page = &self.storage.pages[index];
        let elems = self
            .storage
            .capacity
            .saturating_sub(self.page_start(index))
            .min(self.storage.page_elems);
        wgpu::BufferBinding {
            buffer: page.raw(),
            offset: 0,
            size: std::num::NonZeroU64::new(elems * self.dtype.size()),
        }
    }

    /// Page `index` as a typed kernel argument ([`crate::gpu::kernels::Arg::Typed`]): the dispatch
    /// checks this tensor's dtype against the WGSL binding.
    pub fn page_arg(&self, index: usize) -> crate::gpu::kernels::Arg<'_> {
        crate::gpu::kernels::Arg::Typed(self.page_binding(index), self.dtype)
    }

    /// Page `index` as a kernel argument, or [`crate::gpu::kernels::Arg::Absent`] where the tensor
    /// is empty (an optional binding, such as the higher SH bands of a degree-0 model).
    pub fn page_arg_or_absent(&self, index: usize) -> crate::gpu::kernels::Arg<'_> {
        if self.is_empty() {
            crate::gpu::kernels::Arg::Absent
        } else {
            self.page_arg(index)
        }
    }

    /// Page `index` as an untyped kernel argument ([`crate::gpu::kernels::Arg::Raw`]), for kernels
    /// that move 32-bit words of any dtype.
    pub fn page_raw(&self, index: usize) -> crate::gpu::kernels::Arg<'_> {
        let binding = self.page_binding(index);
        crate::gpu::kernels::Arg::Raw(binding)
    }
}

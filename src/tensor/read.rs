//! Reading tensors back to the CPU, page by page through pooled staging buffers.

use super::{Element, Tensor};
use crate::error::{Error, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::encoder::Encoder;
use crate::gpu::readback::Readback;

/// Readbacks of every page of a tensor, recorded into an encoder.
pub struct TensorReadback {
    pages: Vec<Readback>,
    dtype: super::DType,
}

impl TensorReadback {
    /// Blocks until the data is available (submit the encoder first).
    pub fn wait<T: Element>(self, ctx: &GpuContext) -> Result<Vec<T>> {
        crate::gpu::readback::blocking("tensor read", self.fetch(ctx))
    }

    /// The data, natively by blocking (as [`TensorReadback::wait`]), in a browser by awaiting
    /// the mapping: the form code that runs in both places uses (see [`Readback::fetch`]).
    pub async fn fetch<T: Element>(self, ctx: &GpuContext) -> Result<Vec<T>> {
        self.check::<T>()?;
        let mut out: Vec<T> = Vec::new();
        for page in self.pages {
            let bytes = page.fetch(ctx).await?;
            out.extend_from_slice(bytemuck::cast_slice(&bytes));
        }
        Ok(out)
    }

    fn check<T: Element>(&self) -> Result<()> {
        if T::DTYPE != self.dtype {
            return Err(Error::DType {
                op: "read",
                expected: format!("{:?}", self.dtype),
                got: format!("{:?}", T::DTYPE),
            });
        }
        Ok(())
    }
}

impl Tensor {
    /// Records copies of every page into staging buffers.
    pub fn record_read(&self, enc: &mut Encoder) -> Result<TensorReadback> {
        let mut pages = Vec::with_capacity(self.num_pages());
        for page in 0..self.num_pages() {
            let bytes = self.page_len(page) * self.dtype.size();
            pages.push(enc.readback(self.page(page).raw(), 0, bytes, "tensor read")?);
        }
        Ok(TensorReadback {
            pages,
            dtype: self.dtype,
        })
    }

    /// [`Tensor::read`] in the form that also runs in a browser (see [`Readback::fetch`]).
    pub async fn fetch<T: Element>(&self, ctx: &GpuContext) -> Result<Vec<T>> {
        let mut enc = ctx.encoder("tensor read");
        let pending = self.record_read(&mut enc)?;
        ctx.submit(enc)?;
        pending.fetch(ctx).await
    }

    /// Reads the tensor to a `Vec`, submitting a small encoder of its own and waiting for it.
    pub fn read<T: Element>(&self, ctx: &GpuContext) -> Result<Vec<T>> {
        let mut enc = ctx.encoder("tensor read");
        let pending = self.record_read(&mut enc)?;
        ctx.submit(enc)?;
        pending.wait(ctx)
    }
}

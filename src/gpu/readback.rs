//! Reading GPU data back: the staging buffer is mapped asynchronously and completion is delivered
//! through a `futures-intrusive` oneshot channel. [`Readback::wait`] blocks (pollster) for callers
//! without an executor; [`Readback::receive`] is the async form for callers that poll the device
//! from their own loop (for example a UI frame).

use crate::error::{Error, Result};
use crate::gpu::allocator::GpuBuffer;
use crate::gpu::context::GpuContext;

/// Runs a future built from [`Readback::fetch`]es to completion where that cannot wait: natively
/// every fetch blocks, so the future is ready when first polled; in a browser page it would have
/// to wait for the page's event loop, so this fails, naming `what`, and the caller uses the
/// asynchronous form.
pub fn blocking<T>(what: &str, future: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = what;
        pollster::block_on(future)
    }
    #[cfg(target_arch = "wasm32")]
    {
        drop(future);
        Err(Error::Readback {
            label: what.to_owned(),
            message: "a browser page cannot wait for the GPU; use the asynchronous form".into(),
        })
    }
}

/// A pending copy into a staging buffer. The staging buffer returns to the pool when this is
/// consumed or dropped.
pub struct Readback {
    buffer: GpuBuffer,
    size: u64,
    label: String,
}

impl Readback {
    pub(crate) fn new(buffer: GpuBuffer, size: u64, label: &str) -> Self {
        Readback {
            buffer,
            size,
            label: label.to_owned(),
        }
    }

    /// Bytes that will be read.
    pub fn size(&self) -> u64 {
        self.size
    }

    fn start(
        &self,
    ) -> futures_intrusive::channel::shared::OneshotReceiver<
        std::result::Result<(), wgpu::BufferAsyncError>,
    > {
        let (sender, receiver) = futures_intrusive::channel::shared::oneshot_channel();
        if self.size > 0 {
            self.buffer
                .raw()
                .slice(0..self.size)
                .map_async(wgpu::MapMode::Read, move |result| {
                    let _ = sender.send(result);
                });
        } else {
            let _ = sender.send(Ok(()));
        }
        receiver
    }

    fn finish(
        self,
        result: Option<std::result::Result<(), wgpu::BufferAsyncError>>,
    ) -> Result<Vec<u8>> {
        match result {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                return Err(Error::Readback {
                    label: self.label,
                    message: e.to_string(),
                });
            }
            None => {
                return Err(Error::Readback {
                    label: self.label,
                    message: "the map callback was dropped".into(),
                });
            }
        }
        if self.size == 0 {
            return Ok(Vec::new());
        }
        let data = match self.buffer.raw().slice(0..self.size).get_mapped_range() {
            Ok(view) => view.to_vec(),
            Err(e) => {
                return Err(Error::Readback {
                    label: self.label,
                    message: e.to_string(),
                });
            }
        };
        self.buffer.raw().unmap();
        Ok(data)
    }

    /// Maps and copies out, blocking until the GPU has finished. Submit the encoder first. A
    /// browser page cannot block: there this fails, naming the readback, and the caller uses
    /// [`Readback::receive`].
    pub fn wait(self, ctx: &GpuContext) -> Result<Vec<u8>> {
        #[cfg(target_arch = "wasm32")]
        {
            let _ = ctx;
            Err(Error::Readback {
                label: self.label,
                message: "a browser page cannot wait for the GPU; this operation has no asynchronous form yet".into(),
            })
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            let receiver = self.start();
            ctx.wait_idle()?;
            let result = pollster::block_on(receiver.receive());
            self.finish(result)
        }
    }

    /// Maps and copies out: natively by blocking until the GPU has finished (as
    /// [`Readback::wait`]), in a browser by awaiting the mapping (as [`Readback::receive`]).
    /// Code that runs in both places reads back with this. Submit the encoder first.
    pub async fn fetch(self, ctx: &GpuContext) -> Result<Vec<u8>> {
        #[cfg(target_arch = "wasm32")]
        {
            let _ = ctx;
            self.receive().await
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.wait(ctx)
        }
    }

    /// Maps and copies out asynchronously. The map is requested now, not when the future is
    /// first polled, so a [`GpuContext::poll`] or [`GpuContext::wait_idle`] that runs after this
    /// call completes it; something must call one of them meanwhile.
    pub fn receive(self) -> impl std::future::Future<Output = Result<Vec<u8>>> {
        let receiver = self.start();
        async move {
            let result = receiver.receive().await;
            self.finish(result)
        }
    }
}

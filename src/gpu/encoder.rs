//! The command encoder that every operation records into. The caller owns it and decides when to
//! submit ([`GpuContext::submit`]) and when to read back.
//!
//! Small data that kernels need (uniform parameters, uploads) goes into an *upload arena*: pooled
//! buffers whose bytes are collected on the CPU while recording and written with one
//! `queue.write_buffer` per chunk just before the command buffer is submitted. Uploads reach their
//! destination through a `copy_buffer_to_buffer` recorded at the right point of the encoder, so they
//! are ordered with the surrounding work even when the destination was recycled from the pool
//! within the same encoder.

use crate::error::{Error, Result};
use crate::gpu::allocator::{AllocRequest, BufferKind, GpuBuffer};
use crate::gpu::context::{GpuContext, POISON_SOURCE_BYTES};
use crate::gpu::dispatch::WorkgroupGrid;
use crate::gpu::kernel::Kernel;
use crate::gpu::memory::MemoryCategory;
use crate::gpu::readback::Readback;

/// Bytes in one ordinary arena chunk.
const ARENA_CHUNK_BYTES: u64 = 64 << 10;
/// Uploads are split into pieces of at most this many bytes.
const MAX_UPLOAD_PIECE: u64 = 16 << 20;

/// Device bytes of the upload-arena chunks that an upload of `bytes` can add to an encoder
/// ([`Encoder::upload`]): one chunk per piece, each at least an ordinary chunk, rounded to the
/// allocator's size class. They are live until the encoder is submitted.
pub fn upload_staging_bytes(bytes: u64) -> u64 {
    let full = bytes / MAX_UPLOAD_PIECE;
    let rest = bytes % MAX_UPLOAD_PIECE;
    let chunk = |piece: u64| {
        crate::gpu::memory::size_class_in(piece.max(ARENA_CHUNK_BYTES), MemoryCategory::Staging)
    };
    full * chunk(MAX_UPLOAD_PIECE) + if rest > 0 { chunk(rest) } else { 0 }
}

struct ArenaChunk {
    buffer: GpuBuffer,
    shadow: Vec<u8>,
}

/// Where a dispatch's workgroup counts come from.
#[derive(Clone, Copy, Debug)]
pub enum Launch<'a> {
    /// A grid known when the dispatch is recorded.
    Grid(WorkgroupGrid),
    /// Three u32 (x, y, z) at a byte offset (a multiple of 4) of a buffer, written by GPU work
    /// recorded before the dispatch; z must be 1 (kernels read their parameters only where
    /// `num_workgroups.z` is nonzero, see `shaders/shared/dispatch.wgsl`).
    Indirect(&'a wgpu::Buffer, u64),
}

/// A command encoder with an upload arena. Create with [`GpuContext::encoder`].
pub struct Encoder {
    ctx: GpuContext,
    raw: Option<wgpu::CommandEncoder>,
    arena: Vec<ArenaChunk>,
    /// Placeholders for absent bindings, one per binding number, reused by every dispatch of
    /// this encoder (see [`Encoder::placeholder`]).
    placeholders: Vec<(u32, GpuBuffer)>,
    dispatches: u64,
    id: u64,
}

impl Drop for Encoder {
    fn drop(&mut self) {
        // Release the arena while this encoder still counts as open, then close it: its buffers
        // become reusable by others only once its commands are submitted (or abandoned).
        self.arena.clear();
        self.placeholders.clear();
        self.ctx.allocator().close_encoder(self.id);
    }
}

/// Where a piece of arena data lives.
#[derive(Clone, Copy, Debug)]
struct ArenaSlice {
    chunk: usize,
    offset: u64,
    size: u64,
}

impl GpuContext {
    /// A new encoder; record operations into it, then [`GpuContext::submit`] it.
    pub fn encoder(&self, label: &str) -> Encoder {
        let raw = self
            .device()
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        let id = self.allocator().open_encoder();
        Encoder {
            ctx: self.clone(),
            raw: Some(raw),
            arena: Vec::new(),
            placeholders: Vec::new(),
            dispatches: 0,
            id,
        }
    }

    /// Writes the encoder's arena, submits its commands, and reports any error wgpu raised while
    /// they were recorded.
    pub fn submit(&self, mut encoder: Encoder) -> Result<wgpu::SubmissionIndex> {
        for chunk in &encoder.arena {
            if !chunk.shadow.is_empty() {
                self.queue()
                    .write_buffer(chunk.buffer.raw(), 0, &chunk.shadow);
            }
        }
        let raw = encoder.raw.take().ok_or_else(|| Error::InvalidArgument {
            op: "submit",
            detail: "encoder already finished".into(),
        })?;
        let index = self.queue().submit(Some(raw.finish()));
        // Closing the encoder after the submit lets its buffers go back to the pool: anything that
        // reuses them is submitted later and so runs after these commands.
        drop(encoder);
        self.check_errors("submitting GPU work")?;
        Ok(index)
    }
}

impl Encoder {
    /// Submits what is recorded so far, waits for the GPU to finish it, and goes on recording
    /// into a fresh command buffer. A buffer dropped while its commands are pending stays in
    /// device memory until they have run; flushing between large in-place rebuilds makes the
    /// replaced buffers really free before the next ones are allocated, so the true transient
    /// (not only the allocator's live bytes) stays at one rebuilt tensor.
    pub fn flush_and_wait(&mut self) -> Result<()> {
        let ctx = self.ctx.clone();
        let pending = std::mem::replace(self, ctx.encoder("flushed encoder (continued)"));
        ctx.submit(pending)?;
        ctx.wait_idle()
    }

    /// The context this encoder records for.
    pub fn ctx(&self) -> &GpuContext {
        &self.ctx
    }

    /// The raw wgpu encoder, for commands wgsplat does not wrap.
    pub fn raw(&mut self) -> &mut wgpu::CommandEncoder {
        self.raw
            .as_mut()
            .expect("an encoder is only emptied by submit, which consumes it")
    }

    /// Number of dispatches recorded so far.
    pub fn dispatch_count(&self) -> u64 {
        self.dispatches
    }

    /// Allocates a storage buffer. When poisoning is on, its contents are set to the poison
    /// pattern by a copy recorded here, so any read before a write shows up as NaN / `u32::MAX`.
    pub fn alloc(
        &mut self,
        bytes: u64,
        category: MemoryCategory,
        label: &str,
    ) -> Result<GpuBuffer> {
        let (buffer, _fresh) = self.ctx.allocator().allocate(AllocRequest {
            bytes,
            kind: BufferKind::Storage,
            category,
            label,
            encoder: Some(self.id),
        })?;
        let source = self
            .ctx
            .inner
            .gpu()
            .poison_source
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|b| b.raw().clone());
        if let Some(source) = source {
            let mut offset = 0;
            while offset < buffer.size() {
                let len = (buffer.size() - offset).min(POISON_SOURCE_BYTES);
                self.raw()
                    .copy_buffer_to_buffer(&source, 0, buffer.raw(), offset, len);
                offset += len;
            }
        }
        Ok(buffer)
    }

    fn arena_reserve(&mut self, size: u64, align: u64) -> Result<ArenaSlice> {
        if let Some((index, chunk)) = self.arena.iter_mut().enumerate().last() {
            let offset = (chunk.shadow.len() as u64).div_ceil(align) * align;
            if offset + size <= chunk.buffer.size() {
                chunk.shadow.resize((offset + size) as usize, 0);
                return Ok(ArenaSlice {
                    chunk: index,
                    offset,
                    size,
                });
            }
        }
        let (buffer, _) = self.ctx.allocator().allocate(AllocRequest {
            bytes: size.max(ARENA_CHUNK_BYTES),
            kind: BufferKind::Upload,
            category: MemoryCategory::Staging,
            label: "wgsplat/upload-arena",
            encoder: Some(self.id),
        })?;
        self.arena.push(ArenaChunk {
            buffer,
            shadow: vec![0; size as usize],
        });
        Ok(ArenaSlice {
            chunk: self.arena.len() - 1,
            offset: 0,
            size,
        })
    }

    fn arena_write(&mut self, slice: ArenaSlice, data: &[u8]) {
        let start = slice.offset as usize;
        self.arena[slice.chunk].shadow[start..start + data.len()].copy_from_slice(data);
    }

    /// Records an upload of `data` into `dst` at `dst_offset`. Both must be multiples of 4 bytes.
    pub fn upload(&mut self, dst: &wgpu::Buffer, dst_offset: u64, data: &[u8]) -> Result<()> {
        if !data.len().is_multiple_of(4) || !dst_offset.is_multiple_of(4) {
            return Err(Error::InvalidArgument {
                op: "upload",
                detail: format!(
                    "{} bytes at offset {dst_offset}: both must be multiples of 4",
                    data.len()
                ),
            });
        }
        for (index, piece) in data.chunks(MAX_UPLOAD_PIECE as usize).enumerate() {
            let slice = self.arena_reserve(piece.len() as u64, 4)?;
            self.arena_write(slice, piece);
            let src = self.arena[slice.chunk].buffer.raw().clone();
            let at = dst_offset + index as u64 * MAX_UPLOAD_PIECE;
            self.raw()
                .copy_buffer_to_buffer(&src, slice.offset, dst, at, piece.len() as u64);
        }
        Ok(())
    }

    /// Records one dispatch of `kernel` with the uniform bytes `params` at binding 0, the storage
    /// buffers `storage` at the binding numbers given, and the workgroup counts of `launch`.
    pub(crate) fn dispatch_launch(
        &mut self,
        kernel: &Kernel,
        params: &[u8],
        storage: &[(u32, wgpu::BufferBinding<'_>)],
        launch: Launch<'_>,
    ) -> Result<()> {
        if let Launch::Grid(grid) = launch
            && grid.is_empty()
        {
            return Ok(());
        }
        // wgpu rejects a buffer bound read-write and at another binding of the same dispatch,
        // but only at submission and without naming the kernel: check here.
        for (i, (bi, a)) in storage.iter().enumerate() {
            for (bj, b) in storage.iter().skip(i + 1) {
                let writes =
                    kernel.writable_bindings.contains(bi) || kernel.writable_bindings.contains(bj);
                if writes && a.buffer == b.buffer {
                    return Err(Error::InvalidArgument {
                        op: "dispatch",
                        detail: format!(
                            "{}: bindings {bi} and {bj} are the same buffer, and one of them is \
                             written; pass distinct buffers (e.g. two placeholders)",
                            kernel.name
                        ),
                    });
                }
            }
        }
        let align = u64::from(
            self.ctx
                .device()
                .limits()
                .min_uniform_buffer_offset_alignment,
        );
        let slice = self.arena_reserve(params.len() as u64, align)?;
        self.arena_write(slice, params);
        let arena_buffer = self.arena[slice.chunk].buffer.raw().clone();
        let mut entries = Vec::with_capacity(storage.len() + 1);
        entries.push(wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &arena_buffer,
                offset: slice.offset,
                size: std::num::NonZeroU64::new(slice.size),
            }),
        });
        for (index, binding) in storage {
            entries.push(wgpu::BindGroupEntry {
                binding: *index,
                resource: wgpu::BindingResource::Buffer(binding.clone()),
            });
        }
        let bind_group = self
            .ctx
            .device()
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&kernel.name),
                layout: &kernel.layout,
                entries: &entries,
            });
        let mut pass = self.raw().begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(&kernel.name),
            timestamp_writes: None,
        });
        pass.set_pipeline(&kernel.pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        match launch {
            Launch::Grid(grid) => pass.dispatch_workgroups(grid.x, grid.y, 1),
            Launch::Indirect(args, offset) => pass.dispatch_workgroups_indirect(args, offset),
        }
        drop(pass);
        self.dispatches += 1;
        Ok(())
    }

    /// A small buffer to bind at `binding` in place of absent data: one per binding number and
    /// encoder, so the placeholders of one dispatch never alias each other, and a frame allocates
    /// a handful of them, not one per dispatch. Never read for data: kernels are told by their
    /// parameters that the data is absent.
    pub(crate) fn placeholder(&mut self, binding: u32, bytes: u64) -> Result<wgpu::Buffer> {
        if let Some((_, buffer)) = self.placeholders.iter().find(|(b, _)| *b == binding) {
            return Ok(buffer.raw().clone());
        }
        let buffer = self.alloc(
            bytes,
            MemoryCategory::FrameScratch,
            "wgsplat/absent-binding",
        )?;
        let raw = buffer.raw().clone();
        self.placeholders.push((binding, buffer));
        Ok(raw)
    }

    /// Records a buffer-to-buffer copy (offsets and size multiples of 4).
    pub fn copy(
        &mut self,
        src: &wgpu::Buffer,
        src_offset: u64,
        dst: &wgpu::Buffer,
        dst_offset: u64,
        size: u64,
    ) {
        if size > 0 {
            self.raw()
                .copy_buffer_to_buffer(src, src_offset, dst, dst_offset, size);
        }
    }

    /// Records zeroing of `size` bytes at `offset`.
    pub fn clear(&mut self, buffer: &wgpu::Buffer, offset: u64, size: u64) {
        if size > 0 {
            self.raw().clear_buffer(buffer, offset, Some(size));
        }
    }

    /// Records a copy of `size` bytes of `src` into a pooled staging buffer; read it after submit
    /// with [`Readback::wait`] or [`Readback::receive`].
    pub fn readback(
        &mut self,
        src: &wgpu::Buffer,
        offset: u64,
        size: u64,
        label: &str,
    ) -> Result<Readback> {
        let (buffer, _) = self.ctx.allocator().allocate(AllocRequest {
            bytes: size.max(4),
            kind: BufferKind::Readback,
            category: MemoryCategory::Staging,
            label: "wgsplat/readback",
            encoder: Some(self.id),
        })?;
        self.copy(src, offset, buffer.raw(), 0, size);
        Ok(Readback::new(buffer, size, label))
    }
}

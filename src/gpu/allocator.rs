//! The one allocator that owns every GPU buffer in wgsplat.
//!
//! Buffers are created in size classes ([`size_class`]) and handed out as [`GpuBuffer`] handles.
//! Dropping the last handle gives the buffer back to a pool keyed by (kind, size class), from which
//! later requests of the same class are served without creating a new `wgpu::Buffer`. The pool is
//! bounded (`pool_limit_bytes`, evicting oldest first), can be trimmed on demand, and is trimmed
//! automatically when a creation fails for lack of memory, before the creation is retried once.
//!
//! Every live byte is accounted by [`MemoryCategory`] and by label, so a report or a leak check can
//! name each buffer still alive.

use crate::error::{Error, Result};
use crate::gpu::memory::{LiveBuffer, MemoryCategory, MemoryReport, UsageStats, size_class_in};
use crate::gpu::pool::FreePool;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

/// How a buffer will be used; buffers of different kinds are never exchanged through the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferKind {
    /// Storage buffer, also usable as copy source/destination and for indirect dispatch.
    Storage,
    /// Upload arena: uniform parameters and data that is copied into storage buffers.
    Upload,
    /// Readback staging, mappable for reading.
    Readback,
}

impl BufferKind {
    /// The wgpu usage flags of this kind.
    pub fn usages(self) -> wgpu::BufferUsages {
        use wgpu::BufferUsages as U;
        match self {
            BufferKind::Storage => U::STORAGE | U::COPY_SRC | U::COPY_DST | U::INDIRECT,
            BufferKind::Upload => U::UNIFORM | U::COPY_SRC | U::COPY_DST,
            BufferKind::Readback => U::MAP_READ | U::COPY_DST,
        }
    }
}

struct LiveEntry {
    label: String,
    category: MemoryCategory,
    bytes: u64,
}

struct AllocState {
    next_id: u64,
    live: HashMap<u64, LiveEntry>,
    total: UsageStats,
    by_category: [UsageStats; 7],
    by_label: HashMap<String, UsageStats>,
    pool: FreePool,
    buffers_created: u64,
    pool_hits: u64,
    trims: u64,
    injected_failures: u32,
}

pub(crate) struct AllocatorShared {
    device: wgpu::Device,
    max_buffer_size: u64,
    state: Mutex<AllocState>,
}

impl AllocatorShared {
    fn lock(&self) -> MutexGuard<'_, AllocState> {
        // A panic while holding this lock cannot leave the counters half-updated in a way that
        // matters more than losing them, so poisoning is ignored.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Handle to the allocator; cheap to clone.
#[derive(Clone)]
pub struct Allocator {
    shared: Arc<AllocatorShared>,
}

/// A GPU buffer owned by the allocator. Dropping it returns the buffer to the pool.
pub struct GpuBuffer {
    raw: Option<wgpu::Buffer>,
    id: u64,
    size: u64,
    requested: u64,
    kind: BufferKind,
    category: MemoryCategory,
    shared: Arc<AllocatorShared>,
}

impl std::fmt::Debug for GpuBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBuffer")
            .field("id", &self.id)
            .field("size", &self.size)
            .field("kind", &self.kind)
            .field("category", &self.category)
            .finish()
    }
}

impl GpuBuffer {
    /// The underlying wgpu buffer.
    pub fn raw(&self) -> &wgpu::Buffer {
        self.raw
            .as_ref()
            .expect("GpuBuffer is only emptied in Drop")
    }

    /// Size of the device buffer in bytes (the size class, at least the requested size).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes the caller asked for.
    pub fn requested(&self) -> u64 {
        self.requested
    }

    /// The buffer's category.
    pub fn category(&self) -> MemoryCategory {
        self.category
    }
}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        let Some(buffer) = self.raw.take() else {
            return;
        };
        let mut state = self.shared.lock();
        if let Some(entry) = state.live.remove(&self.id) {
            state.total.remove(entry.bytes, self.requested);
            state.by_category[entry.category.index()].remove(entry.bytes, self.requested);
            if let Some(label) = state.by_label.get_mut(&entry.label) {
                label.remove(entry.bytes, self.requested);
            }
        }
        state.pool.release((self.kind, self.size), buffer);
    }
}

/// What to allocate.
#[derive(Clone, Copy, Debug)]
pub struct AllocRequest<'a> {
    /// Bytes needed.
    pub bytes: u64,
    /// Usage kind.
    pub kind: BufferKind,
    /// Accounting category.
    pub category: MemoryCategory,
    /// Label for reports and leak checks.
    pub label: &'a str,
    /// The encoder the buffer will be used in, if any (see [`crate::gpu::pool`]).
    pub encoder: Option<u64>,
}

impl Allocator {
    pub(crate) fn new(device: wgpu::Device, max_buffer_size: u64, pool_limit_bytes: u64) -> Self {
        Allocator {
            shared: Arc::new(AllocatorShared {
                device,
                max_buffer_size,
                state: Mutex::new(AllocState {
                    next_id: 0,
                    live: HashMap::new(),
                    total: UsageStats::default(),
                    by_category: [UsageStats::default(); 7],
                    by_label: HashMap::new(),
                    pool: FreePool::new(pool_limit_bytes),
                    buffers_created: 0,
                    pool_hits: 0,
                    trims: 0,
                    injected_failures: 0,
                }),
            }),
        }
    }

    /// Allocates a buffer, from the pool when one of the same kind and size class is free.
    /// The contents are undefined; callers that need poisoning go through the encoder.
    pub fn allocate(&self, request: AllocRequest<'_>) -> Result<(GpuBuffer, bool)> {
        let class = size_class_in(request.bytes, request.category);
        if class > self.shared.max_buffer_size {
            return Err(Error::BindingTooLarge {
                label: request.label.to_owned(),
                bytes: class,
                limit: self.shared.max_buffer_size,
            });
        }
        let pooled = {
            let mut state = self.shared.lock();
            let buffer = state.pool.take((request.kind, class), request.encoder);
            if buffer.is_some() {
                state.pool_hits += 1;
            }
            buffer
        };
        let (raw, fresh) = match pooled {
            Some(buffer) => (buffer, false),
            None => match self.create(class, request) {
                Ok(buffer) => (buffer, true),
                Err(()) => {
                    self.trim();
                    match self.create(class, request) {
                        Ok(buffer) => (buffer, true),
                        Err(()) => {
                            return Err(Error::OutOfMemory {
                                requested: class,
                                label: request.label.to_owned(),
                                max_buffer_size: self.shared.max_buffer_size,
                                report: Box::new(self.report()),
                            });
                        }
                    }
                }
            },
        };
        Ok((self.register(raw, class, request), fresh))
    }

    fn register(&self, raw: wgpu::Buffer, class: u64, request: AllocRequest<'_>) -> GpuBuffer {
        let mut state = self.shared.lock();
        state.next_id += 1;
        let id = state.next_id;
        state.total.add(class, request.bytes);
        state.by_category[request.category.index()].add(class, request.bytes);
        state
            .by_label
            .entry(request.label.to_owned())
            .or_default()
            .add(class, request.bytes);
        state.live.insert(
            id,
            LiveEntry {
                label: request.label.to_owned(),
                category: request.category,
                bytes: class,
            },
        );
        GpuBuffer {
            raw: Some(raw),
            id,
            size: class,
            requested: request.bytes,
            kind: request.kind,
            category: request.category,
            shared: self.shared.clone(),
        }
    }

    fn create(
        &self,
        class: u64,
        request: AllocRequest<'_>,
    ) -> std::result::Result<wgpu::Buffer, ()> {
        {
            let mut state = self.shared.lock();
            if state.injected_failures > 0 {
                state.injected_failures -= 1;
                return Err(());
            }
        }
        let descriptor = wgpu::BufferDescriptor {
            label: Some(request.label),
            size: class,
            usage: request.kind.usages(),
            mapped_at_creation: false,
        };
        // Natively an out-of-memory scope answers at once, so a failed creation can be retried
        // after a trim. In a browser a scope answers only after control returns to the page, so
        // an out-of-memory error reaches the device's uncaptured-error handler instead, and the
        // next `GpuContext::check_errors` reports it.
        #[cfg(not(target_arch = "wasm32"))]
        let buffer = {
            let scope = self
                .shared
                .device
                .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            let buffer = self.shared.device.create_buffer(&descriptor);
            if pollster::block_on(scope.pop()).is_some() {
                return Err(());
            }
            buffer
        };
        #[cfg(target_arch = "wasm32")]
        let buffer = self.shared.device.create_buffer(&descriptor);
        self.shared.lock().buffers_created += 1;
        Ok(buffer)
    }

    /// Test hook: the next `count` buffer creations fail as if the device were out of memory, so
    /// the trim-and-retry path and the out-of-memory error can be tested without exhausting a GPU.
    #[doc(hidden)]
    pub fn inject_creation_failures(&self, count: u32) {
        self.shared.lock().injected_failures = count;
    }

    /// Frees every buffer waiting in the pool. Returns the bytes released.
    pub fn trim(&self) -> u64 {
        let mut state = self.shared.lock();
        let released = state.pool.clear();
        state.trims += 1;
        released
    }

    /// Registers an encoder being recorded; see [`crate::gpu::pool`].
    pub(crate) fn open_encoder(&self) -> u64 {
        self.shared.lock().pool.open_encoder()
    }

    /// Marks an encoder submitted or dropped.
    pub(crate) fn close_encoder(&self, id: u64) {
        self.shared.lock().pool.close_encoder(id);
    }

    /// Resets every peak to the current live value.
    pub fn reset_peaks(&self) {
        let mut state = self.shared.lock();
        state.total.peak_bytes = state.total.live_bytes;
        for stats in state.by_category.iter_mut() {
            stats.peak_bytes = stats.live_bytes;
        }
        for stats in state.by_label.values_mut() {
            stats.peak_bytes = stats.live_bytes;
        }
    }

    /// A snapshot of the accounting.
    pub fn report(&self) -> MemoryReport {
        let state = self.shared.lock();
        let by_category: BTreeMap<_, _> = MemoryCategory::ALL
            .iter()
            .map(|c| (*c, state.by_category[c.index()]))
            .collect();
        let by_label = state
            .by_label
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        MemoryReport {
            total: state.total,
            by_category,
            by_label,
            pooled_bytes: state.pool.bytes,
            pooled_buffers: state.pool.buffers,
            pool_limit_bytes: state.pool.limit(),
            buffers_created: state.buffers_created,
            pool_hits: state.pool_hits,
            trims: state.trims,
        }
    }

    /// Every buffer still alive, largest first. Empty when nothing leaked.
    pub fn live_buffers(&self) -> Vec<LiveBuffer> {
        let state = self.shared.lock();
        let mut list: Vec<LiveBuffer> = state
            .live
            .values()
            .map(|e| LiveBuffer {
                label: e.label.clone(),
                category: e.category,
                bytes: e.bytes,
            })
            .collect();
        list.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.label.cmp(&b.label)));
        list
    }
}

//! The GPU context: adapter selection (Vulkan, Metal, DX12; never GL), the device opened with the
//! adapter's own limits, feature detection and the kernel path (portable or fast).

use crate::error::{Error, Result};
use crate::gpu::allocator::{AllocRequest, Allocator, BufferKind, GpuBuffer};
use crate::gpu::info::{AdapterSummary, ContextInfo, KernelFeatures};
use crate::gpu::kernel::KernelCache;
use crate::gpu::memory::{LiveBuffer, MemoryCategory, MemoryReport};
pub use crate::gpu::options::{ContextOptions, SUPPORTED_BACKENDS};
use crate::gpu::shader::Variant;
use std::sync::{Arc, Mutex};

/// Label of the internal buffer used to poison new allocations; excluded from leak checks.
pub(crate) const POISON_SOURCE_LABEL: &str = "wgsplat/poison-source";
/// Bytes of the poison source; poisoning copies from it in chunks of this size.
pub(crate) const POISON_SOURCE_BYTES: u64 = 1 << 20;
/// The 32-bit pattern written into new buffers when poisoning is on: a NaN for f32, `u32::MAX`.
pub const POISON_WORD: u32 = 0xFFFF_FFFF;

pub(crate) struct ContextInner {
    /// Always `Some` until the context closes (see [`TEARDOWN`]).
    gpu: Option<GpuObjects>,
    pub(crate) info: ContextInfo,
    pub(crate) variant: Variant,
    pub(crate) page_bytes: u64,
    pub(crate) errors: Arc<Mutex<Vec<String>>>,
    pub(crate) lost: Arc<Mutex<Option<String>>>,
}

/// A context's wgpu objects, dropped in this order (buffers and pipelines before the device,
/// the device before the instance) while [`TEARDOWN`] is held.
pub(crate) struct GpuObjects {
    pub(crate) poison_source: Mutex<Option<GpuBuffer>>,
    pub(crate) kernels: KernelCache,
    pub(crate) allocator: Allocator,
    pub(crate) queue: wgpu::Queue,
    pub(crate) device: wgpu::Device,
    adapter: wgpu::Adapter,
    instance: wgpu::Instance,
}

/// Serialises opening and closing contexts across the process. On an NVIDIA H100 (driver
/// 580.159.04) contexts closed on several threads at once (`tests/suite/memory/mod.rs`, one
/// context per test, tests in parallel) deadlocked in the Vulkan loader and driver
/// (`vkDestroyInstance`, `vkDestroyDevice`) in 3 of 12 runs.
static TEARDOWN: Mutex<()> = Mutex::new(());

impl ContextInner {
    /// The wgpu objects (present for the whole life of the context).
    pub(crate) fn gpu(&self) -> &GpuObjects {
        self.gpu
            .as_ref()
            .expect("a context's GPU objects live until the context is dropped")
    }
}

/// A GPU context. Cheap to clone; the device closes when the last clone and every tensor are gone.
#[derive(Clone)]
pub struct GpuContext {
    pub(crate) inner: Arc<ContextInner>,
}

fn rank(device_type: wgpu::DeviceType) -> u32 {
    match device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

#[cfg(not(target_arch = "wasm32"))]
const NO_ADAPTER_HINT: &str = "Install a GPU driver with Vulkan, Metal or DX12 support. On a headless Linux machine without a GPU, \
install the software Vulkan driver: `sudo apt-get install -y mesa-vulkan-drivers libvulkan1` (Debian/Ubuntu), then run with \
WGSPLAT_ADAPTER=llvmpipe";

/// What to do when a browser offers no WebGPU adapter.
#[cfg(target_arch = "wasm32")]
const NO_ADAPTER_HINT: &str = "This browser offers no WebGPU. Use one that does (Chrome or Edge 113 and later, \
Firefox 141 and later on Windows, Safari 26), on a secure origin (https or localhost), with hardware acceleration on";

impl GpuContext {
    /// Opens a context with the given options, blocking until the device is ready.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new(options: ContextOptions) -> Result<Self> {
        pollster::block_on(Self::open(options))
    }

    /// Opens a context with the given options: the asynchronous form, which a browser page needs
    /// (there nothing may block), and which [`GpuContext::new`] waits for natively.
    // The lock serialises opening against other contexts' teardown (see `TEARDOWN`) and is held
    // over wgpu's adapter and device requests on purpose. Natively those futures are ready when
    // first polled, so no other task runs while it is held; in a browser one thread runs
    // everything and the lock is never contended.
    #[allow(clippy::await_holding_lock)]
    pub async fn open(options: ContextOptions) -> Result<Self> {
        #[cfg(target_arch = "wasm32")]
        if !wgpu::util::is_browser_webgpu_supported().await {
            return Err(Error::NoAdapter {
                filter: None,
                found: Vec::new(),
                hint: NO_ADAPTER_HINT.to_owned(),
            });
        }
        let _opening = TEARDOWN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = options.backends & SUPPORTED_BACKENDS;
        let instance = wgpu::Instance::new(desc);
        #[cfg(not(target_arch = "wasm32"))]
        let adapters = instance
            .enumerate_adapters(options.backends & SUPPORTED_BACKENDS)
            .await;
        #[cfg(target_arch = "wasm32")]
        let adapters: Vec<wgpu::Adapter> = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: None,
                ..Default::default()
            })
            .await
            .into_iter()
            .collect();
        let describe = |a: &wgpu::Adapter| {
            let i = a.get_info();
            format!("{} ({:?}, {:?})", i.name, i.backend, i.device_type)
        };
        let found: Vec<String> = adapters.iter().map(describe).collect();
        let filter = options.adapter_filter.as_ref().map(|f| f.to_lowercase());
        let adapter = adapters
            .into_iter()
            .filter(|a| {
                filter
                    .as_ref()
                    .is_none_or(|f| a.get_info().name.to_lowercase().contains(f))
            })
            .min_by_key(|a| rank(a.get_info().device_type))
            .ok_or_else(|| Error::NoAdapter {
                filter: options.adapter_filter.clone(),
                found: found.clone(),
                hint: NO_ADAPTER_HINT.to_owned(),
            })?;
        Self::from_adapter(instance, adapter, options).await
    }

    /// Opens a context with options from the environment.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn from_env() -> Result<Self> {
        Self::new(ContextOptions::from_env()?)
    }

    async fn from_adapter(
        instance: wgpu::Instance,
        adapter: wgpu::Adapter,
        options: ContextOptions,
    ) -> Result<Self> {
        let available = adapter.features();
        let limits = adapter.limits();
        let adapter_info = adapter.get_info();
        let mut wanted =
            wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        // No kernel uses f32 atomics any more (the rasterizer's backward sums in a fixed order,
        // so results do not depend on scheduling); the `FLOAT_ATOMICS` shader flag stays for
        // kernels that may want them, but the feature is not requested.
        if !options.portable {
            wanted |= wgpu::Features::SUBGROUP;
        }
        let required_features = available & wanted;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("wgsplat"),
                required_features,
                required_limits: limits.clone(),
                experimental_features: wgpu::ExperimentalFeatures::default(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| Error::RequestDevice {
                adapter: adapter_info.name.clone(),
                message: e.to_string(),
            })?;

        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut list) = sink.lock() {
                list.push(e.to_string());
            }
        }));
        let lost: Arc<Mutex<Option<String>>> = Arc::default();
        let lost_sink = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut slot) = lost_sink.lock() {
                *slot = Some(format!("{reason:?}: {message}"));
            }
        });

        let binding_limit = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let page_cap = options
            .max_page_bytes
            .map_or(binding_limit, |m| m.min(binding_limit))
            .max(1024);
        let page_bytes = 1u64 << (63 - page_cap.leading_zeros()); // largest power of two <= cap
        let variant = Variant {
            subgroups: required_features.contains(wgpu::Features::SUBGROUP),
            float_atomics: required_features.contains(wgpu::Features::SHADER_FLOAT32_ATOMIC),
            cpu_layout: options
                .cpu_layout
                .unwrap_or(adapter_info.device_type == wgpu::DeviceType::Cpu),
        };
        let features = KernelFeatures {
            subgroups: variant.subgroups,
            float_atomics: variant.float_atomics,
            timestamp_query: required_features.contains(wgpu::Features::TIMESTAMP_QUERY),
        };
        let available_features = KernelFeatures {
            subgroups: available.contains(wgpu::Features::SUBGROUP),
            float_atomics: available.contains(wgpu::Features::SHADER_FLOAT32_ATOMIC),
            timestamp_query: available.contains(wgpu::Features::TIMESTAMP_QUERY),
        };
        let mut info = ContextInfo::new(
            AdapterSummary::from(&adapter_info),
            features,
            available_features,
            options.portable,
            &limits,
            page_bytes,
            options.poison,
            (
                adapter_info.subgroup_min_size,
                adapter_info.subgroup_max_size,
            ),
        );
        info.cpu_layout = variant.cpu_layout;
        let allocator = Allocator::new(
            device.clone(),
            limits.max_buffer_size,
            options.pool_limit_bytes,
        );
        let poison_source = if options.poison {
            let (buffer, _) = allocator.allocate(AllocRequest {
                bytes: POISON_SOURCE_BYTES,
                kind: BufferKind::Storage,
                category: MemoryCategory::Other,
                label: POISON_SOURCE_LABEL,
                encoder: None,
            })?;
            let words = vec![POISON_WORD; (POISON_SOURCE_BYTES / 4) as usize];
            queue.write_buffer(buffer.raw(), 0, bytemuck::cast_slice(&words));
            Some(buffer)
        } else {
            None
        };
        Ok(GpuContext {
            inner: Arc::new(ContextInner {
                gpu: Some(GpuObjects {
                    poison_source: Mutex::new(poison_source),
                    kernels: KernelCache::default(),
                    allocator,
                    queue,
                    device,
                    adapter,
                    instance,
                }),
                info,
                variant,
                page_bytes,
                errors,
                lost,
            }),
        })
    }

    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.inner.gpu().device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.inner.gpu().queue
    }

    /// The wgpu instance the adapter came from (front ends create their window surface with it).
    pub fn instance(&self) -> &wgpu::Instance {
        &self.inner.gpu().instance
    }

    /// The wgpu adapter the device was opened on.
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.inner.gpu().adapter
    }

    /// Adapter, features and limits in use.
    pub fn info(&self) -> &ContextInfo {
        &self.inner.info
    }

    /// The shader variant kernels are built in (portable when neither flag is set).
    pub fn variant(&self) -> Variant {
        self.inner.variant
    }

    /// Whether kernels take the portable path (no subgroups, no float atomics).
    pub fn is_portable(&self) -> bool {
        !self.inner.variant.subgroups && !self.inner.variant.float_atomics
    }

    /// Bytes in one tensor page (a power of two, at most the adapter's binding limit).
    pub fn page_bytes(&self) -> u64 {
        self.inner.page_bytes
    }

    /// Rows per page for row tensors of up to `max_width` 32-bit elements per row: the largest power
    /// of two whose pages fit the page size (see [`crate::Tensor::uninit_rows`]).
    pub fn rows_per_page(&self, max_width: u64) -> u64 {
        let rows = (self.inner.page_bytes / 4 / max_width.max(1)).max(1);
        1u64 << (63 - rows.leading_zeros())
    }

    /// The adapter's maximum workgroups per dispatch dimension.
    pub fn max_workgroups_per_dimension(&self) -> u32 {
        self.inner.info.limits.max_compute_workgroups_per_dimension
    }

    /// The allocator.
    pub fn allocator(&self) -> &Allocator {
        &self.inner.gpu().allocator
    }

    /// A snapshot of memory use.
    pub fn memory_report(&self) -> MemoryReport {
        self.inner.gpu().allocator.report()
    }

    /// Buffers still alive, excluding the context's own poison source. Empty when nothing leaked.
    pub fn leak_check(&self) -> Vec<LiveBuffer> {
        self.inner
            .gpu()
            .allocator
            .live_buffers()
            .into_iter()
            .filter(|b| b.label != POISON_SOURCE_LABEL)
            .collect()
    }

    /// Frees every pooled buffer; returns the bytes released.
    pub fn trim(&self) -> u64 {
        self.inner.gpu().allocator.trim()
    }

    /// Blocks until all submitted work is done.
    pub fn wait_idle(&self) -> Result<()> {
        self.inner
            .gpu()
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::DeviceLost(e.to_string()))?;
        self.check_errors("waiting for the GPU")
    }

    /// Processes finished work and map callbacks without blocking (for async readback).
    pub fn poll(&self) -> Result<()> {
        self.inner
            .gpu()
            .device
            .poll(wgpu::PollType::Poll)
            .map_err(|e| Error::DeviceLost(e.to_string()))?;
        Ok(())
    }

    /// Turns errors that wgpu reported asynchronously into a `Result`.
    pub fn check_errors(&self, context: &str) -> Result<()> {
        if let Some(reason) = self.inner.lost.lock().ok().and_then(|l| l.clone()) {
            return Err(Error::DeviceLost(reason));
        }
        let mut errors = self.inner.errors.lock().unwrap_or_else(|p| p.into_inner());
        if errors.is_empty() {
            return Ok(());
        }
        let message = errors.join("\n");
        errors.clear();
        Err(Error::Validation {
            context: context.to_owned(),
            message,
        })
    }
}

impl Drop for ContextInner {
    fn drop(&mut self) {
        let Some(gpu) = self.gpu.take() else {
            return;
        };
        let _closing = TEARDOWN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Ok(mut slot) = gpu.poison_source.lock() {
            slot.take();
        }
        let leaks = gpu.allocator.live_buffers();
        if !leaks.is_empty() {
            eprintln!(
                "wgsplat: warning: {} GPU buffer(s) still alive when the context closed:",
                leaks.len()
            );
            for leak in leaks.iter().take(20) {
                eprintln!(
                    "  {:?} ({}, {} bytes)",
                    leak.label,
                    leak.category.name(),
                    leak.bytes
                );
            }
        }
        drop(gpu); // under the lock: `_closing` is released after this
    }
}

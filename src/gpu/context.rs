//! The GPU context: adapter selection (Vulkan, Metal, DX12; never GL), the device opened with the
//! adapter's own limits, feature detection and the kernel path (portable or fast).

use crate::error::{Error, Result};
use crate::gpu::allocator::{AllocRequest, Allocator, BufferKind, GpuBuffer};
use crate::gpu::info::{AdapterSummary, ContextInfo, KernelFeatures};
use crate::gpu::kernel::KernelCache;
use crate::gpu::memory::{LiveBuffer, MemoryCategory, MemoryReport};
use crate::gpu::shader::Variant;
use std::sync::{Arc, Mutex};

/// Label of the internal buffer used to poison new allocations; excluded from leak checks.
pub(crate) const POISON_SOURCE_LABEL: &str = "wgsplat/poison-source";
/// Bytes of the poison source; poisoning copies from it in chunks of this size.
pub(crate) const POISON_SOURCE_BYTES: u64 = 1 << 20;
/// The 32-bit pattern written into new buffers when poisoning is on: a NaN for f32, `u32::MAX`.
pub const POISON_WORD: u32 = 0xFFFF_FFFF;

/// How to open a context. [`ContextOptions::from_env`] reads the `WGSPLAT_*` variables.
#[derive(Clone, Debug)]
pub struct ContextOptions {
    /// Case-insensitive substring the adapter name must contain (`WGSPLAT_ADAPTER`).
    pub adapter_filter: Option<String>,
    /// Backends to search (`WGSPLAT_BACKEND`: vulkan, metal or dx12). GL is never used.
    pub backends: wgpu::Backends,
    /// Force the portable kernel path: no subgroups, no float atomics (`WGSPLAT_PORTABLE=1`).
    pub portable: bool,
    /// Workgroup layouts for CPU adapters ([`crate::gpu::shader::ShaderFlag::CpuLayout`]): `None`
    /// chooses them where the adapter's type is CPU (`WGSPLAT_CPU_LAYOUT=1` or `0` forces them).
    pub cpu_layout: Option<bool>,
    /// Upper bound on one tensor page in bytes; the adapter's binding limit applies anyway. Tests
    /// use small pages to exercise paging cheaply.
    pub max_page_bytes: Option<u64>,
    /// Fill every new or reused buffer with [`POISON_WORD`] (`WGSPLAT_POISON`); on by default in
    /// debug builds, so reads of uninitialised memory show up in tests.
    pub poison: bool,
    /// Most bytes the free-buffer pool may hold (`WGSPLAT_POOL_LIMIT_MIB`). Default 512 MiB.
    pub pool_limit_bytes: u64,
}

/// The backends wgsplat runs on.
pub const SUPPORTED_BACKENDS: wgpu::Backends = wgpu::Backends::VULKAN
    .union(wgpu::Backends::METAL)
    .union(wgpu::Backends::DX12);

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            adapter_filter: None,
            backends: SUPPORTED_BACKENDS,
            portable: false,
            cpu_layout: None,
            max_page_bytes: None,
            poison: cfg!(debug_assertions),
            pool_limit_bytes: 512 << 20,
        }
    }
}

fn env_flag(name: &str) -> Result<Option<bool>> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(Some(true)),
            "0" | "false" | "no" | "off" | "" => Ok(Some(false)),
            _ => Err(Error::InvalidSetting {
                name: name.into(),
                value: v,
                expected: "1 or 0".into(),
            }),
        },
    }
}

impl ContextOptions {
    /// Defaults overridden by `WGSPLAT_ADAPTER`, `WGSPLAT_BACKEND`, `WGSPLAT_PORTABLE`,
    /// `WGSPLAT_CPU_LAYOUT`, `WGSPLAT_POISON` and `WGSPLAT_POOL_LIMIT_MIB`.
    pub fn from_env() -> Result<Self> {
        let mut options = ContextOptions::default();
        if let Ok(filter) = std::env::var("WGSPLAT_ADAPTER")
            && !filter.trim().is_empty()
        {
            options.adapter_filter = Some(filter.trim().to_owned());
        }
        if let Ok(backend) = std::env::var("WGSPLAT_BACKEND") {
            options.backends = parse_backend(&backend)?;
        }
        if let Some(portable) = env_flag("WGSPLAT_PORTABLE")? {
            options.portable = portable;
        }
        if let Some(cpu_layout) = env_flag("WGSPLAT_CPU_LAYOUT")? {
            options.cpu_layout = Some(cpu_layout);
        }
        if let Some(poison) = env_flag("WGSPLAT_POISON")? {
            options.poison = poison;
        }
        if let Ok(limit) = std::env::var("WGSPLAT_POOL_LIMIT_MIB") {
            let mib: u64 = limit.trim().parse().map_err(|_| Error::InvalidSetting {
                name: "WGSPLAT_POOL_LIMIT_MIB".into(),
                value: limit.clone(),
                expected: "a whole number of MiB".into(),
            })?;
            options.pool_limit_bytes = mib << 20;
        }
        Ok(options)
    }

    /// Returns these options with the portable path forced on or off.
    pub fn with_portable(mut self, portable: bool) -> Self {
        self.portable = portable;
        self
    }

    /// Returns these options with the CPU-adapter workgroup layouts forced on or off.
    pub fn with_cpu_layout(mut self, cpu_layout: bool) -> Self {
        self.cpu_layout = Some(cpu_layout);
        self
    }

    /// Returns these options with a smaller page size (tests of paging).
    pub fn with_max_page_bytes(mut self, bytes: u64) -> Self {
        self.max_page_bytes = Some(bytes);
        self
    }
}

fn parse_backend(value: &str) -> Result<wgpu::Backends> {
    match value.trim().to_ascii_lowercase().as_str() {
        "vulkan" | "vk" => Ok(wgpu::Backends::VULKAN),
        "metal" => Ok(wgpu::Backends::METAL),
        "dx12" | "d3d12" => Ok(wgpu::Backends::DX12),
        "" | "any" | "all" => Ok(SUPPORTED_BACKENDS),
        _ => Err(Error::InvalidSetting {
            name: "WGSPLAT_BACKEND".into(),
            value: value.into(),
            expected: "vulkan, metal or dx12 (OpenGL is not supported: it lacks compute features wgsplat needs)".into(),
        }),
    }
}

pub(crate) struct ContextInner {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) allocator: Allocator,
    pub(crate) kernels: KernelCache,
    pub(crate) info: ContextInfo,
    pub(crate) variant: Variant,
    pub(crate) page_bytes: u64,
    pub(crate) poison_source: Mutex<Option<GpuBuffer>>,
    pub(crate) errors: Arc<Mutex<Vec<String>>>,
    pub(crate) lost: Arc<Mutex<Option<String>>>,
    adapter: wgpu::Adapter,
    instance: wgpu::Instance,
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

const NO_ADAPTER_HINT: &str = "Install a GPU driver with Vulkan, Metal or DX12 support. On a headless Linux machine without a GPU, \
install the software Vulkan driver: `sudo apt-get install -y mesa-vulkan-drivers libvulkan1` (Debian/Ubuntu), then run with \
WGSPLAT_ADAPTER=llvmpipe";

impl GpuContext {
    /// Opens a context with the given options.
    pub fn new(options: ContextOptions) -> Result<Self> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = options.backends & SUPPORTED_BACKENDS;
        let instance = wgpu::Instance::new(desc);
        let adapters =
            pollster::block_on(instance.enumerate_adapters(options.backends & SUPPORTED_BACKENDS));
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
        Self::from_adapter(instance, adapter, options)
    }

    /// Opens a context with options from the environment.
    pub fn from_env() -> Result<Self> {
        Self::new(ContextOptions::from_env()?)
    }

    fn from_adapter(
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
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("wgsplat"),
            required_features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::default(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
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
                device,
                queue,
                allocator,
                kernels: KernelCache::default(),
                info,
                variant,
                page_bytes,
                poison_source: Mutex::new(poison_source),
                errors,
                lost,
                adapter,
                instance,
            }),
        })
    }

    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.inner.device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.inner.queue
    }

    /// The wgpu instance the adapter came from (front ends create their window surface with it).
    pub fn instance(&self) -> &wgpu::Instance {
        &self.inner.instance
    }

    /// The wgpu adapter the device was opened on.
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.inner.adapter
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
        &self.inner.allocator
    }

    /// A snapshot of memory use.
    pub fn memory_report(&self) -> MemoryReport {
        self.inner.allocator.report()
    }

    /// Buffers still alive, excluding the context's own poison source. Empty when nothing leaked.
    pub fn leak_check(&self) -> Vec<LiveBuffer> {
        self.inner
            .allocator
            .live_buffers()
            .into_iter()
            .filter(|b| b.label != POISON_SOURCE_LABEL)
            .collect()
    }

    /// Frees every pooled buffer; returns the bytes released.
    pub fn trim(&self) -> u64 {
        self.inner.allocator.trim()
    }

    /// Blocks until all submitted work is done.
    pub fn wait_idle(&self) -> Result<()> {
        self.inner
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::DeviceLost(e.to_string()))?;
        self.check_errors("waiting for the GPU")
    }

    /// Processes finished work and map callbacks without blocking (for async readback).
    pub fn poll(&self) -> Result<()> {
        self.inner
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
        if let Ok(mut slot) = self.poison_source.lock() {
            slot.take();
        }
        let leaks = self.allocator.live_buffers();
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
    }
}

//! How to open a context: [`ContextOptions`], with the `WGSPLAT_*` environment variables that
//! override its defaults.

use crate::error::{Error, Result};

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
    /// Fill every new or reused buffer with [`POISON_WORD`](crate::gpu::POISON_WORD)
    /// (`WGSPLAT_POISON`); on by default in debug builds, so reads of uninitialised memory show
    /// up in tests.
    pub poison: bool,
    /// Most bytes the free-buffer pool may hold (`WGSPLAT_POOL_LIMIT_MIB`). Default 512 MiB.
    pub pool_limit_bytes: u64,
}

/// The backends wgsplat runs on.
#[cfg(not(target_arch = "wasm32"))]
pub const SUPPORTED_BACKENDS: wgpu::Backends = wgpu::Backends::VULKAN
    .union(wgpu::Backends::METAL)
    .union(wgpu::Backends::DX12);
/// The backend wgsplat runs on in a browser: WebGPU.
#[cfg(target_arch = "wasm32")]
pub const SUPPORTED_BACKENDS: wgpu::Backends = wgpu::Backends::BROWSER_WEBGPU;

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

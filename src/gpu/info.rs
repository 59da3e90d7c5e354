//! A serialisable description of the adapter, the features in use and the key limits, printed by
//! `wgsplat info`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The adapter as wgpu describes it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AdapterSummary {
    /// Adapter name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub name: String,
    /// Backend (Vulkan, Metal, Dx12).
    pub backend: String,
    /// Device type (DiscreteGpu, Cpu, ...).
    pub device_type: String,
    /// Driver name.
    pub driver: String,
    /// Driver version string.
    pub driver_info: String,
}

impl From<&wgpu::AdapterInfo> for AdapterSummary {
    fn from(info: &wgpu::AdapterInfo) -> Self {
        AdapterSummary {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
        }
    }
}

/// Optional features, as used or as available.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelFeatures {
    /// Subgroup operations.
    pub subgroups: bool,
    /// 32-bit float atomics in storage buffers.
    pub float_atomics: bool,
    /// GPU timestamps (benchmarks).
    pub timestamp_query: bool,
}

/// The limits that matter to wgsplat.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LimitsSummary {
    /// Largest single storage binding, bytes.
    pub max_storage_buffer_binding_size: u64,
    /// Largest buffer, bytes.
    pub max_buffer_size: u64,
    /// Workgroups per dispatch dimension.
    pub max_compute_workgroups_per_dimension: u32,
    /// Workgroup memory, bytes.
    pub max_compute_workgroup_storage_size: u32,
    /// Invocations per workgroup.
    pub max_compute_invocations_per_workgroup: u32,
    /// Storage buffers per shader stage.
    pub max_storage_buffers_per_shader_stage: u32,
    /// Smallest subgroup size the adapter reports.
    pub min_subgroup_size: u32,
    /// Largest subgroup size the adapter reports.
    pub max_subgroup_size: u32,
}

/// Everything `wgsplat info` prints.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ContextInfo {
    /// The adapter.
    pub adapter: AdapterSummary,
    /// Features the kernels use.
    pub features_used: KernelFeatures,
    /// Features the adapter offers.
    pub features_available: KernelFeatures,
    /// Whether the portable path was forced.
    pub portable_forced: bool,
    /// Whether kernels use their workgroup layouts for CPU adapters (`ShaderFlag::CpuLayout`).
    #[serde(default)]
    pub cpu_layout: bool,
    /// Key limits.
    pub limits: LimitsSummary,
    /// Bytes in one tensor page.
    pub page_bytes: u64,
    /// Whether new buffers are poisoned.
    pub poison: bool,
    /// Adapter name (shortcut for `adapter.name`).
    pub name: String,
}

impl ContextInfo {
    // One call site (GpuContext::new) passes what it has gathered about the adapter.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        adapter: AdapterSummary,
        features_used: KernelFeatures,
        features_available: KernelFeatures,
        portable_forced: bool,
        limits: &wgpu::Limits,
        page_bytes: u64,
        poison: bool,
        subgroup_sizes: (u32, u32),
    ) -> Self {
        ContextInfo {
            name: adapter.name.clone(),
            adapter,
            features_used,
            features_available,
            portable_forced,
            cpu_layout: false,
            limits: LimitsSummary {
                max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
                max_buffer_size: limits.max_buffer_size,
                max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
                max_compute_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
                max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
                max_storage_buffers_per_shader_stage: limits.max_storage_buffers_per_shader_stage,
                min_subgroup_size: subgroup_sizes.0,
                max_subgroup_size: subgroup_sizes.1,
            },
            page_bytes,
            poison,
        }
    }

    /// Short name of the kernel path.
    pub fn kernel_path(&self) -> &'static str {
        match (
            self.features_used.subgroups,
            self.features_used.float_atomics,
        ) {
            (false, false) => "portable",
            (true, false) => "fast (subgroups)",
            (false, true) => "fast (float atomics)",
            (true, true) => "fast (subgroups + float atomics)",
        }
    }
}

impl fmt::Display for ContextInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let yes = |b: bool| if b { "yes" } else { "no" };
        let a = &self.adapter;
        writeln!(f, "adapter        {}", a.name)?;
        writeln!(f, "backend        {} ({})", a.backend, a.device_type)?;
        writeln!(f, "driver         {} {}", a.driver, a.driver_info)?;
        writeln!(
            f,
            "kernel path    {}{}",
            self.kernel_path(),
            if self.portable_forced {
                " (forced)"
            } else {
                ""
            }
        )?;
        writeln!(
            f,
            "layouts        {}",
            if self.cpu_layout {
                "cpu (fewer invocations per tile, more pixels each)"
            } else {
                "gpu"
            }
        )?;
        let (u, v) = (self.features_used, self.features_available);
        writeln!(
            f,
            "subgroups      used {} / available {}",
            yes(u.subgroups),
            yes(v.subgroups)
        )?;
        writeln!(
            f,
            "float atomics  used {} / available {}",
            yes(u.float_atomics),
            yes(v.float_atomics)
        )?;
        writeln!(
            f,
            "timestamps     used {} / available {}",
            yes(u.timestamp_query),
            yes(v.timestamp_query)
        )?;
        let l = &self.limits;
        writeln!(
            f,
            "max binding    {} bytes",
            l.max_storage_buffer_binding_size
        )?;
        writeln!(f, "max buffer     {} bytes", l.max_buffer_size)?;
        writeln!(f, "page size      {} bytes", self.page_bytes)?;
        writeln!(
            f,
            "workgroups/dim {}",
            l.max_compute_workgroups_per_dimension
        )?;
        writeln!(
            f,
            "wg memory      {} bytes",
            l.max_compute_workgroup_storage_size
        )?;
        writeln!(
            f,
            "subgroup size  {}..{}",
            l.min_subgroup_size, l.max_subgroup_size
        )?;
        write!(f, "poisoning      {}", yes(self.poison))
    }
}

//! What the allocator does not see: the process's resident memory and wgpu's live objects.
//!
//! The allocator ([`crate::gpu::memory`]) counts every buffer wgsplat creates. The rest of a
//! process's memory is wgpu's objects (bind groups, pipelines, command buffers, staging), the
//! driver's own allocations and the heap. On a software adapter such as lavapipe, device memory
//! is host memory, so the resident set size (RSS) sees all of it; with wgpu's object counts beside
//! the allocator's bytes, a growth that none of them explains points at the driver.
//!
//! RSS is read from `/proc/self/status`; on systems without it the samples are `None`.

use crate::gpu::context::GpuContext;

/// Resident memory of this process, from `/proc/self/status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ProcessMemory {
    /// Resident set size now (`VmRSS`), bytes.
    pub rss_bytes: u64,
    /// Largest resident set size since start or the last [`reset_peak_rss`] (`VmHWM`), bytes.
    pub peak_rss_bytes: u64,
}

impl ProcessMemory {
    /// The current sample, or `None` where `/proc/self/status` is not available.
    pub fn sample() -> Option<ProcessMemory> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        Some(ProcessMemory {
            rss_bytes: status_kib(&status, "VmRSS:")? * 1024,
            peak_rss_bytes: status_kib(&status, "VmHWM:")? * 1024,
        })
    }
}

/// Parses a `Name:   1234 kB` line of `/proc/self/status`.
fn status_kib(status: &str, name: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(name))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Restarts the peak RSS (`VmHWM`) from the current RSS, so the next sample's peak covers only
/// what runs after this call. Returns whether the kernel accepted it.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// wgpu's live objects and the device memory its backend reports, by kind (wgpu's `counters`
/// feature). After warm-up a training iteration must leave every count where it was.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WgpuObjectCounts {
    /// Buffers.
    pub buffers: isize,
    /// Bind groups.
    pub bind_groups: isize,
    /// Bind group layouts.
    pub bind_group_layouts: isize,
    /// Pipeline layouts.
    pub pipeline_layouts: isize,
    /// Compute pipelines.
    pub compute_pipelines: isize,
    /// Render pipelines (the viewer's).
    pub render_pipelines: isize,
    /// Shader modules.
    pub shader_modules: isize,
    /// Command encoders (wgpu keeps a few for reuse).
    pub command_encoders: isize,
    /// Textures.
    pub textures: isize,
    /// Texture views.
    pub texture_views: isize,
    /// Samplers.
    pub samplers: isize,
    /// Fences.
    pub fences: isize,
    /// Bytes of device memory the backend attributes to buffers.
    pub buffer_memory_bytes: isize,
    /// Bytes of device memory the backend attributes to textures.
    pub texture_memory_bytes: isize,
    /// Device memory allocations (blocks) the backend holds.
    pub memory_allocations: isize,
}

impl GpuContext {
    /// wgpu's live-object counts for this context's device.
    pub fn wgpu_object_counts(&self) -> WgpuObjectCounts {
        let hal = self.device().get_internal_counters().hal;
        WgpuObjectCounts {
            buffers: hal.buffers.read(),
            bind_groups: hal.bind_groups.read(),
            bind_group_layouts: hal.bind_group_layouts.read(),
            pipeline_layouts: hal.pipeline_layouts.read(),
            compute_pipelines: hal.compute_pipelines.read(),
            render_pipelines: hal.render_pipelines.read(),
            shader_modules: hal.shader_modules.read(),
            command_encoders: hal.command_encoders.read(),
            textures: hal.textures.read(),
            texture_views: hal.texture_views.read(),
            samplers: hal.samplers.read(),
            fences: hal.fences.read(),
            buffer_memory_bytes: hal.buffer_memory.read(),
            texture_memory_bytes: hal.texture_memory.read(),
            memory_allocations: hal.memory_allocations.read(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_parse() {
        let status = "Name:\twgsplat\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(status_kib(status, "VmRSS:"), Some(1024));
        assert_eq!(status_kib(status, "VmHWM:"), Some(2048));
        assert_eq!(status_kib(status, "VmSwap:"), None);
        if cfg!(target_os = "linux") {
            let now = ProcessMemory::sample().expect("Linux has /proc/self/status");
            assert!(now.rss_bytes > 0 && now.peak_rss_bytes >= now.rss_bytes);
        }
    }
}

//! What one compute entry point asks of an adapter, read from naga's reflection: storage and
//! uniform buffers it binds, workgroup memory it declares and its workgroup size. Pipeline creation
//! checks it against the adapter's own limits ([`crate::GpuContext::kernel_specialized`]), so a
//! kernel that needs more than an adapter gives fails there with its name and the numbers, never
//! later and never silently; the tests hold every kernel to WebGPU's default limits
//! ([`wgpu::Limits::default`]), which a browser page gets.

use std::collections::HashSet;

/// An entry point's demands on the adapter's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryNeeds {
    /// Storage buffers it uses.
    pub storage_buffers: u32,
    /// Uniform buffers it uses.
    pub uniform_buffers: u32,
    /// Bytes of `var<workgroup>` memory it uses.
    pub workgroup_bytes: u64,
    /// `@workgroup_size`.
    pub workgroup_size: [u32; 3],
}

impl EntryNeeds {
    /// The needs of entry point `entry` of `module` (overrides already processed, so that arrays
    /// sized by them have their sizes).
    pub fn of(module: &naga::Module, info: &naga::valid::ModuleInfo, entry: usize) -> EntryNeeds {
        let uses = info.get_entry_point(entry);
        let mut needs = EntryNeeds {
            storage_buffers: 0,
            uniform_buffers: 0,
            workgroup_bytes: 0,
            workgroup_size: module.entry_points[entry].workgroup_size,
        };
        let mut bindings = HashSet::new();
        for (handle, global) in module.global_variables.iter() {
            if uses[handle].is_empty() {
                continue;
            }
            match global.space {
                naga::AddressSpace::Storage { .. } if bindings.insert(&global.binding) => {
                    needs.storage_buffers += 1;
                }
                naga::AddressSpace::Uniform if bindings.insert(&global.binding) => {
                    needs.uniform_buffers += 1;
                }
                naga::AddressSpace::WorkGroup => {
                    let size = module.types[global.ty].inner.size(module.to_ctx());
                    needs.workgroup_bytes += u64::from(size);
                }
                _ => {}
            }
        }
        needs
    }

    /// Every limit of `limits` this entry point exceeds, as `what: needed > limit` lines.
    pub fn exceeded(&self, limits: &wgpu::Limits) -> Vec<String> {
        let [x, y, z] = self.workgroup_size;
        let invocations = u64::from(x) * u64::from(y) * u64::from(z);
        let checks = [
            (
                "storage buffers per stage",
                u64::from(self.storage_buffers),
                u64::from(limits.max_storage_buffers_per_shader_stage),
            ),
            (
                "uniform buffers per stage",
                u64::from(self.uniform_buffers),
                u64::from(limits.max_uniform_buffers_per_shader_stage),
            ),
            (
                "workgroup memory bytes",
                self.workgroup_bytes,
                u64::from(limits.max_compute_workgroup_storage_size),
            ),
            (
                "invocations per workgroup",
                invocations,
                u64::from(limits.max_compute_invocations_per_workgroup),
            ),
            (
                "workgroup size x",
                u64::from(x),
                u64::from(limits.max_compute_workgroup_size_x),
            ),
            (
                "workgroup size y",
                u64::from(y),
                u64::from(limits.max_compute_workgroup_size_y),
            ),
            (
                "workgroup size z",
                u64::from(z),
                u64::from(limits.max_compute_workgroup_size_z),
            ),
        ];
        checks
            .into_iter()
            .filter(|&(_, needed, limit)| needed > limit)
            .map(|(what, needed, limit)| format!("{what}: needs {needed}, the limit is {limit}"))
            .collect()
    }
}

//! Compute kernels: a pipeline built from one shader file's entry point in the context's variant,
//! with its workgroup size read back from naga's reflection. Kernels are cached per context.

use crate::error::{Error, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::entry_needs::EntryNeeds;
use crate::gpu::shader::{self, Variant};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A compute pipeline and what dispatching it needs to know.
pub struct Kernel {
    pub(crate) pipeline: wgpu::ComputePipeline,
    pub(crate) layout: wgpu::BindGroupLayout,
    /// `@workgroup_size` of the entry point.
    pub workgroup_size: [u32; 3],
    /// `file:entry (variant)`, for labels and errors.
    pub name: String,
    /// Bindings (group 0) the module declares `read_write`: one buffer may not be bound there and
    /// at any other binding of the same dispatch (checked by [`crate::gpu::Encoder::run`]).
    pub(crate) writable_bindings: Vec<u32>,
    /// Bindings (group 0) this entry point uses in this variant: the pipeline's layout holds
    /// exactly these.
    pub(crate) used_bindings: Vec<u32>,
}

impl Kernel {
    /// Invocations per workgroup.
    pub fn threads(&self) -> u32 {
        self.workgroup_size.iter().product()
    }
}

/// The cache key of a kernel: file, entry point, variant and override values (as bits).
type KernelKey = (String, String, Variant, Vec<(&'static str, u64)>);

/// Cache of built kernels, keyed by file, entry point, variant and override values.
#[derive(Default)]
pub(crate) struct KernelCache {
    kernels: Mutex<HashMap<KernelKey, Arc<Kernel>>>,
}

impl GpuContext {
    /// The kernel for `entry` in `file` (relative to `shaders/`), in this context's variant,
    /// reduced to the flags the file actually tests.
    pub fn kernel(&self, file: &str, entry: &str) -> Result<Arc<Kernel>> {
        self.kernel_with(file, entry, &[])
    }

    /// [`GpuContext::kernel`] specialised by WGSL `override` values (name, value).
    pub fn kernel_with(
        &self,
        file: &str,
        entry: &str,
        constants: &[(&'static str, f64)],
    ) -> Result<Arc<Kernel>> {
        let variant = self.variant().restricted_to(&shader::flags_used(file)?);
        self.kernel_specialized(file, entry, variant, constants)
    }

    /// The kernel for an explicit variant (the variant must be supported by the device), its
    /// overrides at their WGSL defaults.
    pub fn kernel_variant(&self, file: &str, entry: &str, variant: Variant) -> Result<Arc<Kernel>> {
        self.kernel_specialized(file, entry, variant, &[])
    }

    /// The kernel for an explicit variant with WGSL `override` values (name, value); overrides
    /// left out keep their defaults. Each distinct set of values is its own cached pipeline.
    pub fn kernel_specialized(
        &self,
        file: &str,
        entry: &str,
        variant: Variant,
        constants: &[(&'static str, f64)],
    ) -> Result<Arc<Kernel>> {
        let key = (
            file.to_owned(),
            entry.to_owned(),
            variant,
            constants.iter().map(|&(n, v)| (n, v.to_bits())).collect(),
        );
        if let Some(k) = self
            .inner
            .gpu()
            .kernels
            .kernels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(k.clone());
        }
        let compiled = shader::compile(file, variant)?;
        let entry_index = compiled
            .module
            .entry_points
            .iter()
            .position(|e| e.name == entry)
            .ok_or_else(|| Error::Shader {
                file: file.to_owned(),
                line: 0,
                column: 0,
                variant: variant.name(),
                message: format!("no entry point named {entry:?}"),
            })?;
        let workgroup_size = compiled.module.entry_points[entry_index].workgroup_size;
        // What the entry point asks of the adapter, with the overrides' values in place (they may
        // size workgroup arrays): more than the adapter allows is an error naming the kernel.
        let overrides: naga::back::PipelineConstants = constants
            .iter()
            .map(|&(name, value)| (name.to_owned(), value))
            .collect();
        let needs = naga::back::pipeline_constants::process_overrides(
            &compiled.module,
            &compiled.info,
            None,
            &overrides,
        )
        .map(|(module, info)| EntryNeeds::of(&module, &info, entry_index))
        .map_err(|e| Error::Shader {
            file: file.to_owned(),
            line: 0,
            column: 0,
            variant: variant.name(),
            message: format!("entry {entry}: its overrides {overrides:?} do not apply: {e}"),
        })?;
        let exceeded = needs.exceeded(&self.device().limits());
        if !exceeded.is_empty() {
            return Err(Error::Shader {
                file: file.to_owned(),
                line: 0,
                column: 0,
                variant: variant.name(),
                message: format!(
                    "entry {entry} needs more than the adapter {:?} allows ({}); use an adapter with higher limits",
                    self.info().name,
                    exceeded.join("; ")
                ),
            });
        }
        let entry_info = compiled.info.get_entry_point(entry_index);
        let used_bindings = compiled
            .module
            .global_variables
            .iter()
            .filter_map(|(handle, g)| match &g.binding {
                Some(b) if b.group == 0 && !entry_info[handle].is_empty() => Some(b.binding),
                _ => None,
            })
            .collect();
        let writable_bindings = compiled
            .module
            .global_variables
            .iter()
            .filter_map(|(_, g)| match (g.space, &g.binding) {
                (naga::AddressSpace::Storage { access }, Some(b))
                    if b.group == 0 && access.contains(naga::StorageAccess::STORE) =>
                {
                    Some(b.binding)
                }
                _ => None,
            })
            .collect();
        let specialised: Vec<String> = constants.iter().map(|(n, v)| format!("{n}={v}")).collect();
        let name = match specialised.is_empty() {
            true => format!("{file}:{entry} ({})", variant.name()),
            false => format!(
                "{file}:{entry} ({}; {})",
                variant.name(),
                specialised.join(", ")
            ),
        };
        let device = self.device();
        // In a browser a scope answers only after control returns to the page: there a
        // validation error reaches the device's uncaptured-error handler, and the next
        // `GpuContext::check_errors` reports it.
        #[cfg(not(target_arch = "wasm32"))]
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(&name),
            source: wgpu::ShaderSource::Naga(std::borrow::Cow::Owned(compiled.module)),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&name),
            layout: None,
            module: &module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants,
                ..Default::default()
            },
            cache: None,
        });
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(err) = pollster::block_on(scope.pop()) {
            return Err(Error::Shader {
                file: file.to_owned(),
                line: 0,
                column: 0,
                variant: variant.name(),
                message: err.to_string(),
            });
        }
        let layout = pipeline.get_bind_group_layout(0);
        let kernel = Arc::new(Kernel {
            pipeline,
            layout,
            workgroup_size,
            name,
            writable_bindings,
            used_bindings,
        });
        self.inner
            .gpu()
            .kernels
            .kernels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, kernel.clone());
        Ok(kernel)
    }
}

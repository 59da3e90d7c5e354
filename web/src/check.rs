//! `?check=shaders`: every kernel variant this browser can run, compiled by the browser's own
//! WebGPU shader compiler (which checks more than naga: the uniformity of control flow around
//! barriers, literal ranges) and made into a pipeline for each entry point with every override
//! set by name (naga's WGSL writer renames a name that ends in a digit). The page lists the
//! failures and says them in its title; CI's browser test runs it.

use std::borrow::Cow;
use wgsplat::GpuContext;
use wgsplat::gpu::shader::{self, Variant};

/// What the check found.
pub struct ShaderReport {
    /// Variants compiled.
    pub checked: usize,
    /// One line per variant that failed: file, variant and the browser's message.
    pub failures: Vec<String>,
}

/// Compiles every variant the context can use (never float atomics, which WebGPU lacks;
/// subgroups only where the device has them) and creates each entry point's pipeline.
pub async fn check_shaders(ctx: &GpuContext) -> ShaderReport {
    let device = ctx.device();
    let subgroups = ctx.info().features_used.subgroups;
    let mut report = ShaderReport {
        checked: 0,
        failures: Vec::new(),
    };
    for file in shader::stage_files() {
        let variants = match Variant::all_for(file) {
            Ok(variants) => variants,
            Err(err) => {
                report.failures.push(format!("{file}: {err}"));
                continue;
            }
        };
        let usable = variants
            .into_iter()
            .filter(|v| !v.float_atomics && (subgroups || !v.subgroups));
        for variant in usable {
            let name = format!("{file} ({})", variant.name());
            let compiled = match shader::compile(file, variant) {
                Ok(compiled) => compiled,
                Err(err) => {
                    report.failures.push(format!("{name}: {err}"));
                    continue;
                }
            };
            // Every override is set by name, as the kernels set them, so a name the browser's
            // compiler does not find fails here.
            let names: Vec<String> = compiled
                .module
                .overrides
                .iter()
                .filter_map(|(_, o)| o.name.clone())
                .collect();
            let constants: Vec<(&str, f64)> = names.iter().map(|n| (n.as_str(), 0.0)).collect();
            let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
            let entries: Vec<String> = compiled
                .module
                .entry_points
                .iter()
                .map(|e| e.name.clone())
                .collect();
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(&name),
                source: wgpu::ShaderSource::Naga(Cow::Owned(compiled.module)),
            });
            for entry in &entries {
                let _pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(&name),
                    layout: None,
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: &constants,
                        ..Default::default()
                    },
                    cache: None,
                });
            }
            if let Some(err) = scope.pop().await {
                report.failures.push(format!("{name}: {err}"));
            }
            report.checked += 1;
        }
    }
    report
}

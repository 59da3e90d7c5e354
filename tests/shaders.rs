//! Every shader file and every variant goes through naga: parse, validate with exactly the
//! capabilities of the variant, and translate to SPIR-V, MSL and HLSL. Each entry point stays within
//! the WebGPU default of 8 storage buffers per stage. Mirrored Rust structs match naga's layout.

use wgsplat::gpu::shader::{self, Variant};

fn storage_buffers_per_entry(module: &naga::Module) -> Vec<(String, usize)> {
    // Conservative: count every storage global the module declares (each entry point could use all).
    let count = module
        .global_variables
        .iter()
        .filter(|(_, g)| matches!(g.space, naga::AddressSpace::Storage { .. }))
        .count();
    module
        .entry_points
        .iter()
        .map(|e| (e.name.clone(), count))
        .collect()
}

#[test]
fn every_variant_validates_and_translates_to_all_backends() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in shader::stage_files() {
        for variant in Variant::all_for(file).expect("directives parse") {
            let compiled = match shader::compile(file, variant) {
                Ok(c) => c,
                Err(e) => {
                    failures.push(e.to_string());
                    continue;
                }
            };
            for (entry, count) in storage_buffers_per_entry(&compiled.module) {
                if count > 8 {
                    failures.push(format!(
                        "{file} ({}) entry {entry}: {count} storage buffers > 8",
                        variant.name()
                    ));
                }
            }
            let (module, info) = (&compiled.module, &compiled.info);
            if let Err(e) =
                naga::back::spv::write_vec(module, info, &naga::back::spv::Options::default(), None)
            {
                failures.push(format!("{file} ({}) -> SPIR-V: {e}", variant.name()));
            }
            let msl_options = naga::back::msl::Options {
                lang_version: (2, 4),
                ..Default::default()
            };
            if let Err(e) = naga::back::msl::write_string(
                module,
                info,
                &msl_options,
                &naga::back::msl::PipelineOptions::default(),
            ) {
                failures.push(format!("{file} ({}) -> MSL: {e}", variant.name()));
            }
            let mut hlsl = String::new();
            let hlsl_options = naga::back::hlsl::Options {
                shader_model: naga::back::hlsl::ShaderModel::V6_2,
                ..Default::default()
            };
            let hlsl_pipeline = naga::back::hlsl::PipelineOptions::default();
            let mut writer =
                naga::back::hlsl::Writer::new(&mut hlsl, &hlsl_options, &hlsl_pipeline);
            if let Err(e) = writer.write(module, info, None) {
                failures.push(format!("{file} ({}) -> HLSL: {e}", variant.name()));
            }
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        checked >= shader::stage_files().count(),
        "checked {checked} variants"
    );
    println!("checked {checked} shader variants");
}

#[test]
fn portable_variant_never_needs_optional_capabilities() {
    // Validation with empty capabilities is what `compile(.., PORTABLE)` does; make sure every file
    // has a portable variant.
    for file in shader::stage_files() {
        let variants = Variant::all_for(file).expect("directives parse");
        assert!(
            variants.contains(&Variant::PORTABLE),
            "{file} has no portable variant"
        );
        shader::compile(file, Variant::PORTABLE).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn errors_point_at_the_original_file_and_line() {
    // fill.wgsl imports shared/dispatch.wgsl first, so its own lines are shifted in the output;
    // the origin map must undo that.
    let pre = shader::preprocess("fill.wgsl", Variant::PORTABLE).expect("preprocess");
    let line_of_fn = pre
        .source
        .lines()
        .position(|l| l.starts_with("fn fill"))
        .expect("fill fn") as u32
        + 1;
    let (file, line) = pre.locate(line_of_fn);
    assert_eq!(file, "fill.wgsl");
    let original = include_str!("../shaders/fill.wgsl")
        .lines()
        .nth(line as usize - 1)
        .unwrap_or("");
    assert!(
        original.starts_with("fn fill"),
        "mapped to line {line}: {original}"
    );
}

#[test]
fn mirrored_structs_match_naga_reflection() {
    let mirrors = wgsplat::mirrored_structs();
    assert!(!mirrors.is_empty());
    let failures: Vec<String> = mirrors.iter().filter_map(|m| m.check().err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn mirror_check_detects_a_wrong_layout() {
    #[repr(C)]
    struct Wrong {
        n: u32,
        mode: u32,
    }
    let bad = wgsplat::mirror!(Wrong, "fill.wgsl", "FillParams", [n, mode]);
    assert!(bad.check().is_err());
}

/// Where `module` reads a uniform other than through the private copy: a field or element access
/// on a uniform global anywhere, or an entry point of a module with uniforms that never calls
/// `uniforms_visible`.
fn uniform_violations(module: &naga::Module) -> Vec<String> {
    let uniforms: Vec<_> = module
        .global_variables
        .iter()
        .filter(|(_, g)| g.space == naga::AddressSpace::Uniform)
        .map(|(h, _)| h)
        .collect();
    if uniforms.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    let functions = module
        .functions
        .iter()
        .map(|(_, f)| f)
        .chain(module.entry_points.iter().map(|e| &e.function));
    for function in functions {
        for (_, expression) in function.expressions.iter() {
            let base = match expression {
                naga::Expression::AccessIndex { base, .. }
                | naga::Expression::Access { base, .. } => *base,
                _ => continue,
            };
            if let naga::Expression::GlobalVariable(global) = function.expressions[base]
                && uniforms.contains(&global)
            {
                found.push(format!(
                    "{} reads a field of the uniform directly",
                    function.name.as_deref().unwrap_or("?")
                ));
            }
        }
    }
    for entry in &module.entry_points {
        let calls_gate = entry.function.body.iter().any(|statement| {
            matches!(statement, naga::Statement::Call { function, .. }
                if module.functions[*function].name.as_deref() == Some("uniforms_visible"))
        });
        if !calls_gate {
            found.push(format!(
                "entry point {} never calls uniforms_visible",
                entry.name
            ));
        }
    }
    found
}

/// Issue 12: lavapipe recompiles (and leaks) a kernel at every dispatch when a branch depends on
/// a uniform field it can trace, so every kernel reads its parameters only through the private
/// copy made under `uniforms_visible` (shared/dispatch.wgsl).
#[test]
fn kernels_read_uniforms_only_through_the_private_copy() {
    let mut failures = Vec::new();
    for file in shader::stage_files() {
        for variant in Variant::all_for(file).expect("directives parse") {
            let compiled = shader::compile(file, variant).expect("compiles");
            for v in uniform_violations(&compiled.module) {
                failures.push(format!("{file} ({}): {v}", variant.name()));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // The check itself fails on a kernel that branches on a uniform field.
    let direct = naga::front::wgsl::parse_str(
        "struct P { n: u32 }
         @group(0) @binding(0) var<uniform> params: P;
         @group(0) @binding(1) var<storage, read_write> out: array<u32>;
         @compute @workgroup_size(64)
         fn main(@builtin(global_invocation_id) id: vec3<u32>) {
             if id.x < params.n { out[id.x] = 1u; }
         }",
    )
    .expect("parses");
    let violations = uniform_violations(&direct);
    assert_eq!(violations.len(), 2, "{violations:?}");
}

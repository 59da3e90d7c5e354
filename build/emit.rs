//! Writes the reflected shaders as Rust: one module per WGSL file with its constants, structs,
//! kernel markers and named binding structs (see `src/gpu/kernels.rs` for how they are used).

use crate::reflect::{OverrideDecl, Reflection, StageFile, StructLayout, module_name};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

const KEYWORDS: [&str; 12] = [
    "type", "match", "ref", "loop", "in", "move", "box", "where", "fn", "mod", "use", "self",
];

fn ident(name: &str) -> String {
    if KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_owned()
    }
}

/// `rasterize_backward` → `RasterizeBackward`.
fn camel(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

#[derive(Default)]
struct ModuleText {
    items: String,
}

fn emit_struct(out: &mut String, s: &StructLayout) {
    let _ = writeln!(
        out,
        "    /// WGSL `struct {}` of `{}` ({} bytes), generated from naga's layout.",
        s.name, s.origin, s.size
    );
    out.push_str("    #[repr(C)]\n    #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]\n");
    let _ = writeln!(out, "    pub struct {} {{", s.name);
    let mut cursor = 0;
    for (name, offset, ty) in &s.members {
        if *offset > cursor {
            let _ = writeln!(
                out,
                "        /// Layout padding before `{name}`.\n        pub _gap_{cursor}: [u32; {}],",
                (offset - cursor) / 4
            );
        }
        let _ = writeln!(
            out,
            "        /// WGSL member `{name}` at byte {offset}.\n        pub {}: {},",
            ident(name),
            ty.spelling
        );
        cursor = offset + ty.size;
    }
    if s.size > cursor {
        let _ = writeln!(
            out,
            "        /// Layout padding at the end.\n        pub _gap_{cursor}: [u32; {}],",
            (s.size - cursor) / 4
        );
    }
    out.push_str("    }\n");
    let _ = writeln!(
        out,
        "    impl Default for {} {{\n        fn default() -> Self {{\n            bytemuck::Zeroable::zeroed()\n        }}\n    }}",
        s.name
    );
}

/// The Rust field of WGSL `override NAME`: `name`.
fn override_field(name: &str) -> String {
    ident(&name.to_lowercase())
}

/// The `Overrides` struct of a file that declares WGSL `override`s: one field per constant (the
/// name in lower case), its WGSL default, and the name-value list a pipeline is built with.
fn emit_overrides(out: &mut String, origin: &str, decls: &BTreeMap<String, OverrideDecl>) {
    let _ = writeln!(
        out,
        "    /// The pipeline-overridable constants (WGSL `override`s) of `{origin}`; the default is WGSL's.\n    #[derive(Clone, Copy, Debug, PartialEq)]\n    pub struct Overrides {{"
    );
    for (name, decl) in decls {
        let _ = writeln!(
            out,
            "        /// WGSL `override {name}: {}`.\n        pub {}: {},",
            decl.ty,
            override_field(name),
            decl.ty
        );
    }
    out.push_str("    }\n    impl Default for Overrides {\n        fn default() -> Self {\n            Overrides {\n");
    for (name, decl) in decls {
        let _ = writeln!(
            out,
            "                {}: {},",
            override_field(name),
            decl.default
        );
    }
    out.push_str("            }\n        }\n    }\n    impl crate::gpu::kernels::PipelineOverrides for Overrides {\n        fn constants(&self) -> Vec<(&'static str, f64)> {\n            vec![\n");
    for (name, decl) in decls {
        let value = match decl.ty {
            "bool" => format!("f64::from(u8::from(self.{}))", override_field(name)),
            _ => format!("f64::from(self.{})", override_field(name)),
        };
        let _ = writeln!(out, "                ({name:?}, {value}),");
    }
    out.push_str("            ]\n        }\n    }\n");
}

fn emit_stage(out: &mut String, stage: &StageFile) {
    let _ = writeln!(
        out,
        "    /// The path of this file under `shaders/`.\n    pub const FILE: &str = {:?};",
        stage.file
    );
    let params = match &stage.params {
        Some((origin, name)) => format!("super::{}::{}", module_name(origin), name),
        None => panic!("{}: no uniform params at binding 0", stage.file),
    };
    // Entries with the same bindings share one struct (so code may pick an entry at run time).
    let mut struct_for_set: BTreeMap<BTreeSet<u32>, String> = BTreeMap::new();
    for (entry_name, entry) in &stage.entries {
        let marker = camel(entry_name);
        let bindings_name = format!("{marker}Bindings");
        match struct_for_set.get(&entry.used) {
            Some(shared) => {
                let _ = writeln!(
                    out,
                    "    /// Storage bindings of `{entry_name}`: the same as [`{shared}`].\n    pub type {bindings_name}<'a> = {shared}<'a>;"
                );
            }
            None => {
                struct_for_set.insert(entry.used.clone(), bindings_name.clone());
                emit_bindings(out, stage, entry_name, &bindings_name, &entry.used);
            }
        }
        let overrides = match &stage.overrides_origin {
            Some(origin) => format!("super::{}::Overrides", module_name(origin)),
            None => "crate::gpu::kernels::NoOverrides".to_owned(),
        };
        let _ = writeln!(
            out,
            "    /// Entry point `{entry_name}` of `{file}`.\n    #[derive(Clone, Copy, Debug)]\n    pub struct {marker};\n    impl crate::gpu::kernels::KernelSpec for {marker} {{\n        const FILE: &'static str = FILE;\n        const ENTRY: &'static str = {entry_name:?};\n        type Params = {params};\n        type Bindings<'a> = {bindings_name}<'a>;\n        type Overrides = {overrides};\n    }}",
            file = stage.file
        );
    }
}

fn emit_bindings(
    out: &mut String,
    stage: &StageFile,
    entry: &str,
    name: &str,
    used: &BTreeSet<u32>,
) {
    let _ = writeln!(
        out,
        "    /// Storage bindings of `{entry}` in `{}`, by their WGSL names.\n    pub struct {name}<'a> {{",
        stage.file
    );
    for index in used {
        let b = &stage.bindings[index];
        let access = if b.writable { "read_write" } else { "read" };
        let elems: Vec<_> = b.elems.iter().map(String::as_str).collect();
        let _ = writeln!(
            out,
            "        /// `@binding({index})`, `{access}`, elements `{}`.\n        pub {}: crate::gpu::kernels::Arg<'a>,",
            elems.join(" | "),
            ident(&b.name)
        );
    }
    out.push_str("    }\n");
    let _ = writeln!(
        out,
        "    impl<'a> crate::gpu::kernels::BindingSet<'a> for {name}<'a> {{\n        const SLOTS: &'static [crate::gpu::kernels::Slot] = &["
    );
    for index in used {
        let b = &stage.bindings[index];
        let scalars: Vec<_> = b
            .scalars
            .iter()
            .map(|s| format!("crate::gpu::kernels::Scalar::{}", s.to_uppercase()))
            .collect();
        let _ = writeln!(
            out,
            "            crate::gpu::kernels::Slot {{ binding: {index}, name: {:?}, writable: {}, scalars: &[{}] }},",
            b.name,
            b.writable,
            scalars.join(", ")
        );
    }
    out.push_str("        ];\n        fn into_args(self) -> Vec<crate::gpu::kernels::Arg<'a>> {\n            vec![");
    let fields: Vec<_> = used
        .iter()
        .map(|i| format!("self.{}", ident(&stage.bindings[i].name)))
        .collect();
    out.push_str(&fields.join(", "));
    out.push_str("]\n        }\n    }\n");
}

/// The generated Rust source.
pub fn generate(reflection: &Reflection) -> String {
    let mut modules: BTreeMap<String, ModuleText> = BTreeMap::new();
    for ((origin, name), values) in &reflection.constants {
        if values.len() != 1 {
            continue; // differs between variants: no single Rust value
        }
        let (ty, literal) = values.iter().next().expect("one value");
        let text = &mut modules.entry(origin.clone()).or_default().items;
        let _ = writeln!(
            text,
            "    /// WGSL `const {name}` of `{origin}`.\n    #[allow(dead_code)]\n    pub const {name}: {ty} = {literal};"
        );
    }
    for ((origin, _), layout) in &reflection.structs {
        emit_struct(
            &mut modules.entry(origin.clone()).or_default().items,
            layout,
        );
    }
    for (origin, decls) in &reflection.overrides {
        emit_overrides(
            &mut modules.entry(origin.clone()).or_default().items,
            origin,
            decls,
        );
    }
    for stage in &reflection.stages {
        emit_stage(
            &mut modules.entry(stage.file.clone()).or_default().items,
            stage,
        );
    }
    let mut out = String::from("// @generated by build.rs from shaders/; do not edit.\n");
    out.push_str("/// Every generated kernel: file, entry, params size and bindings.\npub const ALL_KERNELS: &[KernelInfo] = &[\n");
    for stage in &reflection.stages {
        for entry in stage.entries.keys() {
            let marker = format!("{}::{}", module_name(&stage.file), camel(entry));
            let _ = writeln!(
                out,
                "    KernelInfo {{ file: {:?}, entry: {entry:?}, params_bytes: std::mem::size_of::<<{marker} as KernelSpec>::Params>(), slots: <<{marker} as KernelSpec>::Bindings<'static> as BindingSet<'static>>::SLOTS, default_overrides: || <<{marker} as KernelSpec>::Overrides as Default>::default().constants() }},",
                stage.file
            );
        }
    }
    out.push_str("];\n");
    for (file, module) in modules {
        let _ = writeln!(
            out,
            "/// Generated from `shaders/{file}`.\n#[allow(non_upper_case_globals, clippy::all)]\npub mod {} {{\n{}}}",
            module_name(&file),
            module.items
        );
    }
    out
}

//! Reflection of every stage shader, in every variant, with naga: what `emit.rs` turns into the
//! typed kernel bindings. Any WGSL error, or a struct or binding whose layout differs between
//! variants, stops the build with a message naming the file.

use crate::wgsl_source::{self, Lookup, Preprocessed};
use std::collections::{BTreeMap, BTreeSet};

/// A host-shareable WGSL struct, laid out as naga computes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructLayout {
    /// WGSL name.
    pub name: String,
    /// File (under `shaders/`) that declares it.
    pub origin: String,
    /// Members: (name, offset, Rust type).
    pub members: Vec<(String, u32, RustType)>,
    /// Size in bytes (naga's span).
    pub size: u32,
}

/// The Rust spelling of a member type, and its size in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RustType {
    /// Rust type, e.g. `[f32; 4]` or `shared_splat::RenderUniform`.
    pub spelling: String,
    /// Size in bytes.
    pub size: u32,
}

/// A storage binding of group 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// `@binding(n)`.
    pub index: u32,
    /// WGSL variable name.
    pub name: String,
    /// Declared `read_write` in some variant.
    pub writable: bool,
    /// WGSL element types over the variants (an array's element, or the whole type).
    pub elems: BTreeSet<String>,
    /// Scalar kinds of the elements (`f32`, `u32`, `i32`); empty for structs.
    pub scalars: BTreeSet<&'static str>,
}

/// A pipeline-overridable constant (WGSL `override`), as Rust sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverrideDecl {
    /// Rust type: `bool`, `u32`, `i32` or `f32`.
    pub ty: &'static str,
    /// The WGSL default as a Rust literal.
    pub default: String,
}

/// One compute entry point, over all variants of its file.
#[derive(Clone, Debug, Default)]
pub struct Entry {
    /// Storage bindings it uses in at least one variant.
    pub used: BTreeSet<u32>,
}

/// Everything generated for one stage file.
#[derive(Clone, Debug, Default)]
pub struct StageFile {
    /// Path under `shaders/`.
    pub file: String,
    /// The uniform at binding 0: (origin file, struct name).
    pub params: Option<(String, String)>,
    /// Storage bindings by index, over all variants.
    pub bindings: BTreeMap<u32, Binding>,
    /// Compute entry points by name.
    pub entries: BTreeMap<String, Entry>,
    /// The file that declares the `override`s this file sees (at most one may).
    pub overrides_origin: Option<String>,
}

/// Everything reflected from `shaders/`.
#[derive(Default)]
pub struct Reflection {
    /// Stage files, by path.
    pub stages: Vec<StageFile>,
    /// Structs by (origin file, name).
    pub structs: BTreeMap<(String, String), StructLayout>,
    /// Scalar constants by (origin file, name): (Rust type, literal) per distinct value.
    pub constants: BTreeMap<(String, String), BTreeSet<(String, String)>>,
    /// Pipeline-overridable constants by origin file, then WGSL name.
    pub overrides: BTreeMap<String, BTreeMap<String, OverrideDecl>>,
}

/// The Rust module that holds items declared in `file`: `shared/splat.wgsl` is `shared_splat`.
pub fn module_name(file: &str) -> String {
    file.trim_end_matches(".wgsl").replace('/', "_")
}

/// The variants of a file: every subset of the flags it tests.
fn variants(used: &BTreeSet<&'static str>) -> Vec<BTreeSet<&'static str>> {
    let flags: Vec<_> = used.iter().copied().collect();
    (0..1u32 << flags.len())
        .map(|mask| {
            (0..flags.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| flags[i])
                .collect()
        })
        .collect()
}

fn capabilities(flags: &BTreeSet<&'static str>) -> naga::valid::Capabilities {
    use naga::valid::Capabilities as C;
    let mut caps = C::empty();
    if flags.contains("SUBGROUPS") {
        caps |= C::SUBGROUP | C::SUBGROUP_BARRIER;
    }
    if flags.contains("FLOAT_ATOMICS") {
        caps |= C::SHADER_FLOAT32_ATOMIC;
    }
    caps
}

fn compile(
    file: &str,
    flags: &BTreeSet<&'static str>,
    lookup: Lookup,
) -> (naga::Module, naga::valid::ModuleInfo, Preprocessed) {
    let pre = wgsl_source::preprocess(file, &|f| flags.contains(f), lookup)
        .unwrap_or_else(|e| panic!("{}:{}: {}", e.file, e.line, e.message));
    let module = naga::front::wgsl::parse_str(&pre.source)
        .unwrap_or_else(|e| panic!("{file} ({flags:?}): {}", e.emit_to_string(&pre.source)));
    let mut validator =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), capabilities(flags));
    if flags.contains("SUBGROUPS") {
        validator.subgroup_stages(naga::valid::ShaderStages::COMPUTE);
        validator.subgroup_operations(naga::valid::SubgroupOperationSet::all());
    }
    let info = validator
        .validate(&module)
        .unwrap_or_else(|e| panic!("{file} ({flags:?}): {}", e.emit_to_string(&pre.source)));
    (module, info, pre)
}

/// The file that declares the item at `span`.
fn origin_of(span: naga::Span, pre: &Preprocessed) -> String {
    let line = span.location(&pre.source).line_number;
    pre.locate(line).0.to_owned()
}

fn scalar_name(s: naga::Scalar) -> Option<&'static str> {
    match (s.kind, s.width) {
        (naga::ScalarKind::Float, 4) => Some("f32"),
        (naga::ScalarKind::Uint, 4) => Some("u32"),
        (naga::ScalarKind::Sint, 4) => Some("i32"),
        _ => None,
    }
}

impl Reflection {
    /// Reflects `files` (paths under `shaders/`); `lookup` finds any file by path.
    pub fn of(files: &[&'static str], lookup: Lookup) -> Reflection {
        let mut out = Reflection::default();
        for &file in files {
            let used = wgsl_source::flags_used(file, lookup)
                .unwrap_or_else(|e| panic!("{}:{}: {}", e.file, e.line, e.message));
            let mut stage = StageFile {
                file: file.to_owned(),
                ..StageFile::default()
            };
            for flags in variants(&used) {
                let (module, info, pre) = compile(file, &flags, lookup);
                out.add_variant(&mut stage, &module, &info, &pre);
            }
            if !stage.entries.is_empty() {
                out.stages.push(stage);
            }
        }
        out
    }

    fn add_variant(
        &mut self,
        stage: &mut StageFile,
        module: &naga::Module,
        info: &naga::valid::ModuleInfo,
        pre: &Preprocessed,
    ) {
        for (handle, constant) in module.constants.iter() {
            let Some(name) = &constant.name else { continue };
            let literal = match module.global_expressions[constant.init] {
                naga::Expression::Literal(naga::Literal::U32(v)) => ("u32", format!("{v}")),
                naga::Expression::Literal(naga::Literal::I32(v)) => ("i32", format!("{v}")),
                naga::Expression::Literal(naga::Literal::F32(v)) => {
                    ("f32", format!("f32::from_bits(0x{:08x})", v.to_bits()))
                }
                _ => continue,
            };
            let origin = origin_of(module.constants.get_span(handle), pre);
            self.constants
                .entry((origin, name.clone()))
                .or_default()
                .insert((literal.0.to_owned(), literal.1));
        }
        self.add_overrides(stage, module, pre);
        let mut global_binding = BTreeMap::new();
        for (handle, global) in module.global_variables.iter() {
            let Some(binding) = &global.binding else {
                continue;
            };
            if binding.group != 0 {
                continue;
            }
            global_binding.insert(handle, binding.binding);
            match global.space {
                naga::AddressSpace::Uniform if binding.binding == 0 => {
                    let ty = &module.types[global.ty];
                    let name = ty.name.clone().unwrap_or_default();
                    let origin = origin_of(module.types.get_span(global.ty), pre);
                    self.struct_layout(module, global.ty, pre);
                    let params = (origin, name);
                    if stage.params.as_ref().is_some_and(|p| *p != params) {
                        panic!("{}: binding 0 changes type between variants", stage.file);
                    }
                    stage.params = Some(params);
                }
                naga::AddressSpace::Storage { access } => {
                    let elem_ty = match module.types[global.ty].inner {
                        naga::TypeInner::Array { base, .. } => base,
                        _ => global.ty,
                    };
                    let (elem, scalar) = self.elem_type(module, elem_ty, pre);
                    let entry = stage.bindings.entry(binding.binding).or_insert(Binding {
                        index: binding.binding,
                        name: global.name.clone().unwrap_or_default(),
                        writable: false,
                        elems: BTreeSet::new(),
                        scalars: BTreeSet::new(),
                    });
                    if entry.name != global.name.clone().unwrap_or_default() {
                        panic!(
                            "{}: binding {} is named differently in two variants",
                            stage.file, binding.binding
                        );
                    }
                    entry.writable |= access.contains(naga::StorageAccess::STORE);
                    entry.elems.insert(elem);
                    entry.scalars.extend(scalar);
                }
                _ => panic!(
                    "{}: binding {} of group 0 must be the uniform params (binding 0) or storage",
                    stage.file, binding.binding
                ),
            }
        }
        for (index, entry) in module.entry_points.iter().enumerate() {
            if entry.stage != naga::ShaderStage::Compute {
                continue;
            }
            let function_info = info.get_entry_point(index);
            let used = stage.entries.entry(entry.name.clone()).or_default();
            for (&handle, &binding) in &global_binding {
                if binding != 0 && !function_info[handle].is_empty() {
                    used.used.insert(binding);
                }
            }
        }
    }

    /// Registers the `override`s of one variant and the file that declares them.
    fn add_overrides(&mut self, stage: &mut StageFile, module: &naga::Module, pre: &Preprocessed) {
        for (handle, decl) in module.overrides.iter() {
            let name = decl.name.clone().expect("WGSL overrides are named");
            if decl.id.is_some() {
                panic!(
                    "{}: override {name} has an @id; the kernels set overrides by name",
                    stage.file
                );
            }
            let ty = match module.types[decl.ty].inner {
                naga::TypeInner::Scalar(naga::Scalar::BOOL) => "bool",
                naga::TypeInner::Scalar(s) => scalar_name(s)
                    .unwrap_or_else(|| panic!("{}: override {name} is not 32-bit", stage.file)),
                _ => panic!("{}: override {name} is not a scalar", stage.file),
            };
            let default = match decl.init.map(|e| &module.global_expressions[e]) {
                Some(naga::Expression::Literal(naga::Literal::Bool(v))) => format!("{v}"),
                Some(naga::Expression::Literal(naga::Literal::U32(v))) => format!("{v}"),
                Some(naga::Expression::Literal(naga::Literal::I32(v))) => format!("{v}"),
                Some(naga::Expression::Literal(naga::Literal::F32(v))) => {
                    format!("f32::from_bits(0x{:08x})", v.to_bits())
                }
                _ => panic!("{}: override {name} needs a literal default", stage.file),
            };
            let origin = origin_of(module.overrides.get_span(handle), pre);
            match &stage.overrides_origin {
                Some(known) if *known != origin => panic!(
                    "{}: overrides come from both {known} and {origin}; declare them in one file",
                    stage.file
                ),
                _ => stage.overrides_origin = Some(origin.clone()),
            }
            let entry = OverrideDecl { ty, default };
            let known = self.overrides.entry(origin.clone()).or_default();
            if let Some(previous) = known.get(&name) {
                assert_eq!(
                    *previous, entry,
                    "override {name} of {origin} differs between variants"
                );
            }
            known.insert(name, entry);
        }
    }

    /// A storage element's WGSL spelling and scalar kind (none for structs).
    fn elem_type(
        &mut self,
        module: &naga::Module,
        ty: naga::Handle<naga::Type>,
        pre: &Preprocessed,
    ) -> (String, Option<&'static str>) {
        match module.types[ty].inner {
            naga::TypeInner::Scalar(s) => {
                (scalar_name(s).unwrap_or("?").to_owned(), scalar_name(s))
            }
            naga::TypeInner::Atomic(s) => (
                format!("atomic<{}>", scalar_name(s).unwrap_or("?")),
                scalar_name(s),
            ),
            naga::TypeInner::Vector { size, scalar } => (
                format!("vec{}<{}>", size as u8, scalar_name(scalar).unwrap_or("?")),
                scalar_name(scalar),
            ),
            naga::TypeInner::Struct { .. } => {
                let layout = self.struct_layout(module, ty, pre);
                (layout.name, None)
            }
            ref other => panic!("unsupported storage element type {other:?}"),
        }
    }

    /// The Rust type of a member, registering nested structs.
    fn rust_type(
        &mut self,
        module: &naga::Module,
        ty: naga::Handle<naga::Type>,
        pre: &Preprocessed,
    ) -> RustType {
        let size = module.types[ty].inner.size(module.to_ctx());
        let spelling = match module.types[ty].inner {
            naga::TypeInner::Scalar(s) | naga::TypeInner::Atomic(s) => {
                scalar_name(s).expect("32-bit scalar").to_owned()
            }
            naga::TypeInner::Vector { size: n, scalar } => {
                format!("[{}; {}]", scalar_name(scalar).expect("32-bit"), n as u8)
            }
            naga::TypeInner::Matrix {
                columns,
                rows,
                scalar,
            } => {
                let stride = if rows as u8 == 2 { 2 } else { 4 };
                format!(
                    "[[{}; {stride}]; {}]",
                    scalar_name(scalar).expect("32-bit"),
                    columns as u8
                )
            }
            naga::TypeInner::Array {
                base,
                size: naga::ArraySize::Constant(n),
                stride,
            } => {
                let inner = self.rust_type(module, base, pre);
                assert_eq!(
                    inner.size, stride,
                    "array stride must equal its element size"
                );
                format!("[{}; {n}]", inner.spelling)
            }
            naga::TypeInner::Struct { .. } => {
                let layout = self.struct_layout(module, ty, pre);
                format!("super::{}::{}", module_name(&layout.origin), layout.name)
            }
            ref other => panic!("unsupported member type {other:?}"),
        };
        RustType { spelling, size }
    }

    /// Registers a struct (and the structs it contains) and returns its layout.
    fn struct_layout(
        &mut self,
        module: &naga::Module,
        ty: naga::Handle<naga::Type>,
        pre: &Preprocessed,
    ) -> StructLayout {
        let naga::TypeInner::Struct { members, span } = &module.types[ty].inner else {
            panic!("binding 0 must be a struct");
        };
        let name = module.types[ty].name.clone().expect("structs are named");
        let origin = origin_of(module.types.get_span(ty), pre);
        let members = members
            .iter()
            .map(|m| {
                let rust = self.rust_type(module, m.ty, pre);
                (m.name.clone().unwrap_or_default(), m.offset, rust)
            })
            .collect();
        let layout = StructLayout {
            name: name.clone(),
            origin: origin.clone(),
            members,
            size: *span,
        };
        let key = (origin, name);
        if let Some(known) = self.structs.get(&key) {
            assert_eq!(
                *known, layout,
                "struct {} of {} has two layouts",
                key.1, key.0
            );
        }
        self.structs.insert(key, layout.clone());
        layout
    }
}

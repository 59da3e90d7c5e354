//! The one mechanism through which WGSL is assembled: a small line preprocessor with `#import` and
//! `#if FLAG / #else / #endif`, followed by naga parsing and validation of the exact variant.
//!
//! Directives live in the WGSL files themselves; Rust never splices shader text. Each output line
//! remembers the file and line it came from, so a naga error points at the right place in the right
//! file. A variant is a set of [`ShaderFlag`]s; [`Variant::all_for`] lists every variant a file can be
//! built in, and the test suite compiles all of them.
//!
//! The directives themselves are parsed by [`super::wgsl_source`], which `build.rs` shares.
//!
//! Variants follow the device (its features and type). A mode chosen per dispatch is a WGSL
//! `override` instead, set when the pipeline is built ([`crate::gpu::kernels::PipelineOverrides`]).

use crate::error::{Error, Result};
use crate::gpu::wgsl_source;
pub use crate::gpu::wgsl_source::Preprocessed;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, OnceLock};

include!(concat!(env!("OUT_DIR"), "/shader_files.rs"));

/// Device capabilities a shader variant may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ShaderFlag {
    /// Subgroup operations (`subgroupAdd`, ballots, ...). Requires `Features::SUBGROUP`.
    Subgroups,
    /// `atomic<f32>` in storage buffers. Requires `Features::SHADER_FLOAT32_ATOMIC`.
    FloatAtomics,
    /// Workgroup layouts tuned for CPU adapters such as lavapipe (fewer invocations per tile, more
    /// pixels each); needs no feature. On by default where the adapter's type is CPU.
    CpuLayout,
}

impl ShaderFlag {
    /// Every flag.
    pub const ALL: [ShaderFlag; 3] = [
        ShaderFlag::Subgroups,
        ShaderFlag::FloatAtomics,
        ShaderFlag::CpuLayout,
    ];

    /// The name used in `#if` directives.
    pub fn directive_name(self) -> &'static str {
        match self {
            ShaderFlag::Subgroups => "SUBGROUPS",
            ShaderFlag::FloatAtomics => "FLOAT_ATOMICS",
            ShaderFlag::CpuLayout => "CPU_LAYOUT",
        }
    }

    /// The flag a directive name stands for.
    pub fn from_directive_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.directive_name() == name)
    }
}

/// A set of enabled flags. The default (no flags) is the portable variant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Variant {
    /// Subgroup operations enabled.
    pub subgroups: bool,
    /// Float atomics enabled.
    pub float_atomics: bool,
    /// CPU-adapter workgroup layouts ([`ShaderFlag::CpuLayout`]).
    pub cpu_layout: bool,
}

impl Variant {
    /// The portable variant: no optional features.
    pub const PORTABLE: Variant = Variant {
        subgroups: false,
        float_atomics: false,
        cpu_layout: false,
    };

    /// Whether a flag is on.
    pub fn has(self, flag: ShaderFlag) -> bool {
        match flag {
            ShaderFlag::Subgroups => self.subgroups,
            ShaderFlag::FloatAtomics => self.float_atomics,
            ShaderFlag::CpuLayout => self.cpu_layout,
        }
    }

    /// A readable name, e.g. `portable` or `subgroups+float_atomics`.
    pub fn name(self) -> String {
        let mut parts = Vec::new();
        if self.subgroups {
            parts.push("subgroups");
        }
        if self.float_atomics {
            parts.push("float_atomics");
        }
        if self.cpu_layout {
            parts.push("cpu_layout");
        }
        if parts.is_empty() {
            "portable".to_owned()
        } else {
            parts.join("+")
        }
    }

    /// This variant restricted to the flags a file actually tests.
    pub fn restricted_to(self, used: &BTreeSet<ShaderFlag>) -> Variant {
        Variant {
            subgroups: self.subgroups && used.contains(&ShaderFlag::Subgroups),
            float_atomics: self.float_atomics && used.contains(&ShaderFlag::FloatAtomics),
            cpu_layout: self.cpu_layout && used.contains(&ShaderFlag::CpuLayout),
        }
    }

    /// Every variant of a file: all subsets of the flags it (or its imports) tests.
    pub fn all_for(file: &str) -> Result<Vec<Variant>> {
        let used = flags_used(file)?;
        let mut out = Vec::new();
        for subgroups in [false, true] {
            for float_atomics in [false, true] {
                for cpu_layout in [false, true] {
                    let v = Variant {
                        subgroups,
                        float_atomics,
                        cpu_layout,
                    };
                    if v.restricted_to(&used) == v {
                        out.push(v);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The naga capabilities this variant may use. The portable variant gets none of the optional
    /// ones, so validation proves it needs neither subgroups nor float atomics.
    pub fn capabilities(self) -> naga::valid::Capabilities {
        use naga::valid::Capabilities as C;
        let mut caps = C::empty();
        if self.subgroups {
            caps |= C::SUBGROUP | C::SUBGROUP_BARRIER;
        }
        if self.float_atomics {
            caps |= C::SHADER_FLOAT32_ATOMIC;
        }
        caps
    }
}

/// The paths of every WGSL file under `shaders/`, relative to it.
pub fn all_files() -> impl Iterator<Item = &'static str> {
    SHADER_FILES.iter().map(|(path, _)| *path)
}

/// Files that are entry-point stages (not under `shared/`).
pub fn stage_files() -> impl Iterator<Item = &'static str> {
    all_files().filter(|p| !p.starts_with("shared/"))
}

fn lookup(file: &str) -> Option<(&'static str, &'static str)> {
    SHADER_FILES.iter().find(|(path, _)| *path == file).copied()
}

fn directive_error(e: wgsl_source::DirectiveError) -> Error {
    Error::ShaderDirective {
        file: e.file,
        line: e.line,
        message: e.message,
    }
}

/// The flags tested by a file and everything it imports. Every kernel lookup asks, so each
/// file's answer is computed once per process (the sources are compiled in).
pub fn flags_used(file: &str) -> Result<BTreeSet<ShaderFlag>> {
    type FlagsByFile = HashMap<&'static str, BTreeSet<ShaderFlag>>;
    static KNOWN: OnceLock<Mutex<FlagsByFile>> = OnceLock::new();
    let known = KNOWN.get_or_init(Mutex::default);
    if let Some(flags) = known.lock().unwrap_or_else(|p| p.into_inner()).get(file) {
        return Ok(flags.clone());
    }
    let names = wgsl_source::flags_used(file, &lookup).map_err(directive_error)?;
    let flags: BTreeSet<ShaderFlag> = names
        .into_iter()
        .filter_map(ShaderFlag::from_directive_name)
        .collect();
    if let Some((path, _)) = lookup(file) {
        known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(path, flags.clone());
    }
    Ok(flags)
}

/// Assembles one variant of a file.
pub fn preprocess(file: &str, variant: Variant) -> Result<Preprocessed> {
    let enabled =
        |name: &str| ShaderFlag::from_directive_name(name).is_some_and(|f| variant.has(f));
    wgsl_source::preprocess(file, &enabled, &lookup).map_err(directive_error)
}

/// A parsed and validated shader variant.
pub struct CompiledShader {
    /// The naga module.
    pub module: naga::Module,
    /// naga's validation info (needed by the back ends).
    pub info: naga::valid::ModuleInfo,
    /// The preprocessed source the module came from.
    pub preprocessed: Preprocessed,
}

/// Preprocesses, parses and validates one variant of a file.
pub fn compile(file: &str, variant: Variant) -> Result<CompiledShader> {
    let preprocessed = preprocess(file, variant)?;
    let error_at = |line: u32, column: u32, message: String| {
        let (origin_file, origin_line) = preprocessed.locate(line);
        Error::Shader {
            file: origin_file.to_owned(),
            line: origin_line,
            column,
            variant: variant.name(),
            message,
        }
    };
    let module = naga::front::wgsl::parse_str(&preprocessed.source).map_err(|e| {
        let loc = e.location(&preprocessed.source);
        error_at(
            loc.map_or(0, |l| l.line_number),
            loc.map_or(0, |l| l.line_position),
            e.emit_to_string(&preprocessed.source),
        )
    })?;
    let mut validator =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), variant.capabilities());
    if variant.subgroups {
        validator.subgroup_stages(naga::valid::ShaderStages::COMPUTE);
        validator.subgroup_operations(naga::valid::SubgroupOperationSet::all());
    }
    let info = validator.validate(&module).map_err(|e| {
        let loc = e
            .spans()
            .next()
            .map(|(span, _)| span.location(&preprocessed.source));
        error_at(
            loc.map_or(0, |l| l.line_number),
            loc.map_or(0, |l| l.line_position),
            e.emit_to_string(&preprocessed.source),
        )
    })?;
    Ok(CompiledShader {
        module,
        info,
        preprocessed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_reachable_and_named_relative() {
        assert!(all_files().count() > 0);
        for f in all_files() {
            assert!(f.ends_with(".wgsl") && !f.starts_with('/'), "{f}");
        }
    }

    #[test]
    fn bad_directive_is_reported_with_file_and_line() {
        let err = directive_error(
            wgsl_source::parse_directive("x.wgsl", 7, "#frobnicate")
                .err()
                .expect("must fail"),
        );
        assert!(err.to_string().contains("x.wgsl:7"), "{err}");
        let err = wgsl_source::parse_directive("x.wgsl", 3, "#if NOPE")
            .err()
            .expect("must fail");
        assert!(err.message.contains("unknown flag NOPE"), "{err:?}");
        for flag in ShaderFlag::ALL {
            assert!(wgsl_source::KNOWN_FLAGS.contains(&flag.directive_name()));
        }
    }
}

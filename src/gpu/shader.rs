//! The one mechanism through which WGSL is assembled: a small line preprocessor with `#import` and
//! `#if FLAG / #else / #endif`, followed by naga parsing and validation of the exact variant.
//!
//! Directives live in the WGSL files themselves; Rust never splices shader text. Each output line
//! remembers the file and line it came from, so a naga error points at the right place in the right
//! file. A variant is a set of [`ShaderFlag`]s; [`Variant::all_for`] lists every variant a file can be
//! built in, and the test suite compiles all of them.
//!
//! Directive syntax (the `#` must be the first non-blank character of the line):
//! - `#import "shared/name.wgsl"`: paste that file once (repeated imports are ignored);
//! - `#if SUBGROUPS`, `#if !FLOAT_ATOMICS`, `#else`, `#endif`: conditional blocks, nestable.

use crate::error::{Error, Result};
use std::collections::BTreeSet;

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

    fn from_directive_name(name: &str) -> Option<Self> {
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

fn source_of(file: &str) -> Option<&'static str> {
    SHADER_FILES
        .iter()
        .find(|(path, _)| *path == file)
        .map(|(_, src)| *src)
}

/// Preprocessed WGSL with a map from output lines to their origin.
#[derive(Clone, Debug)]
pub struct Preprocessed {
    /// The assembled WGSL.
    pub source: String,
    /// For each output line (0-based), the file and 1-based line it came from.
    pub origin: Vec<(&'static str, u32)>,
}

impl Preprocessed {
    /// Maps a 1-based line of the assembled source back to (file, line).
    pub fn locate(&self, line: u32) -> (&'static str, u32) {
        self.origin
            .get(line.saturating_sub(1) as usize)
            .copied()
            .unwrap_or(("<unknown>", 0))
    }
}

enum Directive<'a> {
    Import(&'a str),
    If { flag: ShaderFlag, negated: bool },
    Else,
    EndIf,
}

fn parse_directive<'a>(file: &str, line_no: u32, line: &'a str) -> Result<Option<Directive<'a>>> {
    let trimmed = line.trim_start();
    let Some(rest) = trimmed.strip_prefix('#') else {
        return Ok(None);
    };
    let bad = |message: String| Error::ShaderDirective {
        file: file.to_owned(),
        line: line_no,
        message,
    };
    let mut words = rest.split_whitespace();
    match words.next() {
        Some("import") => {
            let arg = words
                .next()
                .ok_or_else(|| bad("#import needs a quoted path".into()))?;
            let path = arg
                .strip_prefix('"')
                .and_then(|a| a.strip_suffix('"'))
                .ok_or_else(|| bad(format!("#import path must be quoted, got {arg}")))?;
            Ok(Some(Directive::Import(path)))
        }
        Some("if") => {
            let arg = words.next().ok_or_else(|| bad("#if needs a flag".into()))?;
            let (negated, name) = match arg.strip_prefix('!') {
                Some(n) => (true, n),
                None => (false, arg),
            };
            let flag = ShaderFlag::from_directive_name(name).ok_or_else(|| {
                bad(format!(
                    "unknown flag {name}; known flags are SUBGROUPS, FLOAT_ATOMICS and CPU_LAYOUT"
                ))
            })?;
            Ok(Some(Directive::If { flag, negated }))
        }
        Some("else") => Ok(Some(Directive::Else)),
        Some("endif") => Ok(Some(Directive::EndIf)),
        other => Err(bad(format!("unknown directive #{}", other.unwrap_or("")))),
    }
}

/// The flags tested by a file and everything it imports.
pub fn flags_used(file: &str) -> Result<BTreeSet<ShaderFlag>> {
    let mut flags = BTreeSet::new();
    let mut seen = BTreeSet::new();
    collect_flags(file, &mut flags, &mut seen, file, 0)?;
    Ok(flags)
}

fn collect_flags(
    file: &str,
    flags: &mut BTreeSet<ShaderFlag>,
    seen: &mut BTreeSet<String>,
    from: &str,
    from_line: u32,
) -> Result<()> {
    if !seen.insert(file.to_owned()) {
        return Ok(());
    }
    let source = source_of(file).ok_or_else(|| Error::ShaderDirective {
        file: from.to_owned(),
        line: from_line,
        message: format!("no shader file {file:?} under shaders/"),
    })?;
    for (index, line) in source.lines().enumerate() {
        let line_no = index as u32 + 1;
        match parse_directive(file, line_no, line)? {
            Some(Directive::Import(path)) => collect_flags(path, flags, seen, file, line_no)?,
            Some(Directive::If { flag, .. }) => {
                flags.insert(flag);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Assembles one variant of a file.
pub fn preprocess(file: &str, variant: Variant) -> Result<Preprocessed> {
    let mut out = Preprocessed {
        source: String::new(),
        origin: Vec::new(),
    };
    let mut imported = BTreeSet::new();
    emit(file, variant, &mut out, &mut imported, file, 0)?;
    Ok(out)
}

fn emit(
    file: &str,
    variant: Variant,
    out: &mut Preprocessed,
    imported: &mut BTreeSet<String>,
    from: &str,
    from_line: u32,
) -> Result<()> {
    if !imported.insert(file.to_owned()) {
        return Ok(());
    }
    let (static_file, source) = SHADER_FILES
        .iter()
        .find(|(p, _)| *p == file)
        .copied()
        .ok_or_else(|| Error::ShaderDirective {
            file: from.to_owned(),
            line: from_line,
            message: format!("no shader file {file:?} under shaders/"),
        })?;
    // Stack of (branch active, parent active, else seen).
    let mut stack: Vec<(bool, bool, bool)> = Vec::new();
    let active = |stack: &Vec<(bool, bool, bool)>| stack.last().is_none_or(|s| s.0);
    for (index, line) in source.lines().enumerate() {
        let line_no = index as u32 + 1;
        let bad = |message: &str| Error::ShaderDirective {
            file: file.to_owned(),
            line: line_no,
            message: message.to_owned(),
        };
        match parse_directive(file, line_no, line)? {
            Some(Directive::Import(path)) => {
                if active(&stack) {
                    emit(path, variant, out, imported, static_file, line_no)?;
                }
            }
            Some(Directive::If { flag, negated }) => {
                let parent = active(&stack);
                stack.push((parent && (variant.has(flag) != negated), parent, false));
            }
            Some(Directive::Else) => {
                let top = stack.last_mut().ok_or_else(|| bad("#else without #if"))?;
                if top.2 {
                    return Err(bad("second #else for one #if"));
                }
                *top = (top.1 && !top.0, top.1, true);
            }
            Some(Directive::EndIf) => {
                stack.pop().ok_or_else(|| bad("#endif without #if"))?;
            }
            None => {
                if active(&stack) {
                    out.source.push_str(line);
                    out.source.push('\n');
                    out.origin.push((static_file, line_no));
                }
            }
        }
    }
    if !stack.is_empty() {
        return Err(Error::ShaderDirective {
            file: file.to_owned(),
            line: source.lines().count() as u32,
            message: "#if without #endif".to_owned(),
        });
    }
    Ok(())
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
        let err = parse_directive("x.wgsl", 7, "#frobnicate")
            .err()
            .expect("must fail");
        assert!(err.to_string().contains("x.wgsl:7"), "{err}");
        let err = parse_directive("x.wgsl", 3, "#if NOPE")
            .err()
            .expect("must fail");
        assert!(err.to_string().contains("unknown flag NOPE"), "{err}");
    }
}

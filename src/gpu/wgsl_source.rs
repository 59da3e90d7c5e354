//! The WGSL line preprocessor: `#import "path"` and `#if FLAG / #if !FLAG / #else / #endif`.
//!
//! Standard library only, because two crates compile this one file: the library
//! ([`crate::gpu::shader`], which adds naga validation and the crate's error type) and `build.rs`
//! (which reflects every variant to generate the typed kernel bindings). One implementation, so
//! the variants the build script reflects are exactly the ones the library compiles.
//!
//! Directive syntax (the `#` must be the first non-blank character of the line):
//! - `#import "shared/name.wgsl"`: paste that file once (repeated imports are ignored);
//! - `#if SUBGROUPS`, `#if !FLOAT_ATOMICS`, `#else`, `#endif`: conditional blocks, nestable.

use std::collections::BTreeSet;

/// The flag names `#if` accepts.
pub const KNOWN_FLAGS: [&str; 3] = ["SUBGROUPS", "FLOAT_ATOMICS", "CPU_LAYOUT"];

/// Finds a shader by its path under `shaders/`: the path as stored, and the source.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<(&'static str, &'static str)>;

/// A malformed directive or a missing import.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectiveError {
    /// File holding the bad directive.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// What is wrong.
    pub message: String,
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

/// One parsed directive line.
pub enum Directive<'a> {
    /// `#import "path"`.
    Import(&'a str),
    /// `#if FLAG` (or `#if !FLAG` when negated); `flag` is one of [`KNOWN_FLAGS`].
    If {
        /// The flag's name.
        flag: &'static str,
        /// `#if !FLAG`.
        negated: bool,
    },
    /// `#else`.
    Else,
    /// `#endif`.
    EndIf,
}

/// Parses one line: `Ok(None)` for ordinary WGSL.
pub fn parse_directive<'a>(
    file: &str,
    line_no: u32,
    line: &'a str,
) -> Result<Option<Directive<'a>>, DirectiveError> {
    let trimmed = line.trim_start();
    let Some(rest) = trimmed.strip_prefix('#') else {
        return Ok(None);
    };
    let bad = |message: String| DirectiveError {
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
            let flag = KNOWN_FLAGS
                .into_iter()
                .find(|f| *f == name)
                .ok_or_else(|| {
                    bad(format!(
                        "unknown flag {name}; known flags are {}",
                        KNOWN_FLAGS.join(", ")
                    ))
                })?;
            Ok(Some(Directive::If { flag, negated }))
        }
        Some("else") => Ok(Some(Directive::Else)),
        Some("endif") => Ok(Some(Directive::EndIf)),
        other => Err(bad(format!("unknown directive #{}", other.unwrap_or("")))),
    }
}

fn missing(file: &str, from: &str, from_line: u32) -> DirectiveError {
    DirectiveError {
        file: from.to_owned(),
        line: from_line,
        message: format!("no shader file {file:?} under shaders/"),
    }
}

/// The flags tested by a file and everything it imports.
pub fn flags_used(file: &str, lookup: Lookup) -> Result<BTreeSet<&'static str>, DirectiveError> {
    let mut flags = BTreeSet::new();
    let mut seen = BTreeSet::new();
    collect_flags(file, lookup, &mut flags, &mut seen, file, 0)?;
    Ok(flags)
}

fn collect_flags(
    file: &str,
    lookup: Lookup,
    flags: &mut BTreeSet<&'static str>,
    seen: &mut BTreeSet<String>,
    from: &str,
    from_line: u32,
) -> Result<(), DirectiveError> {
    if !seen.insert(file.to_owned()) {
        return Ok(());
    }
    let (_, source) = lookup(file).ok_or_else(|| missing(file, from, from_line))?;
    for (index, line) in source.lines().enumerate() {
        let line_no = index as u32 + 1;
        match parse_directive(file, line_no, line)? {
            Some(Directive::Import(path)) => {
                collect_flags(path, lookup, flags, seen, file, line_no)?
            }
            Some(Directive::If { flag, .. }) => {
                flags.insert(flag);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Assembles one variant of a file: `enabled(flag)` says which flags are on.
pub fn preprocess(
    file: &str,
    enabled: &dyn Fn(&str) -> bool,
    lookup: Lookup,
) -> Result<Preprocessed, DirectiveError> {
    let mut out = Preprocessed {
        source: String::new(),
        origin: Vec::new(),
    };
    let mut imported = BTreeSet::new();
    emit(file, enabled, lookup, &mut out, &mut imported, file, 0)?;
    Ok(out)
}

fn emit(
    file: &str,
    enabled: &dyn Fn(&str) -> bool,
    lookup: Lookup,
    out: &mut Preprocessed,
    imported: &mut BTreeSet<String>,
    from: &str,
    from_line: u32,
) -> Result<(), DirectiveError> {
    if !imported.insert(file.to_owned()) {
        return Ok(());
    }
    let (static_file, source) = lookup(file).ok_or_else(|| missing(file, from, from_line))?;
    // Stack of (branch active, parent active, else seen).
    let mut stack: Vec<(bool, bool, bool)> = Vec::new();
    let active = |stack: &Vec<(bool, bool, bool)>| stack.last().is_none_or(|s| s.0);
    for (index, line) in source.lines().enumerate() {
        let line_no = index as u32 + 1;
        let bad = |message: &str| DirectiveError {
            file: file.to_owned(),
            line: line_no,
            message: message.to_owned(),
        };
        match parse_directive(file, line_no, line)? {
            Some(Directive::Import(path)) => {
                if active(&stack) {
                    emit(path, enabled, lookup, out, imported, static_file, line_no)?;
                }
            }
            Some(Directive::If { flag, negated }) => {
                let parent = active(&stack);
                stack.push((parent && (enabled(flag) != negated), parent, false));
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
        return Err(DirectiveError {
            file: file.to_owned(),
            line: source.lines().count() as u32,
            message: "#if without #endif".to_owned(),
        });
    }
    Ok(())
}

//! Embeds every WGSL file under `shaders/` into the library, so the shader table always matches the
//! directory and nothing is listed by hand; then reflects every variant of every stage shader with
//! naga and generates the typed kernel bindings (`$OUT_DIR/kernels.rs`, included by
//! `src/gpu/kernels.rs`). A shader that does not validate fails the build.

#[path = "build/emit.rs"]
mod emit;
#[path = "build/reflect.rs"]
mod reflect;
#[path = "src/gpu/wgsl_source.rs"]
#[allow(dead_code)]
mod wgsl_source;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("shaders/ is readable")
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "wgsl") {
            out.push(path.strip_prefix(root).expect("under root").to_path_buf());
        }
    }
}

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest_dir).join("shaders");
    println!("cargo:rerun-if-changed=shaders");
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    let mut sources: Vec<(&'static str, &'static str)> = Vec::new();
    for file in &files {
        let rel = file.to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(root.join(file)).expect("shaders are UTF-8 text");
        sources.push((
            Box::leak(rel.into_boxed_str()),
            Box::leak(text.into_boxed_str()),
        ));
    }
    let lookup = |path: &str| sources.iter().find(|(p, _)| *p == path).copied();
    let stages: Vec<&'static str> = sources
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| !p.starts_with("shared/"))
        .collect();
    let reflection = reflect::Reflection::of(&stages, &lookup);
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out_dir.join("kernels.rs"), emit::generate(&reflection))
        .expect("OUT_DIR is writable");
    let mut table = String::from(
        "/// Every WGSL file under `shaders/`: (path relative to `shaders/`, source).\npub(crate) static SHADER_FILES: &[(&str, &str)] = &[\n",
    );
    for file in files {
        let rel = file.to_string_lossy().replace('\\', "/");
        let abs = root.join(&file);
        writeln!(
            table,
            "    ({rel:?}, include_str!({:?})),",
            abs.to_string_lossy()
        )
        .expect("string write");
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("shader_files.rs");
    std::fs::write(out, table).expect("OUT_DIR is writable");
}

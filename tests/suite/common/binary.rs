//! Running the `wgsplat` binary from the modules that drive it end to end (`cli`, `sfm`): a fresh
//! temporary folder per test, a run, and a run that must fail.

use std::path::PathBuf;
use std::process::{Command, Output};

/// A fresh, empty folder for test `name` of the calling file (`cli`, `sfm`), unique to this
/// process.
#[track_caller]
pub fn temp_dir(name: &str) -> PathBuf {
    let caller = std::path::Path::new(std::panic::Location::caller().file());
    // A folder module's `mod.rs` is named by its folder.
    let file = match caller.file_stem() {
        Some(stem) if stem == "mod" => caller.parent().and_then(|p| p.file_name()),
        stem => stem,
    };
    let module = file.and_then(|s| s.to_str()).unwrap_or("test");
    let dir = std::env::temp_dir().join(format!("wgsplat-{module}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A finished process's stdout and stderr, labelled, for assertion messages and searches.
pub fn output_text(out: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `wgsplat` with `args`.
pub fn wgsplat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wgsplat"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs a command that must fail without panicking, and returns its stderr.
pub fn expect_failure(args: &[&str]) -> String {
    failure_text(&wgsplat(args), &format!("{args:?}"))
}

/// The stderr of `out`, a finished run of `what` that must have failed without panicking.
pub fn failure_text(out: &Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{what} should fail; stderr:\n{err}");
    assert!(!err.contains("panicked"), "{what} panicked:\n{err}");
    err
}

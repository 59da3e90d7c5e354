//! Running one test of this binary again in a child process: alone in its process (a test that
//! holds the process's resident memory flat), or with its memory capped (hostile files, whose
//! allocations past the cap must fail there instead of taking the machine's memory).

use std::process::Command;

/// A cap on a child's memory.
#[derive(Clone, Copy, Debug)]
pub enum MemoryCap {
    /// The address space, in MiB (`ulimit -v` through `sh`; Linux only).
    AddressSpaceMib(u64),
    /// The data segment and private writable mappings, in bytes (`prlimit --data`, util-linux).
    DataBytes(u64),
}

/// Set in a child process to the path of the test it runs.
const CHILD_ENV: &str = "WGSPLAT_TEST_CHILD";

/// The path that `--exact` filters give test `name` of `module` (a `module_path!()`) in this
/// binary: the module path without the crate's name, then the name.
pub fn test_path(module: &str, name: &str) -> String {
    let in_binary = module.split_once("::").map_or("", |(_, rest)| rest);
    match in_binary {
        "" => name.to_owned(),
        _ => format!("{in_binary}::{name}"),
    }
}

/// Runs the test at `path` (see [`test_path`]) again in a child process of this binary, with its
/// memory capped by `cap` when given, and fails the calling test if the child's does (an abort
/// included). Returns true when the caller should stop (the child ran the test and passed); false
/// in the child itself, and where the cap cannot be applied (`ulimit` off Linux, no `prlimit`),
/// where the caller then runs the body itself.
pub fn rerun_in_child(path: &str, cap: Option<MemoryCap>) -> bool {
    if std::env::var(CHILD_ENV).is_ok_and(|v| v == path) {
        return false;
    }
    let exe = std::env::current_exe().unwrap();
    let mut command = match cap {
        None => Command::new(&exe),
        Some(MemoryCap::AddressSpaceMib(mib)) => {
            if !cfg!(target_os = "linux") {
                return false;
            }
            let mut sh = Command::new("sh");
            sh.arg("-c")
                .arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", mib << 10))
                .arg(&exe);
            sh
        }
        Some(MemoryCap::DataBytes(bytes)) => {
            if Command::new("prlimit").arg("--version").output().is_err() {
                eprintln!("prlimit is missing: running {path} without a memory cap");
                return false;
            }
            let mut prlimit = Command::new("prlimit");
            prlimit.arg(format!("--data={bytes}")).arg("--").arg(&exe);
            prlimit
        }
    };
    let output = command
        .args([path, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, path)
        .output()
        .unwrap();
    let text = super::binary::output_text(&output);
    assert!(
        output.status.success() && text.contains("1 passed"),
        "the child running {path} (memory cap: {cap:?}) failed ({}):\n{text}",
        output.status
    );
    true
}

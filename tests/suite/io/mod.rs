//! Files in and out: camera lens models against OpenCV ([`lens`]), real captures end to end
//! ([`real_captures`]) and the default size of photographs ([`resolution`]), splat model formats
//! against PlayCanvas's splat-transform ([`formats`], SOG in [`sog`], SPZ versions in [`spz`] and
//! hostile SPZ files in [`spz_hostile`]), every other model reader against hostile files
//! ([`hostile`]), datasets ([`data`]; careless and hostile ones in [`hostile_data`], seeded
//! mutations of their files in [`mutation`]), the built-in town and the ray tracer's BVH
//! ([`town`]), PLY files ([`ply`]), checkpoints ([`checkpoint`]) and the far-field points
//! coloured from a capture's images ([`sky`]).

mod checkpoint;
mod data;
mod formats;
mod hostile;
mod hostile_data;
mod lens;
mod mutation;
mod ply;
mod pose_refinement;
mod real_captures;
mod resolution;
mod sky;
mod sog;
mod spz;
mod spz_hostile;
mod town;

use std::path::PathBuf;
use std::process::Command;

/// The path that `--exact` filters give test `name` (named from this module down, e.g.
/// `hostile::cases::x`) in the test binary.
fn test_path(name: &str) -> String {
    let module = module_path!();
    let in_binary = module.split_once("::").map_or(module, |(_, rest)| rest);
    format!("{in_binary}::{name}")
}

/// How [`run_in_capped_child`] caps a child's memory.
#[derive(Clone, Copy, Debug)]
pub enum MemoryCap {
    /// The address space, in MiB (`ulimit -v` through `sh`; Linux only).
    AddressSpaceMib(u64),
    /// The data segment and private writable mappings, in bytes (`prlimit --data`, util-linux).
    DataBytes(u64),
}

/// Set in a child process to the name of the test it runs.
const CAPPED_CHILD_ENV: &str = "WGSPLAT_CAPPED_CHILD";

/// Runs test `name` (named from this module down, e.g. `hostile::cases::x`) again in a child
/// process whose memory is capped by `cap`, so that an allocation past it fails there instead of
/// taking the machine's memory, and an abort fails this test only. Returns true when the caller
/// should stop (the child ran the test and passed); false in the child itself, and where the cap
/// cannot be applied (`ulimit` off Linux, no `prlimit`), where the caller then runs the body.
pub fn run_in_capped_child(name: &str, cap: MemoryCap) -> bool {
    if std::env::var(CAPPED_CHILD_ENV).is_ok_and(|v| v == name) {
        return false;
    }
    let exe = std::env::current_exe().unwrap();
    let mut command = match cap {
        MemoryCap::AddressSpaceMib(mib) => {
            if !cfg!(target_os = "linux") {
                return false;
            }
            let mut sh = Command::new("sh");
            sh.arg("-c")
                .arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", mib << 10))
                .arg(&exe);
            sh
        }
        MemoryCap::DataBytes(bytes) => {
            if Command::new("prlimit").arg("--version").output().is_err() {
                eprintln!("prlimit is missing: running {name} without a memory cap");
                return false;
            }
            let mut prlimit = Command::new("prlimit");
            prlimit.arg(format!("--data={bytes}")).arg("--").arg(&exe);
            prlimit
        }
    };
    let output = command
        .args([
            &test_path(name),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CAPPED_CHILD_ENV, name)
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && text.contains("1 passed"),
        "the child running {name} under {cap:?} failed ({}):\n{text}",
        output.status
    );
    true
}

/// A fresh folder under the system's temporary directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// `wgsplat-io-NAME-PID`, emptied first.
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("wgsplat-io-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

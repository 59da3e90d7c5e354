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

/// The path that `--exact` filters give test `name` (named from this module down, e.g.
/// `hostile::cases::x`) in the test binary: the tests that run themselves again in a
/// memory-capped child select themselves with it.
pub fn test_path(name: &str) -> String {
    let module = module_path!();
    let in_binary = module.split_once("::").map_or(module, |(_, rest)| rest);
    format!("{in_binary}::{name}")
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

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
mod lens_scenes;
mod lod;
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

pub use crate::common::child::MemoryCap;

/// Runs test `name` (named from this module down, e.g. `hostile::cases::x`) again in a child
/// process whose memory is capped by `cap`, so that an allocation past it fails there instead of
/// taking the machine's memory, and an abort fails this test only (see
/// [`crate::common::child::rerun_in_child`]). Returns true when the caller should stop.
pub fn run_in_capped_child(name: &str, cap: MemoryCap) -> bool {
    let path = crate::common::child::test_path(module_path!(), name);
    crate::common::child::rerun_in_child(&path, Some(cap))
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

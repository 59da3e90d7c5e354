//! Files: 3DGS PLY models ([`ply`]), the `.splat` ([`splat_file`]), SPZ ([`spz`]), compressed
//! PLY ([`compressed_ply`]) and SOG ([`sog`]) web formats (chosen by name in [`formats`]), and training checkpoints ([`checkpoint`]). Every write is
//! atomic: the data goes to a new temporary file beside `path` (a unique name, created
//! exclusively), is flushed to disk, and is then renamed onto `path`, so a crash never leaves a
//! half-written file under the real name.

pub mod checkpoint;
mod checkpoint_read;
pub mod compressed_ply;
mod compressed_ply_read;
pub mod formats;
pub mod host;
pub mod lod;
pub mod model;
pub mod ply;
mod ply_header;
pub(crate) mod ply_read;
pub(crate) mod ply_scalar;
pub mod progress;
pub mod sog;
mod sog_codebook;
mod sog_read;
mod sog_source;
mod sog_texels;
mod sog_write;
pub mod splat_file;
pub mod spz;

pub use checkpoint::{Checkpoint, load_checkpoint, save_checkpoint};
pub use ply::{PlyModel, read_ply, write_ply};

use crate::error::{Error, Result};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// An [`Error::Io`] naming `path`.
pub fn io_error(path: &Path, action: &str, err: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        action: action.into(),
        message: err.to_string(),
    }
}

/// A fresh temporary name for an atomic write of `path`, in the same folder (so that the final
/// rename stays on one file system): `.NAME.PID.COUNTER.RANDOM.tmp`. Every call gives another
/// name, so two writers of one output, in this process or another, never share a temporary file.
pub fn temp_path(path: &Path) -> PathBuf {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file_name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    // A per-process random key (the standard library seeds it from the operating system).
    let random =
        std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), count);
    let name = format!(
        ".{file_name}.{}.{count}.{random:016x}.tmp",
        std::process::id(),
    );
    match path.parent() {
        Some(parent) => parent.join(name),
        None => PathBuf::from(name),
    }
}

/// The temporary files of atomic writes of `path` ([`temp_path`]) that exist now: none once every
/// write has finished, whether it succeeded or failed.
pub fn temporary_files_of(path: &Path) -> Vec<PathBuf> {
    let Some(file_name) = path.file_name() else {
        return Vec::new();
    };
    let prefix = format!(".{}.", file_name.to_string_lossy());
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.starts_with(&prefix) && name.ends_with(".tmp")
        })
        .map(|entry| entry.path())
        .collect()
}

/// Creates a new temporary file for an atomic write of `path` ([`temp_path`]). The file is created
/// exclusively (`O_CREAT | O_EXCL`): an existing file or symbolic link under the name is never
/// opened, truncated or followed; a name that is taken is replaced by another.
fn create_temp_file(path: &Path) -> Result<(PathBuf, std::fs::File)> {
    let mut last_error = None;
    for _ in 0..16 {
        let temp = temp_path(path);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last_error = Some(e),
            Err(e) => return Err(io_error(&temp, "create a temporary file for", e)),
        }
    }
    let err = last_error.unwrap_or_else(|| std::io::Error::other("no free temporary name"));
    Err(io_error(path, "create a temporary file beside", err))
}

/// Writes a file atomically: `fill` writes the contents into a buffered writer on a new temporary
/// file beside `path` ([`temp_path`], created exclusively, never through a symbolic link), which
/// is then synced and renamed onto `path`. On any failure the temporary file is removed and
/// `path` is left as it was. Concurrent writers of one `path` each write their own temporary
/// file: the last rename wins, and `path` always holds one writer's complete output.
pub fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<std::fs::File>) -> Result<()>,
) -> Result<()> {
    let (temp, file) = create_temp_file(path)?;
    let result = (|| {
        let mut writer = BufWriter::with_capacity(1 << 20, file);
        fill(&mut writer)?;
        writer.flush().map_err(|e| io_error(&temp, "write", e))?;
        // The file is closed at the end of this block, before the rename.
        {
            let file = writer
                .into_inner()
                .map_err(|e| io_error(&temp, "write", e.into_error()))?;
            file.sync_all()
                .map_err(|e| io_error(&temp, "flush to disk", e))?;
        }
        std::fs::rename(&temp, path)
            .map_err(|e| io_error(path, &format!("rename {} onto", temp.display()), e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Writes `value` as pretty-printed JSON to `path` atomically ([`write_atomically`]).
pub fn write_json_atomically(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::Io {
        path: path.display().to_string(),
        action: "encode".into(),
        message: e.to_string(),
    })?;
    write_atomically(path, |w| {
        std::io::Write::write_all(w, text.as_bytes()).map_err(|e| io_error(path, "write", e))
    })
}

//! Files: 3DGS PLY models ([`ply`]), the `.splat` ([`splat_file`]), SPZ ([`spz`]), compressed
//! PLY ([`compressed_ply`]) and SOG ([`sog`]) web formats (chosen by name in [`formats`]), and training checkpoints ([`checkpoint`]). Every write is
//! atomic: the data goes to `<path>.tmp`, is flushed to disk, and is then renamed onto `path`, so
//! a crash never leaves a half-written file under the real name.

pub mod checkpoint;
mod checkpoint_read;
pub mod compressed_ply;
mod compressed_ply_read;
pub mod formats;
pub mod host;
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

/// The temporary file an atomic write of `path` goes through: `path` with `.tmp` appended.
pub fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Writes a file atomically: `fill` writes the contents into a buffered writer on `<path>.tmp`,
/// which is then synced and renamed onto `path`. On any failure the temporary file is removed and
/// `path` is left as it was.
pub fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<std::fs::File>) -> Result<()>,
) -> Result<()> {
    let temp = temp_path(path);
    let result = (|| {
        let file = std::fs::File::create(&temp).map_err(|e| io_error(&temp, "create", e))?;
        let mut writer = BufWriter::with_capacity(1 << 20, file);
        fill(&mut writer)?;
        writer.flush().map_err(|e| io_error(&temp, "write", e))?;
        let file = writer
            .into_inner()
            .map_err(|e| io_error(&temp, "write", e.into_error()))?;
        file.sync_all()
            .map_err(|e| io_error(&temp, "flush to disk", e))?;
        drop(file);
        std::fs::rename(&temp, path)
            .map_err(|e| io_error(path, &format!("rename {} onto", temp.display()), e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

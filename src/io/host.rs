//! What every model reader does with the host before it trusts a file: it opens regular files
//! only (a FIFO or a device would block or never end), and it reserves large buffers fallibly, so
//! that a model too large for the machine's memory is an [`Error::HostOutOfMemory`] saying how
//! many bytes were needed, never an abort, and never reported as a damaged file.

use super::io_error;
use crate::error::{Error, Result};
use crate::splat::reference::CpuGaussians;
use std::io::Read;
use std::path::Path;

/// Host bytes one Gaussian of a [`CpuGaussians`] takes (mean, log scale, rotation, opacity, SH).
pub const BYTES_PER_GAUSSIAN: u64 = (std::mem::size_of::<[f32; 3]>() * 2
    + std::mem::size_of::<[f32; 4]>()
    + std::mem::size_of::<f32>()
    + std::mem::size_of::<[[f32; 3]; 16]>()) as u64;

/// Checks that `path` is a regular file (following symbolic links) before anything opens it: a
/// FIFO, socket or device as a model would block the reader forever or never end.
pub fn check_regular_file(path: &Path) -> Result<()> {
    let metadata = std::fs::metadata(path).map_err(|e| io_error(path, "open", e))?;
    if metadata.is_file() {
        return Ok(());
    }
    let what = file_type_name(&metadata.file_type());
    Err(Error::Io {
        path: path.display().to_string(),
        action: "read".into(),
        message: format!(
            "it is {what}, not a regular file; give the path of a model file (a FIFO or device is not read, as it could block forever)"
        ),
    })
}

/// "a directory", "a FIFO (named pipe)", ... for messages.
fn file_type_name(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_block_device() || file_type.is_char_device() {
            return "a device";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading after [`check_regular_file`], returning the file and its size.
pub fn open_regular_file(path: &Path) -> Result<(std::fs::File, u64)> {
    check_regular_file(path)?;
    let file = std::fs::File::open(path).map_err(|e| io_error(path, "open", e))?;
    let len = file
        .metadata()
        .map_err(|e| io_error(path, "read the size of", e))?
        .len();
    Ok((file, len))
}

/// An empty vector with room for exactly `len` items, or [`Error::HostOutOfMemory`] naming
/// `what()` and the bytes needed.
pub fn try_vec<T>(len: usize, what: impl FnOnce() -> String) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| out_of_memory(len, std::mem::size_of::<T>(), what))?;
    Ok(v)
}

/// A vector of `len` copies of `value`, allocated as [`try_vec`] does.
pub fn try_filled<T: Clone>(len: usize, value: T, what: impl FnOnce() -> String) -> Result<Vec<T>> {
    let mut v = try_vec(len, what)?;
    v.resize(len, value);
    Ok(v)
}

fn out_of_memory(len: usize, item_bytes: usize, what: impl FnOnce() -> String) -> Error {
    Error::HostOutOfMemory {
        what: what(),
        bytes: (len as u64).saturating_mul(item_bytes as u64),
    }
}

/// Empty [`CpuGaussians`] with room for `n`; the error names `path` and the bytes the whole
/// model needs.
pub fn gaussians_with_capacity(n: usize, path: &Path) -> Result<CpuGaussians> {
    let what = || {
        format!(
            "the {n} Gaussians of {} ({BYTES_PER_GAUSSIAN} bytes each)",
            path.display()
        )
    };
    let too_large = || Error::HostOutOfMemory {
        what: what(),
        bytes: (n as u64).saturating_mul(BYTES_PER_GAUSSIAN),
    };
    let mut g = CpuGaussians::default();
    g.means.try_reserve_exact(n).map_err(|_| too_large())?;
    g.log_scales.try_reserve_exact(n).map_err(|_| too_large())?;
    g.quats.try_reserve_exact(n).map_err(|_| too_large())?;
    g.opacity_logits
        .try_reserve_exact(n)
        .map_err(|_| too_large())?;
    g.sh.try_reserve_exact(n).map_err(|_| too_large())?;
    Ok(g)
}

/// The whole of the regular file `path`, read into a buffer reserved fallibly at its size.
pub fn read_whole_file(path: &Path) -> Result<Vec<u8>> {
    let (file, len) = open_regular_file(path)?;
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    let mut bytes = try_vec(len, || format!("reading {}", path.display()))?;
    file.take(len as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, "read", e))?;
    Ok(bytes)
}

//! Dataset files as a reader meets them: checked to be regular files before they are opened (a
//! FIFO would block the reader), read whole with errors that name them, and numbers shown
//! compactly in messages.

use std::path::Path;

use super::dataset_error;
use crate::error::{Error, Result};

/// `value` for a message: as written when that is short (`1234.5`, `0.001`), in scientific
/// notation when it is very large or very small (`1e300` rather than 301 digits), so that a
/// corrupt number never floods an error.
pub fn compact_number(value: f64) -> String {
    let magnitude = value.abs();
    if !value.is_finite() || value == 0.0 || (1e-4..1e9).contains(&magnitude) {
        let text = format!("{value}");
        if text.len() <= 24 {
            return text;
        }
    }
    let scientific = format!("{value:.6e}");
    match scientific.split_once('e') {
        Some((mantissa, exponent)) => {
            let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
            format!("{mantissa}e{exponent}")
        }
        None => scientific,
    }
}

/// Checks that `path` names a regular file (following symbolic links) before it is opened: a FIFO,
/// a device or a folder given where a data file belongs would block the reader or fail with a
/// confusing message. `what` names the file in the error ("the image", "the test list").
pub fn check_regular_file(path: &Path, what: &str) -> Result<()> {
    let io = |message: String| Error::Io {
        path: path.display().to_string(),
        action: format!("read {what}"),
        message,
    };
    let metadata = std::fs::metadata(path).map_err(|e| io(format!("{e}; check the path")))?;
    if metadata.is_file() {
        return Ok(());
    }
    Err(io(format!(
        "it is {}, not a regular file; give the path of an ordinary file",
        file_kind(&metadata)
    )))
}

/// What a non-regular file is, for messages: "a folder", "a FIFO (named pipe)", ...
fn file_kind(metadata: &std::fs::Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
    }
    "not a regular file"
}

/// Reads a whole dataset file after [`check_regular_file`]; errors name the file.
pub fn read_regular_file(path: &Path, what: &str) -> Result<Vec<u8>> {
    check_regular_file(path, what)?;
    std::fs::read(path).map_err(|e| Error::Io {
        path: path.display().to_string(),
        action: format!("read {what}"),
        message: e.to_string(),
    })
}

/// [`read_regular_file`] as UTF-8 text.
pub fn read_regular_text(path: &Path, what: &str) -> Result<String> {
    let bytes = read_regular_file(path, what)?;
    String::from_utf8(bytes).map_err(|e| {
        dataset_error(
            path,
            format!(
                "{what} is not UTF-8 text (invalid byte at offset {}); save it as UTF-8",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

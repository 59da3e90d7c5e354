//! File names on ffmpeg's and ffprobe's command lines.

use std::ffi::OsString;
use std::path::Path;

/// An ffmpeg or ffprobe argument naming the file at `path`: absolute and behind the `file:`
/// protocol, so that a name with a colon is not read as a protocol and one beginning with `-` is
/// not read as an option; with `%` doubled when the argument begins an output pattern (the
/// caller then appends the pattern's own `%06d`).
pub fn ffmpeg_file_arg(path: &Path, pattern: bool) -> OsString {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut arg = OsString::from("file:");
    #[cfg(unix)]
    {
        use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
        let bytes = absolute.as_os_str().as_bytes();
        let escaped: Vec<u8> = if pattern {
            bytes
                .iter()
                .flat_map(|&b| if b == b'%' { vec![b'%', b'%'] } else { vec![b] })
                .collect()
        } else {
            bytes.to_vec()
        };
        arg.push(OsString::from_vec(escaped));
    }
    #[cfg(not(unix))]
    {
        let text = absolute.to_string_lossy();
        arg.push(if pattern {
            text.replace('%', "%%")
        } else {
            text.into_owned()
        });
    }
    arg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn paths_reach_ffmpeg_as_files_with_percent_escaped_in_patterns() {
        let arg = ffmpeg_file_arg(Path::new("/o_%d/cam1:take2_"), true);
        assert_eq!(arg, "file:/o_%%d/cam1:take2_");
        let arg = ffmpeg_file_arg(Path::new("/v/-x.mp4"), false);
        assert_eq!(arg, "file:/v/-x.mp4");
    }
}

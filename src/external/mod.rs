//! The external programs wgsplat drives: COLMAP, GLOMAP, ffmpeg and ffprobe, for structure from
//! motion ([`crate::sfm`]) and videos ([`crate::show::video`]). Each is found on `PATH` (or at a
//! path the user gives), run with its output appended to one log file ([`ToolLog`]), and named
//! with install instructions when it is missing.

mod ffmpeg;
mod log;

pub use ffmpeg::ffmpeg_file_arg;
pub use log::ToolLog;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// One external program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind {
    /// COLMAP: features, matching, the incremental mapper.
    Colmap,
    /// GLOMAP: COLMAP's global mapper, run on COLMAP's database.
    Glomap,
    /// ffmpeg: frames from videos.
    Ffmpeg,
    /// ffprobe (shipped with ffmpeg): a video's duration.
    Ffprobe,
}

impl ToolKind {
    /// The executable's usual name.
    pub fn program(self) -> &'static str {
        match self {
            ToolKind::Colmap => "colmap",
            ToolKind::Glomap => "glomap",
            ToolKind::Ffmpeg => "ffmpeg",
            ToolKind::Ffprobe => "ffprobe",
        }
    }

    /// How to install it on Debian/Ubuntu, macOS and Windows.
    pub fn install_hint(self) -> &'static str {
        match self {
            ToolKind::Colmap => {
                "install COLMAP: Debian/Ubuntu `sudo apt install colmap`; macOS `brew install colmap`; \
                 Windows: download COLMAP from its releases page (or `conda install -c conda-forge colmap`) \
                 and put colmap.exe (COLMAP.bat) on PATH; or pass its location with --colmap PATH"
            }
            ToolKind::Glomap => {
                "install GLOMAP: `conda install -c conda-forge glomap`, or build it from its source \
                 (it is not packaged by Debian or Homebrew); or pass its location with --glomap PATH, \
                 or use COLMAP's incremental mapper (--mapper colmap, the default)"
            }
            ToolKind::Ffmpeg | ToolKind::Ffprobe => {
                "install ffmpeg (it ships ffprobe too): Debian/Ubuntu `sudo apt install ffmpeg`; \
                 macOS `brew install ffmpeg`; Windows `winget install ffmpeg` (or `choco install ffmpeg`); \
                 or pass its location with --ffmpeg PATH"
            }
        }
    }
}

/// A located program.
#[derive(Clone, Debug)]
pub struct Tool {
    /// Which program.
    pub kind: ToolKind,
    /// Its executable.
    pub path: PathBuf,
}

impl Tool {
    /// The program with `args`, no standard input, and Qt told there is no display (COLMAP's Qt
    /// build needs none for what is run here).
    pub(crate) fn command<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Command {
        let mut command = Command::new(&self.path);
        command
            .args(args)
            .env("QT_QPA_PLATFORM", "offscreen")
            .stdin(Stdio::null());
        command
    }

    /// The error for a program that could not be started.
    pub(crate) fn start_error(&self, error: std::io::Error) -> Error {
        Error::ExternalTool {
            tool: self.kind.program().into(),
            message: format!(
                "could not start {}: {error}. To fix: {}",
                self.path.display(),
                self.kind.install_hint()
            ),
        }
    }
}

/// Finds `kind` at `explicit` when given, else on `PATH`. The error says why it is needed and
/// how to install it.
pub fn locate(kind: ToolKind, explicit: Option<&Path>, needed_for: &str) -> Result<Tool> {
    let missing = |detail: String| Error::ExternalTool {
        tool: kind.program().into(),
        message: format!(
            "{detail}; it is needed {needed_for}. To fix: {}",
            kind.install_hint()
        ),
    };
    if let Some(path) = explicit {
        if path.is_file() {
            return Ok(Tool {
                kind,
                path: path.to_path_buf(),
            });
        }
        return Err(missing(format!("{} does not exist", path.display())));
    }
    find_on_path(kind.program())
        .map(|path| Tool { kind, path })
        .ok_or_else(|| missing(format!("`{}` was not found on PATH", kind.program())))
}

/// The first `name` (with the platform's executable suffixes) in a folder of `PATH`.
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let suffixes: &[&str] = if cfg!(windows) {
        &[".exe", ".bat", ".cmd", ""]
    } else {
        &[""]
    };
    std::env::split_paths(&path).find_map(|dir| {
        suffixes
            .iter()
            .map(|suffix| dir.join(format!("{name}{suffix}")))
            .find(|candidate| candidate.is_file())
    })
}

/// Runs `tool` and returns its standard output (for short queries: `colmap -h`, `ffprobe`).
pub fn query<S: AsRef<std::ffi::OsStr>>(tool: &Tool, args: &[S]) -> Result<String> {
    let output = tool
        .command(args)
        .output()
        .map_err(|e| tool.start_error(e))?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_explicit_tool_names_the_path_and_the_install() {
        let err = locate(
            ToolKind::Colmap,
            Some(Path::new("/nonexistent/colmap")),
            "for feature extraction",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("/nonexistent/colmap"), "{err}");
        assert!(err.contains("apt install colmap"), "{err}");
        assert!(err.contains("brew install colmap"), "{err}");
    }
}

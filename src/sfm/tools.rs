//! The programs structure from motion drives: COLMAP, GLOMAP, ffmpeg and ffprobe. Each is found
//! on `PATH` (or at a path the user gives), run with its output appended to one log file, and
//! named with install instructions when it is missing.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

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
    fn command<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Command {
        let mut command = Command::new(&self.path);
        command
            .args(args)
            .env("QT_QPA_PLATFORM", "offscreen")
            .stdin(Stdio::null());
        command
    }

    /// The error for a program that could not be started.
    fn start_error(&self, error: std::io::Error) -> Error {
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

/// Where every external command's output goes: one log file, appended to, with a header per
/// command naming its arguments and, after it, its exit status and time.
#[derive(Debug)]
pub struct ToolLog {
    path: PathBuf,
}

impl ToolLog {
    /// Appends to `path` (created when missing).
    pub fn new(path: PathBuf) -> ToolLog {
        ToolLog { path }
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn open(&self) -> Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| crate::io::io_error(&self.path, "open the log", e))
    }

    /// Appends one line of wgsplat's own to the log.
    pub fn note(&self, line: &str) -> Result<()> {
        let mut file = self.open()?;
        writeln!(file, "wgsplat: {line}")
            .map_err(|e| crate::io::io_error(&self.path, "write the log", e))
    }

    /// Runs `tool` with `args`, its standard output and error appended to the log line by line
    /// as they come (each line is also given to `on_line`, for progress), and fails with the
    /// tail of its output when it exits non-zero. `stage` names the step in errors.
    pub fn run(
        &self,
        tool: &Tool,
        args: &[OsString],
        stage: &str,
        on_line: &mut dyn FnMut(&str),
    ) -> Result<()> {
        let status = self.run_status(tool, args, on_line)?;
        if status.success() {
            return Ok(());
        }
        Err(Error::ExternalTool {
            tool: tool.kind.program().into(),
            message: format!(
                "{stage} failed ({status}). Its last lines:\n{}\nThe whole output is in {}",
                self.tail(12),
                self.path.display()
            ),
        })
    }

    /// Runs `tool` as [`ToolLog::run`] does and returns its exit status, for callers that read
    /// a failure themselves.
    pub fn run_status(
        &self,
        tool: &Tool,
        args: &[OsString],
        on_line: &mut dyn FnMut(&str),
    ) -> Result<ExitStatus> {
        let line = std::iter::once(tool.path.as_os_str())
            .chain(args.iter().map(|a| a.as_os_str()))
            .map(|a| format!("{a:?}"))
            .collect::<Vec<_>>()
            .join(" ");
        self.note(&format!("running {line}"))?;
        let mut log = self.open()?;
        let pipe_error = |e| crate::io::io_error(&self.path, "open a pipe for the log", e);
        let (reader, writer) = std::io::pipe().map_err(pipe_error)?;
        let start = Instant::now();
        let mut child = {
            let mut command = tool.command(args);
            command
                .stdout(writer.try_clone().map_err(pipe_error)?)
                .stderr(writer);
            command.spawn().map_err(|e| tool.start_error(e))?
            // The command, and with it this process's end of the pipe, is dropped here: the
            // reader below ends when the program (and whatever it started) closes its end.
        };
        let mut reader = std::io::BufReader::new(reader);
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            match std::io::BufRead::read_until(&mut reader, b'\n', &mut bytes) {
                Ok(0) => break,
                Ok(_) => {
                    log.write_all(&bytes)
                        .map_err(|e| crate::io::io_error(&self.path, "write the log", e))?;
                    on_line(String::from_utf8_lossy(&bytes).trim_end());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(crate::io::io_error(
                        &self.path,
                        "read the program's output",
                        e,
                    ));
                }
            }
        }
        let status = child
            .wait()
            .map_err(|e| crate::io::io_error(&self.path, "wait for the program", e))?;
        self.note(&format!(
            "{} exited with {status} after {:.1} s",
            tool.kind.program(),
            start.elapsed().as_secs_f64()
        ))?;
        Ok(status)
    }

    /// The last `lines` lines of the log (for error messages).
    pub fn tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        all[all.len().saturating_sub(lines)..]
            .iter()
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
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

/// True when this COLMAP was built with CUDA (its banner says "with CUDA"): only then can its
/// SIFT run on the GPU.
pub fn colmap_has_cuda(colmap: &Tool) -> bool {
    query(colmap, &["-h"])
        .map(|banner| banner_has_cuda(&banner))
        .unwrap_or(false)
}

/// Reads COLMAP's banner: "(Commit … with CUDA)" or "… without CUDA".
pub fn banner_has_cuda(banner: &str) -> bool {
    banner.contains("with CUDA") && !banner.contains("without CUDA")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_is_read_from_the_banner() {
        assert!(!banner_has_cuda(
            "COLMAP 3.8 -- Structure-from-Motion\n (Commit Unknown on Unknown without CUDA)"
        ));
        assert!(banner_has_cuda(
            "COLMAP 3.9 -- Structure-from-Motion\n (Commit 1 on 2024-01-01 with CUDA)"
        ));
    }

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

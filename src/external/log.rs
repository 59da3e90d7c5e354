//! [`ToolLog`]: one log file every external command's output is appended to.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Instant;

use super::Tool;
use crate::error::{Error, Result};

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

//! Videos: frames streamed to ffmpeg through a pipe as raw RGB and encoded as H.264 in yuv420p
//! (the pixel format every player reads), one frame in memory at a time. The file is written
//! under a temporary name beside the target and renamed when ffmpeg has finished it.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::error::{Error, Result};
use crate::external::{Tool, ToolKind, ffmpeg_file_arg, locate};

/// Constant rate factor of the H.264 encoding: 18 is visually lossless for rendered frames.
pub const H264_CRF: u32 = 18;

fn video_error(path: &Path, message: String) -> Error {
    Error::ExternalTool {
        tool: "ffmpeg".into(),
        message: format!("{}: {message}", path.display()),
    }
}

/// Finds ffmpeg (at `explicit` or on PATH) for writing videos.
pub fn find_ffmpeg(explicit: Option<&Path>) -> Result<Tool> {
    locate(
        ToolKind::Ffmpeg,
        explicit,
        "to write videos (or use --frames DIR for PNG files)",
    )
}

/// An H.264 video being written: [`VideoWriter::push`] each frame, then [`VideoWriter::finish`].
pub struct VideoWriter {
    child: Child,
    stdin: Option<ChildStdin>,
    target: PathBuf,
    temporary: PathBuf,
    width: u32,
    height: u32,
    frames: usize,
    /// One frame's RGB bytes, reused from frame to frame.
    rgb: Vec<u8>,
    /// Whether an error named ffmpeg's log (which is then kept for the user to read).
    log_named: bool,
}

impl VideoWriter {
    /// Starts ffmpeg writing `width` × `height` frames (both even, as yuv420p needs) at `fps` to
    /// `target` (`.mp4`). Its messages go to `target`'s `.log` beside it.
    pub fn start(ffmpeg: &Tool, target: &Path, width: u32, height: u32, fps: f64) -> Result<Self> {
        if !width.is_multiple_of(2) || !height.is_multiple_of(2) || width == 0 || height == 0 {
            return Err(video_error(
                target,
                format!(
                    "a {width}x{height} video cannot be encoded as yuv420p: both sides must be even (e.g. --size {}x{})",
                    width.max(2) & !1,
                    height.max(2) & !1
                ),
            ));
        }
        if !super::camera_path::valid_fps(fps) {
            return Err(video_error(
                target,
                format!(
                    "{fps} frames per second: the rate must be above 0 and at most {}",
                    super::camera_path::MAX_FPS
                ),
            ));
        }
        if target.is_dir() {
            return Err(video_error(
                target,
                "is a folder: give the video a file name, e.g. path.mp4 (nothing was written)"
                    .into(),
            ));
        }
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temporary = target.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| crate::io::io_error(parent, "create", e))?;
        }
        let log_path = target.with_extension("ffmpeg.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| crate::io::io_error(&log_path, "create", e))?;
        let args: Vec<OsString> = vec![
            "-hide_banner".into(),
            "-loglevel".into(),
            "error".into(),
            "-y".into(),
            "-f".into(),
            "rawvideo".into(),
            "-pix_fmt".into(),
            "rgb24".into(),
            "-s".into(),
            format!("{width}x{height}").into(),
            "-framerate".into(),
            format!("{fps}").into(),
            "-i".into(),
            "pipe:0".into(),
            "-c:v".into(),
            "libx264".into(),
            "-crf".into(),
            H264_CRF.to_string().into(),
            "-pix_fmt".into(),
            "yuv420p".into(),
            "-movflags".into(),
            "+faststart".into(),
            "-f".into(),
            "mp4".into(),
            ffmpeg_file_arg(&temporary, false),
        ];
        let mut child = Command::new(&ffmpeg.path)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| {
                video_error(
                    target,
                    format!(
                        "could not start {}: {e}. To fix: {}",
                        ffmpeg.path.display(),
                        ToolKind::Ffmpeg.install_hint()
                    ),
                )
            })?;
        let stdin = child.stdin.take();
        Ok(VideoWriter {
            child,
            stdin,
            target: target.to_path_buf(),
            temporary,
            width,
            height,
            frames: 0,
            rgb: Vec::new(),
            log_named: false,
        })
    }

    /// Encodes one frame of straight RGBA bytes (`width × height × 4`), alpha dropped.
    pub fn push(&mut self, rgba: &[u8]) -> Result<()> {
        let expected = self.width as usize * self.height as usize * 4;
        if rgba.len() != expected {
            return Err(video_error(
                &self.target,
                format!(
                    "frame {} has {} bytes, not {expected}",
                    self.frames,
                    rgba.len()
                ),
            ));
        }
        self.rgb.clear();
        self.rgb
            .extend(rgba.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]));
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(video_error(
                &self.target,
                "the video is already finished".into(),
            ));
        };
        if let Err(e) = stdin.write_all(&self.rgb) {
            self.log_named = true;
            let log = self.log_tail();
            return Err(video_error(
                &self.target,
                format!("ffmpeg stopped taking frames ({e}): {log}"),
            ));
        }
        self.frames += 1;
        Ok(())
    }

    /// Closes the pipe, waits for ffmpeg and moves the video into place; returns the frames
    /// written.
    pub fn finish(mut self) -> Result<usize> {
        drop(self.stdin.take());
        let status = self
            .child
            .wait()
            .map_err(|e| video_error(&self.target, format!("waiting for ffmpeg: {e}")))?;
        if !status.success() {
            let _ = std::fs::remove_file(&self.temporary);
            return Err(video_error(
                &self.target,
                format!("ffmpeg failed ({status}): {}", self.log_tail()),
            ));
        }
        let moved = std::fs::rename(&self.temporary, &self.target);
        if moved.is_err() {
            let _ = std::fs::remove_file(&self.temporary);
        }
        let _ = std::fs::remove_file(self.target.with_extension("ffmpeg.log"));
        moved.map_err(|e| crate::io::io_error(&self.target, "rename into place", e))?;
        Ok(self.frames)
    }

    fn log_tail(&self) -> String {
        let log = self.target.with_extension("ffmpeg.log");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(6).collect();
        format!(
            "{} (the whole message is in {})",
            lines.into_iter().rev().collect::<Vec<_>>().join(" / "),
            log.display()
        )
    }
}

impl Drop for VideoWriter {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            // Not finished (an error or a stop): end ffmpeg and leave no partial file, nor its
            // log unless an error pointed to it.
            drop(self.stdin.take());
            let _ = self.child.kill();
            let _ = self.child.wait();
            let _ = std::fs::remove_file(&self.temporary);
            if !self.log_named {
                let _ = std::fs::remove_file(self.target.with_extension("ffmpeg.log"));
            }
        }
    }
}

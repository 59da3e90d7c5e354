//! Frames from videos: ffprobe reads a video's duration and frame rate, and ffmpeg extracts
//! frames at a rate that gives a few hundred images, never above the video's own (rotated as the
//! video's display matrix says, scaled to the size limit). Which frames are kept is
//! [`super::frame_select`]'s.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::external::{Tool, ToolLog, ffmpeg_file_arg, query};

/// Frames extracted from a video when `--fps` is not given (before the blurriest of each run is
/// dropped): with runs of [`DEFAULT_BLUR_RUN`], about 225 images stay where the frames are close
/// enough for runs ([`super::frame_select::RUN_GAP_SECONDS`]: videos under about 50 s), 300
/// otherwise.
pub const DEFAULT_FRAME_TARGET: f64 = 300.0;
/// Neighbouring frames per run, of which the blurriest is dropped.
pub const DEFAULT_BLUR_RUN: usize = 4;

fn video_error(path: &Path, message: String) -> Error {
    Error::Sfm {
        stage: "video".into(),
        message: format!("{}: {message}", path.display()),
    }
}

/// What ffprobe says of a video.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VideoInfo {
    /// Its duration in seconds.
    pub seconds: f64,
    /// The frame rate of its first video stream (its average rate, else its base rate), when
    /// ffprobe gives one.
    pub frame_rate: Option<f64>,
}

/// A video's duration and frame rate, from ffprobe.
pub fn probe(ffprobe: &Tool, video: &Path) -> Result<VideoInfo> {
    let args = [
        OsString::from("-v"),
        "error".into(),
        "-select_streams".into(),
        "v:0".into(),
        "-show_entries".into(),
        "format=duration:stream=avg_frame_rate,r_frame_rate".into(),
        "-of".into(),
        "json".into(),
        ffmpeg_file_arg(video, false),
    ];
    let text = query(ffprobe, &args)?;
    let json: serde_json::Value = text
        .find('{')
        .and_then(|at| serde_json::from_str(&text[at..]).ok())
        .unwrap_or_default();
    let seconds = json["format"]["duration"]
        .as_str()
        .and_then(|d| d.trim().parse::<f64>().ok())
        .filter(|d| d.is_finite() && *d > 0.0)
        .ok_or_else(|| {
            video_error(
                video,
                format!(
                    "ffprobe could not read its duration (it said: {:?}); is it a video ffmpeg can read?",
                    text.trim()
                ),
            )
        })?;
    let stream = &json["streams"][0];
    let frame_rate = ["avg_frame_rate", "r_frame_rate"]
        .iter()
        .find_map(|field| stream[field].as_str().and_then(parse_rate));
    Ok(VideoInfo {
        seconds,
        frame_rate,
    })
}

/// A rate as ffprobe writes it (`30000/1001`, `10/1`, `25`); `None` for `0/0` or nonsense.
pub fn parse_rate(text: &str) -> Option<f64> {
    let rate = match text.split_once('/') {
        Some((n, d)) => n.trim().parse::<f64>().ok()? / d.trim().parse::<f64>().ok()?,
        None => text.trim().parse::<f64>().ok()?,
    };
    (rate.is_finite() && rate > 0.0 && rate <= 1000.0).then_some(rate)
}

/// The extraction rate that gives about [`DEFAULT_FRAME_TARGET`] frames over `total_seconds` of
/// video, between 0.1 and 30 frames a second.
pub fn default_fps(total_seconds: f64) -> f64 {
    (DEFAULT_FRAME_TARGET / total_seconds.max(1e-3)).clamp(0.1, 30.0)
}

/// Extracts frames of `video` at `fps` (never above the stream's own rate: the caller caps it)
/// into `dir` as `PREFIX_000001.jpg`, … with the long side at most `max_size` (0: the video's
/// size). Returns them in order.
#[allow(clippy::too_many_arguments)]
pub fn extract_frames(
    ffmpeg: &Tool,
    log: &ToolLog,
    video: &Path,
    dir: &Path,
    prefix: &str,
    fps: f64,
    max_size: u32,
    on_line: &mut dyn FnMut(&str),
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| crate::io::io_error(dir, "create", e))?;
    let mut filter = format!("fps={fps}");
    if max_size > 0 {
        // Shrink only, keeping the aspect ratio; even sizes for the encoder.
        filter.push_str(&format!(
            ",scale=w='if(gte(iw,ih),min(iw,{max_size}),-2)':h='if(gte(iw,ih),-2,min(ih,{max_size}))'"
        ));
    }
    let mut pattern = ffmpeg_file_arg(&dir.join(format!("{prefix}_")), true);
    pattern.push("%06d.jpg");
    let args: Vec<OsString> = vec![
        "-nostdin".into(),
        "-hide_banner".into(),
        "-nostats".into(),
        "-y".into(),
        "-i".into(),
        ffmpeg_file_arg(video, false),
        "-vf".into(),
        filter.into(),
        "-q:v".into(),
        "2".into(),
        pattern,
    ];
    log.run(ffmpeg, &args, "extracting frames", on_line)?;
    let mut frames: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| crate::io::io_error(dir, "list", e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{prefix}_")) && n.ends_with(".jpg"))
        })
        .collect();
    frames.sort();
    if frames.is_empty() {
        return Err(video_error(
            video,
            format!("ffmpeg wrote no frames; see {}", log.path().display()),
        ));
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_read_as_ffprobe_writes_them() {
        assert_eq!(parse_rate("10/1"), Some(10.0));
        assert!((parse_rate("30000/1001").unwrap() - 29.97).abs() < 1e-3);
        assert_eq!(parse_rate("0/0"), None);
        assert_eq!(parse_rate("25"), Some(25.0));
    }

    #[test]
    fn the_default_rate_targets_a_few_hundred_frames() {
        assert!((default_fps(60.0) - 5.0).abs() < 1e-9);
        assert_eq!(default_fps(1e6), 0.1);
        assert_eq!(default_fps(1.0), 30.0);
    }
}

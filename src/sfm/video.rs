//! Frames from videos: ffmpeg extracts them at a rate that gives a few hundred images (rotated as
//! the video's display matrix says, scaled to the size limit), then the blurriest frame of each
//! run of neighbours is dropped (variance of the Laplacian, the sharpness measure the common
//! capture tools use).

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::tools::{Tool, ToolLog, query};
use crate::error::{Error, Result};

/// Frames extracted from a video when `--fps` is not given (before the blurriest of each run is
/// dropped): with runs of [`DEFAULT_BLUR_RUN`], about 225 images stay.
pub const DEFAULT_FRAME_TARGET: f64 = 300.0;
/// Neighbouring frames per run, of which the blurriest is dropped.
pub const DEFAULT_BLUR_RUN: usize = 4;
/// Long side of the grey image sharpness is measured on.
const SHARPNESS_SIZE: u32 = 512;

fn video_error(path: &Path, message: String) -> Error {
    Error::Sfm {
        stage: "video".into(),
        message: format!("{}: {message}", path.display()),
    }
}

/// A video's duration in seconds, from ffprobe.
pub fn duration_seconds(ffprobe: &Tool, video: &Path) -> Result<f64> {
    let video_arg = video.to_string_lossy();
    let text = query(
        ffprobe,
        &[
            "-v",
            "error",
            "-show_entries",
            "format=duration",
            "-of",
            "default=noprint_wrappers=1:nokey=1",
            &video_arg,
        ],
    )?;
    text.lines()
        .find_map(|l| l.trim().parse::<f64>().ok())
        .filter(|d| d.is_finite() && *d > 0.0)
        .ok_or_else(|| {
            video_error(
                video,
                format!(
                    "ffprobe could not read its duration (it said: {:?}); is it a video ffmpeg can read?",
                    text.trim()
                ),
            )
        })
}

/// The extraction rate that gives about [`DEFAULT_FRAME_TARGET`] frames over `total_seconds` of
/// video, between 0.1 and 30 frames a second.
pub fn default_fps(total_seconds: f64) -> f64 {
    (DEFAULT_FRAME_TARGET / total_seconds.max(1e-3)).clamp(0.1, 30.0)
}

/// Extracts frames of `video` at `fps` into `dir` as `PREFIX_000001.jpg`, … with the long side at
/// most `max_size` (0: the video's size). Returns them in order.
pub fn extract_frames(
    ffmpeg: &Tool,
    log: &ToolLog,
    video: &Path,
    dir: &Path,
    prefix: &str,
    fps: f64,
    max_size: u32,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| crate::io::io_error(dir, "create", e))?;
    let mut filter = format!("fps={fps}");
    if max_size > 0 {
        // Shrink only, keeping the aspect ratio; even sizes for the encoder.
        filter.push_str(&format!(
            ",scale=w='if(gte(iw,ih),min(iw,{max_size}),-2)':h='if(gte(iw,ih),-2,min(ih,{max_size}))'"
        ));
    }
    let pattern = dir.join(format!("{prefix}_%06d.jpg"));
    let args: Vec<String> = [
        "-nostdin",
        "-hide_banner",
        "-y",
        "-i",
        &video.to_string_lossy(),
        "-vf",
        &filter,
        "-q:v",
        "2",
        &pattern.to_string_lossy(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    log.run(ffmpeg, &args, "extracting frames")?;
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

/// Variance of the 4-neighbour Laplacian of a grey image (`width` × `height`, row-major): high for
/// sharp images, low for blurred ones.
pub fn laplacian_variance(grey: &[f32], width: usize, height: usize) -> f64 {
    if width < 3 || height < 3 {
        return 0.0;
    }
    let (mut sum, mut sum_sq, mut n) = (0.0f64, 0.0f64, 0.0f64);
    for y in 1..height - 1 {
        for x in 1..width - 1 {
            let at = |dx: isize, dy: isize| {
                grey[(y as isize + dy) as usize * width + (x as isize + dx) as usize] as f64
            };
            let lap = at(-1, 0) + at(1, 0) + at(0, -1) + at(0, 1) - 4.0 * at(0, 0);
            sum += lap;
            sum_sq += lap * lap;
            n += 1.0;
        }
    }
    let mean = sum / n;
    (sum_sq / n - mean * mean).max(0.0)
}

/// The sharpness of an image file: [`laplacian_variance`] of its grey version at a long side of
/// [`SHARPNESS_SIZE`] (so that the measure does not depend on the frame size).
pub fn sharpness(path: &Path) -> Result<f64> {
    let image = crate::data::image::read_image(path)?;
    let (w, h) = super::photos::limited_size(image.width, image.height, SHARPNESS_SIZE);
    let small = image.resized_area(w, h);
    let grey: Vec<f32> = small
        .pixels
        .chunks_exact(4)
        .map(|p| 0.299 * f32::from(p[0]) + 0.587 * f32::from(p[1]) + 0.114 * f32::from(p[2]))
        .collect();
    Ok(laplacian_variance(&grey, w as usize, h as usize))
}

/// Which frames to keep: in each run of `run` neighbours (the last run may be shorter), the one
/// with the lowest sharpness is dropped; runs of one frame keep it. `run` < 2 keeps every frame.
pub fn keep_sharpest(scores: &[f64], run: usize) -> Vec<bool> {
    let mut keep = vec![true; scores.len()];
    if run < 2 {
        return keep;
    }
    for (chunk_index, chunk) in scores.chunks(run).enumerate() {
        if chunk.len() < 2 {
            continue;
        }
        let blurriest = chunk
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i)
            .unwrap_or(0);
        keep[chunk_index * run + blurriest] = false;
    }
    keep
}

/// Scores `frames` on every core and deletes the blurriest of each run of `run`; returns the
/// frames kept, in order.
pub fn drop_blurriest(frames: Vec<PathBuf>, run: usize) -> Result<Vec<PathBuf>> {
    let scores: Vec<f64> = frames
        .par_iter()
        .map(|f| sharpness(f))
        .collect::<Result<_>>()?;
    let keep = keep_sharpest(&scores, run);
    let mut kept = Vec::with_capacity(frames.len());
    for (frame, keep) in frames.into_iter().zip(keep) {
        if keep {
            kept.push(frame);
        } else {
            std::fs::remove_file(&frame).map_err(|e| crate::io::io_error(&frame, "remove", e))?;
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blurriest_of_each_run_is_dropped() {
        let scores = [5.0, 1.0, 7.0, 9.0, 3.0, 8.0, 2.0, 6.0, 4.0];
        assert_eq!(
            keep_sharpest(&scores, 4),
            [true, false, true, true, true, true, false, true, true]
        );
        assert!(keep_sharpest(&scores, 1).iter().all(|k| *k));
    }

    #[test]
    fn a_blurred_image_scores_lower_than_a_sharp_one() {
        let (w, h) = (32usize, 32usize);
        let sharp: Vec<f32> = (0..w * h)
            .map(|i| {
                if (i % w / 2 + i / w / 2) % 2 == 0 {
                    255.0
                } else {
                    0.0
                }
            })
            .collect();
        let mut blurred = sharp.clone();
        for y in 1..h - 1 {
            for x in 1..w - 1 {
                let mut sum = 0.0;
                for dy in 0..3 {
                    for dx in 0..3 {
                        sum += sharp[(y + dy - 1) * w + x + dx - 1];
                    }
                }
                blurred[y * w + x] = sum / 9.0;
            }
        }
        let (s, b) = (
            laplacian_variance(&sharp, w, h),
            laplacian_variance(&blurred, w, h),
        );
        assert!(s > 2.0 * b, "sharp {s}, blurred {b}");
        assert_eq!(laplacian_variance(&vec![7.0; w * h], w, h), 0.0);
    }

    #[test]
    fn the_default_rate_targets_a_few_hundred_frames() {
        assert!((default_fps(60.0) - 5.0).abs() < 1e-9);
        assert_eq!(default_fps(1e6), 0.1);
        assert_eq!(default_fps(1.0), 30.0);
    }
}

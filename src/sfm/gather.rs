//! The first stage: the images COLMAP and training will see, in `DATA/images/` (and
//! `images_N/`): photographs made upright and brought to the size limit, or frames taken from
//! videos with the blurriest of each run dropped.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::inputs::Inputs;
use super::photos::{prepare_photos, prescaled_dir};
use super::tools::{Tool, ToolLog};
use super::video;
use crate::error::Result;

/// How the images stage is set up.
#[derive(Clone, Debug)]
pub struct GatherSettings {
    /// Long side limit (0: none).
    pub max_size: u32,
    /// Frames per second taken from videos (`None`: about 300 frames over all videos).
    pub fps: Option<f64>,
    /// Run length of which the blurriest frame is dropped.
    pub blur_run: usize,
    /// INRIA's pre-scaled folders to write (`images_N`).
    pub downscales: Vec<u32>,
}

/// Size and modification time of `path`, so that a changed input redoes the stage.
fn file_identity(path: &Path) -> serde_json::Value {
    let meta = std::fs::metadata(path).ok();
    let modified = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos().to_string());
    json!([path.display().to_string(), meta.map(|m| m.len()), modified])
}

/// The images stage's settings record: every input's identity and the settings.
pub fn stage_key(inputs: &Inputs, settings: &GatherSettings) -> serde_json::Value {
    json!({
        "images": inputs.images.iter().map(|p| file_identity(p)).collect::<Vec<_>>(),
        "videos": inputs.videos.iter().map(|p| file_identity(p)).collect::<Vec<_>>(),
        "max_size": settings.max_size,
        "fps": settings.fps,
        "blur_run": settings.blur_run,
        "downscales": settings.downscales,
    })
}

/// Removes what an earlier images stage wrote.
fn clear(images_dir: &Path, frames_dir: &Path, downscales: &[u32]) -> Result<()> {
    let mut dirs = vec![images_dir.to_path_buf(), frames_dir.to_path_buf()];
    dirs.extend(downscales.iter().map(|f| prescaled_dir(images_dir, *f)));
    // Folders of earlier runs with other factors.
    for factor in [2, 4, 8, 16] {
        dirs.push(prescaled_dir(images_dir, factor));
    }
    for dir in dirs {
        if dir.is_dir() {
            std::fs::remove_dir_all(&dir).map_err(|e| crate::io::io_error(&dir, "remove", e))?;
        }
    }
    Ok(())
}

/// A file-name-safe prefix for the frames of the `index`-th video.
fn frame_prefix(video: &Path, index: usize, count: usize) -> String {
    let stem: String = video
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = if stem.is_empty() {
        "video".into()
    } else {
        stem
    };
    if count > 1 {
        format!("{index:02}_{stem}")
    } else {
        stem
    }
}

/// Writes the images into `images_dir` and returns their names (sorted). `ffmpeg` and `ffprobe`
/// are needed only for videos. `line` reports progress.
#[allow(clippy::too_many_arguments)]
pub fn gather(
    inputs: &Inputs,
    settings: &GatherSettings,
    images_dir: &Path,
    frames_dir: &Path,
    video_tools: Option<(&Tool, &Tool)>,
    log: &ToolLog,
    line: &(dyn Fn(&str) + Sync),
) -> Result<Vec<String>> {
    clear(images_dir, frames_dir, &settings.downscales)?;
    let mut sources: Vec<PathBuf> = inputs.images.clone();
    if let (false, Some((ffmpeg, ffprobe))) = (inputs.videos.is_empty(), video_tools) {
        let mut durations = Vec::new();
        for v in &inputs.videos {
            durations.push(video::duration_seconds(ffprobe, v)?);
        }
        let fps = settings
            .fps
            .unwrap_or_else(|| video::default_fps(durations.iter().sum()));
        for (index, v) in inputs.videos.iter().enumerate() {
            let prefix = frame_prefix(v, index, inputs.videos.len());
            let frames =
                video::extract_frames(ffmpeg, log, v, frames_dir, &prefix, fps, settings.max_size)?;
            let extracted = frames.len();
            let kept = video::drop_blurriest(frames, settings.blur_run)?;
            line(&format!(
                "{}: {:.1} s of video at {fps:.2} frames/s: {extracted} frames, {} kept (the blurriest of each {} dropped)",
                v.display(),
                durations[index],
                kept.len(),
                settings.blur_run
            ));
            sources.extend(kept);
        }
    }
    let done = std::sync::atomic::AtomicUsize::new(0);
    let total = sources.len();
    let tick = || {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if n == total || n.is_multiple_of(25) {
            line(&format!("images: {n}/{total} prepared"));
        }
    };
    let prepared = prepare_photos(
        &sources,
        images_dir,
        settings.max_size,
        &settings.downscales,
        &tick,
    )?;
    if frames_dir.is_dir() {
        std::fs::remove_dir_all(frames_dir)
            .map_err(|e| crate::io::io_error(frames_dir, "remove", e))?;
    }
    let resized = prepared.iter().filter(|p| !p.copied).count();
    if resized > 0 && settings.max_size > 0 {
        line(&format!(
            "images: {resized} of {total} rotated upright or brought to at most {} px on the long side (the originals are untouched)",
            settings.max_size
        ));
    }
    let mut names: Vec<String> = prepared.into_iter().map(|p| p.name).collect();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_prefixes_are_safe_and_distinct() {
        assert_eq!(frame_prefix(Path::new("a/My walk.MOV"), 0, 1), "My_walk");
        assert_eq!(frame_prefix(Path::new("a/x.mp4"), 1, 2), "01_x");
    }
}

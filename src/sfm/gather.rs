//! The first stage: the images COLMAP and training will see, in `DATA/images/` (and
//! `images_N/`): photographs made upright and brought to the size limit, or frames taken from
//! videos with the blurriest of each run dropped.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::frame_select::select_frames;
use super::inputs::Inputs;
use super::photos;
use super::video;
use crate::error::Result;
use crate::external::{Tool, ToolLog};

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

/// Host memory the photographs being prepared may hold at once when the machine's available
/// memory cannot be read.
pub const FALLBACK_MEMORY_LIMIT: u64 = 4 << 30;

/// The frames taken from each video, at the rate asked (or about [`video::DEFAULT_FRAME_TARGET`]
/// in all), never above a video's own rate; duplicates and the blurriest of each run dropped.
fn video_frames(
    inputs: &Inputs,
    settings: &GatherSettings,
    frames_dir: &Path,
    (ffmpeg, ffprobe): (&Tool, &Tool),
    log: &ToolLog,
    line: &(dyn Fn(&str) + Sync),
) -> Result<Vec<PathBuf>> {
    let infos = (inputs.videos.iter())
        .map(|v| video::probe(ffprobe, v))
        .collect::<Result<Vec<_>>>()?;
    let asked = settings
        .fps
        .unwrap_or_else(|| video::default_fps(infos.iter().map(|i| i.seconds).sum()));
    let mut frames = Vec::new();
    for ((v, info), prefix) in inputs.videos.iter().zip(&infos).zip(&inputs.frame_prefixes) {
        let fps = match info.frame_rate {
            Some(rate) if rate < asked => {
                line(&format!(
                    "{}: the video has {rate:.2} frames/s, so frames are taken at that rate, not {asked:.2}",
                    v.display()
                ));
                rate
            }
            _ => asked,
        };
        let extracted = video::extract_frames(
            ffmpeg,
            log,
            v,
            frames_dir,
            prefix,
            fps,
            settings.max_size,
            &mut |_| {},
        )?;
        let count = extracted.len();
        let selection = select_frames(extracted, settings.blur_run, fps)?;
        line(&format!(
            "{}: {:.1} s of video at {fps:.2} frames/s: {count} frames, {} kept ({} duplicates of the frame before dropped, and the blurriest of each {} taken at least {:.0} frames/s: {})",
            v.display(),
            info.seconds,
            selection.kept.len(),
            selection.duplicates,
            settings.blur_run,
            1.0 / super::frame_select::RUN_GAP_SECONDS,
            selection.blurred
        ));
        frames.extend(selection.kept);
    }
    Ok(frames)
}

/// Writes the images into `images_dir` (and `images_N`) and returns their names (sorted), with
/// the photographs that could not be read skipped and named through `line`. `ffmpeg` and
/// `ffprobe` are needed only for videos.
pub fn gather(
    inputs: &Inputs,
    settings: &GatherSettings,
    images_dir: &Path,
    frames_dir: &Path,
    video_tools: Option<(&Tool, &Tool)>,
    log: &ToolLog,
    line: &(dyn Fn(&str) + Sync),
) -> Result<Vec<String>> {
    let mut sources: Vec<PathBuf> = inputs.images.clone();
    let mut names: Vec<String> = inputs.image_names.clone();
    if let (false, Some(tools)) = (inputs.videos.is_empty(), video_tools) {
        for frame in video_frames(inputs, settings, frames_dir, tools, log, line)? {
            names.push(photos::output_name(&frame));
            sources.push(frame);
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
    let memory_limit =
        crate::train::setup::default_host_image_budget().unwrap_or(FALLBACK_MEMORY_LIMIT);
    let prepared = photos::prepare_photos(
        &sources,
        &names,
        images_dir,
        settings.max_size,
        &settings.downscales,
        memory_limit,
        &tick,
    )?;
    if frames_dir.is_dir() {
        std::fs::remove_dir_all(frames_dir)
            .map_err(|e| crate::io::io_error(frames_dir, "remove", e))?;
    }
    for (path, reason) in &prepared.skipped {
        line(&format!("images: skipped {}: {reason}", path.display()));
    }
    let resized = prepared.written.iter().filter(|p| !p.copied).count();
    if resized > 0 && settings.max_size > 0 {
        line(&format!(
            "images: {resized} of {} rotated upright or brought to at most {} px on the long side (the originals are untouched)",
            prepared.written.len(),
            settings.max_size
        ));
    }
    let mut names: Vec<String> = prepared.written.into_iter().map(|p| p.name).collect();
    names.sort();
    Ok(names)
}

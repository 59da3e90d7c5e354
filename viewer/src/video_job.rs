//! Rendering a camera path into a video from the viewer: on its own thread, through the CLI's
//! code ([`wgsplat::show::render_path`] into a [`VideoWriter`], one frame in flight), with the
//! frames done, the total and an ETA for the panel, and a cancel flag it checks before each frame.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use web_time::Instant;
use wgsplat::GpuContext;
use wgsplat::show::video::{VideoWriter, find_ffmpeg};
use wgsplat::show::{CameraPath, render_path};
use wgsplat::splat::{GaussianTensors, RasterMode};

/// Where a video render stands.
#[derive(Clone, Debug, Default)]
pub struct VideoProgress {
    /// Frames rendered and handed to ffmpeg.
    pub done: usize,
    /// Frames in the path.
    pub total: usize,
    /// Set when the job ended: the frames written, or what went wrong.
    pub finished: Option<Result<usize, String>>,
}

/// A video being rendered.
pub struct VideoJob {
    /// The video's path.
    pub target: PathBuf,
    progress: Arc<Mutex<VideoProgress>>,
    cancel: Arc<AtomicBool>,
    started: Instant,
    thread: Option<JoinHandle<()>>,
}

/// What a job needs: the model, the path, and how to draw it.
pub struct VideoRequest {
    /// The GPU context the model lives on.
    pub ctx: GpuContext,
    /// The model, as it is to appear (edits applied, no highlight).
    pub params: Arc<GaussianTensors>,
    /// The frames.
    pub path: CameraPath,
    /// The video file (`.mp4`); the path is also written beside it as `.camera_path.json`.
    pub target: PathBuf,
    /// Background colour.
    pub background: [f32; 3],
    /// Raster mode of the model.
    pub raster_mode: RasterMode,
}

impl VideoJob {
    /// Starts rendering `request` on a new thread; `repaint` is called after each frame.
    pub fn start(request: VideoRequest, repaint: impl Fn() + Send + 'static) -> VideoJob {
        let progress = Arc::new(Mutex::new(VideoProgress {
            total: request.path.frames.len(),
            ..VideoProgress::default()
        }));
        let cancel = Arc::new(AtomicBool::new(false));
        let target = request.target.clone();
        let (job_progress, job_cancel) = (progress.clone(), cancel.clone());
        let thread = std::thread::spawn(move || {
            let result = render(&request, &job_progress, &job_cancel, &repaint);
            if let Ok(mut p) = job_progress.lock() {
                p.finished = Some(result.map_err(|e| format!("{e:#}")));
            }
            repaint();
        });
        VideoJob {
            target,
            progress,
            cancel,
            started: Instant::now(),
            thread: Some(thread),
        }
    }

    /// The progress now.
    pub fn progress(&self) -> VideoProgress {
        self.progress.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Asks the job to stop before its next frame (the partial video is removed).
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Seconds left at the rate so far, once a frame is done.
    pub fn eta_seconds(&self) -> Option<f64> {
        let p = self.progress();
        (p.done > 0 && p.finished.is_none()).then(|| {
            let per_frame = self.started.elapsed().as_secs_f64() / p.done as f64;
            per_frame * p.total.saturating_sub(p.done) as f64
        })
    }
}

impl Drop for VideoJob {
    fn drop(&mut self) {
        self.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The job's body: ffmpeg started, the frames rendered and pushed, the video finished, and the
/// path written beside it. A cancelled job ends with an error saying so (no video left behind).
fn render(
    request: &VideoRequest,
    progress: &Mutex<VideoProgress>,
    cancel: &AtomicBool,
    repaint: &dyn Fn(),
) -> anyhow::Result<usize> {
    let path = &request.path;
    let ffmpeg = find_ffmpeg(None)?;
    let mut writer =
        VideoWriter::start(&ffmpeg, &request.target, path.width, path.height, path.fps)?;
    let rendered = render_path(
        &request.ctx,
        &request.params,
        path,
        request.background,
        request.raster_mode,
        &mut |index, image| {
            writer.push(&image.pixels)?;
            if let Ok(mut p) = progress.lock() {
                p.done = index + 1;
            }
            repaint();
            Ok(())
        },
        &|| cancel.load(Ordering::Relaxed),
    )?;
    if rendered < path.frames.len() {
        // Dropping the writer ends ffmpeg and removes the partial file.
        drop(writer);
        anyhow::bail!(
            "cancelled after {rendered} of {} frames; no video was written",
            path.frames.len()
        );
    }
    let written = writer.finish()?;
    path.write(&request.target.with_extension("camera_path.json"))?;
    Ok(written)
}

#[cfg(test)]
#[path = "video_job_tests.rs"]
mod tests;

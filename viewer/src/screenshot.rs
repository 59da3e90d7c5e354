//! Scripted runs: after N frames (and, when asked, N training iterations) take a screenshot of
//! the whole window, write it as a PNG with a JSON sidecar describing the layout, and close.

use eframe::egui;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A named rectangle in screenshot pixels: [x0, y0, x1, y1].
#[derive(Clone, Debug, Serialize)]
pub struct Region {
    /// What it is.
    pub name: String,
    /// Corners in physical pixels.
    pub rect: [f32; 4],
}

impl Region {
    /// A region from a rectangle in points.
    pub fn new(name: &str, rect: egui::Rect, pixels_per_point: f32) -> Region {
        let p = pixels_per_point;
        Region {
            name: name.to_owned(),
            rect: [
                rect.min.x * p,
                rect.min.y * p,
                rect.max.x * p,
                rect.max.y * p,
            ],
        }
    }
}

/// What the JSON sidecar holds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Sidecar {
    /// Where the scene image is drawn.
    pub scene: Option<Region>,
    /// The panels shown.
    pub panels: Vec<Region>,
    /// The loss plot, when training.
    pub loss_plot: Option<Region>,
    /// Points in the loss plot.
    pub loss_points: usize,
    /// Gaussians in the model shown.
    pub gaussians: u64,
    /// Training iteration of the model shown (0 for a PLY).
    pub iteration: u64,
    /// Mean scene render time per frame in milliseconds.
    pub mean_frame_ms: f64,
    /// Frames rendered.
    pub frames: usize,
    /// Scene image size in pixels.
    pub image_size: [u32; 2],
    /// Physical pixels per egui point.
    pub pixels_per_point: f32,
    /// A plan's blocks as the overlay drew them (empty without a plan).
    pub plan_blocks: Vec<crate::plan_view::overlay::BlockShown>,
    /// Edges of the crop box drawn over the scene.
    pub crop_box_segments: usize,
    /// The crop box's corners (min x, y, z, max x, y, z) when it is on.
    pub crop_box: Option<[f32; 6]>,
    /// The camera path as drawn over the scene.
    pub path: crate::path_panel::PathShown,
    /// Gaussians selected.
    pub selected: usize,
    /// Gaussians not deleted.
    pub remaining: u64,
    /// The counts after each scripted edit (`--edits`).
    pub edit_steps: Vec<EditStep>,
    /// The video rendered from the path (`--render-video`).
    pub video: Option<VideoShown>,
    /// What a level of detail's frames did (pages loaded, wanted and used; resident bytes).
    pub lod: Option<wgsplat_viewer::lod::LodStats>,
}

/// One scripted edit and the counts after it.
#[derive(Clone, Debug, Serialize)]
pub struct EditStep {
    /// The step as written.
    pub step: String,
    /// Gaussians selected after it.
    pub selected: usize,
    /// Gaussians not deleted after it.
    pub remaining: usize,
}

/// How a scripted video render ended.
#[derive(Clone, Debug, Serialize)]
pub struct VideoShown {
    /// The video file.
    pub file: String,
    /// Frames in the path.
    pub total: usize,
    /// Frames written (none on an error).
    pub frames: usize,
    /// What went wrong, if anything.
    pub error: Option<String>,
}

/// The state of a scripted run.
pub struct Script {
    path: PathBuf,
    frames: u32,
    train_iters: Option<u64>,
    frames_seen: u32,
    requested: bool,
    image: Arc<Mutex<Option<Arc<egui::ColorImage>>>>,
    /// Set once the files are written.
    pub done: bool,
}

impl Script {
    /// A run that writes `path` after `frames` frames and `train_iters` iterations.
    pub fn new(path: PathBuf, frames: u32, train_iters: Option<u64>) -> Script {
        Script {
            path,
            frames: frames.max(1),
            train_iters,
            frames_seen: 0,
            requested: false,
            image: Arc::default(),
            done: false,
        }
    }

    /// Called once per frame with whether a model was drawn, the iteration reached and whether
    /// work the screenshot waits for (a video render) is still running; asks for the screenshot
    /// when everything is ready.
    pub fn frame(
        &mut self,
        ctx: &egui::Context,
        drew_model: bool,
        iteration: u64,
        training_done: bool,
        busy: bool,
    ) {
        if drew_model {
            self.frames_seen += 1;
        }
        let trained = self
            .train_iters
            .is_none_or(|n| iteration >= n || training_done);
        if !self.requested && self.frames_seen >= self.frames && trained && !busy {
            let slot = self.image.clone();
            let repaint = ctx.clone();
            ctx.request_screenshot(move |image| {
                if let Ok(mut s) = slot.lock() {
                    *s = Some(image);
                }
                repaint.request_repaint();
            });
            self.requested = true;
        }
        if busy {
            // The video renders on its own thread: look again soon without spinning.
            ctx.request_repaint_after(std::time::Duration::from_millis(50));
        } else {
            ctx.request_repaint();
        }
    }

    /// Writes the PNG and JSON once the screenshot has arrived; returns true when written.
    pub fn finish(&mut self, sidecar: &Sidecar) -> anyhow::Result<bool> {
        let image = match self.image.lock() {
            Ok(mut slot) => slot.take(),
            Err(_) => None,
        };
        let Some(image) = image else {
            return Ok(false);
        };
        let [w, h] = image.size;
        let bytes: Vec<u8> = image.pixels.iter().flat_map(|c| c.to_array()).collect();
        let png = image::RgbaImage::from_raw(w as u32, h as u32, bytes)
            .ok_or_else(|| anyhow::anyhow!("the screenshot has the wrong number of pixels"))?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        png.save(&self.path)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", self.path.display()))?;
        let json = self.path.with_extension("json");
        std::fs::write(&json, serde_json::to_string_pretty(sidecar)?)?;
        println!(
            "wrote {} and {}; mean scene render time {:.2} ms over {} frames ({} Gaussians)",
            self.path.display(),
            json.display(),
            sidecar.mean_frame_ms,
            sidecar.frames,
            sidecar.gaussians
        );
        self.done = true;
        Ok(true)
    }
}

//! The "Camera path" panel: keyframes added at the current view, removed and reordered, the time
//! between them, a preview played in the scene view, `camera_path.json` loaded and saved, and a
//! video rendered on its own thread with its progress; and the path drawn over the scene.

use crate::plan_view::geometry::Projector;
use crate::scene::ViewCamera;
use crate::training::Level;
use crate::video_job::VideoJob;
use eframe::egui::{self, Color32, Stroke};
use serde::Serialize;
use std::path::Path;
use web_time::Instant;
use wgsplat::show::camera_path::MAX_FPS;
use wgsplat::show::keyframes::Keyframes;
use wgsplat::show::{CameraPath, CameraType, PathFrame};
use wgsplat::splat::Camera;

/// Colour of the interpolated path.
pub const PATH_COLOR: Color32 = Color32::from_rgb(0, 230, 255);
/// Colour of the keyframe markers.
pub const KEY_COLOR: Color32 = Color32::from_rgb(255, 60, 200);
/// Polyline points drawn per gap between keys.
const SAMPLES_PER_GAP: usize = 16;

/// What the overlay drew last frame, for the scripted screenshot's sidecar.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PathShown {
    /// Keyframes in the path.
    pub keyframes: usize,
    /// Polyline pieces drawn.
    pub segments: usize,
    /// Where each keyframe in front of the camera was marked, in physical pixels.
    pub markers: Vec<[f32; 2]>,
}

/// State of the camera-path panel.
pub struct PathPanel {
    /// The keyframes.
    pub keys: Keyframes,
    /// Frames per second of the preview and the video.
    pub fps: f64,
    /// Video frame size.
    pub size: [u32; 2],
    /// The `camera_path.json` loaded and saved.
    pub file: String,
    /// The video written.
    pub video_file: String,
    /// Draw the path over the scene.
    pub overlay: bool,
    /// The keyframe picked in the list.
    selected: Option<usize>,
    /// When the preview started playing.
    playing: Option<Instant>,
    /// The video being rendered (or the last one, with its outcome).
    pub job: Option<VideoJob>,
    /// What the overlay drew.
    pub shown: PathShown,
}

impl Default for PathPanel {
    fn default() -> Self {
        PathPanel {
            keys: Keyframes::default(),
            fps: 30.0,
            size: [1280, 720],
            file: "camera_path.json".to_owned(),
            video_file: "path.mp4".to_owned(),
            overlay: true,
            selected: None,
            playing: None,
            job: None,
            shown: PathShown::default(),
        }
    }
}

/// What the panel asks the app to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathRequest {
    /// Nothing.
    None,
    /// Render the path into the video file.
    RenderVideo,
}

impl PathPanel {
    /// Adds a keyframe at `view` (the first one also sets the video size to the view's, even,
    /// and the path's camera type to the view's: a fisheye view starts a fisheye path).
    pub fn add_key(&mut self, view: &Camera) {
        if self.keys.keys.is_empty() {
            self.size = [(view.width & !1).max(2), (view.height & !1).max(2)];
            self.keys.camera_type = CameraType::of_lens(&view.lens);
        }
        self.keys.push(PathFrame::from_camera(view));
        self.selected = Some(self.keys.keys.len() - 1);
    }

    /// The path to render: the keys at the panel's size and rate.
    pub fn path(&self) -> anyhow::Result<CameraPath> {
        Ok(self.keys.path(self.size[0], self.size[1], self.fps)?)
    }

    /// True while a video is being rendered.
    pub fn rendering(&self) -> bool {
        self.job
            .as_ref()
            .is_some_and(|j| j.progress().finished.is_none())
    }

    /// While the preview plays, moves `camera` to the path's frame now; returns whether it did.
    pub fn preview(&mut self, camera: &mut ViewCamera) -> bool {
        let Some(started) = self.playing else {
            return false;
        };
        self.preview_at(camera, started.elapsed().as_secs_f64())
    }

    /// Starts the preview (the "Play" button), or stops it when it plays ("Stop").
    pub fn toggle_play(&mut self) {
        self.playing = match self.playing {
            Some(_) => None,
            None => Some(Instant::now()),
        };
    }

    /// True while the preview plays.
    pub fn is_playing(&self) -> bool {
        self.playing.is_some()
    }

    /// [`PathPanel::preview`] at `seconds` into the path: the camera goes to the path's frame
    /// then, and the preview stops one frame past the end.
    fn preview_at(&mut self, camera: &mut ViewCamera, seconds: f64) -> bool {
        if self.playing.is_none() {
            return false;
        }
        if seconds > self.keys.duration_seconds() + 1.0 / self.fps {
            self.playing = None;
        }
        let Some(frame) = self.keys.frame_at(seconds, self.fps) else {
            self.playing = None;
            return false;
        };
        let distance = camera.distance;
        *camera = ViewCamera::from_camera(
            &frame.to_camera(self.keys.camera_type, self.size[0], self.size[1], [0.0; 3]),
            distance,
        );
        camera.exact = None;
        true
    }

    fn load(&mut self, log: &mut Vec<(Level, String)>) {
        match CameraPath::read(Path::new(&self.file)) {
            Ok(path) => {
                self.keys = Keyframes::from_path(&path);
                (self.size, self.fps) = ([path.width, path.height], path.fps);
                self.selected = None;
                log.push((
                    Level::Info,
                    format!("read {} frames from {}", path.frames.len(), self.file),
                ));
            }
            Err(e) => log.push((Level::Error, format!("{e}"))),
        }
    }

    fn save(&self, log: &mut Vec<(Level, String)>) {
        let written = self
            .path()
            .and_then(|p| Ok(p.write(Path::new(&self.file)).map(|()| p.frames.len())?));
        match written {
            Ok(n) => log.push((Level::Info, format!("wrote {n} frames to {}", self.file))),
            Err(e) => log.push((Level::Error, format!("saving {}: {e:#}", self.file))),
        }
    }

    /// Shows the panel; `view` is the camera of the scene view now.
    pub fn show(
        &mut self,
        ui: &mut egui::Ui,
        view: &Camera,
        log: &mut Vec<(Level, String)>,
    ) -> PathRequest {
        let mut request = PathRequest::None;
        ui.horizontal(|ui| {
            if ui
                .button("Add keyframe")
                .on_hover_text("at the current view")
                .clicked()
            {
                self.add_key(view);
            }
            let playing = self.is_playing();
            let label = if playing { "Stop" } else { "Play" };
            if ui
                .add_enabled(!self.keys.keys.is_empty(), egui::Button::new(label))
                .clicked()
            {
                self.toggle_play();
            }
            ui.checkbox(&mut self.overlay, "draw");
        });
        self.key_list(ui);
        egui::Grid::new("path-settings")
            .num_columns(2)
            .show(ui, |ui| {
                // Any rate a path file may hold is kept (a 60 fps file has keys 1/60 s apart);
                // only a drag is held to the ranges.
                ui.label("seconds between keys");
                ui.add(
                    egui::DragValue::new(&mut self.keys.seconds_between)
                        .range(1.0 / MAX_FPS..=3600.0)
                        .clamp_existing_to_range(false)
                        .speed(0.05),
                );
                ui.end_row();
                ui.label("frames per second");
                ui.add(
                    egui::DragValue::new(&mut self.fps)
                        .range(0.01..=MAX_FPS)
                        .clamp_existing_to_range(false),
                );
                ui.end_row();
                ui.label("size");
                ui.horizontal(|ui| {
                    ui.add(egui::DragValue::new(&mut self.size[0]).range(2..=16384));
                    ui.label("x");
                    ui.add(egui::DragValue::new(&mut self.size[1]).range(2..=16384));
                });
                ui.end_row();
                ui.label("camera");
                egui::ComboBox::from_id_salt("path-camera-type")
                    .selected_text(self.keys.camera_type.name())
                    .show_ui(ui, |ui| {
                        for kind in [CameraType::Perspective, CameraType::Fisheye] {
                            ui.selectable_value(&mut self.keys.camera_type, kind, kind.name());
                        }
                    });
                ui.end_row();
            });
        ui.label(format!(
            "{:.1} s, {} frames",
            self.keys.duration_seconds(),
            self.keys.frame_count(self.fps)
        ));
        ui.horizontal(|ui| {
            if ui.button("Load").clicked() {
                self.load(log);
            }
            if ui.button("Save").clicked() {
                self.save(log);
            }
            ui.text_edit_singleline(&mut self.file);
        });
        ui.horizontal(|ui| {
            if self.rendering() {
                if ui.button("Cancel").clicked()
                    && let Some(job) = &self.job
                {
                    job.cancel();
                }
            } else if ui
                .add_enabled(
                    !self.keys.keys.is_empty(),
                    egui::Button::new("Render video"),
                )
                .clicked()
            {
                request = PathRequest::RenderVideo;
            }
            ui.text_edit_singleline(&mut self.video_file);
        });
        self.job_status(ui);
        request
    }

    fn key_list(&mut self, ui: &mut egui::Ui) {
        let count = self.keys.keys.len();
        let mut action: Option<(usize, i8)> = None;
        egui::ScrollArea::vertical()
            .max_height(120.0)
            .id_salt("keyframes")
            .show(ui, |ui| {
                for (k, key) in self.keys.keys.iter().enumerate() {
                    ui.horizontal(|ui| {
                        let [x, y, z] = key.position;
                        let text = format!("{k}: ({x:.2}, {y:.2}, {z:.2})");
                        if ui
                            .selectable_label(self.selected == Some(k), text)
                            .clicked()
                        {
                            self.selected = Some(k);
                        }
                        if ui
                            .add_enabled(k > 0, egui::Button::new("up").small())
                            .clicked()
                        {
                            action = Some((k, -1));
                        }
                        if ui
                            .add_enabled(k + 1 < count, egui::Button::new("down").small())
                            .clicked()
                        {
                            action = Some((k, 1));
                        }
                        if ui.small_button("x").on_hover_text("delete").clicked() {
                            action = Some((k, 0));
                        }
                    });
                }
            });
        match action {
            Some((k, -1)) if self.keys.move_up(k) => self.selected = Some(k - 1),
            Some((k, 1)) if self.keys.move_down(k) => self.selected = Some(k + 1),
            Some((k, 0)) => {
                self.keys.remove(k);
                self.selected = None;
            }
            _ => {}
        }
    }

    fn job_status(&self, ui: &mut egui::Ui) {
        let Some(job) = &self.job else {
            return;
        };
        let p = job.progress();
        match &p.finished {
            None => {
                let eta = job
                    .eta_seconds()
                    .map_or("-".to_owned(), |s| format!("{s:.0} s"));
                let fraction = p.done as f32 / p.total.max(1) as f32;
                ui.add(
                    egui::ProgressBar::new(fraction)
                        .text(format!("{} / {} frames, ETA {eta}", p.done, p.total)),
                );
            }
            Some(Ok(frames)) => {
                ui.label(format!("wrote {frames} frames to {}", job.target.display()));
            }
            Some(Err(e)) => {
                ui.colored_label(Color32::from_rgb(240, 90, 80), e);
            }
        }
    }

    /// Draws the path (the interpolated polyline, each key as a numbered dot with a tick along
    /// its view direction `extent / 5` long) with `projector`.
    pub fn paint(&mut self, painter: &egui::Painter, projector: &Projector<'_>, extent: f32) {
        let keys = &self.keys.keys;
        self.shown = PathShown {
            keyframes: keys.len(),
            ..PathShown::default()
        };
        if !self.overlay || keys.is_empty() {
            return;
        }
        let ppp = painter.ctx().pixels_per_point();
        let to_f32 = |p: [f64; 3]| p.map(|v| v as f32);
        let samples = self.keys.sample((keys.len() - 1) * SAMPLES_PER_GAP + 1);
        for pair in samples.windows(2) {
            let (a, b) = (to_f32(pair[0].position), to_f32(pair[1].position));
            if let Some(ends) = projector.segment(a, b) {
                painter.line_segment(ends, Stroke::new(2.0, PATH_COLOR));
                self.shown.segments += 1;
            }
        }
        for (k, key) in keys.iter().enumerate() {
            let at = to_f32(key.position);
            // OpenGL camera-to-world: the camera looks down its third column, negated.
            let forward = [0, 1, 2].map(|i| at[i] - 0.2 * extent * key.rotation[i][2] as f32);
            if let Some(ends) = projector.segment(at, forward) {
                painter.line_segment(ends, Stroke::new(1.5, KEY_COLOR));
            }
            let Some(screen) = projector.point(at) else {
                continue;
            };
            if !painter.clip_rect().contains(screen) {
                continue;
            }
            painter.circle_filled(screen, 3.5, KEY_COLOR);
            painter.text(
                screen + egui::vec2(5.0, -5.0),
                egui::Align2::LEFT_BOTTOM,
                k.to_string(),
                egui::FontId::proportional(11.0),
                KEY_COLOR,
            );
            self.shown.markers.push([screen.x * ppp, screen.y * ppp]);
        }
    }
}

#[cfg(test)]
#[path = "path_panel_tests.rs"]
mod tests;

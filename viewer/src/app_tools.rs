//! The app's camera-path and editing tools: their panels, the overlays and selection input over
//! the scene view, the video render, and the scripted keyframes, edits and video of a
//! screenshot run (`--keyframes`, `--edits`, `--render-video`).

use super::{Model, ViewerApp};
use crate::editing::{EditAction, EditState};
use crate::path_panel::PathRequest;
use crate::plan_view::geometry::Projector;
use crate::screenshot::{EditStep, VideoShown};
use crate::training::Level;
use crate::video_job::{VideoJob, VideoRequest};
use eframe::egui;
use std::sync::Arc;
use wgsplat::show::CameraPath;
use wgsplat::splat::{Camera, RasterMode};

/// How near a scripted `crop-drag` must start to a handle, in image pixels.
const SCRIPT_PICK_PIXELS: f32 = 3.0;

impl ViewerApp {
    /// The scene view's camera now, at the size of the last image drawn.
    fn view_camera(&self) -> Camera {
        let [w, h] = self.renderer.size();
        Camera {
            near: self.display.near_plane,
            ..self
                .camera
                .camera(w.max(2), h.max(2), self.display.background)
        }
    }

    fn raster_mode(&self) -> RasterMode {
        if self.display.antialiased {
            RasterMode::Antialiased
        } else {
            RasterMode::Classic
        }
    }

    /// The "Camera path" and "Edit" sections of the side panel; returns their rectangles.
    pub(super) fn tool_panels(
        &mut self,
        ui: &mut egui::Ui,
        egui_ctx: &egui::Context,
    ) -> (egui::Rect, egui::Rect) {
        let view = self.view_camera();
        let path = egui::CollapsingHeader::new("Camera path")
            .default_open(true)
            .show(ui, |ui| self.path_panel.show(ui, &view, &mut self.log));
        if path.body_returned == Some(PathRequest::RenderVideo) {
            self.start_video(egui_ctx);
        }
        let (total, editable) = match &self.model {
            Model::Fixed { params, .. } => (params.len(), true),
            Model::Training(handle) => (handle.shared().gaussians, false),
            Model::Lod { stream, .. } => (stream.stats.leaves, false),
            Model::Empty => (0, false),
        };
        let edit = egui::CollapsingHeader::new("Edit")
            .default_open(true)
            .show(ui, |ui| {
                self.edit_panel
                    .show(ui, self.edits.as_ref(), total, editable)
            });
        for action in edit.body_returned.unwrap_or_default() {
            self.log_edit(&action);
        }
        (
            path.header_response
                .rect
                .union(path.body_response.map_or(egui::Rect::NOTHING, |r| r.rect)),
            edit.header_response
                .rect
                .union(edit.body_response.map_or(egui::Rect::NOTHING, |r| r.rect)),
        )
    }

    /// Applies `action` to the model shown (starting the edit state at the first edit).
    fn apply_edit(&mut self, action: &EditAction) -> anyhow::Result<String> {
        if let EditAction::CropDrag([x0, y0, x1, y1]) = *action {
            let camera = self
                .scene_camera
                .as_ref()
                .map_or_else(|| self.view_camera(), |(c, _)| c.clone());
            return self
                .edit_panel
                .drag_crop(&camera, [x0, y0], [x1, y1], SCRIPT_PICK_PIXELS);
        }
        let Model::Fixed { params, .. } = &self.model else {
            anyhow::bail!("editing needs a fixed model: save the trained one and open it");
        };
        if self.edits.is_none() {
            self.edits = Some(EditState::new(&self.ctx, params)?);
        }
        let camera = self
            .scene_camera
            .as_ref()
            .map_or_else(|| self.view_camera(), |(c, _)| c.clone());
        let crop = self.edit_panel.crop_box();
        let state = self
            .edits
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("no edit state"))?;
        state.apply(&self.ctx, action, &camera, crop.as_ref())
    }

    /// Applies `action`, logging what it did or why it failed.
    fn log_edit(&mut self, action: &EditAction) {
        match self.apply_edit(action) {
            Ok(line) => self.log.push((Level::Info, line)),
            Err(e) => self.log.push((Level::Error, format!("{e:#}"))),
        }
    }

    /// The model a video shows: the edited one without the highlight, else the model.
    fn video_params(&self) -> anyhow::Result<Arc<wgsplat::splat::GaussianTensors>> {
        if let Some(state) = &self.edits {
            return state
                .edited_params(&self.ctx)?
                .map(Arc::new)
                .ok_or_else(|| anyhow::anyhow!("every Gaussian is deleted: nothing to render"));
        }
        if matches!(self.model, Model::Lod { .. }) {
            anyhow::bail!(
                "the viewer renders videos of a model file, not of a level of detail. \
                 Save the path, then `wgsplat render SCENE.lod --path camera_path.json --video OUT.mp4`"
            );
        }
        self.current_params()
            .map(|(p, _)| p)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| anyhow::anyhow!("no model to render yet"))
    }

    /// Starts rendering the keyframe path into the panel's video file.
    pub(super) fn start_video(&mut self, egui_ctx: &egui::Context) {
        let request = self.path_panel.path().and_then(|path| {
            Ok(VideoRequest {
                ctx: self.ctx.clone(),
                params: self.video_params()?,
                path: CameraPath {
                    near: self.display.near_plane,
                    ..path
                },
                target: self.path_panel.video_file.clone().into(),
                background: self.display.background,
                raster_mode: self.raster_mode(),
            })
        });
        match request {
            Ok(request) => {
                self.log.push((
                    Level::Info,
                    format!(
                        "rendering {} frames into {}",
                        request.path.frames.len(),
                        request.target.display()
                    ),
                ));
                let repaint = egui_ctx.clone();
                self.path_panel.job = Some(VideoJob::start(request, move || {
                    repaint.request_repaint();
                }));
            }
            Err(e) => self
                .log
                .push((Level::Error, format!("render video: {e:#}"))),
        }
    }

    /// Draws the path and the crop box over the scene image drawn with `camera` in `scene_rect`
    /// (clipped to `area`), and runs the selection tools on `response`.
    pub(super) fn scene_tools(
        &mut self,
        ui: &egui::Ui,
        response: &egui::Response,
        camera: &Camera,
        scene_rect: egui::Rect,
        area: egui::Rect,
    ) {
        let painter = ui
            .painter_at(area)
            .with_clip_rect(scene_rect.intersect(area));
        let projector = Projector::new(camera, scene_rect);
        self.path_panel
            .paint(&painter, &projector, self.views.extent);
        self.edit_panel.paint(&painter, &projector);
        self.scene_camera = Some((camera.clone(), scene_rect));
        let editable = matches!(self.model, Model::Fixed { .. });
        if editable
            && let Some(action) = self
                .edit_panel
                .scene_input(ui, response, scene_rect, camera)
        {
            self.log_edit(&action);
        }
    }

    /// Scripted runs: on the first frame drawn, adds the keyframes, applies the edits (recording
    /// the counts after each) and starts the video. Fails the run on an error.
    pub(super) fn run_script_steps(&mut self, egui_ctx: &egui::Context) -> anyhow::Result<()> {
        if self.script_steps_done || self.scene_camera.is_none() {
            return Ok(());
        }
        self.script_steps_done = true;
        if let Some(list) = self.args.keyframes.clone() {
            for label in list.split(',').map(str::trim) {
                let index = self
                    .views
                    .find(label)
                    .map_err(|e| e.context("--keyframes"))?;
                let camera = self.views.views[index].camera.clone();
                self.path_panel.add_key(&camera);
            }
        }
        self.path_panel.keys.seconds_between = self.args.keyframe_seconds;
        let steps = self.args.edits.clone().unwrap_or_default();
        for (text, action) in steps
            .split(';')
            .filter(|s| !s.trim().is_empty())
            .zip(EditAction::parse_list(&steps)?)
        {
            let line = self
                .apply_edit(&action)
                .map_err(|e| e.context(format!("edit step {text:?}")))?;
            self.log.push((Level::Info, line));
            // Before the first edit of the model (a crop box drag), nothing is selected or gone.
            let total = self.current_params().map_or(0, |(p, _)| p.len() as usize);
            let (selected, remaining) = self.edits.as_ref().map_or((0, total), |s| {
                (s.session.selected_count(), s.session.remaining())
            });
            self.edit_steps.push(EditStep {
                step: text.trim().to_owned(),
                selected,
                remaining,
            });
        }
        if let Some(video) = &self.args.render_video {
            self.path_panel.video_file = video.display().to_string();
            self.start_video(egui_ctx);
            anyhow::ensure!(
                self.path_panel.job.is_some(),
                "the video did not start: {:?}",
                self.log.last()
            );
        }
        Ok(())
    }

    /// The scripted video's outcome for the sidecar.
    pub(super) fn video_shown(&self) -> Option<VideoShown> {
        let job = self.path_panel.job.as_ref()?;
        let p = job.progress();
        let (frames, error) = match p.finished {
            Some(Ok(frames)) => (frames, None),
            Some(Err(e)) => (0, Some(e)),
            None => (0, None),
        };
        Some(VideoShown {
            file: job.target.display().to_string(),
            total: p.total,
            frames,
            error,
        })
    }
}

//! The egui application: the panels around the scene view, the model being shown (a PLY, a
//! level-of-detail folder, a live training run, or a plan's scene with its blocks drawn over it),
//! dataset cameras, drag-and-drop and the scripted screenshot mode.

use crate::Args;
use crate::edit_panel::EditPanel;
use crate::editing::EditState;
use crate::panels;
use crate::path_panel::PathPanel;
use crate::plan_view::overlay::PlanOverlay;
use crate::render::{DisplayOptions, SceneRenderer};
use crate::scene::ViewCamera;
use crate::screenshot::{EditStep, Region, Script, Sidecar};
use crate::source::Source;
use crate::training::{Level, TrainingHandle, TrainingJob};
use crate::views::{DatasetViews, ViewPanel};
use eframe::egui;
use model_panel::ModelSummary;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wgsplat::GpuContext;
use wgsplat::splat::{Camera, GaussianTensors};

#[path = "app_lod.rs"]
mod lod;
#[path = "app_model_panel.rs"]
mod model_panel;
#[path = "app_scene.rs"]
mod scene_view;
#[path = "app_tools.rs"]
mod tools;

/// How a run ended, for the exit status (scripted runs must fail loudly).
#[derive(Clone, Default)]
pub struct Outcome(Arc<Mutex<Option<String>>>);

impl Outcome {
    fn fail(&self, message: String) {
        if let Ok(mut slot) = self.0.lock() {
            slot.get_or_insert(message);
        }
    }

    /// `Err` if the app recorded a failure.
    pub fn result(&self) -> anyhow::Result<()> {
        match self.0.lock().ok().and_then(|s| s.clone()) {
            Some(message) => Err(anyhow::anyhow!(message)),
            None => Ok(()),
        }
    }
}

/// The model on screen.
enum Model {
    /// Nothing loaded yet.
    Empty,
    /// A fixed model.
    Fixed {
        params: Arc<GaussianTensors>,
        label: String,
    },
    /// A model being trained.
    Training(TrainingHandle),
    /// A level-of-detail folder: each frame draws the cut for its camera.
    Lod {
        stream: Box<wgsplat_viewer::lod::LodStream>,
        label: String,
    },
}

/// The viewer.
pub struct ViewerApp {
    args: Args,
    outcome: Outcome,
    model: Model,
    views: DatasetViews,
    panel: ViewPanel,
    camera: ViewCamera,
    /// A partition plan drawn over the scene.
    plan: Option<PlanOverlay>,
    display: DisplayOptions,
    renderer: SceneRenderer,
    script: Option<Script>,
    log: Vec<(Level, String)>,
    ply_path: String,
    sidecar: Sidecar,
    /// The camera-path panel.
    path_panel: PathPanel,
    /// The edit panel.
    edit_panel: EditPanel,
    /// The edits of a fixed model, from its first edit on.
    edits: Option<EditState>,
    /// The camera and screen rectangle of the scene image drawn last.
    scene_camera: Option<(Camera, egui::Rect)>,
    /// Whether a scripted run's keyframes, edits and video have been started.
    script_steps_done: bool,
    /// The counts after each scripted edit.
    edit_steps: Vec<EditStep>,
    /// Frames of the scripted flight over a level of detail drawn so far (`--fly`).
    fly_frame: u32,
    /// Last, so every GPU resource above is released before the context.
    ctx: GpuContext,
}

impl ViewerApp {
    /// Builds the app from what the command line opened.
    pub fn new(
        cc: &eframe::CreationContext<'_>,
        ctx: GpuContext,
        source: Source,
        args: Args,
        outcome: Outcome,
    ) -> anyhow::Result<ViewerApp> {
        anyhow::ensure!(
            cc.wgpu_render_state.is_some(),
            "eframe did not start its wgpu renderer"
        );
        let script = args
            .screenshot
            .clone()
            .map(|p| Script::new(p, args.frames, args.train_iters));
        let mut renderer = SceneRenderer::default();
        renderer.synchronous = script.is_some();
        let mut app = ViewerApp {
            model: Model::Empty,
            views: DatasetViews::default(),
            panel: ViewPanel::default(),
            camera: ViewCamera::looking_at([0.0; 3], 1.0),
            plan: None,
            display: DisplayOptions {
                antialiased: args.train.antialiased,
                normals: args.show_normals,
                ..DisplayOptions::default()
            },
            renderer,
            script,
            log: Vec::new(),
            ply_path: "viewer_snapshot.ply".to_owned(),
            sidecar: Sidecar::default(),
            path_panel: PathPanel::default(),
            edit_panel: EditPanel::new([0.0; 3], 1.0),
            edits: None,
            scene_camera: None,
            script_steps_done: false,
            edit_steps: Vec::new(),
            fly_frame: 0,
            ctx,
            args,
            outcome,
        };
        app.show_source(source, &cc.egui_ctx)?;
        if let Some(spec) = app.args.camera.clone() {
            let index = app.views.find(&spec)?;
            app.panel.snap(&app.views, index, &mut app.camera, true);
        }
        if let Some(text) = &app.args.train.crop_box {
            let crop = wgsplat::show::edit::CropBox::parse(text)?;
            app.edit_panel.crop = [
                crop.min[0],
                crop.min[1],
                crop.min[2],
                crop.max[0],
                crop.max[1],
                crop.max[2],
            ];
            app.edit_panel.crop_on = true;
        }
        app.panel.show_truth = app.args.compare;
        app.panel.show_difference = app.args.compare;
        Ok(app)
    }

    /// Replaces the model with `source` (stopping any training run).
    fn show_source(&mut self, source: Source, egui_ctx: &egui::Context) -> anyhow::Result<()> {
        let label = source.describe();
        self.display.near_plane = source.near_plane(self.args.train.near_plane)?;
        self.views = DatasetViews::new(source.dataset(), source.bounds());
        self.plan = None;
        if let Source::Plan {
            file,
            plan,
            dataset,
            ..
        } = &source
        {
            let overlay = PlanOverlay::new(file.clone(), plan.clone(), dataset);
            for note in &overlay.notes {
                self.log.push((Level::Warning, note.clone()));
            }
            self.views.home = Some(overlay.overview_camera());
            self.plan = Some(overlay);
        }
        self.camera = self.views.default_camera();
        self.panel = ViewPanel::default();
        let crop_on = self.edit_panel.crop_on;
        self.edit_panel = EditPanel::new(self.views.center, self.views.extent);
        self.edit_panel.crop_on = crop_on;
        self.edits = None;
        self.scene_camera = None;
        self.model = match source {
            Source::Model { params, .. } | Source::Plan { params, .. } => Model::Fixed {
                params,
                label: label.clone(),
            },
            Source::Lod { stream, .. } => Model::Lod {
                stream,
                label: label.clone(),
            },
            Source::Training {
                dataset, config, ..
            } => Model::Training(TrainingHandle::spawn(
                TrainingJob {
                    ctx: self.ctx.clone(),
                    dataset,
                    config,
                    stop_at: self.args.train_iters,
                    out: self.args.out.clone(),
                    options: self.args.train.clone(),
                    refresh: Duration::from_secs_f64(1.0 / self.args.refresh_hz.clamp(0.1, 120.0)),
                },
                egui_ctx.clone(),
            )?),
        };
        self.log.push((Level::Info, format!("opened {label}")));
        Ok(())
    }

    fn open_dropped(&mut self, egui_ctx: &egui::Context) {
        let dropped: Vec<_> = egui_ctx.input(|i| i.raw.dropped_files.clone());
        if let Some(file) = dropped.first() {
            let path = file.path().to_owned();
            match Source::open_path(&self.ctx, Some(&path), &self.args) {
                Ok(source) => {
                    if let Err(e) = self.show_source(source, egui_ctx) {
                        self.log.push((Level::Error, format!("{e:#}")));
                    }
                }
                Err(e) => self.log.push((Level::Error, format!("{e:#}"))),
            }
        }
    }

    /// The parameters to draw now and their iteration.
    fn current_params(&self) -> Option<(Arc<GaussianTensors>, u64)> {
        match &self.model {
            Model::Empty | Model::Lod { .. } => None,
            Model::Fixed { .. } if self.edits.is_some() => self
                .edits
                .as_ref()
                .and_then(|e| e.shown.clone())
                .map(|p| (p, 0)),
            Model::Fixed { params, .. } => Some((params.clone(), 0)),
            Model::Training(handle) => handle.shared().snapshot.clone(),
        }
    }
}

impl eframe::App for ViewerApp {
    fn ui(&mut self, ui: &mut egui::Ui, frame: &mut eframe::Frame) {
        let egui_ctx = ui.ctx().clone();
        self.open_dropped(&egui_ctx);
        let flying = self.fly_step();
        if self.path_panel.preview(&mut self.camera) {
            egui_ctx.request_repaint();
        }
        let ppp = egui_ctx.pixels_per_point();
        let mut regions = Vec::new();
        let left = egui::Panel::left("view")
            .default_size(230.0)
            .show(ui, |ui| {
                self.panel
                    .show(ui, &self.views, &mut self.camera, &mut self.display);
            });
        regions.push(Region::new("view", left.response.rect, ppp));
        let mut summary = ModelSummary::default();
        let mut tool_rects = None;
        let right = egui::Panel::right("training")
            .default_size(300.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| {
                    summary = self.model_panel(ui);
                    ui.separator();
                    tool_rects = Some(self.tool_panels(ui, &egui_ctx));
                });
            });
        let ModelSummary {
            loss_rect,
            loss_points,
            iteration,
            gaussians,
            training_done,
            plan_rect,
        } = summary;
        if let Some((path_rect, edit_rect)) = tool_rects {
            regions.push(Region::new("camera path", path_rect, ppp));
            regions.push(Region::new("edit", edit_rect, ppp));
        }
        regions.push(Region::new(
            if matches!(self.model, Model::Training(_)) {
                "training"
            } else {
                "model"
            },
            right.response.rect,
            ppp,
        ));
        if let Some(rect) = plan_rect {
            regions.push(Region::new("plan", rect, ppp));
        }
        let report = self.ctx.memory_report();
        let training_model = match &self.model {
            Model::Training(handle) => Some(panels::TrainedModel {
                gaussians,
                optimizer_state: handle.shared().optimizer_state,
            }),
            _ => None,
        };
        let mut lines = self.log.clone();
        if let Model::Training(handle) = &self.model {
            lines.extend(handle.shared().log.iter().cloned());
        }
        let bottom = egui::Panel::bottom("status")
            .default_size(170.0)
            .show(ui, |ui| {
                ui.columns(2, |columns| {
                    let memory = columns[0]
                        .scope(|ui| panels::memory(ui, &report, training_model))
                        .response
                        .rect;
                    let log = columns[1].scope(|ui| panels::log(ui, &lines)).response.rect;
                    (memory, log)
                })
            });
        let (memory_rect, log_rect) = bottom.inner;
        regions.push(Region::new("memory", memory_rect, ppp));
        regions.push(Region::new("log", log_rect, ppp));
        let central = egui::CentralPanel::default().show(ui, |ui| self.scene(ui, frame));
        let (drew, scene_rect) = central.inner;
        regions.push(Region::new("scene", central.response.rect, ppp));
        if self.script.is_some()
            && let Err(e) = self.run_script_steps(&egui_ctx)
        {
            self.outcome.fail(format!("{e:#}"));
            egui_ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
        let video = self.video_shown();
        let loading = matches!(&self.model, Model::Lod { stream, .. } if stream.needs_more());
        let busy = self.path_panel.rendering() || flying || loading;
        let (selected, remaining) = self.edits.as_ref().map_or((0, gaussians), |e| {
            (e.session.selected_count(), e.session.remaining() as u64)
        });
        if let Some(script) = &mut self.script {
            self.sidecar = Sidecar {
                scene: scene_rect.map(|r| Region::new("scene image", r, ppp)),
                panels: regions,
                loss_plot: loss_rect.map(|r| Region::new("loss plot", r, ppp)),
                loss_points,
                gaussians,
                iteration,
                mean_frame_ms: self.renderer.mean_frame_ms(),
                frames: self.renderer.frame_ms.len(),
                image_size: self.renderer.size(),
                pixels_per_point: ppp,
                plan_blocks: self
                    .plan
                    .as_ref()
                    .map(|p| p.shown.clone())
                    .unwrap_or_default(),
                crop_box_segments: self.edit_panel.crop_segments,
                crop_box: self.edit_panel.crop_on.then_some(self.edit_panel.crop),
                path: self.path_panel.shown.clone(),
                selected,
                remaining,
                edit_steps: self.edit_steps.clone(),
                video,
                lod: match &self.model {
                    Model::Lod { stream, .. } => Some(stream.stats.clone()),
                    _ => None,
                },
            };
            script.frame(&egui_ctx, drew, iteration, training_done, busy);
            match script.finish(&self.sidecar) {
                Ok(true) => egui_ctx.send_viewport_cmd(egui::ViewportCommand::Close),
                Ok(false) => {}
                Err(e) => {
                    self.outcome.fail(format!("{e:#}"));
                    egui_ctx.send_viewport_cmd(egui::ViewportCommand::Close);
                }
            }
        } else if loading {
            // Draw what is resident while the rest of the cut's pages arrive.
            egui_ctx.request_repaint();
        } else if matches!(self.model, Model::Training(_)) {
            egui_ctx.request_repaint_after(Duration::from_secs_f64(
                1.0 / self.panel.refresh_hz.max(0.1),
            ));
        }
    }

    fn on_exit(&mut self) {
        if let Model::Training(handle) = &mut self.model {
            handle.stop_and_join();
        }
        if let Some(script) = &self.script
            && !script.done
        {
            self.outcome
                .fail("the window closed before the screenshot was taken".into());
        }
        if !self.renderer.frame_ms.is_empty() {
            println!(
                "mean scene render time: {:.2} ms per frame over {} frames",
                self.renderer.mean_frame_ms(),
                self.renderer.frame_ms.len()
            );
        }
    }
}

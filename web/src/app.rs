//! The page's app: the desktop viewer's scene view and View panel over one model, with renders
//! awaited instead of blocked on (a page cannot wait for the GPU).

use crate::page::{self, Delivery, Query};
use crate::training::{self, Progress};
use eframe::egui;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use wgsplat::GpuContext;
use wgsplat::splat::GaussianTensors;
use wgsplat::splat::forward::{ForwardOutput, render_async};
use wgsplat_viewer::render::{DisplayOptions, PendingFrame, SceneRenderer};
use wgsplat_viewer::scene::{ViewCamera, point_bounds};
use wgsplat_viewer::views::{DatasetViews, ViewPanel};

#[path = "app_side.rs"]
mod side_panel;
#[path = "app_training.rs"]
mod training_section;

/// The model on show.
struct Shown {
    name: String,
    params: Arc<GaussianTensors>,
}

/// A render started in one frame and finished in a later one.
type Rendered = (PendingFrame, wgsplat::Result<ForwardOutput>);

/// What arrives between frames: files (fetched, picked or dropped) and finished renders.
#[derive(Default)]
struct Inbox {
    files: Rc<RefCell<Vec<Delivery>>>,
    rendered: Rc<RefCell<Option<Rendered>>>,
}

/// Where the page is in reaching `wgsplat: ready`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Readiness {
    /// The requested model has not been drawn yet.
    Waiting,
    /// Its first frame was presented in the last frame; the next frame puts it on screen.
    Presented,
    /// The title says ready (or error).
    Signalled,
}

/// The browser viewer.
pub struct WebApp {
    ctx: GpuContext,
    query: Query,
    shown: Option<Shown>,
    views: DatasetViews,
    camera: ViewCamera,
    panel: ViewPanel,
    display: DisplayOptions,
    renderer: SceneRenderer,
    inbox: Inbox,
    rendering: bool,
    texture: Option<egui::TextureId>,
    /// The difference to the dataset image, when shown.
    difference: Option<egui::TextureId>,
    drawn_size: (u32, u32),
    error: Option<String>,
    readiness: Readiness,
    /// The run training the built-in scene, if one was started.
    training: Option<Rc<RefCell<Progress>>>,
    train_iterations: u64,
    train_resolution: u32,
    /// A download being prepared (the model is read back first).
    downloading: Rc<RefCell<bool>>,
    /// The title said the training run ended.
    training_signalled: bool,
    /// A level-of-detail folder streamed over HTTP (`?lod=`).
    lod: Option<crate::lod::LodView>,
}

impl WebApp {
    /// The app, fetching `?model=` when the URL names one.
    pub fn new(cc: &eframe::CreationContext<'_>, ctx: GpuContext, query: Query) -> WebApp {
        let inbox = Inbox::default();
        if let Some(name) = query.model.clone() {
            let (files, egui_ctx) = (inbox.files.clone(), cc.egui_ctx.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let fetched = page::fetch_bytes(&name).await.map(|bytes| (name, bytes));
                files.borrow_mut().push(fetched);
                egui_ctx.request_repaint();
            });
        }
        let views = DatasetViews::new(None, ([0.0; 3], 1.0));
        let mut panel = ViewPanel::default();
        panel.exact = query.size;
        page::set_data(
            "path",
            if ctx.info().features_used.subgroups {
                "subgroups"
            } else {
                "portable"
            },
        );
        let mut renderer = SceneRenderer::default();
        renderer.synchronous = query.continuous;
        let training = query
            .train
            .map(|n| training::start(ctx.clone(), query.resolution, n, cc.egui_ctx.clone()));
        let lod = query
            .lod
            .clone()
            .map(|url| crate::lod::LodView::start(&ctx, url, &query, &cc.egui_ctx));
        WebApp {
            lod,
            training,
            train_iterations: query.train.unwrap_or(300),
            train_resolution: query.resolution,
            downloading: Rc::default(),
            training_signalled: false,
            camera: views.default_camera(),
            ctx,
            readiness: if query.model.is_some() || query.train.is_some() || query.lod.is_some() {
                Readiness::Waiting
            } else {
                Readiness::Presented
            },
            query,
            shown: None,
            views,
            panel,
            display: DisplayOptions::default(),
            renderer,
            inbox,
            rendering: false,
            texture: None,
            difference: None,
            drawn_size: (0, 0),
            error: None,
        }
    }

    /// Reads and uploads the files that arrived; a failure is shown, and put in the title while
    /// the page has not yet said it is ready.
    fn take_files(&mut self, egui_ctx: &egui::Context) {
        for file in egui_ctx.input(|i| i.raw.dropped_files.clone()) {
            // A browser reads a dropped file asynchronously: it arrives in the inbox.
            let (files, wake) = (self.inbox.files.clone(), egui_ctx.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let name = file.path().display().to_string();
                let read = file
                    .bytes_async()
                    .await
                    .map_err(|e| anyhow::anyhow!("reading {name}: {e}"));
                files.borrow_mut().push(read.map(|bytes| (name, bytes)));
                wake.request_repaint();
            });
        }
        let arrived: Vec<Delivery> = std::mem::take(&mut *self.inbox.files.borrow_mut());
        for delivery in arrived {
            match delivery.and_then(|(name, bytes)| self.open(&name, &bytes)) {
                Ok(()) => self.error = None,
                Err(err) => self.fail(format!("{err:#}")),
            }
        }
    }

    fn open(&mut self, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
        let model = wgsplat::io::formats::read_model_bytes(name, bytes)?;
        if model.gaussians.means.is_empty() {
            anyhow::bail!("{name} holds no Gaussians");
        }
        let params = wgsplat::io::model::upload_model(&self.ctx, &model, "web/model")
            .map_err(|e| anyhow::anyhow!("{name} does not fit this adapter: {e}"))?;
        self.views = DatasetViews::new(None, point_bounds(&model.gaussians.means));
        self.camera = self.views.default_camera();
        self.display.sh_degree = model.sh_degree;
        // The near plane a 3DGS PLY records (a compressed PLY, also a PLY, records none).
        let ply = wgsplat::io::formats::ModelFormat::from_path(std::path::Path::new(name))
            .is_ok_and(|f| matches!(f, wgsplat::io::formats::ModelFormat::Ply));
        let recorded = match ply {
            true => wgsplat::io::ply::near_plane_of_bytes(std::path::Path::new(name), bytes)?,
            false => None,
        };
        self.display.near_plane = recorded.unwrap_or(wgsplat::data::DEFAULT_NEAR);
        self.shown = Some(Shown {
            name: name.to_owned(),
            params: Arc::new(params),
        });
        Ok(())
    }

    fn fail(&mut self, message: String) {
        if self.readiness != Readiness::Signalled {
            page::set_title(&format!("wgsplat: error: {message}"));
            self.readiness = Readiness::Signalled;
        }
        web_sys::console::error_1(&message.clone().into());
        self.error = Some(message);
    }

    /// Presents a finished render, and starts the next one when the view changed.
    fn step_render(
        &mut self,
        ui: &egui::Ui,
        frame: &eframe::Frame,
        (width, height): (u32, u32),
        truth: Option<(&str, &[u8])>,
    ) {
        let Some(render_state) = frame.wgpu_render_state() else {
            return;
        };
        let finished = self.inbox.rendered.borrow_mut().take();
        if let Some((pending, output)) = finished {
            self.rendering = false;
            let presented = output.map_err(anyhow::Error::from).and_then(|output| {
                let mut egui_renderer = render_state.renderer.write();
                self.renderer
                    .finish(&self.ctx, &mut egui_renderer, pending, &output, truth)
            });
            match presented {
                Ok((id, difference)) => {
                    self.texture = Some(id);
                    self.difference = difference;
                    self.drawn_size = self.renderer.size().into();
                    // A level of detail is ready once the pages its view wants have arrived.
                    let settled = self.lod.as_ref().is_none_or(|l| !l.busy());
                    if self.readiness == Readiness::Waiting && settled {
                        self.readiness = Readiness::Presented;
                    }
                    let recent = &self.renderer.frame_ms;
                    let last = &recent[recent.len().saturating_sub(30)..];
                    let mean = last.iter().sum::<f64>() / last.len().max(1) as f64;
                    page::set_data("frame-ms", &format!("{mean:.2}"));
                    page::set_data("frames", &recent.len().to_string());
                }
                Err(err) => self.fail(format!("rendering failed: {err:#}")),
            }
        }
        let camera = self.camera.camera(width, height, self.display.background);
        if let Some(lod) = &mut self.lod {
            match lod.step(&self.ctx, &camera, ui.ctx()) {
                Ok(Some(params)) => {
                    if self.shown.is_none()
                        && let Some(degree) = lod.sh_degree
                    {
                        self.display.sh_degree = degree;
                    }
                    self.shown = Some(Shown {
                        name: lod.url.clone(),
                        params,
                    });
                }
                Ok(None) => {}
                Err(err) => return self.fail(format!("{err:#}")),
            }
        }
        let Some(shown) = &self.shown else {
            return;
        };
        if self.rendering {
            return;
        }
        let pending = match self.renderer.begin(
            &self.ctx,
            &shown.params,
            &camera,
            &self.display,
            truth,
            self.panel.show_difference,
        ) {
            Ok(Some(pending)) => pending,
            Ok(None) => return,
            Err(err) => return self.fail(format!("rendering failed: {err:#}")),
        };
        self.rendering = true;
        let (ctx, slot, egui_ctx) = (
            self.ctx.clone(),
            self.inbox.rendered.clone(),
            ui.ctx().clone(),
        );
        wasm_bindgen_futures::spawn_local(async move {
            let output = render_async(&ctx, &pending.model, &pending.camera, pending.options).await;
            *slot.borrow_mut() = Some((pending, output));
            egui_ctx.request_repaint();
        });
    }

    /// The scene: the last finished render, drawn 1:1 (or scaled by the render scale).
    fn scene(&mut self, ui: &mut egui::Ui, frame: &eframe::Frame) {
        let area = ui.available_rect_before_wrap();
        let response = ui.allocate_rect(area, egui::Sense::click_and_drag());
        self.camera.handle_input(ui, &response, self.views.extent);
        let ppp = ui.ctx().pixels_per_point();
        // Beside the render, at a dataset camera: its image and the difference, as the desktop
        // viewer shows them.
        let views = std::mem::take(&mut self.views);
        let comparing = self.panel.comparison_view(&views, &self.camera);
        let columns = 1
            + u32::from(comparing.is_some() && self.panel.show_truth)
            + u32::from(comparing.is_some() && self.panel.show_difference);
        let size = self.panel.exact.unwrap_or_else(|| {
            let scale = self.panel.render_scale * ppp;
            (
                (area.width() / columns as f32 * scale).max(8.0) as u32,
                (area.height() * scale).max(8.0) as u32,
            )
        });
        let truth = comparing.map(|v| (v.label.as_str(), v.image.pixels.as_slice()));
        self.step_render(ui, frame, size, truth);
        let truth_texture = match comparing {
            Some(view) if self.panel.show_truth => Some(self.panel.truth_texture(ui.ctx(), view)),
            _ => None,
        };
        self.views = views;
        let painter = ui.painter_at(area);
        let Some(id) = self.texture.filter(|_| self.shown.is_some()) else {
            let text = match (&self.error, &self.query.model) {
                (Some(_), _) => "no model",
                (None, Some(_)) => "loading the model...",
                (None, None) if self.lod.is_some() => "loading the level of detail...",
                (None, None) => {
                    "open a model: drop a .ply, .spz, .splat or .sog file here, or use Open"
                }
            };
            painter.text(
                area.center(),
                egui::Align2::CENTER_CENTER,
                text,
                egui::FontId::proportional(16.0),
                ui.visuals().text_color(),
            );
            return;
        };
        let natural = egui::vec2(self.drawn_size.0 as f32, self.drawn_size.1 as f32) / ppp;
        let size = if self.panel.exact.is_some() {
            natural
        } else {
            natural / self.panel.render_scale
        };
        let origin = (area.min * ppp).round() / ppp;
        let uv = egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0));
        let mut rect = egui::Rect::from_min_size(origin, size);
        let difference = self.difference.filter(|_| self.panel.show_difference);
        for texture in [Some(id), truth_texture, difference].into_iter().flatten() {
            painter.image(texture, rect, uv, egui::Color32::WHITE);
            rect = rect.translate(egui::vec2(size.x, 0.0));
        }
    }
}

impl eframe::App for WebApp {
    fn ui(&mut self, ui: &mut egui::Ui, frame: &mut eframe::Frame) {
        let egui_ctx = ui.ctx().clone();
        self.take_files(&egui_ctx);
        self.follow_training();
        if let Some(bounds) = self.lod.as_mut().and_then(|l| l.bounds.take()) {
            // A level of detail just opened: look at all of it, as for a model file.
            self.views = DatasetViews::new(None, bounds);
            self.camera = self.views.default_camera();
        }
        if self.readiness == Readiness::Presented {
            // The frame that presented the first render has been painted: it is on screen.
            page::set_title("wgsplat: ready");
            self.readiness = Readiness::Signalled;
        } else if self.readiness == Readiness::Waiting && self.texture.is_some() {
            egui_ctx.request_repaint();
        }
        if !self.query.bare {
            egui::Panel::left("view")
                .default_size(250.0)
                .show(ui, |ui| {
                    egui::ScrollArea::vertical().show(ui, |ui| self.side_panel(ui));
                });
        }
        let panel = if self.query.bare {
            egui::CentralPanel::default().frame(egui::Frame::NONE)
        } else {
            egui::CentralPanel::default()
        };
        panel.show(ui, |ui| self.scene(ui, frame));
        let training = self.training.as_ref().is_some_and(|p| !p.borrow().finished);
        if self.renderer.synchronous
            || self.rendering
            || self.lod.as_ref().is_some_and(crate::lod::LodView::busy)
            || training
            || self.readiness != Readiness::Signalled
        {
            egui_ctx.request_repaint();
        }
    }
}

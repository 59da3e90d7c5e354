//! Dataset cameras to snap to, and the "View" panel: camera snapping, reset, field of view,
//! background, splat scale, SH degree, refresh rate and the ground-truth / difference toggles.

use crate::render::DisplayOptions;
use crate::scene::ViewCamera;
use eframe::egui;
use wgsplat::data::Dataset;
use wgsplat::data::image::RgbaImage;
use wgsplat::splat::Camera;

/// One dataset view: `test:K` or `train:K`, its camera and image.
pub struct DatasetView {
    /// `test:K` or `train:K`.
    pub label: String,
    /// The camera.
    pub camera: Camera,
    /// The ground-truth image.
    pub image: RgbaImage,
}

/// The dataset's views and the scene's bounds.
pub struct DatasetViews {
    /// Test views first, then training views.
    pub views: Vec<DatasetView>,
    /// Scene centre.
    pub center: [f32; 3],
    /// Scene radius.
    pub extent: f32,
    /// The starting view when something better than the first dataset camera is known (a
    /// plan's overview of its ground).
    pub home: Option<ViewCamera>,
}

impl Default for DatasetViews {
    fn default() -> Self {
        DatasetViews {
            views: Vec::new(),
            center: [0.0; 3],
            extent: 1.0,
            home: None,
        }
    }
}

impl DatasetViews {
    /// The views of `dataset`, or only `bounds` (centre, radius) without one.
    pub fn new(dataset: Option<&Dataset>, bounds: ([f32; 3], f32)) -> DatasetViews {
        let Some(dataset) = dataset else {
            return DatasetViews {
                views: Vec::new(),
                center: bounds.0,
                extent: bounds.1.max(1e-3),
                home: None,
            };
        };
        let split = |name: &str, views: &[wgsplat::data::View]| -> Vec<DatasetView> {
            views
                .iter()
                .enumerate()
                .map(|(k, v)| DatasetView {
                    label: format!("{name}:{k}"),
                    camera: v.camera.clone(),
                    // A view the loader streams from disk is read here; one that cannot be read
                    // shows no picture (an empty image) rather than stopping the viewer.
                    image: match v.resident() {
                        Ok(view) => view.image.clone(),
                        Err(_) => wgsplat::data::RgbaImage::new(0, 0),
                    },
                })
                .collect()
        };
        let mut views = split("test", &dataset.test);
        views.extend(split("train", &dataset.train));
        DatasetViews {
            views,
            center: dataset.center,
            extent: dataset.extent.max(1e-3),
            home: None,
        }
    }

    /// The index of `test:K` or `train:K`.
    pub fn find(&self, spec: &str) -> anyhow::Result<usize> {
        self.views
            .iter()
            .position(|v| v.label == spec)
            .ok_or_else(|| {
                let first = self.views.first().map_or("none", |v| v.label.as_str());
                anyhow::anyhow!(
                    "no dataset camera {spec:?}: use test:K or train:K ({} views, the first is {first}); a PLY needs --dataset to have cameras",
                    self.views.len()
                )
            })
    }

    fn orbit_distance(&self, camera: &Camera) -> f32 {
        let p = camera.position();
        let d: f32 = (0..3).map(|k| (p[k] - self.center[k]).powi(2)).sum();
        d.sqrt()
    }

    /// The starting view: the home view, the first dataset camera, or a view of the bounds.
    pub fn default_camera(&self) -> ViewCamera {
        if let Some(home) = &self.home {
            return home.clone();
        }
        match self.views.first() {
            Some(v) => ViewCamera::from_camera(&v.camera, self.orbit_distance(&v.camera)),
            None => ViewCamera::looking_at(self.center, self.extent),
        }
    }
}

/// State of the "View" panel.
pub struct ViewPanel {
    /// Selected dataset view.
    pub selected: usize,
    /// Draw at this resolution, 1:1 (a dataset camera's); `None` fills the panel.
    pub exact: Option<(u32, u32)>,
    /// Show the dataset image beside the render.
    pub show_truth: bool,
    /// Show the difference beside the render.
    pub show_difference: bool,
    /// Render resolution relative to the panel (when not 1:1).
    pub render_scale: f32,
    /// Redraws per second while training.
    pub refresh_hz: f64,
    truth_texture: Option<(String, egui::TextureHandle)>,
}

impl Default for ViewPanel {
    fn default() -> Self {
        ViewPanel {
            selected: 0,
            exact: None,
            show_truth: false,
            show_difference: false,
            render_scale: 1.0,
            refresh_hz: 10.0,
            truth_texture: None,
        }
    }
}

impl ViewPanel {
    /// Moves `camera` to dataset view `index`, drawn through its lens (`scene` module docs);
    /// `one_to_one` also draws at its resolution.
    pub fn snap(
        &mut self,
        views: &DatasetViews,
        index: usize,
        camera: &mut ViewCamera,
        one_to_one: bool,
    ) {
        if let Some(v) = views.views.get(index) {
            *camera = ViewCamera::from_camera(&v.camera, views.orbit_distance(&v.camera));
            self.selected = index;
            if one_to_one {
                self.exact = Some((v.camera.width, v.camera.height));
            }
        }
    }

    /// The dataset view the camera sits exactly at (so images can be compared), if any.
    pub fn comparison_view<'a>(
        &self,
        views: &'a DatasetViews,
        camera: &ViewCamera,
    ) -> Option<&'a DatasetView> {
        let view = views.views.get(self.selected)?;
        let exact = camera.exact.as_ref()?;
        let same =
            exact.rotation == view.camera.rotation && exact.translation == view.camera.translation;
        let (w, h) = (view.camera.width as usize, view.camera.height as usize);
        // A view whose image could not be read has no pixels to compare with.
        let readable = view.image.pixels.len() == w * h * 4;
        (same && readable && self.exact == Some((view.camera.width, view.camera.height)))
            .then_some(view)
    }

    /// The egui texture of a dataset image (uploaded once per view).
    pub fn truth_texture(&mut self, ctx: &egui::Context, view: &DatasetView) -> egui::TextureId {
        if self
            .truth_texture
            .as_ref()
            .is_none_or(|(k, _)| *k != view.label)
        {
            let size = [view.image.width as usize, view.image.height as usize];
            if view.image.pixels.len() != size[0] * size[1] * 4 {
                return egui::TextureId::default();
            }
            let image = egui::ColorImage::from_rgba_unmultiplied(size, &view.image.pixels);
            let handle = ctx.load_texture(&view.label, image, egui::TextureOptions::NEAREST);
            self.truth_texture = Some((view.label.clone(), handle));
        }
        self.truth_texture
            .as_ref()
            .map_or(egui::TextureId::default(), |(_, h)| h.id())
    }

    /// Shows the panel's controls.
    pub fn show(
        &mut self,
        ui: &mut egui::Ui,
        views: &DatasetViews,
        camera: &mut ViewCamera,
        display: &mut DisplayOptions,
    ) {
        ui.heading("View");
        ui.label("left drag: orbit, right drag: pan, wheel: zoom, WASD/QE: fly");
        if !views.views.is_empty() {
            let mut index = self.selected.min(views.views.len() - 1);
            egui::ComboBox::from_label("dataset camera")
                .selected_text(views.views[index].label.as_str())
                .show_ui(ui, |ui| {
                    for (k, v) in views.views.iter().enumerate() {
                        ui.selectable_value(&mut index, k, v.label.as_str());
                    }
                });
            self.selected = index;
            ui.horizontal(|ui| {
                if ui.button("Snap").clicked() {
                    self.snap(views, index, camera, true);
                }
                if ui.button("Reset view").clicked() {
                    *camera = views.default_camera();
                }
            });
        } else if ui.button("Reset view").clicked() {
            *camera = views.default_camera();
        }
        let mut one_to_one = self.exact.is_some();
        if ui
            .checkbox(&mut one_to_one, "dataset resolution, 1:1")
            .changed()
        {
            self.exact = match (one_to_one, views.views.get(self.selected)) {
                (true, Some(v)) => Some((v.camera.width, v.camera.height)),
                _ => None,
            };
        }
        if self.exact.is_none() {
            ui.add(egui::Slider::new(&mut self.render_scale, 0.25..=1.0).text("render scale"));
        }
        if ui
            .add(egui::Slider::new(&mut camera.fov_y_degrees, 10.0..=120.0).text("field of view"))
            .changed()
        {
            camera.exact = None;
        }
        if !camera.lens.is_pinhole() {
            let kind = if camera.lens.is_fisheye() {
                "fisheye"
            } else {
                "distortion"
            };
            ui.checkbox(
                &mut camera.through_lens,
                format!("through the view's lens ({kind})"),
            )
            .on_hover_text("off: a pinhole camera of the same focal length");
        }
        ui.horizontal(|ui| {
            ui.color_edit_button_rgb(&mut display.background);
            ui.label("background");
        });
        ui.add(
            egui::Slider::new(&mut display.splat_scale, 0.05..=2.0)
                .logarithmic(true)
                .text("splat scale"),
        );
        ui.add(egui::Slider::new(&mut display.sh_degree, 0..=3).text("SH degree"));
        ui.checkbox(&mut display.antialiased, "antialiased splats");
        ui.checkbox(&mut display.normals, "show normals")
            .on_hover_text(
                "each Gaussian's shortest axis, facing the camera (x red, y green, z blue)",
            );
        ui.add(egui::Slider::new(&mut self.refresh_hz, 1.0..=60.0).text("refresh Hz"));
        ui.checkbox(&mut self.show_truth, "show dataset image");
        ui.checkbox(&mut self.show_difference, "show difference");
        if self.show_difference {
            ui.add(
                egui::Slider::new(&mut display.difference_gain, 1.0..=16.0).text("difference gain"),
            );
        }
        if (self.show_truth || self.show_difference)
            && self.comparison_view(views, camera).is_none()
        {
            ui.weak("snap to a dataset camera (1:1) to compare");
        }
    }
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;

//! The page's side panel.

use super::WebApp;
use crate::page;
use eframe::egui;

impl WebApp {
    /// The side panel: the model and its downloads, the level of detail, training, the adapter
    /// and frame times, the View panel, and the last error.
    pub(super) fn side_panel(&mut self, ui: &mut egui::Ui) {
        ui.heading("Model");
        match &self.shown {
            Some(shown) => {
                ui.label(shown.name.as_str());
                ui.label(format!(
                    "{} Gaussians, SH degree {}",
                    shown.params.len(),
                    shown.params.max_sh_degree()
                ));
            }
            None => {
                ui.label("none yet");
            }
        }
        if ui.button("Open...").clicked() {
            let egui_ctx = ui.ctx().clone();
            if let Err(err) =
                page::pick_file(self.inbox.files.clone(), move || egui_ctx.request_repaint())
            {
                self.fail(format!("{err:#}"));
            }
        }
        ui.weak("or drop a model file on the page");
        if self.shown.is_some() {
            ui.horizontal(|ui| {
                let idle = !*self.downloading.borrow();
                if ui
                    .add_enabled(idle, egui::Button::new("Download PLY"))
                    .clicked()
                {
                    self.download(wgsplat::io::formats::ModelFormat::Ply);
                }
                if ui
                    .add_enabled(idle, egui::Button::new("Download SPZ"))
                    .clicked()
                {
                    self.download(wgsplat::io::formats::ModelFormat::Spz);
                }
            });
        }
        if let Some(lod) = &mut self.lod {
            ui.separator();
            ui.heading("Level of detail");
            let loading = lod.busy();
            wgsplat_viewer::lod_panel::show(ui, &mut lod.options, &lod.stats, loading);
        }
        ui.separator();
        self.training_panel(ui);
        ui.separator();
        let info = self.ctx.info();
        ui.label(format!(
            "{} path on {}",
            if info.features_used.subgroups {
                "fast (subgroups)"
            } else {
                "portable"
            },
            if info.adapter.name.is_empty() {
                "WebGPU"
            } else {
                info.adapter.name.as_str()
            }
        ));
        let recent = &self.renderer.frame_ms;
        if let Some(last) = recent.last() {
            let window = &recent[recent.len().saturating_sub(30)..];
            let mean = window.iter().sum::<f64>() / window.len() as f64;
            ui.label(format!(
                "frame {last:.1} ms (mean of the last {}: {mean:.1} ms), {}x{}",
                window.len(),
                self.drawn_size.0,
                self.drawn_size.1
            ));
        }
        ui.checkbox(&mut self.renderer.synchronous, "redraw every frame");
        ui.separator();
        self.panel
            .show(ui, &self.views, &mut self.camera, &mut self.display);
        if let Some(error) = &self.error {
            ui.separator();
            ui.colored_label(ui.visuals().error_fg_color, error.as_str());
        }
    }
}

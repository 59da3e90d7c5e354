//! The page's training run and downloads: following the built-in scene's run in this page (its
//! snapshots shown, its end reported in the page's data and title), the side panel's training
//! section, and reading the shown model back as a file to download.

use super::{Readiness, Shown, WebApp};
use crate::page;
use crate::training;
use eframe::egui;
use std::sync::Arc;
use wgsplat_viewer::views::ViewPanel;

impl WebApp {
    /// Shows the training run's latest parameters, and reports its end in the page's data and
    /// title (`wgsplat: trained` or `wgsplat: error: ...`).
    pub(super) fn follow_training(&mut self) {
        let Some(progress) = self.training.clone() else {
            return;
        };
        let mut p = progress.borrow_mut();
        if let Some(views) = p.views.take() {
            // The scene's cameras: the view starts at the first, as in the desktop viewer.
            self.views = views;
            self.camera = self.views.default_camera();
            self.panel = ViewPanel::default();
        }
        if let Some(near) = p.near_plane {
            self.display.near_plane = near;
        }
        if let Some(snapshot) = &p.snapshot {
            let first = self
                .shown
                .as_ref()
                .is_none_or(|s| !s.name.starts_with("built-in scene"));
            if first {
                self.display.sh_degree = snapshot.max_sh_degree();
            }
            if self
                .shown
                .as_ref()
                .is_none_or(|s| !Arc::ptr_eq(&s.params, snapshot))
            {
                self.shown = Some(Shown {
                    name: "built-in scene (trained in this page)".into(),
                    params: snapshot.clone(),
                });
            }
        }
        page::set_data("iteration", &p.iteration.to_string());
        if let (Some(first), Some(last)) = (p.losses.first(), p.losses.last()) {
            page::set_data("loss-first", &format!("{}", first[1]));
            page::set_data("loss-last", &format!("{}", last[1]));
        }
        if p.finished && !self.training_signalled && self.readiness == Readiness::Signalled {
            self.training_signalled = true;
            page::set_data("train-seconds", &format!("{:.2}", p.seconds));
            match &p.error {
                None => page::set_title(&format!("wgsplat: trained {} iterations", p.iteration)),
                Some(err) => page::set_title(&format!("wgsplat: error: training failed: {err}")),
            }
        }
    }

    /// The training section of the side panel: its settings, Train and Stop, progress and loss.
    pub(super) fn training_panel(&mut self, ui: &mut egui::Ui) {
        ui.heading("Train the built-in scene");
        let running = self.training.as_ref().is_some_and(|p| !p.borrow().finished);
        if running {
            if ui.button("Stop").clicked()
                && let Some(p) = &self.training
            {
                p.borrow_mut().stop = true;
            }
        } else {
            ui.add(egui::Slider::new(&mut self.train_iterations, 50..=7000).text("iterations"));
            egui::ComboBox::from_label("image side")
                .selected_text(format!("{} px", self.train_resolution))
                .show_ui(ui, |ui| {
                    for side in [64, 128, 256] {
                        ui.selectable_value(&mut self.train_resolution, side, format!("{side} px"));
                    }
                });
            if ui.button("Train").clicked() {
                self.training = Some(training::start(
                    self.ctx.clone(),
                    self.train_resolution,
                    self.train_iterations,
                    ui.ctx().clone(),
                ));
                self.training_signalled = true;
            }
        }
        let Some(progress) = &self.training else {
            return;
        };
        let p = progress.borrow();
        ui.label(format!(
            "{}: iteration {} of {}, {} Gaussians",
            p.phase, p.iteration, p.iterations, p.gaussians
        ));
        if p.seconds > 0.0 {
            ui.label(format!(
                "{:.1} s, {:.1} it/s{}",
                p.seconds,
                p.iteration as f64 / p.seconds,
                p.train_psnr
                    .map(|db| format!(", train PSNR {db:.2} dB"))
                    .unwrap_or_default()
            ));
        }
        if let Some(err) = &p.error {
            ui.colored_label(ui.visuals().error_fg_color, err.as_str());
        }
        egui_plot::Plot::new("loss")
            .height(140.0)
            .allow_scroll(false)
            .allow_drag(false)
            .show(ui, |plot| {
                plot.line(egui_plot::Line::new(
                    "loss",
                    egui_plot::PlotPoints::from(p.losses.clone()),
                ));
            });
    }

    /// Reads the shown model back and offers it as a download in `format`.
    pub(super) fn download(&self, format: wgsplat::io::formats::ModelFormat) {
        let Some(shown) = &self.shown else {
            return;
        };
        *self.downloading.borrow_mut() = true;
        let (ctx, params, busy, near) = (
            self.ctx.clone(),
            shown.params.clone(),
            self.downloading.clone(),
            self.display.near_plane,
        );
        let stem = shown
            .name
            .split(['.', ' '])
            .next()
            .filter(|s| !s.is_empty())
            .unwrap_or("model")
            .to_owned();
        wasm_bindgen_futures::spawn_local(async move {
            let written = async {
                let gaussians = params.fetch(&ctx).await?;
                let model = wgsplat::io::PlyModel {
                    gaussians,
                    sh_degree: params.max_sh_degree(),
                };
                let name = format!("{stem}.{}", format.extension());
                let bytes = match format {
                    wgsplat::io::formats::ModelFormat::Spz => {
                        wgsplat::io::spz::spz_bytes(std::path::Path::new(&name), &model)?
                    }
                    _ => wgsplat::io::ply::ply_bytes_with_near_plane(
                        &model.gaussians,
                        model.sh_degree,
                        Some(near),
                    )?,
                };
                page::download(&name, &bytes)
            };
            let outcome: anyhow::Result<()> = written.await;
            if let Err(err) = outcome {
                page::fail(&format!("the download failed: {err:#}"));
            }
            *busy.borrow_mut() = false;
        });
    }
}

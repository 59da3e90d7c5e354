//! The right-hand panel's first section: what model is shown (a training run's progress and
//! loss plot, a fixed model with its plan's blocks, or a level of detail's budget and cut).

use super::{Model, ViewerApp};
use crate::panels;
use eframe::egui;

/// What the model section showed, for the frame's bookkeeping and the scripted sidecar.
pub(super) struct ModelSummary {
    /// The loss plot's rectangle (training).
    pub loss_rect: Option<egui::Rect>,
    /// Points in the loss plot.
    pub loss_points: usize,
    /// The training iteration shown.
    pub iteration: u64,
    /// Gaussians in the model (drawn in a level of detail's cut).
    pub gaussians: u64,
    /// Whether training has finished (true when nothing trains).
    pub training_done: bool,
    /// The plan panel's rectangle.
    pub plan_rect: Option<egui::Rect>,
}

impl Default for ModelSummary {
    fn default() -> Self {
        ModelSummary {
            loss_rect: None,
            loss_points: 0,
            iteration: 0,
            gaussians: 0,
            training_done: true,
            plan_rect: None,
        }
    }
}

impl ViewerApp {
    /// Shows the model section of the right-hand panel.
    pub(super) fn model_panel(&mut self, ui: &mut egui::Ui) -> ModelSummary {
        let mut summary = ModelSummary::default();
        match &mut self.model {
            Model::Training(handle) => {
                summary.loss_rect = panels::training(ui, handle, &mut self.ply_path);
                let shared = handle.shared();
                summary.loss_points = shared.loss.len();
                summary.iteration = shared.iteration;
                summary.gaussians = shared.gaussians;
                summary.training_done = shared.finished;
            }
            Model::Fixed { params, label } => {
                ui.heading("Model");
                ui.label(label.as_str());
                ui.label(format!(
                    "{} Gaussians, SH degree {}",
                    params.len(),
                    params.max_sh_degree()
                ));
                summary.gaussians = params.len();
                if let Some(plan) = &mut self.plan {
                    ui.separator();
                    summary.plan_rect = Some(ui.scope(|ui| plan.show_panel(ui)).response.rect);
                }
            }
            Model::Lod { stream, label } => {
                ui.heading("Level of detail");
                ui.label(label.as_str());
                let loading = stream.needs_more();
                wgsplat_viewer::lod_panel::show(ui, &mut stream.options, &stream.stats, loading);
                summary.gaussians = stream.stats.gaussians;
            }
            Model::Empty => {
                ui.heading("Model");
                ui.label("drop a PLY file or a dataset folder here");
            }
        }
        summary
    }
}

//! The "Plan" panel: the plan's blocks (index, views, points, estimated peak memory), the overlay's
//! toggles, and picking a block to draw on top.

use super::overlay::{PlanOverlay, block_color};
use eframe::egui::{self, Color32};
use wgsplat::gpu::memory::format_bytes;

impl PlanOverlay {
    /// The "Plan" panel: the blocks and the overlay's toggles.
    pub fn show_panel(&mut self, ui: &mut egui::Ui) {
        ui.heading("Plan");
        ui.label(self.file.display().to_string());
        let t = &mut self.toggles;
        ui.checkbox(&mut t.overlay, "show the blocks over the scene");
        ui.add_enabled_ui(t.overlay, |ui| {
            ui.horizontal_wrapped(|ui| {
                ui.checkbox(&mut t.cores, "cells");
                ui.checkbox(&mut t.shade, "shaded");
                ui.checkbox(&mut t.bounds, "training bounds (dashed)");
                ui.checkbox(&mut t.labels, "labels");
                ui.checkbox(&mut t.cameras, "cameras");
            });
        });
        ui.weak(
            "solid: the cell a block keeps at the merge; dashed: the bounds it trains in; dots: \
             camera centres in the colour of the block that trains on them (rings: further \
             blocks; grey: none)",
        );
        egui::Grid::new("plan-blocks")
            .num_columns(4)
            .striped(true)
            .show(ui, |ui| {
                ui.strong("block");
                ui.strong("views");
                ui.strong("points");
                ui.strong("peak memory");
                ui.end_row();
                for block in &self.plan.blocks {
                    ui.horizontal(|ui| {
                        let (swatch, _) =
                            ui.allocate_exact_size(egui::vec2(10.0, 10.0), egui::Sense::hover());
                        ui.painter()
                            .rect_filled(swatch, 2.0, block_color(block.index));
                        let picked = self.selected == Some(block.index);
                        if ui
                            .selectable_label(picked, block.index.to_string())
                            .on_hover_text("show this block on top, the others faded")
                            .clicked()
                        {
                            self.selected = (!picked).then_some(block.index);
                        }
                    });
                    ui.label(block.views.len().to_string());
                    ui.label(block.points.to_string());
                    ui.label(format_bytes(block.estimated_peak_bytes));
                    ui.end_row();
                }
            });
        for note in &self.notes {
            ui.colored_label(Color32::from_rgb(230, 180, 60), note);
        }
    }
}

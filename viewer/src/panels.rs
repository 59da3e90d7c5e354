//! The side panels: training progress and controls with live plots, GPU memory by category, and
//! the log of trainer warnings and errors.

use crate::training::{Command, Level, Shared, TrainingHandle};
use eframe::egui;
use egui_plot::{Bar, BarChart, Line, Plot};
use std::path::PathBuf;
use wgsplat::MemoryCategory;
use wgsplat::gpu::MemoryReport;
use wgsplat::gpu::memory::format_bytes;

/// Per-category colours of the memory chart.
const CATEGORY_COLORS: [egui::Color32; 7] = [
    egui::Color32::from_rgb(70, 130, 230),
    egui::Color32::from_rgb(230, 120, 60),
    egui::Color32::from_rgb(90, 190, 100),
    egui::Color32::from_rgb(200, 80, 180),
    egui::Color32::from_rgb(220, 200, 70),
    egui::Color32::from_rgb(120, 210, 210),
    egui::Color32::from_rgb(160, 160, 160),
];

fn eta(shared: &Shared) -> String {
    if shared.finished || shared.iterations_per_second <= 0.0 {
        return "-".to_owned();
    }
    let seconds =
        shared.target.saturating_sub(shared.iteration) as f64 / shared.iterations_per_second;
    if seconds >= 3600.0 {
        format!("{:.1} h", seconds / 3600.0)
    } else if seconds >= 60.0 {
        format!("{:.1} min", seconds / 60.0)
    } else {
        format!("{seconds:.0} s")
    }
}

/// Status, controls and plots of a training run; returns the loss plot's rectangle.
pub fn training(
    ui: &mut egui::Ui,
    handle: &TrainingHandle,
    ply_path: &mut String,
) -> Option<egui::Rect> {
    let shared = handle.shared();
    ui.heading("Training");
    egui::Grid::new("training-status")
        .num_columns(2)
        .show(ui, |ui| {
            ui.label("iteration");
            ui.label(format!("{} / {}", shared.iteration, shared.target));
            ui.end_row();
            ui.label("it/s");
            ui.label(format!("{:.2}", shared.iterations_per_second));
            ui.end_row();
            ui.label("ETA");
            ui.label(eta(&shared));
            ui.end_row();
            ui.label("Gaussians");
            ui.label(shared.gaussians.to_string());
            ui.end_row();
            ui.label("loss");
            ui.label(
                shared
                    .loss
                    .last()
                    .map_or("-".to_owned(), |p| format!("{:.4}", p[1])),
            );
            ui.end_row();
        });
    let (paused, finished) = (shared.paused, shared.finished);
    let series = [
        ("loss", shared.loss.clone()),
        ("train PSNR", shared.train_psnr.clone()),
        ("test PSNR", shared.test_psnr.clone()),
        ("Gaussians", shared.gaussian_count.clone()),
    ];
    drop(shared);
    ui.horizontal(|ui| {
        if paused {
            if ui.button("Resume").clicked() {
                handle.send(Command::Resume);
            }
        } else if ui
            .add_enabled(!finished, egui::Button::new("Pause"))
            .clicked()
        {
            handle.send(Command::Pause);
        }
        if ui
            .add_enabled(!finished, egui::Button::new("Stop"))
            .clicked()
        {
            handle.send(Command::Stop);
        }
    });
    ui.horizontal(|ui| {
        if ui.button("Save PLY").clicked() {
            handle.send(Command::SavePly(PathBuf::from(ply_path.as_str())));
        }
        ui.text_edit_singleline(ply_path);
    });
    let mut loss_rect = None;
    for (index, (name, points)) in series.into_iter().enumerate() {
        ui.label(name);
        let response = Plot::new(name)
            .height(90.0)
            .allow_drag(false)
            .allow_zoom(false)
            .allow_scroll(false)
            .show(ui, |plot| {
                plot.line(Line::new(name, points).color(CATEGORY_COLORS[index]));
            });
        if index == 0 {
            loss_rect = Some(response.response.rect);
        }
    }
    loss_rect
}

/// What a training run's model state is: its Gaussians and how Adam's moments are stored.
pub struct TrainedModel {
    /// Gaussians now.
    pub gaussians: u64,
    /// The moments' storage.
    pub optimizer_state: wgsplat::optim::MomentStorage,
}

/// Live and peak GPU bytes by category: a table and stacked bars (live below, peak above); while
/// training, the model state's bytes per Gaussian (parameters, moments, statistics and, only
/// inside a step, the gradient chunk).
pub fn memory(ui: &mut egui::Ui, report: &MemoryReport, training: Option<TrainedModel>) {
    ui.heading("Memory");
    ui.label(format!(
        "live {}, peak {}, pooled {}",
        format_bytes(report.total.live_bytes),
        format_bytes(report.total.peak_bytes),
        format_bytes(report.pooled_bytes)
    ));
    if let Some(model) = training.filter(|m| m.gaussians > 0) {
        let state = report.live(MemoryCategory::Parameters)
            + report.live(MemoryCategory::Gradients)
            + report.live(MemoryCategory::OptimizerState);
        let moments = match model.optimizer_state {
            wgsplat::optim::MomentStorage::Packed => "16-bit",
            wgsplat::optim::MomentStorage::Bf16 => "bfloat16",
            wgsplat::optim::MomentStorage::F32 => "f32",
        };
        ui.label(format!(
            "model state {:.0} B per Gaussian ({moments} Adam moments)",
            state as f64 / model.gaussians as f64
        ));
    }
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let mut charts: Vec<BarChart> = Vec::new();
    for (index, category) in MemoryCategory::ALL.into_iter().enumerate() {
        let bars = vec![
            Bar::new(0.0, mib(report.live(category))).name("live"),
            Bar::new(1.0, mib(report.peak(category))).name("peak"),
        ];
        let chart = BarChart::new(category.name(), bars)
            .color(CATEGORY_COLORS[index])
            .width(0.7)
            .horizontal();
        let below: Vec<&BarChart> = charts.iter().collect();
        let stacked = chart.stack_on(&below);
        charts.push(stacked);
    }
    ui.horizontal_top(|ui| {
        egui::Grid::new("memory-table")
            .num_columns(3)
            .spacing([8.0, 0.0])
            .show(ui, |ui| {
                ui.small("");
                ui.small("live");
                ui.small("peak");
                ui.end_row();
                for (index, category) in MemoryCategory::ALL.into_iter().enumerate() {
                    ui.colored_label(
                        CATEGORY_COLORS[index],
                        egui::RichText::new(category.name()).small(),
                    );
                    ui.small(format_bytes(report.live(category)));
                    ui.small(format_bytes(report.peak(category)));
                    ui.end_row();
                }
            });
        Plot::new("memory")
            .height(ui.available_height().max(60.0))
            .allow_drag(false)
            .allow_zoom(false)
            .allow_scroll(false)
            .show_y(false)
            .y_axis_label("live | peak")
            .x_axis_label("MiB")
            .show(ui, |plot| {
                for chart in charts {
                    plot.bar_chart(chart);
                }
            });
    });
}

/// The log, newest last.
pub fn log(ui: &mut egui::Ui, lines: &[(Level, String)]) {
    ui.heading("Log");
    egui::ScrollArea::vertical()
        .stick_to_bottom(true)
        .auto_shrink([false, false])
        .show(ui, |ui| {
            // Left-aligned, not justified: in the status bar's column (a justified layout) a
            // line that wraps would have its first row spread over the width, letter by letter.
            ui.with_layout(egui::Layout::top_down(egui::Align::Min), |ui| {
                if lines.is_empty() {
                    ui.weak("no warnings or errors");
                }
                for (level, text) in lines {
                    let color = match level {
                        Level::Info => ui.visuals().text_color(),
                        Level::Warning => egui::Color32::from_rgb(230, 180, 60),
                        Level::Error => egui::Color32::from_rgb(240, 90, 80),
                    };
                    ui.colored_label(color, text);
                }
            });
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log line too long for its column wraps as text does, its first row not spread out: in
    /// the status bar's column (as the app lays it out) the galleys are not justified, and the
    /// first row of "opened model …/a_long_name.ply" is as wide as its letters.
    #[test]
    fn a_long_log_line_wraps_without_spreading_its_first_row() {
        let line = format!(
            "opened model /{}/point_cloud.ply",
            ["a_rather_long_folder_name"; 8].join("/")
        );
        let lines = vec![(Level::Info, line.clone())];
        let ctx = egui::Context::default();
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(
                egui::pos2(0.0, 0.0),
                egui::vec2(800.0, 300.0),
            )),
            ..Default::default()
        };
        let mut output = ctx.run_ui(input, |ui| {
            ui.columns(2, |columns| log(&mut columns[1], &lines));
        });
        let shapes = std::mem::take(&mut output.shapes);
        output.drop_without_applying_deltas();
        let galley = shapes
            .into_iter()
            .find_map(|s| match s.shape {
                egui::Shape::Text(text) if text.galley.job.text == line => Some(text.galley),
                _ => None,
            })
            .expect("the log line was drawn");
        assert!(galley.rows.len() > 1, "the line should wrap in its column");
        assert!(!galley.job.justify, "the log's text is justified");
        // The first row ("opened model ") is no wider than its glyphs laid out alone.
        let first = &galley.rows[0];
        let font = galley.job.sections[0].format.font_id.clone();
        let natural = ctx.fonts_mut(|fonts| {
            fonts
                .layout_no_wrap(first.text(), font, egui::Color32::WHITE)
                .size()
                .x
        });
        assert!(
            first.rect().width() <= natural + 1.0,
            "the first row {:?} spans {} points, its letters {natural}",
            first.text(),
            first.rect().width()
        );
    }
}

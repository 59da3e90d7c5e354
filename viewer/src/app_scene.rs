//! The scene view: the model's image (with the dataset view and the difference beside it when
//! comparing), the plan drawn over it, and the tools that act on it.

use super::{Model, ViewerApp};
use crate::edit_panel::Tool;
use crate::plan_view::geometry::Projector;
use crate::training::Level;
use eframe::egui;

impl ViewerApp {
    /// Draws the scene into `ui`; returns (drew a model, the image's rectangle).
    pub(super) fn scene(
        &mut self,
        ui: &mut egui::Ui,
        frame: &eframe::Frame,
    ) -> (bool, Option<egui::Rect>) {
        let area = ui.available_rect_before_wrap();
        let response = ui.allocate_rect(area, egui::Sense::click_and_drag());
        let ppp = ui.ctx().pixels_per_point();
        let selecting =
            self.edit_panel.tool != Tool::Orbit && matches!(self.model, Model::Fixed { .. });
        self.camera
            .handle_input_with(ui, &response, self.views.extent, !selecting);
        let lod = matches!(self.model, Model::Lod { .. });
        let current = self.current_params().filter(|(p, _)| !p.is_empty());
        if current.is_none() && !lod {
            ui.painter().text(
                area.center(),
                egui::Align2::CENTER_CENTER,
                "waiting for the model...",
                egui::FontId::proportional(16.0),
                ui.visuals().text_color(),
            );
            return (false, None);
        }
        let Some(render_state) = frame.wgpu_render_state() else {
            return (false, None);
        };
        let comparing = self.panel.comparison_view(&self.views, &self.camera);
        let columns = 1
            + u32::from(comparing.is_some() && self.panel.show_truth)
            + u32::from(comparing.is_some() && self.panel.show_difference);
        let (width, height) = match self.panel.exact {
            Some(size) => size,
            None => {
                let scale = self.panel.render_scale * ppp;
                (
                    ((area.width() / columns as f32) * scale).max(8.0) as u32,
                    (area.height() * scale).max(8.0) as u32,
                )
            }
        };
        let camera = self.camera.camera(width, height, self.display.background);
        let truth = comparing.map(|v| (v.label.as_str(), v.image.pixels.as_slice()));
        let params = match current {
            Some((params, _)) => Ok(params),
            None => Self::lod_params(&mut self.model, &self.ctx, &camera),
        };
        let drawn = params.and_then(|params| {
            let mut egui_renderer = render_state.renderer.write();
            self.renderer.draw(
                &self.ctx,
                &mut egui_renderer,
                &params,
                &camera,
                &self.display,
                truth,
                self.panel.show_difference,
            )
        });
        let (id, difference) = match drawn {
            Ok(ids) => ids,
            Err(e) => {
                let message = format!("rendering failed: {e:#}");
                if self.script.is_some() {
                    self.outcome.fail(message.clone());
                    ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
                }
                self.log.push((Level::Error, message));
                return (false, None);
            }
        };
        // 1:1 pixels when the image fits; otherwise scaled down to fit.
        let natural = egui::vec2(width as f32, height as f32) / ppp;
        let fit = (area.width() / (natural.x * columns as f32))
            .min(area.height() / natural.y)
            .min(1.0);
        let size = natural
            * if self.panel.exact.is_some() {
                fit
            } else {
                1.0 / self.panel.render_scale
            };
        let origin = (area.min * ppp).round() / ppp;
        let uv = egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0));
        let scene_rect = egui::Rect::from_min_size(origin, size);
        let painter = ui.painter_at(area);
        painter.image(id, scene_rect, uv, egui::Color32::WHITE);
        let mut next = scene_rect.translate(egui::vec2(size.x, 0.0));
        if let (Some(view), true) = (comparing, self.panel.show_truth) {
            let texture = self.panel.truth_texture(ui.ctx(), view);
            painter.image(texture, next, uv, egui::Color32::WHITE);
            next = next.translate(egui::vec2(size.x, 0.0));
        }
        if let Some(diff) = difference {
            painter.image(diff, next, uv, egui::Color32::WHITE);
        }
        if let Some(plan) = &mut self.plan {
            plan.paint(
                &painter.with_clip_rect(scene_rect.intersect(area)),
                &Projector::new(&camera, scene_rect),
            );
        }
        self.scene_tools(ui, &response, &camera, scene_rect, area);
        (true, Some(scene_rect))
    }
}

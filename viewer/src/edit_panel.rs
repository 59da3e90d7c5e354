//! The "Edit" panel and the scene view's selection tools: a crop box moved and resized by
//! dragging or typing its corners (drawn as a wireframe), selection by a dragged rectangle or a
//! brush, select inside the box, invert, delete, undo and redo, the counts, and saving the edited
//! model in any format. The edits themselves are [`EditAction`]s applied by the app.

use crate::crop_handles;
use crate::editing::{EditAction, EditState};
use crate::plan_view::geometry::Projector;
use eframe::egui::{self, Color32, Pos2, Rect, Stroke};
use wgsplat::io::formats::ModelFormat;
use wgsplat::show::edit::CropBox;
use wgsplat::show::selection::SelectMode;
use wgsplat::splat::Camera;

/// Colour of the crop box's wireframe.
pub const CROP_COLOR: Color32 = Color32::from_rgb(255, 170, 0);
/// How near a handle (in points) the pointer must press to grab it.
const HANDLE_PICK_POINTS: f32 = 8.0;
/// Colour of a selection rectangle or brush being drawn.
const TOOL_COLOR: Color32 = Color32::from_rgb(255, 255, 255);

/// What a primary drag in the scene view does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// Orbit the camera.
    Orbit,
    /// Select inside a dragged rectangle.
    Box,
    /// Select under a brush.
    Brush,
    /// Drag the crop box's handles: a face along its axis, the centre across the view.
    Crop,
}

/// State of the edit panel.
pub struct EditPanel {
    /// The crop box's corners: min x, y, z, max x, y, z.
    pub crop: [f32; 6],
    /// Whether the crop box is on (drawn, and usable to select).
    pub crop_on: bool,
    /// The scene view's tool.
    pub tool: Tool,
    /// Brush radius in points.
    pub brush_radius: f32,
    /// Where the edited model is saved.
    pub save_file: String,
    /// The box being dragged (screen) or the brush's dabs (screen).
    drag: Vec<Pos2>,
    /// Crop box edges drawn last frame.
    pub crop_segments: usize,
    /// The crop handle being dragged: handle, the box and the pointer (image pixels) at the start.
    crop_drag: Option<(usize, [f32; 6], [f32; 2])>,
}

impl EditPanel {
    /// A panel whose crop box holds the scene (`center`, `extent`).
    pub fn new(center: [f32; 3], extent: f32) -> EditPanel {
        let c = center;
        let e = extent.max(1e-3);
        EditPanel {
            crop: [c[0] - e, c[1] - e, c[2] - e, c[0] + e, c[1] + e, c[2] + e],
            crop_on: false,
            tool: Tool::Orbit,
            brush_radius: 12.0,
            save_file: "edited.ply".to_owned(),
            drag: Vec::new(),
            crop_segments: 0,
            crop_drag: None,
        }
    }

    /// The crop box when it is on and valid.
    pub fn crop_box(&self) -> Option<CropBox> {
        self.crop_on
            .then(|| CropBox::from_corners(self.crop).ok())
            .flatten()
    }

    /// Shows the panel; returns the edits asked for. `state` is the edit state, if editing began;
    /// `total` the model's Gaussians; `editable` false while a model trains.
    pub fn show(
        &mut self,
        ui: &mut egui::Ui,
        state: Option<&EditState>,
        total: u64,
        editable: bool,
    ) -> Vec<EditAction> {
        let mut actions = Vec::new();
        if !editable {
            ui.weak("editing needs a fixed model: save the trained one and open it");
            return actions;
        }
        self.crop_controls(ui, &mut actions);
        ui.horizontal(|ui| {
            ui.label("drag:");
            ui.selectable_value(&mut self.tool, Tool::Orbit, "orbit");
            ui.selectable_value(&mut self.tool, Tool::Box, "box select");
            ui.selectable_value(&mut self.tool, Tool::Brush, "brush");
            if self.crop_on {
                ui.selectable_value(&mut self.tool, Tool::Crop, "crop handles");
            }
        });
        if self.tool == Tool::Crop && !self.crop_on {
            self.tool = Tool::Orbit;
        }
        if self.tool == Tool::Brush {
            ui.add(egui::Slider::new(&mut self.brush_radius, 2.0..=100.0).text("brush radius"));
        }
        match self.tool {
            Tool::Orbit => {}
            Tool::Crop => {
                ui.weak("drag a face's handle along its axis, the centre's across the view");
            }
            _ => {
                ui.weak("shift: add to the selection, ctrl: take from it");
            }
        }
        let (selected, remaining) = state.map_or((0, total as usize), |s| {
            (s.session.selected_count(), s.session.remaining())
        });
        let (can_undo, can_redo) = state.map_or((false, false), |s| {
            (
                s.session.undo_name().is_some(),
                s.session.redo_name().is_some(),
            )
        });
        ui.label(format!(
            "{selected} selected, {remaining} of {total} remain"
        ));
        ui.horizontal_wrapped(|ui| {
            if ui.button("Invert").clicked() {
                actions.push(EditAction::Invert);
            }
            if ui
                .add_enabled(selected > 0, egui::Button::new("Clear"))
                .clicked()
            {
                actions.push(EditAction::Clear);
            }
            if ui
                .add_enabled(selected > 0, egui::Button::new("Delete"))
                .clicked()
            {
                actions.push(EditAction::Delete);
            }
            if ui
                .add_enabled(can_undo, egui::Button::new("Undo"))
                .clicked()
            {
                actions.push(EditAction::Undo);
            }
            if ui
                .add_enabled(can_redo, egui::Button::new("Redo"))
                .clicked()
            {
                actions.push(EditAction::Redo);
            }
        });
        if !ui.ctx().egui_wants_keyboard_input() {
            ui.input_mut(|i| {
                if i.consume_key(
                    egui::Modifiers::COMMAND | egui::Modifiers::SHIFT,
                    egui::Key::Z,
                ) || i.consume_key(egui::Modifiers::COMMAND, egui::Key::Y)
                {
                    actions.push(EditAction::Redo);
                } else if i.consume_key(egui::Modifiers::COMMAND, egui::Key::Z) {
                    actions.push(EditAction::Undo);
                }
                if i.consume_key(egui::Modifiers::NONE, egui::Key::Delete) {
                    actions.push(EditAction::Delete);
                }
            });
        }
        ui.horizontal(|ui| {
            if ui.button("Save").clicked() {
                actions.push(EditAction::Save(self.save_file.clone().into()));
            }
            ui.text_edit_singleline(&mut self.save_file);
        });
        let names: Vec<&str> = ModelFormat::ALL.iter().map(|f| f.extension()).collect();
        ui.weak(format!("format by extension: {}", names.join(", ")));
        actions
    }

    fn crop_controls(&mut self, ui: &mut egui::Ui, actions: &mut Vec<EditAction>) {
        ui.horizontal(|ui| {
            ui.checkbox(&mut self.crop_on, "crop box");
            if ui
                .add_enabled(self.crop_on, egui::Button::new("Select inside"))
                .clicked()
            {
                actions.push(EditAction::SelectInCrop(SelectMode::Replace));
            }
        });
        if !self.crop_on {
            return;
        }
        let speed = 0.01 * (self.crop[3] - self.crop[0]).abs().max(1e-3);
        let mut centre: [f32; 3] = [0, 1, 2].map(|k| 0.5 * (self.crop[k] + self.crop[k + 3]));
        let mut size: [f32; 3] = [0, 1, 2].map(|k| self.crop[k + 3] - self.crop[k]);
        let (old_centre, old_size) = (centre, size);
        egui::Grid::new("crop-box").num_columns(4).show(ui, |ui| {
            let row = |ui: &mut egui::Ui, name: &str, values: &mut [f32]| {
                ui.label(name);
                for v in values {
                    ui.add(egui::DragValue::new(v).speed(speed).max_decimals(3));
                }
                ui.end_row();
            };
            row(ui, "min", &mut self.crop[0..3]);
            row(ui, "max", &mut self.crop[3..6]);
            row(ui, "move", &mut centre);
            row(ui, "size", &mut size);
        });
        for k in 0..3 {
            if centre[k] != old_centre[k] || size[k] != old_size[k] {
                let half = 0.5 * size[k].max(1e-4);
                (self.crop[k], self.crop[k + 3]) = (centre[k] - half, centre[k] + half);
            }
            // A minimum dragged past its maximum pushes it along.
            if self.crop[k + 3] <= self.crop[k] {
                self.crop[k + 3] = self.crop[k] + 1e-4;
            }
        }
    }

    /// Handles a primary drag over the scene with the box or brush tool, returning the
    /// selection it made on release; `image_size` is the scene image's in pixels, shown in
    /// `rect`.
    pub fn scene_input(
        &mut self,
        ui: &egui::Ui,
        response: &egui::Response,
        rect: Rect,
        camera: &Camera,
    ) -> Option<EditAction> {
        let image_size = [camera.width, camera.height];
        let to_image = |p: Pos2| -> [f32; 2] {
            [
                (p.x - rect.min.x) * image_size[0] as f32 / rect.width().max(1.0),
                (p.y - rect.min.y) * image_size[1] as f32 / rect.height().max(1.0),
            ]
        };
        if self.tool != Tool::Crop {
            self.crop_drag = None;
        }
        match self.tool {
            Tool::Orbit => {
                self.drag.clear();
                return None;
            }
            Tool::Crop => {
                let radius = HANDLE_PICK_POINTS * image_size[0] as f32 / rect.width().max(1.0);
                self.crop_input(response, camera, radius, to_image);
                return None;
            }
            _ => {}
        }
        let pressed = response.dragged_by(egui::PointerButton::Primary)
            || response.clicked_by(egui::PointerButton::Primary);
        if pressed && let Some(p) = response.interact_pointer_pos() {
            if self.tool == Tool::Brush || self.drag.is_empty() {
                self.drag.push(p);
            } else {
                self.drag.truncate(1);
                self.drag.push(p);
            }
        }
        let painter = ui.painter_at(rect);
        match self.tool {
            Tool::Box if self.drag.len() == 2 => {
                let shown = Rect::from_two_pos(self.drag[0], self.drag[1]);
                painter.rect_stroke(
                    shown,
                    0.0,
                    Stroke::new(1.0, TOOL_COLOR),
                    egui::StrokeKind::Inside,
                );
            }
            Tool::Brush => {
                let hover = response.hover_pos().into_iter();
                for p in self.drag.iter().copied().chain(hover) {
                    painter.circle_stroke(p, self.brush_radius, Stroke::new(1.0, TOOL_COLOR));
                }
            }
            _ => {}
        }
        let released = response.drag_stopped_by(egui::PointerButton::Primary)
            || response.clicked_by(egui::PointerButton::Primary);
        if !released || self.drag.is_empty() {
            return None;
        }
        let modifiers = ui.input(|i| i.modifiers);
        let mode = if modifiers.shift {
            SelectMode::Add
        } else if modifiers.command || modifiers.ctrl {
            SelectMode::Remove
        } else {
            SelectMode::Replace
        };
        let drag = std::mem::take(&mut self.drag);
        match self.tool {
            Tool::Box if drag.len() == 2 => {
                let (a, b) = (to_image(drag[0]), to_image(drag[1]));
                Some(EditAction::SelectRect([a[0], a[1], b[0], b[1]], mode))
            }
            Tool::Brush => {
                let radius = self.brush_radius * image_size[0] as f32 / rect.width().max(1.0);
                let dabs = drag.into_iter().map(|p| (to_image(p), radius)).collect();
                Some(EditAction::SelectBrush(dabs, mode))
            }
            _ => None,
        }
    }

    /// Drags the crop box's handles with the primary button (pointer positions in image pixels
    /// through `to_image`; a handle is picked within `radius` image pixels).
    fn crop_input(
        &mut self,
        response: &egui::Response,
        camera: &Camera,
        radius: f32,
        to_image: impl Fn(Pos2) -> [f32; 2],
    ) {
        let pointer = response.interact_pointer_pos().map(&to_image);
        if response.drag_started_by(egui::PointerButton::Primary)
            && let Some(at) = pointer
        {
            self.crop_drag =
                crop_handles::pick(camera, &self.crop, at, radius).map(|h| (h, self.crop, at));
        }
        if let (Some((handle, start, from)), Some(to)) = (self.crop_drag, pointer)
            && response.dragged_by(egui::PointerButton::Primary)
        {
            self.crop = crop_handles::dragged(camera, &start, handle, from, to);
        }
        if response.drag_stopped() {
            self.crop_drag = None;
        }
    }

    /// Drags the crop box's handle nearest image point `from` (within `radius` pixels) to `to`,
    /// as a mouse drag would (scripted `crop-drag` steps).
    pub fn drag_crop(
        &mut self,
        camera: &Camera,
        from: [f32; 2],
        to: [f32; 2],
        radius: f32,
    ) -> anyhow::Result<String> {
        anyhow::ensure!(self.crop_on, "turn the crop box on to drag its handles");
        let handle = crop_handles::pick(camera, &self.crop, from, radius).ok_or_else(|| {
            anyhow::anyhow!(
                "no crop box handle within {radius} pixels of ({}, {})",
                from[0],
                from[1]
            )
        })?;
        self.crop = crop_handles::dragged(camera, &self.crop, handle, from, to);
        let c = self.crop;
        Ok(format!(
            "crop box: min ({:.3}, {:.3}, {:.3}), max ({:.3}, {:.3}, {:.3})",
            c[0], c[1], c[2], c[3], c[4], c[5]
        ))
    }

    /// Draws the crop box's twelve edges with `projector` (when it is on).
    pub fn paint(&mut self, painter: &egui::Painter, projector: &Projector<'_>) {
        self.crop_segments = 0;
        let Some(crop) = self.crop_box() else {
            return;
        };
        let corner = |k: usize| {
            [0, 1, 2].map(|axis| {
                if k >> axis & 1 == 1 {
                    crop.max[axis]
                } else {
                    crop.min[axis]
                }
            })
        };
        for a in 0..8usize {
            for axis in 0..3 {
                let b = a | 1 << axis;
                if b == a {
                    continue;
                }
                if let Some(ends) = projector.segment(corner(a), corner(b)) {
                    painter.line_segment(ends, Stroke::new(2.0, CROP_COLOR));
                    self.crop_segments += 1;
                }
            }
        }
        if self.tool == Tool::Crop {
            let active = self.crop_drag.map(|(h, _, _)| h);
            for handle in 0..crop_handles::HANDLES {
                let Some(at) = projector.point(crop_handles::handle_point(&self.crop, handle))
                else {
                    continue;
                };
                let fill = match Some(handle) == active {
                    true => Color32::WHITE,
                    false => CROP_COLOR,
                };
                painter.circle(at, 4.0, fill, Stroke::new(1.0, Color32::BLACK));
            }
        }
    }
}

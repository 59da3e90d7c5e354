//! A partition plan drawn over the scene (`wgsplat view PLAN/`): every block's core cell as a solid
//! outline on the ground plane, its training bounds dashed, its index at the cell's centre, and the
//! dataset's camera centres coloured by the blocks that train on them; and the "Plan" panel that
//! lists the blocks and toggles each part of the overlay.

use crate::plan_geometry::{GroundRect, Outline, Projector, cell_outline, ground_point};
use crate::scene::ViewCamera;
use eframe::egui::{self, Color32, Stroke};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use wgsplat::data::Dataset;
use wgsplat::gpu::memory::format_bytes;
use wgsplat::plan::PlanManifest;

/// Block colours, chosen to stand out from each other and from most scenes; blocks past the list
/// get hues spread by the golden angle.
const PALETTE: [[u8; 3]; 8] = [
    [255, 60, 170],
    [0, 200, 255],
    [255, 210, 0],
    [110, 255, 70],
    [170, 100, 255],
    [255, 120, 30],
    [0, 255, 190],
    [240, 240, 240],
];

/// The colour of block `index`.
pub fn block_color(index: usize) -> Color32 {
    match PALETTE.get(index) {
        Some([r, g, b]) => Color32::from_rgb(*r, *g, *b),
        None => {
            let hue = (index as f32 * 0.618_034).fract();
            egui::ecolor::Hsva::new(hue, 0.85, 1.0, 1.0).into()
        }
    }
}

/// Colour of the cameras no block trains on (held-out test views, for one).
const UNASSIGNED: Color32 = Color32::from_gray(140);

/// One dataset camera as the overlay marks it.
struct CameraMark {
    position: [f32; 3],
    /// The blocks whose views include it, in index order.
    blocks: Vec<usize>,
}

/// What was drawn for one block in the last frame (for the screenshot's sidecar).
#[derive(Clone, Debug, Default, Serialize)]
pub struct BlockShown {
    /// The block's index.
    pub index: usize,
    /// Its colour, RGB.
    pub color: [u8; 3],
    /// Outline segments on screen (core and bounds).
    pub segments: usize,
    /// Camera centres on screen marked in its colour.
    pub cameras: usize,
}

/// Which parts of the overlay are drawn.
struct Toggles {
    overlay: bool,
    shade: bool,
    cores: bool,
    bounds: bool,
    labels: bool,
    cameras: bool,
}

/// A plan and everything needed to draw it.
pub struct PlanOverlay {
    /// The plan file.
    pub file: PathBuf,
    /// The plan.
    pub plan: PlanManifest,
    /// The scene's extent on the ground (points and cameras), where unbounded sides are cut.
    pub extent: GroundRect,
    /// Per block: its core's and its bounds' outlines.
    outlines: Vec<(Outline, Outline)>,
    cameras: Vec<CameraMark>,
    /// Whether the cameras sit below the ground frame's `up` side (then the overview looks up).
    cameras_below: bool,
    toggles: Toggles,
    /// The block picked in the panel: drawn on top, the others faded.
    pub selected: Option<usize>,
    /// What the last frame drew.
    pub shown: Vec<BlockShown>,
    /// Problems a user should know of (view names the dataset lacks).
    pub notes: Vec<String>,
}

impl PlanOverlay {
    /// The overlay of `plan` (read from `file`) over `dataset`, the scene it partitions.
    pub fn new(file: PathBuf, plan: PlanManifest, dataset: &Dataset) -> PlanOverlay {
        let frame = plan.ground;
        let positions = dataset
            .points
            .iter()
            .flat_map(|p| p.positions.iter().copied());
        let centres: Vec<[f32; 3]> = dataset.views().map(|v| v.camera.position()).collect();
        let extent = GroundRect::around(&frame, positions.chain(centres.iter().copied()), 0.05)
            .unwrap_or(GroundRect {
                u_min: -1.0,
                u_max: 1.0,
                v_min: -1.0,
                v_max: 1.0,
            });
        let outlines = plan
            .blocks
            .iter()
            .map(|b| {
                (
                    cell_outline(&frame, &b.core, &extent),
                    cell_outline(&frame, &b.bounds, &extent),
                )
            })
            .collect();
        let mut owners: HashMap<&str, Vec<usize>> = HashMap::new();
        for block in &plan.blocks {
            for name in &block.views {
                owners.entry(name.as_str()).or_default().push(block.index);
            }
        }
        let names: HashSet<&str> = dataset.views().map(|v| v.name.as_str()).collect();
        let mut notes = Vec::new();
        for block in &plan.blocks {
            let missing = block
                .views
                .iter()
                .filter(|n| !names.contains(n.as_str()))
                .count();
            if missing > 0 {
                notes.push(format!(
                    "block {} names {missing} of its {} views that the dataset does not have: \
                     was the plan made from another dataset?",
                    block.index,
                    block.views.len()
                ));
            }
        }
        let cameras: Vec<CameraMark> = dataset
            .views()
            .map(|v| CameraMark {
                position: v.camera.position(),
                blocks: owners.get(v.name.as_str()).cloned().unwrap_or_default(),
            })
            .collect();
        let height = |p: [f32; 3]| -> f64 {
            (0..3)
                .map(|k| (f64::from(p[k]) - frame.origin[k]) * frame.up[k])
                .sum()
        };
        let cameras_below = centres.iter().map(|c| height(*c)).sum::<f64>() < 0.0;
        PlanOverlay {
            file,
            plan,
            extent,
            outlines,
            cameras,
            cameras_below,
            toggles: Toggles {
                overlay: true,
                shade: true,
                cores: true,
                bounds: true,
                labels: true,
                cameras: true,
            },
            selected: None,
            shown: Vec::new(),
            notes,
        }
    }

    /// A view from above the ground that takes in the whole extent (in a scene view at least 3:4
    /// wide), tilted a little so that heights read.
    pub fn overview_camera(&self) -> ViewCamera {
        let frame = &self.plan.ground;
        let f = |a: [f64; 3]| a.map(|x| x as f32);
        let flip = if self.cameras_below { -1.0 } else { 1.0 };
        let up = f(frame.up).map(|x| x * flip);
        let (u, v) = (f(frame.u), f(frame.v));
        let tilt = 25f32.to_radians();
        let forward = [0, 1, 2].map(|k| -up[k] * tilt.cos() + v[k] * tilt.sin());
        let right = u.map(|x| x * flip);
        let down = [
            forward[1] * right[2] - forward[2] * right[1],
            forward[2] * right[0] - forward[0] * right[2],
            forward[0] * right[1] - forward[1] * right[0],
        ];
        let fov_y_degrees = 50.0f32;
        // Half-angles with a 10% margin, horizontally for the narrowest view expected.
        let tan_y = (0.5 * fov_y_degrees.to_radians()).tan() / 1.1;
        let tan_x = 0.75 * tan_y;
        let e = &self.extent;
        let target = ground_point(frame, e.center());
        let dot = |a: [f32; 3], b: [f32; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
        // The distance back from the target along `forward` that brings every corner of the
        // extent inside the view: corner offset r is seen at depth r·forward + d.
        let mut distance = 1e-3f32;
        for corner in [
            [e.u_min, e.v_min],
            [e.u_max, e.v_min],
            [e.u_max, e.v_max],
            [e.u_min, e.v_max],
        ] {
            let p = ground_point(frame, corner);
            let r = [0, 1, 2].map(|k| p[k] - target[k]);
            let depth = dot(r, forward);
            distance = distance
                .max(dot(r, right).abs() / tan_x - depth)
                .max(dot(r, down).abs() / tan_y - depth);
        }
        ViewCamera {
            eye: [0, 1, 2].map(|k| target[k] - forward[k] * distance),
            axes: [right, down, forward],
            distance,
            up,
            fov_y_degrees,
            exact: None,
        }
    }

    /// Draws the overlay with `projector` (the camera the scene was rendered with).
    pub fn paint(&mut self, painter: &egui::Painter, projector: &Projector<'_>) {
        self.shown = (0..self.plan.blocks.len())
            .map(|index| {
                let [r, g, b, _] = block_color(index).to_array();
                BlockShown {
                    index,
                    color: [r, g, b],
                    ..BlockShown::default()
                }
            })
            .collect();
        let t = &self.toggles;
        if !t.overlay {
            return;
        }
        // The selected block is drawn last, over the others, which fade.
        let selected = self.selected.filter(|k| *k < self.outlines.len());
        let colors: Vec<Color32> = (0..self.outlines.len())
            .map(|k| match selected {
                Some(s) if s != k => block_color(k).gamma_multiply(0.3),
                _ => block_color(k),
            })
            .collect();
        let order: Vec<usize> = (0..self.outlines.len())
            .filter(|k| Some(*k) != selected)
            .chain(selected)
            .collect();
        if t.shade {
            for &index in &order {
                let corners = self.outlines[index].0.edges.map(|e| e.ends[0]);
                let shown = projector.polygon(&corners);
                if shown.len() >= 3 {
                    let fill = colors[index].gamma_multiply(0.14);
                    painter.add(egui::Shape::convex_polygon(shown, fill, Stroke::NONE));
                }
            }
        }
        for &index in &order {
            let (core, bounds) = &self.outlines[index];
            let color = colors[index];
            let shown = &mut self.shown[index];
            if t.bounds {
                for edge in &bounds.edges {
                    if let Some(ends) = projector.segment(edge.ends[0], edge.ends[1]) {
                        let width = if edge.bounded { 1.5 } else { 1.0 };
                        painter.extend(egui::Shape::dashed_line(
                            &ends,
                            Stroke::new(width, color),
                            6.0,
                            5.0,
                        ));
                        shown.segments += 1;
                    }
                }
            }
            if t.cores {
                for edge in &core.edges {
                    if let Some(ends) = projector.segment(edge.ends[0], edge.ends[1]) {
                        // Sides that stand for an unbounded side are drawn thinner.
                        let width = if edge.bounded { 3.0 } else { 1.5 };
                        painter.line_segment(ends, Stroke::new(width, color));
                        shown.segments += 1;
                    }
                }
            }
        }
        if t.cameras {
            for mark in &self.cameras {
                let Some(at) = projector.point(mark.position) else {
                    continue;
                };
                if !painter.clip_rect().expand(4.0).contains(at) {
                    continue;
                }
                let Some((&first, rest)) = mark.blocks.split_first() else {
                    painter.circle_filled(at, 2.5, UNASSIGNED);
                    continue;
                };
                painter.circle_filled(at, 4.0, colors[first]);
                self.shown[first].cameras += 1;
                // Further blocks as rings around the dot.
                for (ring, &block) in rest.iter().take(4).enumerate() {
                    let radius = 5.5 + 2.0 * ring as f32;
                    painter.circle_stroke(at, radius, Stroke::new(1.5, colors[block]));
                    self.shown[block].cameras += 1;
                }
            }
        }
        if t.labels {
            for &index in &order {
                let core = &self.outlines[index].0;
                let centre = ground_point(&self.plan.ground, core.rect.center());
                let Some(at) = projector.point(centre) else {
                    continue;
                };
                let font = egui::FontId::proportional(18.0);
                let text = index.to_string();
                let shadow = Color32::from_black_alpha(200);
                painter.text(
                    at + egui::vec2(1.0, 1.0),
                    egui::Align2::CENTER_CENTER,
                    &text,
                    font.clone(),
                    shadow,
                );
                painter.text(at, egui::Align2::CENTER_CENTER, &text, font, colors[index]);
            }
        }
    }

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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::plan_geometry::Projector;
    use eframe::egui::{Rect, pos2, vec2};
    use wgsplat::data::builtin::{BuiltinOptions, generate};
    use wgsplat::plan::{BlockPlan, Cell, GroundFrame, PLAN_VERSION, PlanData};
    use wgsplat::train::TrainConfig;
    use wgsplat::train::setup::{BuiltinScene, apply_builtin_recipe};

    /// The built-in scene at `resolution`, as a plan made from it would load it.
    pub(crate) fn builtin(resolution: u32) -> Dataset {
        generate(&BuiltinOptions {
            resolution,
            ..BuiltinOptions::default()
        })
        .expect("the built-in scene")
    }

    /// A 2 x 2 plan of the built-in scene (z up) split at x = 0 and y = 0, outer sides unbounded,
    /// training bounds `margin` wider; views and points assigned by position.
    pub(crate) fn quadrant_plan(dataset: &Dataset, resolution: u32, margin: f64) -> PlanManifest {
        let ground = GroundFrame {
            origin: [0.0; 3],
            u: [1.0, 0.0, 0.0],
            v: [0.0, 1.0, 0.0],
            up: [0.0, 0.0, 1.0],
        };
        let halves = [(None, Some(0.0)), (Some(0.0), None)];
        let grow = |c: Cell| Cell {
            u_min: c.u_min.map(|b| b - margin),
            u_max: c.u_max.map(|b| b + margin),
            v_min: c.v_min.map(|b| b - margin),
            v_max: c.v_max.map(|b| b + margin),
        };
        let mut blocks = Vec::new();
        for (v_min, v_max) in halves {
            for (u_min, u_max) in halves {
                let core = Cell {
                    u_min,
                    u_max,
                    v_min,
                    v_max,
                };
                let bounds = grow(core);
                let views = dataset
                    .train
                    .iter()
                    .filter(|v| bounds.contains(ground.ground(v.camera.position())))
                    .map(|v| v.name.clone())
                    .collect();
                let points = dataset.points.as_ref().map_or(0, |p| {
                    p.positions
                        .iter()
                        .filter(|q| bounds.contains(ground.ground(**q)))
                        .count()
                }) as u64;
                blocks.push(BlockPlan {
                    index: blocks.len(),
                    core,
                    bounds,
                    views,
                    points,
                    estimated_peak_bytes: points << 16,
                });
            }
        }
        let mut config = TrainConfig::default();
        apply_builtin_recipe(&mut config);
        PlanManifest {
            version: PLAN_VERSION,
            data: PlanData {
                path: None,
                builtin: BuiltinScene::Objects,
                builtin_resolution: resolution,
                resolution: 1,
                eval: false,
                test_every: None,
                test_list: None,
                alpha_as_mask: false,
            },
            config,
            ground,
            blocks,
        }
    }

    /// The shapes `overlay` paints with `camera` into `rect`.
    fn painted(
        overlay: &mut PlanOverlay,
        camera: &wgsplat::splat::Camera,
        rect: Rect,
    ) -> Vec<egui::Shape> {
        let ctx = egui::Context::default();
        let input = egui::RawInput {
            screen_rect: Some(Rect::from_min_size(pos2(0.0, 0.0), vec2(800.0, 600.0))),
            ..Default::default()
        };
        let mut output = ctx.run_ui(input, |ui| {
            overlay.paint(
                &ui.painter().with_clip_rect(rect),
                &Projector::new(camera, rect),
            );
        });
        let shapes = std::mem::take(&mut output.shapes);
        output.drop_without_applying_deltas();
        shapes.into_iter().map(|s| s.shape).collect()
    }

    fn segments_of(shapes: &[egui::Shape], color: Color32) -> Vec<[egui::Pos2; 2]> {
        shapes
            .iter()
            .filter_map(|s| match s {
                egui::Shape::LineSegment { points, stroke } if stroke.color == color => {
                    Some(*points)
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_overview_shows_every_block_in_its_colour() {
        let dataset = builtin(16);
        let plan = quadrant_plan(&dataset, 16, 0.3);
        let mut overlay = PlanOverlay::new("plan.json".into(), plan, &dataset);
        assert!(overlay.notes.is_empty(), "{:?}", overlay.notes);
        let camera = overlay.overview_camera().camera(320, 240, [0.0; 3]);
        let rect = Rect::from_min_size(pos2(10.0, 20.0), vec2(320.0, 240.0));
        let shapes = painted(&mut overlay, &camera, rect);
        assert_eq!(overlay.shown.len(), 4);
        let colors: HashSet<[u8; 3]> = overlay.shown.iter().map(|b| b.color).collect();
        assert_eq!(colors.len(), 4, "the blocks' colours must differ");
        let projector = Projector::new(&camera, rect);
        for (index, shown) in overlay.shown.iter().enumerate() {
            let color = block_color(index);
            // The whole extent is in view: all four sides of the core and of the bounds.
            assert_eq!(shown.segments, 8, "block {index}");
            let segments = segments_of(&shapes, color);
            assert!(
                segments.len() >= 8,
                "block {index}: {} segments",
                segments.len()
            );
            for end in segments.iter().flatten() {
                assert!(rect.expand(17.0).contains(*end), "{end:?} is off the image");
            }
            // Its training cameras are marked in its colour (and only those).
            let dots = shapes
                .iter()
                .filter(|s| matches!(s, egui::Shape::Circle(c) if c.fill == color))
                .count();
            let block = &overlay.plan.blocks[index];
            assert!(!block.views.is_empty());
            assert_eq!(shown.cameras, block.views.len(), "block {index}");
            assert!(
                dots <= shown.cameras && dots > 0,
                "block {index}: {dots} dots"
            );
            // The label sits at the centre of the (clipped) core cell.
            let centre = ground_point(
                &overlay.plan.ground,
                overlay.outlines[index].0.rect.center(),
            );
            let at = projector.point(centre).expect("in front");
            assert!(rect.contains(at), "label of block {index} at {at:?}");
        }
        // A block picked in the panel keeps its colour, drawn last; the others fade.
        overlay.selected = Some(2);
        let shapes = painted(&mut overlay, &camera, rect);
        for index in 0..4 {
            let full = segments_of(&shapes, block_color(index)).len();
            let faded = segments_of(&shapes, block_color(index).gamma_multiply(0.3)).len();
            if index == 2 {
                assert!(
                    full >= 8 && faded == 0,
                    "block 2: {full} full, {faded} faded"
                );
            } else {
                assert!(
                    full == 0 && faded >= 8,
                    "block {index}: {full} full, {faded} faded"
                );
            }
        }
        let last = shapes.iter().rev().find_map(|s| match s {
            egui::Shape::LineSegment { stroke, .. } => Some(stroke.color),
            _ => None,
        });
        assert_eq!(
            last,
            Some(block_color(2)),
            "the picked block is drawn on top"
        );
        overlay.selected = None;

        // A camera inside the scene, looking along the ground: parts of the outlines lie behind
        // it, and nothing drawn may come from behind the camera or leave the image.
        let eye = [0.2f32, -0.4, 0.3];
        let low = crate::scene::ViewCamera {
            eye,
            axes: [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]],
            distance: 1.0,
            up: [0.0, 0.0, 1.0],
            fov_y_degrees: 60.0,
            exact: None,
        }
        .camera(320, 240, [0.0; 3]);
        let shapes = painted(&mut overlay, &low, rect);
        let mut drawn = 0;
        for index in 0..4 {
            for end in segments_of(&shapes, block_color(index)).iter().flatten() {
                assert!(end.x.is_finite() && end.y.is_finite());
                assert!(rect.expand(17.0).contains(*end), "{end:?} is off the image");
                drawn += 1;
            }
        }
        assert!(drawn > 0, "the cells in front of the camera are drawn");
        // The ground is below the eye: every drawn outline point is below the horizon (the
        // image's middle row), which a point projected from behind the camera would not be.
        for index in 0..4 {
            for end in segments_of(&shapes, block_color(index)).iter().flatten() {
                assert!(
                    end.y >= rect.center().y - 1e-3,
                    "{end:?} is above the horizon"
                );
            }
        }
    }
}

//! A partition plan drawn over the scene (`wgsplat view PLAN/`): every block's core cell as a solid
//! outline on the ground plane, its training bounds dashed, its index at the cell's centre, and the
//! dataset's camera centres coloured by the blocks that train on them.

use super::geometry::{GroundRect, Outline, Projector, cell_outline, ground_point};
use crate::scene::ViewCamera;
use eframe::egui::{self, Color32, Stroke};
use glam::Vec3;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use wgsplat::data::Dataset;
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
pub(super) struct Toggles {
    pub(super) overlay: bool,
    pub(super) shade: bool,
    pub(super) cores: bool,
    pub(super) bounds: bool,
    pub(super) labels: bool,
    pub(super) cameras: bool,
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
    pub(super) outlines: Vec<(Outline, Outline)>,
    cameras: Vec<CameraMark>,
    /// Whether the cameras sit below the ground frame's `up` side (then the overview looks up).
    cameras_below: bool,
    pub(super) toggles: Toggles,
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
        let forward = -Vec3::from(up) * tilt.cos() + Vec3::from(v) * tilt.sin();
        let right = Vec3::from(u) * flip;
        let down = forward.cross(right);
        let fov_y_degrees = 50.0f32;
        // Half-angles with a 10% margin, horizontally for the narrowest view expected.
        let tan_y = (0.5 * fov_y_degrees.to_radians()).tan() / 1.1;
        let tan_x = 0.75 * tan_y;
        let e = &self.extent;
        let target = Vec3::from(ground_point(frame, e.center()));
        // The distance back from the target along `forward` that brings every corner of the
        // extent inside the view: corner offset r is seen at depth r·forward + d.
        let mut distance = 1e-3f32;
        for corner in [
            [e.u_min, e.v_min],
            [e.u_max, e.v_min],
            [e.u_max, e.v_max],
            [e.u_min, e.v_max],
        ] {
            let r = Vec3::from(ground_point(frame, corner)) - target;
            let depth = r.dot(forward);
            distance = distance
                .max(r.dot(right).abs() / tan_x - depth)
                .max(r.dot(down).abs() / tan_y - depth);
        }
        ViewCamera {
            eye: (target - forward * distance).to_array(),
            axes: [right, down, forward].map(|a| a.to_array()),
            distance,
            up,
            fov_y_degrees,
            exact: None,
            lens: wgsplat::splat::CameraLens::PINHOLE,
            through_lens: true,
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
}

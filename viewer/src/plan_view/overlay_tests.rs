//! Tests of the plan overlay: what it paints from an overview and from inside the scene, and a
//! small plan of the built-in scene the viewer's other tests share.

use super::geometry::{Projector, ground_point};
use super::overlay::*;
use eframe::egui::{self, Color32};
use eframe::egui::{Rect, pos2, vec2};
use std::collections::HashSet;
use wgsplat::data::Dataset;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::plan::PlanManifest;
use wgsplat::plan::manifest::PartitionRecord;
use wgsplat::plan::{BlockPlan, Cell, Grid, GroundFrame, PLAN_VERSION, PlanData};
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
                test_views: Vec::new(),
                points,
                max_gaussians: 0,
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
            resolution: Some(1),
            eval: false,
            test_every: None,
            test_list: None,
            alpha_as_mask: false,
            undistort: false,
        },
        config,
        partition: PartitionRecord::of_grid(Grid { rows: 2, cols: 2 }),
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
            egui::Shape::LineSegment { points, stroke } if stroke.color == color => Some(*points),
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
        lens: wgsplat::splat::CameraLens::PINHOLE,
        through_lens: true,
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

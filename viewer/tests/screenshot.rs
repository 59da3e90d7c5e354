//! End-to-end checks of the viewer under a virtual X server (xvfb): the scene view of a PLY at a
//! dataset camera matches the library's own render pixel for pixel (its colour and its normals),
//! the panels are drawn, a live training run fills the loss plot, and a partition plan's blocks
//! are drawn over its scene.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::io::ply::{read_ply, write_ply};
use wgsplat::plan::manifest::PartitionRecord;
use wgsplat::plan::{BlockPlan, Cell, Grid, GroundFrame, PLAN_VERSION, PlanData, PlanManifest};
use wgsplat::splat::GaussianTensors;
use wgsplat::splat::forward::{ForwardOutput, RenderOptions, render};
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::setup::{BuiltinScene, apply_builtin_recipe};
use wgsplat::train::{TrainConfig, Trainer};
use wgsplat::{GpuContext, MemoryCategory};

mod common;
use common::{rect_of, run_viewer, scratch_dir};

/// Both tests start a viewer; on two cores they run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const RESOLUTION: u32 = 64;

/// Distinct colours in a rectangle of the screenshot (uniform background has one).
fn distinct_colors(shot: &image::RgbaImage, [x0, y0, x1, y1]: [u32; 4]) -> usize {
    let mut seen = std::collections::BTreeSet::new();
    for y in y0..y1.min(shot.height()) {
        for x in x0..x1.min(shot.width()) {
            seen.insert(shot.get_pixel(x, y).0);
        }
    }
    seen.len()
}

fn check_panels(shot: &image::RgbaImage, sidecar: &Value, expected: &[&str]) {
    let panels = sidecar["panels"].as_array().expect("a panel list");
    for name in expected {
        let panel = panels
            .iter()
            .find(|p| p["name"] == *name)
            .unwrap_or_else(|| panic!("no panel {name} in {panels:?}"));
        let colors = distinct_colors(shot, rect_of(panel));
        assert!(colors > 2, "panel {name} looks empty ({colors} colours)");
    }
}

fn trained_model(ctx: &GpuContext, dir: &Path) -> PathBuf {
    let dataset = generate(&BuiltinOptions {
        resolution: RESOLUTION,
        ..BuiltinOptions::default()
    })
    .expect("the built-in scene");
    let mut config = TrainConfig::default();
    apply_builtin_recipe(&mut config);
    config.iterations = 30;
    let params = initial_gaussians(ctx, &dataset, &config).expect("initial Gaussians");
    let mut trainer = Trainer::new(ctx, dataset, params, config).expect("a trainer");
    trainer
        .run_until(30, &mut |_| {}, &|| false)
        .expect("training");
    let path = dir.join("model.ply");
    let cpu = trainer.params().download(ctx).expect("download");
    write_ply(&path, &cpu, trainer.params().max_sh_degree()).expect("writing the PLY");
    path
}

/// The scene view of a trained model at the built-in scene's first test camera, drawn 1:1 by a
/// viewer started with `extra` flags, and the library's render of the same model and camera
/// with `options` (black background): (screenshot, sidecar, render).
fn viewer_and_library_at_test_camera(
    ctx: &GpuContext,
    dir: &Path,
    extra: &[&str],
    options: RenderOptions,
) -> (image::RgbaImage, Value, ForwardOutput) {
    let ply = trained_model(ctx, dir);
    let resolution = RESOLUTION.to_string();
    let mut args = vec![
        ply.to_str().expect("a UTF-8 path"),
        "--dataset",
        "builtin",
        "--builtin-resolution",
        &resolution,
        "--camera",
        "test:0",
        "--frames",
        "5",
    ];
    args.extend_from_slice(extra);
    let (shot, sidecar) = run_viewer(dir, &args);
    let dataset = generate(&BuiltinOptions {
        resolution: RESOLUTION,
        ..BuiltinOptions::default()
    })
    .expect("the built-in scene");
    let model = read_ply(&ply).expect("reading the PLY back");
    let mut enc = ctx.encoder("test upload");
    let params = GaussianTensors::upload(
        &mut enc,
        &model.gaussians,
        model.sh_degree,
        MemoryCategory::Parameters,
        "test",
    )
    .expect("upload");
    ctx.submit(enc).expect("submit");
    let mut camera = dataset.test[0].camera.clone();
    camera.background = [0.0; 3];
    let out = render(ctx, &params, &camera, options).expect("render");
    (shot, sidecar, out)
}

#[test]
fn ply_at_a_test_camera_matches_the_library_render() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = GpuContext::from_env().expect("a GPU");
    let dir = scratch_dir("ply");
    let options = RenderOptions {
        sh_degree: 3,
        ..Default::default()
    };
    let (shot, sidecar, out) = viewer_and_library_at_test_camera(&ctx, &dir, &[], options);
    check_panels(
        &shot,
        &sidecar,
        &["view", "model", "memory", "log", "scene"],
    );
    assert_eq!(
        sidecar["image_size"],
        serde_json::json!([RESOLUTION, RESOLUTION])
    );
    let [x0, y0, x1, y1] = rect_of(&sidecar["scene"]);
    assert_eq!(
        (x1 - x0, y1 - y0),
        (RESOLUTION, RESOLUTION),
        "the scene must be drawn 1:1"
    );
    let rgba = out.image.read::<f32>(&ctx).expect("readback");
    let (mut total, mut worst, mut worst_at) = ([0.0f64; 3], 0.0f64, (0, 0));
    for y in 0..RESOLUTION {
        for x in 0..RESOLUTION {
            let shown = shot.get_pixel(x0 + x, y0 + y).0;
            for c in 0..3 {
                let expected =
                    rgba[((y * RESOLUTION + x) * 4 + c) as usize].clamp(0.0, 1.0) * 255.0;
                let diff = (f64::from(shown[c as usize]) - f64::from(expected)).abs();
                total[c as usize] += diff;
                if diff > worst {
                    (worst, worst_at) = (diff, (x, y));
                }
            }
        }
    }
    let mean = total.map(|t| t / f64::from(RESOLUTION * RESOLUTION));
    println!("mean abs difference per channel {mean:?} (of 255), worst {worst:.1} at {worst_at:?}");
    assert!(
        mean.iter().all(|m| *m < 3.0),
        "mean abs difference {mean:?}; worst {worst} at {worst_at:?}"
    );
    assert!(
        distinct_colors(&shot, [x0, y0, x1, y1]) > 10,
        "the scene is blank"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_normals_view_shows_the_librarys_normals() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = GpuContext::from_env().expect("a GPU");
    let dir = scratch_dir("normals");
    let options = RenderOptions {
        sh_degree: 3,
        normals: true,
        ..Default::default()
    };
    let (shot, sidecar, out) =
        viewer_and_library_at_test_camera(&ctx, &dir, &["--show-normals"], options);
    let [x0, y0, _, _] = rect_of(&sidecar["scene"]);
    let alpha: Vec<f32> = out
        .image
        .read::<f32>(&ctx)
        .expect("readback")
        .chunks_exact(4)
        .map(|p| p[3])
        .collect();
    let sums = out
        .normals
        .as_ref()
        .expect("normals")
        .read::<f32>(&ctx)
        .expect("readback");
    let map = wgsplat::show::normals::NormalMap::from_sums(RESOLUTION, RESOLUTION, &sums, &alpha);
    // The view fades the normal-map colour by the opacity, over black.
    let (mut total, mut worst) = (0.0f64, 0.0f64);
    for y in 0..RESOLUTION {
        for x in 0..RESOLUTION {
            let i = (y * RESOLUTION + x) as usize;
            let n = map.normals[i];
            let colour = [n[0], -n[1], -n[2]].map(|v| {
                if n == [0.0; 3] {
                    0.0
                } else {
                    (0.5 + 0.5 * v) * alpha[i] * 255.0
                }
            });
            let shown = shot.get_pixel(x0 + x, y0 + y).0;
            for c in 0..3 {
                let diff = (f64::from(shown[c]) - f64::from(colour[c])).abs();
                total += diff;
                worst = worst.max(diff);
            }
        }
    }
    let mean = total / f64::from(3 * RESOLUTION * RESOLUTION);
    println!("normals view: mean abs difference {mean:.2} (of 255), worst {worst:.1}");
    assert!(mean < 3.0, "mean abs difference {mean}, worst {worst}");
    assert!(
        distinct_colors(&shot, rect_of(&sidecar["scene"])) > 10,
        "the normals view is blank"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn live_training_fills_the_loss_plot() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = scratch_dir("train");
    let resolution = RESOLUTION.to_string();
    let (shot, sidecar) = run_viewer(
        &dir,
        &[
            "--builtin-resolution",
            &resolution,
            "--train-iters",
            "20",
            "--frames",
            "3",
        ],
    );
    check_panels(
        &shot,
        &sidecar,
        &["view", "training", "memory", "log", "scene"],
    );
    assert!(sidecar["gaussians"].as_u64().unwrap_or(0) > 0, "{sidecar}");
    assert!(
        sidecar["iteration"].as_u64().unwrap_or(0) >= 20,
        "{sidecar}"
    );
    assert!(
        sidecar["loss_points"].as_u64().unwrap_or(0) > 0,
        "{sidecar}"
    );
    let plot = rect_of(&sidecar["loss_plot"]);
    assert!(distinct_colors(&shot, plot) > 3, "the loss plot is empty");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A 2 x 2 plan of the built-in scene (z up), split at x = 0 and y = 0 with unbounded outer
/// sides and training bounds 0.3 wider, its training views chosen by camera position; and the
/// number of the scene's sparse points.
fn quadrant_plan(resolution: u32) -> (PlanManifest, u64) {
    let dataset = generate(&BuiltinOptions {
        resolution,
        ..BuiltinOptions::default()
    })
    .expect("the built-in scene");
    let ground = GroundFrame {
        origin: [0.0; 3],
        u: [1.0, 0.0, 0.0],
        v: [0.0, 1.0, 0.0],
        up: [0.0, 0.0, 1.0],
    };
    let halves = [(None, Some(0.0)), (Some(0.0), None)];
    let grown = |bound: Option<f64>, by: f64| bound.map(|b| b + by);
    let mut blocks = Vec::new();
    for (v_min, v_max) in halves {
        for (u_min, u_max) in halves {
            let core = Cell {
                u_min,
                u_max,
                v_min,
                v_max,
            };
            let bounds = Cell {
                u_min: grown(u_min, -0.3),
                u_max: grown(u_max, 0.3),
                v_min: grown(v_min, -0.3),
                v_max: grown(v_max, 0.3),
            };
            let views: Vec<String> = dataset
                .train
                .iter()
                .filter(|v| bounds.contains(ground.ground(v.camera.position())))
                .map(|v| v.name.clone())
                .collect();
            assert!(!views.is_empty(), "every quadrant has cameras");
            blocks.push(BlockPlan {
                index: blocks.len(),
                core,
                bounds,
                views,
                test_views: Vec::new(),
                points: 0,
                max_gaussians: 0,
                estimated_peak_bytes: 1 << 20,
            });
        }
    }
    let mut config = TrainConfig::default();
    apply_builtin_recipe(&mut config);
    let points = dataset.points.as_ref().map_or(0, |p| p.len()) as u64;
    let plan = PlanManifest {
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
    };
    (plan, points)
}

/// Pixels in `rect` within `tolerance` of `color` on every channel.
fn pixels_near(shot: &image::RgbaImage, [x0, y0, x1, y1]: [u32; 4], color: [u8; 3]) -> usize {
    let tolerance = 6;
    let mut count = 0;
    for y in y0..y1.min(shot.height()) {
        for x in x0..x1.min(shot.width()) {
            let p = shot.get_pixel(x, y).0;
            if (0..3).all(|c| p[c].abs_diff(color[c]) <= tolerance) {
                count += 1;
            }
        }
    }
    count
}

#[test]
fn a_plan_shows_its_blocks_over_the_scene() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = scratch_dir("plan");
    let plan_dir = dir.join("PLAN");
    std::fs::create_dir_all(&plan_dir).expect("a plan folder");
    let (plan, points) = quadrant_plan(RESOLUTION);
    plan.save(&plan_dir).expect("writing the plan");
    let (shot, sidecar) = run_viewer(
        &dir,
        &[
            plan_dir.to_str().expect("a UTF-8 path"),
            "--frames",
            "2",
            "--width",
            "1000",
            "--height",
            "700",
        ],
    );
    check_panels(
        &shot,
        &sidecar,
        &["view", "model", "plan", "memory", "log", "scene"],
    );
    // The scene is shown, not trained: the initial Gaussians of the built-in scene's points.
    assert_eq!(sidecar["gaussians"].as_u64(), Some(points), "{sidecar}");
    assert_eq!(sidecar["iteration"].as_u64(), Some(0), "{sidecar}");
    let blocks = sidecar["plan_blocks"]
        .as_array()
        .expect("the plan's blocks");
    assert_eq!(blocks.len(), 4, "{sidecar}");
    let scene = rect_of(&sidecar["scene"]);
    let mut colors = std::collections::BTreeSet::new();
    for block in blocks {
        let color: Vec<u8> = block["color"]
            .as_array()
            .expect("a colour")
            .iter()
            .map(|c| c.as_u64().expect("a channel") as u8)
            .collect();
        let color = [color[0], color[1], color[2]];
        colors.insert(color);
        assert_eq!(block["segments"].as_u64(), Some(8), "{block}");
        assert!(block["cameras"].as_u64().unwrap_or(0) > 0, "{block}");
        let seen = pixels_near(&shot, scene, color);
        assert!(
            seen >= 40,
            "block {} drew {seen} pixels of its colour {color:?} over the scene",
            block["index"]
        );
    }
    assert_eq!(colors.len(), 4, "each block has its own colour");
    let _ = std::fs::remove_dir_all(&dir);
}

//! The viewer's camera-path and editing tools end to end, in one scripted run of a small model
//! (a few hundred Gaussians at 64²): the crop box, one face dragged by its handle, and a
//! keyframe path are drawn where the renderer's camera puts them, a box selection counts what a CPU projection counts, delete and
//! save leave that many fewer, undo restores them, and the path renders into a video of the
//! frames asked for.

use serde_json::Value;
use wgsplat::GpuContext;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::io::formats::{ModelFormat, read_model};
use wgsplat::io::model::upload_model;
use wgsplat::io::ply::{read_ply, write_ply};
use wgsplat::show::CameraPath;
use wgsplat::show::render_rgba8;
use wgsplat::splat::{Camera, RasterMode};
use wgsplat::train::TrainConfig;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::setup::apply_builtin_recipe;

mod common;
use common::{rect_of, run_viewer, scratch_dir};

const RESOLUTION: u32 = 64;

/// Where `p` lands in `camera`'s image in pixels, written out from the conventions (OpenCV axes,
/// pixel centres at +0.5), or `None` off the near..far range.
fn project(camera: &Camera, p: [f32; 3]) -> Option<[f32; 2]> {
    let r = &camera.rotation;
    let c: Vec<f32> = (0..3)
        .map(|i| r[i][0] * p[0] + r[i][1] * p[1] + r[i][2] * p[2] + camera.translation[i])
        .collect();
    (c[2] > camera.near && c[2] < camera.far).then(|| {
        [
            camera.fx * c[0] / c[2] + camera.cx,
            camera.fy * c[1] / c[2] + camera.cy,
        ]
    })
}

/// Summed RGB difference of two pixels.
fn difference(a: [u8; 4], b: &[u8]) -> u32 {
    (0..3).map(|c| u32::from(a[c].abs_diff(b[c]))).sum()
}

fn steps(sidecar: &Value) -> Vec<(String, u64, u64)> {
    let list = sidecar["edit_steps"].as_array().expect("edit steps");
    list.iter()
        .map(|s| {
            (
                s["step"].as_str().unwrap_or_default().to_owned(),
                s["selected"].as_u64().unwrap_or(u64::MAX),
                s["remaining"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .collect()
}

#[test]
fn the_path_and_crop_box_are_drawn_and_edits_count_save_undo_and_render() {
    let ctx = GpuContext::from_env().expect("a GPU");
    let dir = scratch_dir("tools");
    let options = BuiltinOptions {
        resolution: RESOLUTION,
        points: 400,
        ..BuiltinOptions::default()
    };
    let dataset = generate(&options).expect("the built-in scene");
    let mut config = TrainConfig::default();
    apply_builtin_recipe(&mut config);
    let params = initial_gaussians(&ctx, &dataset, &config).expect("initial Gaussians");
    let ply = dir.join("model.ply");
    let cpu = params.download(&ctx).expect("download");
    write_ply(&ply, &cpu, params.max_sh_degree()).expect("writing the PLY");
    let model = read_ply(&ply).expect("reading the PLY back");
    let total = model.gaussians.means.len() as u64;
    // The view: a low training camera, which sees the low cameras across the scene.
    let mut camera = dataset.train[0].camera.clone();
    camera.background = [0.0; 3];

    // The crop box: around the objects at the origin, every corner in view. The script drags
    // the handle at the centre of its +x or +y face (whichever axis runs more across the view)
    // to where that point shows with the face at 0.75.
    let given = [-0.6f32, -0.6, -0.3, 0.6, 0.6, 0.6];
    let face = |axis: usize, at: f32| {
        let mut p = [0.0, 0.0, 0.15];
        p[axis] = at;
        project(&camera, p).expect("the face's handle in view")
    };
    let travel = |axis: usize| {
        let (a, b) = (face(axis, 0.6), face(axis, 0.75));
        (a[0] - b[0]).hypot(a[1] - b[1])
    };
    let axis = if travel(0) >= travel(1) { 0 } else { 1 };
    assert!(travel(axis) > 3.0, "the face moves {} pixels", travel(axis));
    let (grab, release) = (face(axis, given[3 + axis]), face(axis, 0.75));
    let mut crop = given;
    crop[3 + axis] = 0.75;
    let corner = |k: usize| [0, 1, 2].map(|a| crop[a + 3 * (k >> a & 1)]);
    let corners: Vec<[f32; 2]> = (0..8)
        .map(|k| project(&camera, corner(k)).expect("a corner in front of the camera"))
        .collect();
    let inside = |[u, v]: [f32; 2]| (2.0..62.0).contains(&u) && (2.0..62.0).contains(&v);
    assert!(corners.iter().all(|p| inside(*p)), "{corners:?}");

    let rect = [8.0f32, 10.0, 40.0, 44.0];
    let in_rect = (model.gaussians.means.iter())
        .filter(|p| {
            project(&camera, **p)
                .is_some_and(|[u, v]| u >= rect[0] && u < rect[2] && v >= rect[1] && v < rect[3])
        })
        .count() as u64;
    assert!(in_rect > 10 && in_rect < total, "{in_rect} of {total}");

    // Keyframes: the first training camera this view sees, then two beside the view.
    let seen = (1..dataset.train.len()).find(|k| {
        project(&camera, dataset.train[*k].camera.position())
            .is_some_and(|p| (4.0..60.0).contains(&p[0]) && (4.0..60.0).contains(&p[1]))
    });
    let keys = [seen.expect("a training camera in view"), 1, 2];
    let key_labels = keys
        .iter()
        .map(|k| format!("train:{k}"))
        .collect::<Vec<_>>()
        .join(",");
    let saved = dir.join("edited.spz");
    let video = dir.join("path.mp4");
    let crop_text = given.map(|v| v.to_string()).join(",");
    let edits = format!(
        "crop-drag:{:.4},{:.4},{:.4},{:.4};select-box:8,10,40,44;delete;save:{};undo;undo",
        grab[0],
        grab[1],
        release[0],
        release[1],
        saved.display()
    );
    let resolution = RESOLUTION.to_string();
    let (shot, sidecar) = run_viewer(
        &dir,
        &[
            ply.to_str().expect("a UTF-8 path"),
            "--dataset",
            "builtin",
            "--builtin-resolution",
            &resolution,
            "--camera",
            "train:0",
            "--frames",
            "3",
            "--crop-box",
            &crop_text,
            "--keyframes",
            &key_labels,
            "--keyframe-seconds",
            "0.2",
            "--edits",
            &edits,
            "--render-video",
            video.to_str().expect("a UTF-8 path"),
        ],
    );

    // (b) The counts after each step, against the CPU count; (c) the saved model.
    let expected = [
        ("crop-drag", 0, total),
        ("select-box:8,10,40,44", in_rect, total),
        ("delete", 0, total - in_rect),
        ("save", 0, total - in_rect),
        ("undo", in_rect, total),
        ("undo", 0, total),
    ];
    let got = steps(&sidecar);
    assert_eq!(got.len(), expected.len(), "{sidecar}");
    for ((step, selected, remaining), (name, want_selected, want_remaining)) in
        got.iter().zip(expected)
    {
        assert!(step.starts_with(name), "{step} vs {name}");
        assert_eq!(
            (*selected, *remaining),
            (want_selected, want_remaining),
            "after {step}"
        );
    }
    assert_eq!(sidecar["remaining"].as_u64(), Some(total), "{sidecar}");
    let written = read_model(&saved, ModelFormat::Spz).expect("reading the saved model");
    assert_eq!(written.gaussians.means.len() as u64, total - in_rect);

    // The video: 2 gaps of 0.2 s at 30 fps, 13 frames, with its path beside it.
    let shown = &sidecar["video"];
    assert_eq!(shown["error"], Value::Null, "{sidecar}");
    assert_eq!(shown["frames"].as_u64(), Some(13), "{sidecar}");
    let path = CameraPath::read(&video.with_extension("camera_path.json")).expect("the path");
    assert_eq!(path.frames.len(), 13);
    let probe = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
        .args([
            "-show_entries",
            "stream=nb_read_frames,width,height",
            "-of",
            "csv=p=0",
        ])
        .arg(&video)
        .output()
        .expect("running ffprobe (install ffmpeg)");
    let probed = String::from_utf8_lossy(&probe.stdout).trim().to_owned();
    assert_eq!(probed, "64,64,13", "ffprobe: {probed}");

    // (a) The overlays, against the library's render of the model (the edits all undone).
    let params = upload_model(&ctx, &model, "test").expect("upload");
    let plain = render_rgba8(&ctx, &params, &camera, RasterMode::Classic).expect("render");
    let [x0, y0, x1, y1] = rect_of(&sidecar["scene"]);
    assert_eq!((x1 - x0, y1 - y0), (RESOLUTION, RESOLUTION), "drawn 1:1");
    let at = |[u, v]: [f32; 2]| -> ([u8; 4], &[u8]) {
        let (x, y) = (u.floor() as u32, v.floor() as u32);
        let i = ((y * RESOLUTION + x) * 4) as usize;
        (shot.get_pixel(x0 + x, y0 + y).0, &plain.pixels[i..i + 4])
    };
    assert_eq!(sidecar["crop_box_segments"].as_u64(), Some(12), "{sidecar}");
    // The dragged box: only the dragged face moved, to 0.75; its edges are drawn where they now
    // are.
    let shown_crop: Vec<f32> = (sidecar["crop_box"].as_array().expect("the crop box"))
        .iter()
        .map(|v| v.as_f64().unwrap_or(f64::NAN) as f32)
        .collect();
    for (k, (got, want)) in shown_crop.iter().zip(crop).enumerate() {
        assert!(
            (got - want).abs() < 2e-3,
            "corner {k}: {shown_crop:?} against {crop:?}"
        );
    }
    let (mut samples, mut marked) = (0, 0);
    for a in 0..8usize {
        for axis in 0..3 {
            let b = a | 1 << axis;
            if b == a {
                continue;
            }
            for t in 1..8 {
                let t = t as f32 / 8.0;
                let p = [0, 1].map(|k| corners[a][k] + t * (corners[b][k] - corners[a][k]));
                let (shown, plain) = at(p);
                samples += 1;
                marked += u32::from(difference(shown, plain) > 90);
            }
        }
    }
    println!("{marked} of {samples} points on the crop box's edges differ from the plain render");
    assert!(
        marked * 10 >= samples * 9,
        "{marked} of {samples} points on the crop box's edges differ from the plain render"
    );
    // The keyframes: markers where their training cameras project, drawn over the render.
    let shown_path = &sidecar["path"];
    assert_eq!(shown_path["keyframes"].as_u64(), Some(3), "{sidecar}");
    assert!(
        shown_path["segments"].as_u64().unwrap_or(0) > 0,
        "{sidecar}"
    );
    let expected_markers: Vec<[f32; 2]> = keys
        .iter()
        .filter_map(|k| project(&camera, dataset.train[*k].camera.position()))
        .filter(|[u, v]| (0.0..64.0).contains(u) && (0.0..64.0).contains(v))
        .collect();
    let markers = shown_path["markers"].as_array().expect("markers");
    assert_eq!(markers.len(), expected_markers.len(), "{sidecar}");
    assert!(
        !markers.is_empty(),
        "no keyframe in view: {expected_markers:?}"
    );
    for (marker, want) in markers.iter().zip(&expected_markers) {
        let m = [0, 1].map(|k| marker[k].as_f64().unwrap_or(f64::NAN) as f32);
        let local = [m[0] - x0 as f32, m[1] - y0 as f32];
        assert!(
            (local[0] - want[0]).abs() < 0.5 && (local[1] - want[1]).abs() < 0.5,
            "marker {local:?}, projected {want:?}"
        );
        let (shown, plain) = at(*want);
        assert!(
            difference(shown, plain) > 90,
            "marker at {want:?} not drawn"
        );
    }
    println!("{} keyframe markers drawn where expected", markers.len());
    if std::env::var_os("WGSPLAT_KEEP_SHOT").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

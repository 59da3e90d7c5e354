//! `wgsplat render --frames` along nerfstudio camera paths through their `camera_type`: a
//! fisheye path of the built-in scene's model sees what the perspective path of the same poses
//! and `fov` sees at the centre (where the equidistant and the pinhole projection agree) and
//! differs towards the edges; a fisheye whose image circle lies inside the frame leaves the
//! pixels outside it on the background; and a path made from fisheye cameras is written as a
//! fisheye path.

use std::path::Path;

use super::expect_success;
use super::video::write_coloured_grid;
use crate::common::binary::{output_text, temp_dir, wgsplat};

/// A 48 × 32 nerfstudio path of two frames of `camera_type` at vertical `fov` degrees: a camera
/// at `(0, 0.05, z)` looking down −z (towards the grid around the origin), and the same one moved
/// 0.1 to the right.
fn path_json(camera_type: &str, fov: f64, z: f64) -> String {
    let frame = |x: f64| {
        serde_json::json!({
            "camera_to_world": [1, 0, 0, x, 0, 1, 0, 0.05, 0, 0, 1, z, 0, 0, 0, 1],
            "fov": fov, "aspect": 1.5
        })
    };
    serde_json::json!({
        "camera_type": camera_type, "render_height": 32, "render_width": 48,
        "camera_path": [frame(0.0), frame(0.1)], "fps": 2, "seconds": 1
    })
    .to_string()
}

/// Renders `path` (a path file's text) into `dir/name/` and returns its two frames' RGB bytes.
fn render(dir: &Path, model: &Path, name: &str, path: &str, extra: &[&str]) -> Vec<Vec<u8>> {
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, path).unwrap();
    let frames = dir.join(name);
    let mut args = vec![
        "render",
        model.to_str().unwrap(),
        "--builtin-resolution",
        "16",
        "--frames",
        frames.to_str().unwrap(),
        "--path",
        file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    expect_success(&wgsplat(&args));
    (0..2)
        .map(|k| {
            let image = image::open(frames.join(format!("frame_{k:05}.png"))).unwrap();
            assert_eq!((image.width(), image.height()), (48, 32));
            image.to_rgb8().into_raw()
        })
        .collect()
}

/// Mean absolute difference of two RGB images over the pixels whose centre lies within
/// `[r0, r1)` pixels of the image centre.
fn difference(a: &[u8], b: &[u8], r0: f64, r1: f64) -> f64 {
    let (mut sum, mut count) = (0.0, 0);
    for y in 0..32 {
        for x in 0..48 {
            let r = (f64::from(x) + 0.5 - 24.0).hypot(f64::from(y) + 0.5 - 16.0);
            if r >= r0 && r < r1 {
                for c in 0..3 {
                    let i = 3 * (y * 48 + x) as usize + c;
                    sum += (f64::from(a[i]) - f64::from(b[i])).abs();
                }
                count += 3;
            }
        }
    }
    sum / f64::from(count)
}

#[test]
fn a_fisheye_camera_path_renders_through_nerfstudios_fisheye() {
    let dir = temp_dir("path-lens");
    let model = dir.join("grid.ply");
    write_coloured_grid(&model);
    let perspective = render(
        &dir,
        &model,
        "perspective",
        &path_json("perspective", 70.0, 1.0),
        &[],
    );
    let fisheye = render(
        &dir,
        &model,
        "fisheye",
        &path_json("fisheye", 70.0, 1.0),
        &[],
    );
    for k in 0..2 {
        let (p, f) = (&perspective[k], &fisheye[k]);
        let mean = p.iter().map(|v| f64::from(*v)).sum::<f64>() / p.len() as f64;
        assert!(mean > 10.0, "frame {k} renders nearly black ({mean})");
        // Within 5 pixels of the centre the two projections are 0.1 pixels apart (f = 22.8);
        // in the outer ring a fisheye pixel sees up to 40% farther from the axis.
        let centre = difference(p, f, 0.0, 5.0);
        let edge = difference(p, f, 18.0, 100.0);
        eprintln!("frame {k}: mean difference {centre:.2} at the centre, {edge:.2} at the edge");
        assert!(centre < 6.0, "frame {k}: the centres differ by {centre:.2}");
        assert!(
            edge > 4.0 * centre.max(1.0),
            "frame {k}: the edges agree ({edge:.2})"
        );
    }
    assert_ne!(fisheye[0], fisheye[1], "the two frames are one");
    // The path written beside the frames keeps its camera type.
    let written: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("fisheye/camera_path.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(written["camera_type"], "fisheye");

    // A fov of 160° is a focal length of 2.8 pixels: the fisheye's image circle (180° from its
    // axis, π f = 8.9 pixels) lies inside the frame, and the pixels outside it are background,
    // also from inside the grid, where Gaussians lie all around (behind the camera too).
    let wide = render(
        &dir,
        &model,
        "wide",
        &path_json("fisheye", 160.0, 0.08),
        &["--background", "#3366ff"],
    );
    let circle = std::f64::consts::PI * 16.0 / 80f64.to_radians().tan();
    let (mut outside, mut inside_drawn) = (0, 0);
    for y in 0..32 {
        for x in 0..48 {
            let r = (f64::from(x) + 0.5 - 24.0).hypot(f64::from(y) + 0.5 - 16.0);
            let pixel = &wide[0][3 * (y * 48 + x) as usize..][..3];
            if r > circle {
                assert_eq!(
                    pixel,
                    [0x33, 0x66, 0xff],
                    "({x}, {y}) is {r:.1} from the centre"
                );
                outside += 1;
            } else if r < circle - 1.0 && pixel != [0x33, 0x66, 0xff] {
                inside_drawn += 1;
            }
        }
    }
    assert!(
        outside > 1000 && inside_drawn > 40,
        "{outside} {inside_drawn}"
    );

    // An orbit made from a fisheye dataset's cameras is a fisheye path.
    let data = dir.join("fisheye-data");
    let made = wgsplat(&[
        "builtin",
        "objects",
        "--out",
        data.to_str().unwrap(),
        "--builtin-resolution",
        "16",
        "--views",
        "4",
        "--points",
        "50",
        "--camera-model",
        "OPENCV_FISHEYE",
        "--fov",
        "150",
    ]);
    assert!(made.status.success(), "{}", output_text(&made));
    let orbit = dir.join("orbit");
    expect_success(&wgsplat(&[
        "render",
        model.to_str().unwrap(),
        "--dataset",
        data.to_str().unwrap(),
        "--frames",
        orbit.to_str().unwrap(),
        "--path",
        "orbit",
        "--seconds",
        "0.2",
        "--fps",
        "10",
        "--size",
        "48x32",
    ]));
    let path = wgsplat::show::CameraPath::read(&orbit.join("camera_path.json")).unwrap();
    assert_eq!(path.camera_type, wgsplat::show::CameraType::Fisheye);
    assert_eq!(path.frames.len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

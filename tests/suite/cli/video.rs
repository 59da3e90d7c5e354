//! `wgsplat render --video`: a video along the dataset's own test cameras, given as a nerfstudio
//! `camera_path.json` written here from the NeRF-synthetic `transforms_test.json` (the same
//! OpenGL camera-to-world matrices and field of view), matches `wgsplat render` of those views
//! frame by frame up to the codec's loss, which pins the pose and field-of-view conventions; an
//! orbit of `--seconds 2 --fps 10` is 20 frames of the asked size; and a path file with a missing
//! field, a matrix that is not rigid or a zero field of view is refused naming what is wrong.

use std::path::Path;
use std::process::Command;

use super::expect_success;
use crate::common::binary::{expect_failure, output_text, temp_dir, wgsplat};

/// The RGB bytes of an image file, as ffmpeg decodes it (PNG or a video's frame).
fn rgb(path: &Path) -> (u32, u32, Vec<u8>) {
    let image = image::open(path).unwrap().to_rgb8();
    (image.width(), image.height(), image.into_raw())
}

/// PSNR in dB between two RGB byte images of one size.
fn psnr(a: &[u8], b: &[u8]) -> f64 {
    assert_eq!(a.len(), b.len());
    let mse = a
        .iter()
        .zip(b)
        .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
        .sum::<f64>()
        / a.len() as f64;
    10.0 * (255.0f64 * 255.0 / mse.max(1e-12)).log10()
}

pub(super) fn have_ffmpeg() -> bool {
    let found = Command::new("ffmpeg").arg("-version").output().is_ok();
    assert!(
        found || std::env::var_os("CI").is_none(),
        "ffmpeg is not installed, and CI must have it (.ci/run installs it)"
    );
    found
}

/// A nerfstudio camera path of `frames` (each a NeRF-synthetic frame's `transform_matrix`) with
/// the horizontal field of view `angle_x` of square `size`² images.
fn camera_path_json(frames: &[serde_json::Value], angle_x: f64, size: u32) -> String {
    let fov_y = angle_x.to_degrees();
    let path: Vec<serde_json::Value> = frames
        .iter()
        .map(|f| {
            let m: Vec<f64> = f["transform_matrix"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|row| row.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()))
                .collect();
            serde_json::json!({"camera_to_world": m, "fov": fov_y, "aspect": 1.0})
        })
        .collect();
    serde_json::json!({
        "camera_type": "perspective", "render_height": size, "render_width": size,
        "camera_path": path, "fps": 5, "seconds": frames.len() as f64 / 5.0,
        "smoothness_value": 0.5, "is_cycle": false, "crop": null
    })
    .to_string()
}

/// A 9 × 9 × 9 grid of small opaque Gaussians around the origin (where the duck's cameras look),
/// coloured by position, so that every view of it differs from the others.
pub(super) fn write_coloured_grid(path: &Path) {
    let mut gaussians = wgsplat::splat::reference::CpuGaussians::default();
    const SH_C0: f32 = 0.282_094_8;
    for i in 0..9 * 9 * 9 {
        let cell = [i % 9, i / 9 % 9, i / 81].map(|c| c as f32 / 8.0);
        gaussians.means.push(cell.map(|c| (c - 0.5) * 1.2));
        gaussians.log_scales.push([0.05f32.ln(); 3]);
        gaussians.quats.push([1.0, 0.0, 0.0, 0.0]);
        gaussians.opacity_logits.push(3.0);
        let mut sh = [[0.0; 3]; 16];
        sh[0] = [cell[0], cell[1], 1.0 - cell[2]].map(|c| (c - 0.5) / SH_C0);
        gaussians.sh.push(sh);
    }
    wgsplat::io::ply::write_ply(path, &gaussians, 0).unwrap();
}

#[test]
fn a_video_along_the_test_cameras_matches_their_renders_and_paths_are_checked() {
    let Some(duck) = wgsplat::testing::shared_data("data/duck") else {
        return;
    };
    if !have_ffmpeg() {
        return;
    }
    let dir = temp_dir("video");
    let ply = dir.join("grid.ply");
    write_coloured_grid(&ply);
    let duck_arg = duck.to_str().unwrap();
    let ply_arg = ply.to_str().unwrap();

    // The first six test views through `render`, and as a camera path through `--video`.
    let renders = dir.join("renders");
    expect_success(&wgsplat(&[
        "render",
        ply_arg,
        "--dataset",
        duck_arg,
        "-r",
        "4",
        "--out",
        renders.to_str().unwrap(),
    ]));
    let transforms: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(duck.join("transforms_test.json")).unwrap())
            .unwrap();
    let frames = &transforms["frames"].as_array().unwrap()[..6];
    let angle_x = transforms["camera_angle_x"].as_f64().unwrap();
    let path_file = dir.join("test_cameras.json");
    std::fs::write(&path_file, camera_path_json(frames, angle_x, 64)).unwrap();
    let video = dir.join("test.mp4");
    let run = wgsplat(&[
        "render",
        ply_arg,
        "--dataset",
        duck_arg,
        "-r",
        "4",
        "--video",
        video.to_str().unwrap(),
        "--path",
        path_file.to_str().unwrap(),
    ]);
    expect_success(&run);
    assert!(
        output_text(&run).contains("wrote 6 frames (64x64"),
        "{}",
        output_text(&run)
    );
    let decoded = dir.join("decoded");
    std::fs::create_dir_all(&decoded).unwrap();
    let out = Command::new("ffmpeg")
        .args(["-nostdin", "-loglevel", "error", "-i"])
        .arg(&video)
        .arg(decoded.join("f%02d.png"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", output_text(&out));
    let mut worst = f64::INFINITY;
    for index in 0..6 {
        let (w, h, frame) = rgb(&decoded.join(format!("f{:02}.png", index + 1)));
        let (rw, rh, render) = rgb(&renders.join(format!("test_r_{index}.png")));
        assert_eq!((w, h), (rw, rh));
        // The render is not blank: a comparison with it can fail.
        let mean = render.iter().map(|v| f64::from(*v)).sum::<f64>() / render.len() as f64;
        assert!(mean > 2.0, "view {index} renders nearly black ({mean})");
        worst = worst.min(psnr(&frame, &render));
        // The comparison tells views apart: a frame against another view's render.
        let other_index = (index + 3) % 6;
        let (_, _, other) = rgb(&renders.join(format!("test_r_{other_index}.png")));
        let (own, other) = (psnr(&frame, &render), psnr(&frame, &other));
        eprintln!(
            "frame {index}: {own:.2} dB against its view, {other:.2} against view {other_index}"
        );
        assert!(other < 30.0, "frame {index} matches view {other_index}");
    }
    assert!(
        worst >= 30.0,
        "a video frame differs from its render: {worst:.2} dB"
    );
    eprintln!("video along 6 test cameras: worst frame {worst:.2} dB against render");

    // An orbit of 2 s at 10 frames/s: 20 frames of the asked size, and the path written beside.
    let orbit = dir.join("orbit.mp4");
    expect_success(&wgsplat(&[
        "render",
        ply_arg,
        "--dataset",
        duck_arg,
        "-r",
        "8",
        "--video",
        orbit.to_str().unwrap(),
        "--path",
        "orbit",
        "--seconds",
        "2",
        "--fps",
        "10",
        "--size",
        "48x32",
    ]));
    let probe = Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-show_entries"])
        .args([
            "stream=width,height,nb_read_frames,pix_fmt,codec_name",
            "-of",
            "csv=p=0",
        ])
        .arg(&orbit)
        .output()
        .unwrap();
    let probed = String::from_utf8_lossy(&probe.stdout);
    assert_eq!(
        probed.trim(),
        "h264,48,32,yuv420p,20",
        "{}",
        output_text(&probe)
    );
    let written = wgsplat::show::CameraPath::read(&dir.join("orbit.camera_path.json")).unwrap();
    assert_eq!(
        (written.frames.len(), written.width, written.height),
        (20, 48, 32)
    );

    // Path files that are wrong, each refused by name.
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path_file).unwrap()).unwrap();
    let with = |change: &dyn Fn(&mut serde_json::Value)| {
        let mut bad = good.clone();
        change(&mut bad["camera_path"][0]);
        bad.to_string()
    };
    let cases = [
        (
            with(&|f| drop(f.as_object_mut().unwrap().remove("fov"))),
            "missing field `fov`",
        ),
        (
            with(&|f| f["camera_to_world"][0] = 2.0.into()),
            "not a rotation",
        ),
        (with(&|f| f["fov"] = 0.0.into()), "between 0 and 180"),
    ];
    for (index, (text, expected)) in cases.iter().enumerate() {
        let bad = dir.join(format!("bad{index}.json"));
        std::fs::write(&bad, text).unwrap();
        let err = expect_failure(&[
            "render",
            ply_arg,
            "--dataset",
            duck_arg,
            "-r",
            "8",
            "--video",
            dir.join("bad.mp4").to_str().unwrap(),
            "--path",
            bad.to_str().unwrap(),
        ]);
        assert!(
            err.contains(expected) && err.contains(&format!("bad{index}.json")),
            "{expected}: {err}"
        );
        assert!(!dir.join("bad.mp4").exists());
    }
    // A video written over an input (the model, the path file) is refused, the input intact.
    let model_bytes = std::fs::read(&ply).unwrap();
    for (target, path) in [
        (ply_arg, "orbit"),
        (path_file.to_str().unwrap(), path_file.to_str().unwrap()),
    ] {
        let err = expect_failure(&[
            "render",
            ply_arg,
            "--dataset",
            duck_arg,
            "-r",
            "8",
            "--video",
            target,
            "--path",
            path,
        ]);
        assert!(err.contains("input") || err.contains("over"), "{err}");
    }
    assert_eq!(std::fs::read(&ply).unwrap(), model_bytes);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A video asked over an existing folder is refused before any frame is rendered (it used to
/// fail only when the finished video was moved into place), leaving nothing beside it: no
/// temporary video, no ffmpeg log.
#[test]
fn a_video_over_a_folder_is_refused_first_and_leaves_nothing() {
    if !have_ffmpeg() {
        return;
    }
    let dir = temp_dir("video-folder");
    let model = dir.join("grid.ply");
    write_coloured_grid(&model);
    let target = dir.join("taken.mp4");
    std::fs::create_dir_all(&target).unwrap();
    let err = expect_failure(&[
        "render",
        model.to_str().unwrap(),
        "--builtin-resolution",
        "16",
        "--video",
        target.to_str().unwrap(),
        "--path",
        "orbit",
        "--seconds",
        "2",
        "--fps",
        "10",
    ]);
    assert!(
        err.contains("taken.mp4") && err.contains("is a folder"),
        "{err}"
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["grid.ply", "taken.mp4"], "left beside the video");
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

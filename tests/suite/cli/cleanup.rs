//! `wgsplat convert`'s filters: the Gaussians kept by a crop box (and its inverse), a minimum
//! opacity, a maximum scale and the floater filter (`--dataset --min-views`) number what a count
//! made here over the input PLY says, in every output format, and each filter says how many it
//! removed. The floater count projects through the NeRF-synthetic cameras' own matrices, apart
//! from the library's cameras.

use std::path::Path;

use wgsplat::io::formats::{ModelFormat, read_model};
use wgsplat::io::ply::write_ply;
use wgsplat::splat::reference::CpuGaussians;

use crate::common::binary::{expect_failure, output_text, temp_dir, wgsplat};

/// A 9 × 9 × 9 grid in [−1.2, 1.2]³ whose opacities and scales vary along the grid.
fn grid() -> CpuGaussians {
    let mut g = CpuGaussians::default();
    for i in 0..729usize {
        let cell = [i % 9, i / 9 % 9, i / 81];
        g.means.push(cell.map(|c| (c as f32 / 8.0 - 0.5) * 2.4));
        g.log_scales.push([
            (0.01 + 0.02 * (i % 7) as f32).ln(),
            0.02f32.ln(),
            0.02f32.ln(),
        ]);
        g.quats.push([1.0, 0.0, 0.0, 0.0]);
        g.opacity_logits.push(-3.0 + 6.0 * (i % 11) as f32 / 10.0);
        let mut sh = [[0.0; 3]; 16];
        sh[0] = [0.5, -0.3, 0.1];
        g.sh.push(sh);
    }
    g
}

/// The cameras of a NeRF-synthetic `transforms_train.json` that see `p`, projected through the
/// camera-to-world matrices (OpenGL) themselves, images `size` px square.
fn views_seeing(transforms: &serde_json::Value, p: [f32; 3], size: f64) -> u32 {
    let focal = 0.5 * size / (0.5 * transforms["camera_angle_x"].as_f64().unwrap()).tan();
    let mut count = 0;
    for frame in transforms["frames"].as_array().unwrap() {
        let m: Vec<Vec<f64>> = (frame["transform_matrix"].as_array().unwrap().iter())
            .map(|row| {
                row.as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .collect()
            })
            .collect();
        let d: Vec<f64> = (0..3).map(|k| f64::from(p[k]) - m[k][3]).collect();
        // Camera coordinates: Rᵀ (p − t), OpenGL looks down −z with y up.
        let c: Vec<f64> = (0..3)
            .map(|j| (0..3).map(|k| m[k][j] * d[k]).sum())
            .collect();
        let depth = -c[2];
        let (u, v) = (
            focal * c[0] / depth + size / 2.0,
            -focal * c[1] / depth + size / 2.0,
        );
        if depth > 0.01 && (0.0..size).contains(&u) && (0.0..size).contains(&v) {
            count += 1;
        }
    }
    count
}

fn convert(input: &Path, output: &Path, filters: &[&str]) -> String {
    let mut args = vec!["convert", input.to_str().unwrap(), output.to_str().unwrap()];
    args.extend_from_slice(filters);
    let run = wgsplat(&args);
    assert!(run.status.success(), "{}", output_text(&run));
    String::from_utf8_lossy(&run.stdout).into_owned()
}

#[test]
fn filters_keep_what_a_count_over_the_ply_keeps_in_every_format() {
    let dir = temp_dir("cleanup");
    let input = dir.join("grid.ply");
    let g = grid();
    write_ply(&input, &g, 0).unwrap();
    let sigmoid = |x: f32| 1.0 / (1.0 + (-x).exp());
    let inside = |p: [f32; 3]| {
        p[0] >= -0.5 && p[0] <= 0.9 && p[1].abs() <= 0.7 && p[2] >= 0.0 && p[2] <= 1.2
    };
    let (mut cropped, mut kept, mut inverted) = (0, 0, 0);
    for i in 0..g.means.len() {
        let passes = sigmoid(g.opacity_logits[i]) >= 0.3 && g.log_scales[i][0].exp() <= 0.08;
        cropped += usize::from(inside(g.means[i]));
        kept += usize::from(inside(g.means[i]) && passes);
        inverted += usize::from(!inside(g.means[i]));
    }
    let filters = [
        "--crop-box",
        "-0.5,-0.7,0,0.9,0.7,1.2",
        "--min-opacity",
        "0.3",
        "--max-scale",
        "0.08",
    ];
    for (name, format) in [
        ("out.ply", ModelFormat::Ply),
        ("out.compressed.ply", ModelFormat::CompressedPly),
        ("out.splat", ModelFormat::Splat),
        ("out.spz", ModelFormat::Spz),
        ("out.sog", ModelFormat::Sog),
    ] {
        let output = dir.join(name);
        let stdout = convert(&input, &output, &filters);
        assert!(
            stdout.contains(&format!("--crop-box: removed {} Gaussians", 729 - cropped)),
            "{stdout}"
        );
        assert!(stdout.contains(&format!("kept {kept} of 729")), "{stdout}");
        assert_eq!(
            read_model(&output, format).unwrap().gaussians.means.len(),
            kept,
            "{name}"
        );
    }
    let stdout = convert(
        &input,
        &dir.join("outside.ply"),
        &["--crop-box", "-0.5,-0.7,0,0.9,0.7,1.2", "--crop-invert"],
    );
    assert!(
        stdout.contains(&format!("kept {inverted} of 729")),
        "{stdout}"
    );
    assert!(kept > 0 && kept < cropped && cropped < 729 && inverted > 0);

    // Floaters: the Gaussians fewer than 40 of duck's 100 training cameras see.
    if let Some(duck) = wgsplat::testing::shared_data("data/duck") {
        let transforms: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(duck.join("transforms_train.json")).unwrap(),
        )
        .unwrap();
        let seen = g
            .means
            .iter()
            .filter(|p| views_seeing(&transforms, **p, 256.0) >= 40)
            .count();
        let output = dir.join("seen.spz");
        let stdout = convert(
            &input,
            &output,
            &[
                "--dataset",
                duck.to_str().unwrap(),
                "--min-views",
                "40",
                "--eval",
            ],
        );
        assert!(stdout.contains(&format!("kept {seen} of 729")), "{stdout}");
        assert!(
            seen > 0 && seen < 729,
            "{seen}: the filter must have something to drop"
        );
        assert_eq!(
            read_model(&output, ModelFormat::Spz)
                .unwrap()
                .gaussians
                .means
                .len(),
            seen
        );
    }

    let err = expect_failure(&[
        "convert",
        input.to_str().unwrap(),
        dir.join("x.ply").to_str().unwrap(),
        "--crop-box",
        "1,1,1,0,0,0",
    ]);
    assert!(
        err.contains("--crop-box") && err.contains("each minimum below its maximum"),
        "{err}"
    );
    let err = expect_failure(&[
        "convert",
        input.to_str().unwrap(),
        dir.join("x.ply").to_str().unwrap(),
        "--min-opacity",
        "1.5",
    ]);
    assert!(err.contains("--min-opacity 1.5"), "{err}");
    let err = expect_failure(&[
        "convert",
        input.to_str().unwrap(),
        dir.join("x.ply").to_str().unwrap(),
        "--crop-box",
        "5,5,5,6,6,6",
    ]);
    assert!(
        err.contains("removed every Gaussian") && !dir.join("x.ply").exists(),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `train --crop-box` keeps the model inside the box as it trains: every densification prunes
/// the Gaussians whose centre left it (and the last step those that drifted out since), so the
/// written model has none outside, where the same run without the box has many.
#[test]
fn training_with_a_crop_box_keeps_the_model_inside_it() {
    let dir = temp_dir("train-crop");
    let config = super::write_config(&dir);
    let beyond = |crop: Option<&str>, name: &str| {
        let out = dir.join(name);
        let mut args = super::train_args(out.to_str().unwrap(), config.to_str().unwrap(), "20");
        if let Some(crop) = crop {
            args.extend(["--crop-box", crop]);
        }
        super::expect_success(&wgsplat(&args));
        let model = read_model(&out.join("point_cloud.ply"), ModelFormat::Ply).unwrap();
        let means = &model.gaussians.means;
        (means.iter().filter(|m| m[0] > 0.1).count(), means.len())
    };
    let (outside_free, total_free) = beyond(None, "free");
    let (outside_cropped, total_cropped) = beyond(Some("-100,-100,-100,0,100,100"), "cropped");
    assert!(
        outside_free > 100,
        "{outside_free} of {total_free} past x = 0.1 without the box"
    );
    assert_eq!(
        outside_cropped, 0,
        "{outside_cropped} of {total_cropped} past x = 0.1 with the box"
    );
    assert!(total_cropped > 100, "{total_cropped}");
    let err = expect_failure(&[
        "train",
        "--iterations",
        "1",
        "--out",
        dir.join("bad").to_str().unwrap(),
        "--crop-box",
        "0,0,0,0,1,1",
    ]);
    assert!(
        err.contains("--crop-box") && err.contains("below its maximum"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The model `train --crop-box` writes lies inside the box, whether or not a densification ran
/// (here none: the default schedule densifies from iteration 500; 300 iterations kept 4,586 of
/// the built-in scene's 5,013 Gaussians outside a box round its centre), and a box that holds
/// none of the initial Gaussians is refused before training, with no model written (it used to
/// write an empty model where densification began early).
#[test]
fn the_written_model_lies_inside_the_crop_box_and_an_empty_box_is_refused() {
    let dir = temp_dir("train-crop-final");
    let out = dir.join("half");
    let run = wgsplat(&[
        "train",
        "--builtin-resolution",
        "16",
        "--iterations",
        "3",
        "--out",
        out.to_str().unwrap(),
        "--crop-box",
        "-100,-100,-100,0,100,100",
    ]);
    super::expect_success(&run);
    let model = read_model(&out.join("point_cloud.ply"), ModelFormat::Ply).unwrap();
    let means = &model.gaussians.means;
    let outside = means.iter().filter(|m| m[0] > 0.0).count();
    assert_eq!(outside, 0, "{outside} of {} past x = 0", means.len());
    assert!(means.len() > 100, "{}", means.len());
    let nothing = dir.join("nothing");
    let err = expect_failure(&[
        "train",
        "--builtin-resolution",
        "16",
        "--iterations",
        "3",
        "--out",
        nothing.to_str().unwrap(),
        "--crop-box",
        "50,50,50,51,51,51",
    ]);
    assert!(
        err.contains("--crop-box") && err.contains("holds none of the"),
        "{err}"
    );
    assert!(!nothing.join("point_cloud.ply").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

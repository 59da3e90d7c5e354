//! The near plane travels with the model: `train` records the one it trained with in the PLY's
//! header and metrics.json, `eval` and `render` use the one a PLY records unless
//! `--near-plane` names another, and a PLY without one is drawn with the dataset's default.

use super::*;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::io::ply::{read_near_plane, read_ply, write_ply, write_ply_with_near_plane};

/// `eval MODEL` on the built-in scene at 32² with `extra` options: (near plane used, PSNR of the
/// first test view).
fn eval(model: &Path, extra: &[&str]) -> (f32, f64) {
    let mut args = vec![
        "eval",
        model.to_str().unwrap(),
        "--builtin-resolution",
        "32",
        "--no-lpips",
        "--json",
    ];
    args.extend_from_slice(extra);
    let run = wgsplat(&args);
    expect_success(&run);
    let json: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let near = json["near_plane"].as_f64().expect("near_plane") as f32;
    (
        near,
        json["per_view"][0]["psnr"].as_f64().expect("per-view PSNR"),
    )
}

#[test]
fn the_near_plane_is_recorded_with_the_model_and_read_back_by_eval_and_render() {
    let dir = temp_dir("near-plane");
    let config = write_config(&dir);
    let out = dir.join("model");
    expect_success(&wgsplat(&train_args(
        out.to_str().unwrap(),
        config.to_str().unwrap(),
        "3",
    )));
    let scene = generate(&BuiltinOptions {
        resolution: 32,
        ..BuiltinOptions::default()
    })
    .unwrap();
    let default = scene.default_near_plane();
    assert!(default > 0.05, "{default}");

    // Recorded in metrics.json and the PLY's header, which every reader skips as a comment.
    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(
        metrics["near_plane"].as_f64().map(|v| v as f32),
        Some(default)
    );
    let ply = out.join("point_cloud.ply");
    let bytes = std::fs::read(&ply).unwrap();
    let header = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
    assert!(
        header.contains(&format!("\ncomment near_plane {default}\n")),
        "{header}"
    );
    assert_eq!(read_near_plane(&ply).unwrap(), Some(default));
    let model = read_ply(&ply).unwrap();

    // An opaque Gaussian 1.5 default near planes in front of the first test camera: drawn at
    // the default near plane, not at twice it.
    let camera = &scene.test[0].camera;
    let depth = 1.5 * default;
    let (r, t) = (&camera.rotation, &camera.translation);
    let mean: [f32; 3] =
        std::array::from_fn(|k| r[0][k] * -t[0] + r[1][k] * -t[1] + r[2][k] * (depth - t[2]));
    let mut veiled = model.gaussians.clone();
    veiled.means.push(mean);
    veiled.log_scales.push([(0.5 * depth).ln(); 3]);
    veiled.quats.push([1.0, 0.0, 0.0, 0.0]);
    veiled.opacity_logits.push(6.0);
    let mut sh = [[0.0; 3]; 16];
    sh[0] = [1.5; 3];
    veiled.sh.push(sh);
    let recorded = dir.join("recorded.ply");
    let plain = dir.join("plain.ply");
    write_ply_with_near_plane(&recorded, &veiled, model.sh_degree, Some(2.0 * default)).unwrap();
    write_ply(&plain, &veiled, model.sh_degree).unwrap();
    assert_eq!(read_near_plane(&plain).unwrap(), None);

    let given = format!("{default}");
    let (near, culled) = eval(&recorded, &[]);
    assert_eq!(near, 2.0 * default);
    let (near, drawn) = eval(&recorded, &["--near-plane", &given]);
    assert_eq!(near, default);
    let (near, plain_psnr) = eval(&plain, &[]);
    assert_eq!(near, default, "a PLY without one: the dataset's");
    println!(
        "first test view: {culled:.2} dB at the recorded near plane, {drawn:.2} dB at the default"
    );
    assert!(culled > drawn + 3.0, "{culled:.2} against {drawn:.2} dB");
    assert!(
        (plain_psnr - drawn).abs() < 1e-6,
        "{plain_psnr} against {drawn}"
    );

    // render: the recorded near plane unless told otherwise.
    let first = |folder: &Path| {
        let mut names: Vec<PathBuf> = std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        std::fs::read(&names[0]).unwrap()
    };
    let mut images = Vec::new();
    for (name, extra) in [("at-recorded", None), ("at-default", Some(given.as_str()))] {
        let folder = dir.join(name);
        let mut args = vec![
            "render",
            recorded.to_str().unwrap(),
            "--builtin-resolution",
            "32",
            "--out",
            folder.to_str().unwrap(),
        ];
        if let Some(near) = extra {
            args.extend_from_slice(&["--near-plane", near]);
        }
        expect_success(&wgsplat(&args));
        images.push(first(&folder));
    }
    assert_ne!(
        images[0], images[1],
        "the near plane changed nothing in the render"
    );
    let err = expect_failure(&[
        "eval",
        plain.to_str().unwrap(),
        "--builtin-resolution",
        "32",
        "--near-plane=-1",
    ]);
    assert!(err.contains("--near-plane"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

//! Sizes out of range, outputs that would replace inputs, and views whose masks leave nothing to
//! score.

use super::*;

/// A COLMAP text dataset of three 32x24 photographs, `a.png`, `b.png` and `c.png`, with one
/// point.
fn write_small_colmap(dir: &Path) {
    let sparse = dir.join("sparse/0");
    std::fs::create_dir_all(&sparse).unwrap();
    std::fs::create_dir_all(dir.join("images")).unwrap();
    std::fs::write(sparse.join("cameras.txt"), "1 PINHOLE 32 24 30 30 16 12\n").unwrap();
    std::fs::write(
        sparse.join("images.txt"),
        "1 1 0 0 0 0 0 3 1 a.png\n\n2 1 0 0 0 0.2 0 3 1 b.png\n\n3 1 0 0 0 0 0.2 3 1 c.png\n\n",
    )
    .unwrap();
    std::fs::write(sparse.join("points3D.txt"), "1 0 0 0 200 100 50 0.5\n").unwrap();
    for (name, seed) in [("a.png", 3u8), ("b.png", 5), ("c.png", 7)] {
        let pixels: Vec<u8> = (0..32 * 24 * 3)
            .map(|i| (i as u8).wrapping_mul(seed))
            .collect();
        image::RgbImage::from_raw(32, 24, pixels)
            .unwrap()
            .save(dir.join("images").join(name))
            .unwrap();
    }
}

/// A model of 50 small Gaussians in front of [`write_small_colmap`]'s cameras.
fn write_small_model(path: &Path) {
    let mut g = wgsplat::splat::reference::CpuGaussians::default();
    for i in 0..50 {
        let t = i as f32 * 0.3;
        g.means.push([t.sin() * 0.5, t.cos() * 0.4, 0.1 * t.sin()]);
        g.log_scales.push([-3.0, -3.0, -3.0]);
        g.quats.push([1.0, 0.0, 0.0, 0.0]);
        g.opacity_logits.push(1.0);
        let mut sh = [[0.0f32; 3]; 16];
        sh[0] = [0.5, t.cos() * 0.3, 0.1];
        g.sh.push(sh);
    }
    wgsplat::io::write_ply(path, &g, 0).unwrap();
}

/// A scratch folder `tag` holding [`write_small_colmap`]'s dataset in `dataset/` and
/// [`write_small_model`]'s model as `model_name`: (folder, dataset, model).
fn small_capture(tag: &str, model_name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = temp_dir(tag);
    let dataset = dir.join("dataset");
    write_small_colmap(&dataset);
    let model = dir.join(model_name);
    write_small_model(&model);
    (dir, dataset, model)
}

#[test]
fn size_options_outside_their_range_are_refused_before_any_work() {
    let dir = temp_dir("ranges");
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    // 4,294,967,295 panicked in a worker thread ("capacity overflow"); 46,341 and up aborted on
    // an 8-40 GB allocation.
    for side in ["4294967295", "46341", "4097", "0"] {
        let err = expect_failure(&["train", "--builtin-resolution", side, "--out", out]);
        assert!(
            err.contains("--builtin-resolution") && err.contains("16..=4096"),
            "{side}: {err}"
        );
    }
    // -r accepts exactly the factors its help lists.
    let missing = dir.join("no-such-dataset");
    let missing = missing.to_str().unwrap();
    for factor in ["0", "3", "1000"] {
        let err = expect_failure(&["train", missing, "-r", factor, "--out", out]);
        assert!(
            err.contains("1 (full size), 2, 4 or 8"),
            "-r {factor}: {err}"
        );
    }
    let err = expect_failure(&["train", "--sh-degree", "4", "--out", out]);
    assert!(
        err.contains("--sh-degree") && err.contains("0..=3"),
        "{err}"
    );
    assert!(!Path::new(out).exists(), "a refused run wrote {out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn outputs_that_would_replace_inputs_are_refused() {
    let (dir, dataset, model) = small_capture("output-is-input", "a.ply");
    let photos: Vec<Vec<u8>> = ["a.png", "b.png", "c.png"]
        .map(|name| std::fs::read(dataset.join("images").join(name)).unwrap())
        .into();
    let original = std::fs::read(&model).unwrap();
    let render_train_views = |out: &Path| {
        wgsplat(&[
            "render",
            model.to_str().unwrap(),
            "--dataset",
            dataset.to_str().unwrap(),
            "--split",
            "train",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    // Renders into the photographs' folder (also spelled through `..`) would overwrite them.
    for out in [
        dataset.join("images"),
        dataset.join("sparse/../images/renders"),
    ] {
        let what = format!("a render into {}", out.display());
        let err = failure_text(&render_train_views(&out), &what);
        assert!(err.contains("holds the dataset's images"), "{err}");
    }
    for (name, photo) in ["a.png", "b.png", "c.png"].iter().zip(&photos) {
        let now = std::fs::read(dataset.join("images").join(name)).unwrap();
        assert!(&now == photo, "the photograph {name} was overwritten");
    }
    // Converting a model onto itself, by the same name or another, would replace it.
    let link = dir.join("link.ply");
    std::fs::hard_link(&model, &link).unwrap();
    for output in [&model, &link, &dir.join("./a.ply")] {
        let err = expect_failure(&[
            "convert",
            model.to_str().unwrap(),
            output.to_str().unwrap(),
            "--format",
            "splat",
        ]);
        assert!(err.contains("is the input"), "{err}");
    }
    assert_eq!(std::fs::read(&model).unwrap(), original);
    // Outside the image folders, rendering works.
    let renders = dataset.join("renders");
    expect_success(&render_train_views(&renders));
    // The default split holds out a.png (every 8th by name): b and c are the training views.
    assert!(renders.join("b.png").is_file() && renders.join("c.png").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn views_whose_masks_exclude_every_pixel_are_not_scored() {
    let (dir, dataset, model) = small_capture("empty-masks", "model.ply");
    std::fs::create_dir_all(dataset.join("masks")).unwrap();
    let mask = |name: &str, value: u8| {
        image::GrayImage::from_pixel(32, 24, image::Luma([value]))
            .save(dataset.join("masks").join(name))
            .unwrap();
    };
    // --test-every 2 scores a.png and c.png (b.png trains).
    mask("a.png", 0);
    mask("b.png", 255);
    mask("c.png", 255);
    let eval = |json: bool| {
        let mut args = vec![
            "eval",
            model.to_str().unwrap(),
            "--dataset",
            dataset.to_str().unwrap(),
            "--test-every",
            "2",
            "--no-lpips",
        ];
        if json {
            args.push("--json");
        }
        wgsplat(&args)
    };
    let run = eval(false);
    expect_success(&run);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(!stdout.contains("inf"), "{stdout}");
    assert!(
        stdout.contains("excludes every pixel") && stdout.contains("a.png"),
        "{stdout}"
    );
    let run = eval(true);
    expect_success(&run);
    let json: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert!(json["psnr"].as_f64().is_some_and(f64::is_finite), "{json}");
    // With no pixel left in any view, scoring refuses and says why.
    mask("c.png", 0);
    let err = failure_text(&eval(false), "eval with every view's pixels masked");
    assert!(
        err.contains("exclude every pixel") && !err.contains("inf dB"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

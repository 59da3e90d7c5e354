//! What the commands print and write: evaluations off a terminal, render's file names, convert's
//! formats and what each dropped, help and info's JSON.

use super::*;

/// Issue 14: `--eval-every` prints its figures when stdout is not a terminal, and a run without
/// test views says it scored the training views (stdout and metrics.json), never "test".
#[test]
fn evaluations_print_off_a_terminal_and_name_the_views_scored() {
    let dir = temp_dir("scored");
    let config = write_config_with(&dir, "");
    let out = dir.join("builtin");
    let run = wgsplat(&[
        "train",
        "--builtin-resolution",
        "32",
        "--out",
        out.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--iterations",
        "10",
        "--eval-every",
        "5",
    ]);
    expect_success(&run);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("it 5: test PSNR"), "{stdout}");
    assert!(stdout.contains("it 10: test PSNR"), "{stdout}");
    // Issue 27: the schedule densifies at 10, the last iteration; no refinement runs there, so
    // the model written and scored at the end is the one scored at iteration 10.
    let last_scored = stdout
        .lines()
        .find_map(|l| l.strip_prefix("it 10: "))
        .expect("it 10 line");
    let final_line = stdout
        .lines()
        .find(|l| l.starts_with("done: "))
        .expect("done line");
    assert!(
        final_line.ends_with(last_scored),
        "the written model is not the one scored at 10:\n{last_scored}\n{final_line}"
    );
    // LPIPS is scored with PSNR and SSIM (32 px is above AlexNet's 31 px minimum).
    assert!(stdout.contains(", LPIPS 0."), "{stdout}");
    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap();
    let lpips = metrics["test_lpips"].as_f64().expect("test_lpips");
    assert!(lpips > 0.0 && lpips < 1.0, "{metrics}");
    assert!(metrics["train_lpips"].is_null(), "{metrics}");

    // 125 scored views: LPIPS off here (its key is checked above).
    let config = write_config(&dir);
    if let Some(root) = wgsplat::testing::shared_data("data/duck_colmap") {
        let out = dir.join("colmap");
        let run = wgsplat(&[
            "train",
            root.to_str().unwrap(),
            "-r",
            "8",
            "--out",
            out.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--iterations",
            "5",
        ]);
        expect_success(&run);
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(
            stdout.contains("train PSNR") && !stdout.contains("test PSNR"),
            "{stdout}"
        );
        let metrics: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap();
        assert!(metrics["test_psnr"].is_null(), "{metrics}");
        assert!(metrics["train_psnr"].as_f64().is_some(), "{metrics}");
        assert_eq!(metrics["scored_views"], "train");

        // Issue 27: with --json, stdout holds the JSON alone (status lines go to stderr).
        let ply = out.join("point_cloud.ply");
        let run = wgsplat(&[
            "eval",
            ply.to_str().unwrap(),
            "--dataset",
            root.to_str().unwrap(),
            "-r",
            "8",
            "--no-lpips",
            "--json",
        ]);
        expect_success(&run);
        let json: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON alone ({e}):\n{}",
                String::from_utf8_lossy(&run.stdout)
            )
        });
        assert!(json["psnr"].as_f64().is_some(), "{json}");
        assert!(String::from_utf8_lossy(&run.stderr).contains("loaded 125 views"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 14: `wgsplat render` renders the requested split only, names files so that the NeRF
/// train and test views (`./train/r_0`, `./test/r_0`) never overwrite each other, and reports
/// the number of files it wrote.
#[test]
fn render_writes_the_requested_split_under_unique_names() {
    let Some(duck) = wgsplat::testing::shared_data("data/duck") else {
        return;
    };
    let dir = temp_dir("render");
    let config = write_config(&dir);
    let model = dir.join("model");
    expect_success(&wgsplat(&train_args(
        model.to_str().unwrap(),
        config.to_str().unwrap(),
        "3",
    )));
    let ply = model.join("point_cloud.ply");
    for (split, count, first) in [
        ("test", 25, "test_r_0.png"),
        ("train", 100, "train_r_0.png"),
    ] {
        let out = dir.join(split);
        let run = wgsplat(&[
            "render",
            ply.to_str().unwrap(),
            "--dataset",
            duck.to_str().unwrap(),
            "-r",
            "8",
            "--split",
            split,
            "--out",
            out.to_str().unwrap(),
        ]);
        expect_success(&run);
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(
            stdout.contains(&format!("wrote renders of {count} {split} views")),
            "{stdout}"
        );
        let files = std::fs::read_dir(&out).unwrap().count();
        assert_eq!(files, count, "{split}: {files} files for {count} views");
        assert!(out.join(first).exists(), "{split}: no {first}");
    }
    let err = expect_failure(&[
        "render",
        ply.to_str().unwrap(),
        "--split",
        "validation",
        "--out",
        dir.join("bad").to_str().unwrap(),
    ]);
    assert!(err.contains("test or train"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn convert_writes_every_format_and_says_what_it_dropped() {
    use wgsplat::io::formats::{ModelFormat, read_model};
    let dir = temp_dir("convert");
    let mut g = wgsplat::splat::reference::CpuGaussians::default();
    for i in 0..300 {
        let t = i as f32 * 0.1;
        g.means.push([t.sin() * 3.0, t.cos() * 3.0, t * 0.05]);
        g.log_scales.push([-3.0, -2.5, -2.0]);
        g.quats.push([1.0, 0.1 * t.sin(), 0.0, 0.2]);
        g.opacity_logits.push(t.cos());
        let mut sh = [[0.0f32; 3]; 16];
        sh[0] = [0.3, -0.2, t.sin()];
        sh[1] = [0.05 * t.cos(), 0.0, 0.01];
        g.sh.push(sh);
    }
    let input = dir.join("in.ply");
    wgsplat::io::write_ply(&input, &g, 3).unwrap();
    let input = input.to_str().unwrap();
    for (name, format, dropped) in [
        ("out.spz", ModelFormat::Spz, None),
        ("out.compressed.ply", ModelFormat::CompressedPly, None),
        ("out.splat", ModelFormat::Splat, Some("SH degree 0 only")),
        ("out.sog", ModelFormat::Sog, Some("palette")),
        ("loose/meta.json", ModelFormat::Sog, Some("palette")),
    ] {
        let output = dir.join(name);
        std::fs::create_dir_all(output.parent().unwrap()).unwrap();
        let out = wgsplat(&["convert", input, output.to_str().unwrap()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("wrote 300 Gaussians"), "{name}: {stdout}");
        match dropped {
            Some(words) => assert!(
                stdout.contains("warning:") && stdout.contains(words),
                "{name}: {stdout}"
            ),
            None => assert!(!stdout.contains("warning:"), "{name}: {stdout}"),
        }
        let back = read_model(&output, format).unwrap();
        assert_eq!(back.gaussians.means.len(), 300, "{name}");
        // And back to PLY through the binary.
        let ply = dir.join(format!("{}.back.ply", name.replace('/', "_")));
        let out = wgsplat(&["convert", output.to_str().unwrap(), ply.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{name} -> PLY: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A loose SOG set's size counts its textures, not meta.json alone.
    let out = wgsplat(&[
        "convert",
        input,
        dir.join("loose/meta.json").to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let bytes: u64 = stdout
        .split(": ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    let meta = std::fs::metadata(dir.join("loose/meta.json"))
        .unwrap()
        .len();
    assert!(bytes > meta + 1000, "{stdout}");
    // Unknown extensions and unreadable inputs fail, naming the file, without a panic.
    let err = expect_failure(&["convert", input, dir.join("out.ksplat").to_str().unwrap()]);
    assert!(err.contains("out.ksplat") && err.contains(".sog"), "{err}");
    std::fs::write(dir.join("bad.sog"), b"not a zip").unwrap();
    let err = expect_failure(&[
        "convert",
        dir.join("bad.sog").to_str().unwrap(),
        dir.join("x.ply").to_str().unwrap(),
    ]);
    assert!(err.contains("bad.sog") && err.contains("zip"), "{err}");
    assert!(!dir.join("x.ply").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 27: the help names every score `eval` gives, and `info --json` prints JSON alone.
#[test]
fn help_names_every_score_and_info_json_is_json_alone() {
    let help = wgsplat(&["--help"]);
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    let eval_line = text
        .lines()
        .find(|l| l.trim_start().starts_with("eval"))
        .unwrap_or_else(|| panic!("no eval line in:\n{text}"));
    assert!(eval_line.contains("LPIPS"), "{eval_line}");
    let info = wgsplat(&["info", "--json"]);
    assert!(info.status.success());
    let json: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap_or_else(|e| {
        panic!(
            "info --json is not JSON alone ({e}):\n{}",
            String::from_utf8_lossy(&info.stdout)
        )
    });
    assert!(json.is_object(), "{json}");
}

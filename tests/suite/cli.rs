//! The `wgsplat` binary end to end: a resumed training run equals an uninterrupted one bit for bit
//! (also after SIGTERM stopped it with a checkpoint),
//! bad inputs give errors that name the file and the fix while losing nothing already written,
//! and `convert` writes every model format, saying what each dropped.
//!
//! The resume test runs multi-threaded lavapipe: no kernel sums floats in an order that depends
//! on scheduling, so any difference would come from state the checkpoint failed to carry.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::binary::{expect_failure, temp_dir, wgsplat};

fn expect_success(out: &Output) {
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("still alive at exit"), "leak warning:\n{err}");
    if cfg!(target_os = "linux") {
        assert!(
            err.contains("memory: process peak RSS"),
            "no peak RSS at exit:\n{err}"
        );
    }
}

/// A short schedule that densifies at iteration 10, where the resume tests stop; LPIPS
/// is off (only one test checks it, with [`write_config_with`]).
fn write_config(dir: &Path) -> PathBuf {
    write_config_with(dir, r#", "lpips": false, "pose_opt_from": 3"#)
}

/// The short recipe with `extra` fields (`, "name": value` pairs) appended.
fn write_config_with(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("config.json");
    std::fs::write(
        &path,
        format!(
            r#"{{ "densify_from": 3, "densify_every": 5, "densify_until": 19,
             "opacity_reset_every": 100000, "sh_degree_interval": 6,
             "loss_readback_every": 5, "eval_every": 0 {extra} }}"#
        ),
    )
    .unwrap();
    path
}

fn train_args<'a>(out: &'a str, config: &'a str, iterations: &'a str) -> Vec<&'a str> {
    vec![
        "train",
        "--builtin-resolution",
        "32",
        "--out",
        out,
        "--config",
        config,
        "--iterations",
        iterations,
        "--save-every",
        "10",
    ]
}

/// Trains 20 iterations straight into `dir/straight{tag}`, and 10 + 10 with a resume into
/// `dir/resumed{tag}`, with `extra` options; the models and the final checkpoints (optimizer and
/// exposure state included) must be identical. Returns the resumed run's folder.
fn assert_resume_is_bit_exact(dir: &Path, config: &str, tag: &str, extra: &[&str]) -> PathBuf {
    let straight = dir.join(format!("straight{tag}"));
    let resumed = dir.join(format!("resumed{tag}"));
    let run = |out: &Path, more: &[&str]| {
        let mut args = train_args(out.to_str().unwrap(), config, "20");
        args.extend_from_slice(extra);
        args.extend_from_slice(more);
        expect_success(&wgsplat(&args));
    };
    run(&straight, &[]);
    run(&resumed, &["--stop-at", "10"]);
    let first_half = std::fs::read(resumed.join("point_cloud.ply")).unwrap();
    run(&resumed, &["--resume"]);

    let a = std::fs::read(straight.join("point_cloud.ply")).unwrap();
    let b = std::fs::read(resumed.join("point_cloud.ply")).unwrap();
    assert_ne!(first_half, b, "the resumed run did not train");
    assert_eq!(a.len(), b.len(), "Gaussian counts differ after resume");
    if let Some(i) = a.iter().zip(&b).position(|(x, y)| x != y) {
        panic!("the resumed model differs from the uninterrupted one at byte {i}");
    }
    let a = std::fs::read(straight.join("checkpoint.bin")).unwrap();
    let b = std::fs::read(resumed.join("checkpoint.bin")).unwrap();
    assert!(
        a == b,
        "the final checkpoints (optimizer state included) differ"
    );
    resumed
}

#[test]
fn resumed_training_equals_uninterrupted_bit_for_bit() {
    let dir = temp_dir("resume");
    let config = write_config(&dir);
    let config = config.to_str().unwrap();
    let resumed = assert_resume_is_bit_exact(&dir, config, "", &[]);
    let resumed = resumed.to_str().unwrap();
    // The exposure transforms, the pose corrections and their Adam states travel in the
    // checkpoint too.
    let options = ["--exposure", "--pose-opt"];
    let exposure = assert_resume_is_bit_exact(&dir, config, "-exposure-pose", &options);
    let checkpoint = std::fs::read(exposure.join("checkpoint.bin")).unwrap();
    for (key, what) in [
        (&b"\"transforms\""[..], "exposure transforms"),
        (&b"\"corrections\""[..], "pose corrections"),
    ] {
        assert!(
            checkpoint.windows(key.len()).any(|w| w == key),
            "the checkpoint holds no {what}"
        );
    }

    // Issue 15: the checkpoint records its configuration; a resume that changes a setting
    // outside the documented few is refused and names it, and a longer run is allowed.
    let mut args = train_args(resumed, config, "20");
    args.extend(["--resume", "--seed", "5", "--antialiased"]);
    let err = expect_failure(&args);
    assert!(
        err.contains("seed: 0 → 5") && err.contains("raster_mode"),
        "{err}"
    );
    assert!(err.contains("only iterations"), "{err}");
    // A longer run is allowed, and so is another GPU image cache (it never changes results): one
    // slot of a 32² view here, which the start line and metrics.json report.
    let mut args = train_args(resumed, config, "30");
    args.extend(["--resume", "--image-cache", "4KiB"]);
    let run = wgsplat(&args);
    expect_success(&run);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("as RGBA8; GPU cache of 1 slot (4.00 KiB), the rest streamed from host"),
        "{stdout}"
    );
    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("resumed/metrics.json")).unwrap()).unwrap();
    let cache = &metrics["image_cache"];
    let count = |name: &str| {
        cache[name]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: {cache}"))
    };
    assert_eq!((count("slots"), count("bytes")), (1, 4096), "{cache}");
    // Ten iterations through one slot: every view but a repeat of the last is uploaded.
    assert_eq!(count("uploads") + count("hits"), 10, "{cache}");
    assert_eq!(count("evictions"), count("uploads") - 1, "{cache}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Iterations of the runs [`a_train_sent_sigterm_checkpoints_and_resumes_bit_for_bit`] stops
/// with a signal once it has printed the evaluation at iteration 10: enough that the signal
/// arrives long before the end.
const SIGNALLED_ITERATIONS: &str = "60";

/// A `train` sent SIGTERM (twice, the second while it is stopping) finishes its step, writes a
/// checkpoint and exits with status 143 (128 + 15), naming the signal and the command that
/// continues it; that command ends with the model of an uninterrupted run, bit for bit. No
/// `--save-every`: the only checkpoint is the one the signal asked for.
#[cfg(unix)]
#[test]
fn a_train_sent_sigterm_checkpoints_and_resumes_bit_for_bit() {
    use std::io::{BufRead as _, Read as _};
    let dir = temp_dir("sigterm");
    // An evaluation every 5 iterations: its lines show how far training has got.
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        r#"{ "densify_from": 3, "densify_every": 5, "densify_until": 19,
             "opacity_reset_every": 100000, "sh_degree_interval": 6,
             "loss_readback_every": 5, "eval_every": 5, "lpips": false }"#,
    )
    .unwrap();
    let config = config.to_str().unwrap();
    // The stopped run's folder needs quoting in the command printed to continue it.
    let (straight, stopped) = (dir.join("straight"), dir.join("stopped run's"));
    let args = |out: &Path| {
        let mut args: Vec<String> = [
            "train",
            "--builtin-resolution",
            "32",
            "--config",
            config,
            "--iterations",
            SIGNALLED_ITERATIONS,
            "--out",
        ]
        .map(str::to_owned)
        .to_vec();
        args.push(out.to_str().unwrap().to_owned());
        args
    };
    let run = |args: &[String]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        wgsplat(&args)
    };
    expect_success(&run(&args(&straight)));

    let mut child = Command::new(env!("CARGO_BIN_EXE_wgsplat"))
        .args(args(&stopped))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let pid = child.id().to_string();
    let mut signalled = false;
    let mut line = String::new();
    while stdout.read_line(&mut line).unwrap() > 0 {
        seen.push_str(&line);
        if !signalled && line.starts_with("it 10:") {
            for _ in 0..2 {
                let kill = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
                assert!(kill.success(), "kill -TERM {pid} failed");
            }
            signalled = true;
        }
        line.clear();
    }
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(
        signalled,
        "no evaluation at iteration 10 was printed:\n{seen}\n{stderr}"
    );
    assert_eq!(
        status.code(),
        Some(143),
        "a train sent SIGTERM should exit with 143 after its checkpoint ({status}):\n{seen}\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let at = stderr
        .split("stopped by SIGTERM after iteration ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no 'stopped by SIGTERM after iteration N' in:\n{stderr}"));
    let total: u64 = SIGNALLED_ITERATIONS.parse().unwrap();
    assert!((10..total).contains(&at), "stopped at {at}:\n{stderr}");
    assert!(
        stderr.contains("--resume"),
        "no command to continue:\n{stderr}"
    );
    // The folder as one shell word: single-quoted, its apostrophe closed, escaped and reopened;
    // the plain words as they are.
    let quoted = format!("'{}'", stopped.display().to_string().replace('\'', r"'\''"));
    assert!(
        stderr.contains(&format!("--out {quoted}")) && stderr.contains(" --iterations 60 "),
        "the command to continue does not quote the folder as {quoted}:\n{stderr}"
    );
    assert!(
        stopped.join("checkpoint.bin").is_file(),
        "no checkpoint:\n{stderr}"
    );
    assert!(!stopped.join("point_cloud.ply").exists());

    let mut resume = args(&stopped);
    resume.push("--resume".to_owned());
    expect_success(&run(&resume));
    let a = std::fs::read(straight.join("point_cloud.ply")).unwrap();
    let b = std::fs::read(stopped.join("point_cloud.ply")).unwrap();
    assert_eq!(
        a.len(),
        b.len(),
        "Gaussian counts differ after the resume from {at}"
    );
    if let Some(i) = a.iter().zip(&b).position(|(x, y)| x != y) {
        panic!(
            "the model resumed from iteration {at} differs from the uninterrupted one at byte {i}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Benchmark sizes are read as `1M`, `64k`, `65537` or `2^24`; anything else is refused, naming
/// the forms it takes, before any work starts.
#[test]
fn bench_sizes_parse_or_are_refused_by_name() {
    for (size, expected) in [
        ("lots", "expected a size like 1M, 65536 or 2^24"),
        ("2^99", "\"2^99\" is too large"),
        ("2^x", "bad exponent"),
        ("99999999999999999G", "is too large"),
    ] {
        let out = wgsplat(&["bench", "runtime", "--sizes", size]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{size}: {err}");
        assert!(err.contains(expected), "{size}: {err}");
    }
}

#[test]
fn bad_inputs_name_the_file_and_lose_nothing() {
    let dir = temp_dir("errors");
    let out = dir.join("out");
    let out_s = out.to_str().unwrap();
    // A good run first: its outputs must survive every failure below.
    expect_success(&wgsplat(&[
        "train",
        "--builtin-resolution",
        "24",
        "--iterations",
        "3",
        "--save-every",
        "3",
        "--out",
        out_s,
    ]));
    let ply = out.join("point_cloud.ply");
    let checkpoint = out.join("checkpoint.bin");
    let good_ply = std::fs::read(&ply).unwrap();
    let good_checkpoint = std::fs::read(&checkpoint).unwrap();

    let missing = dir.join("no-such-dataset");
    let err = expect_failure(&["train", missing.to_str().unwrap(), "--out", out_s]);
    assert!(err.contains("no-such-dataset"), "{err}");

    let not_a_dataset = dir.join("empty-folder");
    std::fs::create_dir_all(&not_a_dataset).unwrap();
    let err = expect_failure(&["train", not_a_dataset.to_str().unwrap(), "--out", out_s]);
    assert!(err.contains("empty-folder"), "{err}");

    let err = expect_failure(&["train", "--background", "plaid", "--out", out_s]);
    assert!(err.contains("plaid") && err.contains("black"), "{err}");

    let corrupt = dir.join("corrupt.ply");
    std::fs::write(&corrupt, b"ply\nformat ascii 1.0\nend_header\n").unwrap();
    let err = expect_failure(&["render", corrupt.to_str().unwrap(), "--out", out_s]);
    assert!(err.contains("corrupt.ply"), "{err}");

    let truncated = dir.join("truncated.ply");
    std::fs::write(&truncated, &good_ply[..good_ply.len() - 100]).unwrap();
    let err = expect_failure(&["eval", truncated.to_str().unwrap()]);
    assert!(err.contains("truncated.ply"), "{err}");

    // A truncated checkpoint: --resume reports it and leaves it for inspection.
    let cut = dir.join("cut");
    std::fs::create_dir_all(&cut).unwrap();
    std::fs::write(
        cut.join("checkpoint.bin"),
        &good_checkpoint[..good_checkpoint.len() / 2],
    )
    .unwrap();
    let err = expect_failure(&[
        "train",
        "--builtin-resolution",
        "24",
        "--resume",
        "--out",
        cut.to_str().unwrap(),
    ]);
    assert!(
        err.contains("checkpoint.bin") && err.contains("truncated"),
        "{err}"
    );

    let bad_config = dir.join("bad.json");
    std::fs::write(&bad_config, r#"{ "iterations": 5, "learning_rate": 1 }"#).unwrap();
    let err = expect_failure(&[
        "train",
        "--config",
        bad_config.to_str().unwrap(),
        "--out",
        out_s,
    ]);
    assert!(
        err.contains("bad.json") && err.contains("learning_rate"),
        "{err}"
    );

    // A budget too small for the initial points fails before training, with the numbers.
    let err = expect_failure(&[
        "train",
        "--builtin-resolution",
        "24",
        "--memory-budget",
        "1MiB",
        "--out",
        out_s,
    ]);
    assert!(
        err.contains("cannot hold the initial") && err.contains("--memory-budget"),
        "{err}"
    );
    let err = expect_failure(&["train", "--memory-budget", "8 parsecs", "--out", out_s]);
    assert!(err.contains("parsecs") && err.contains("GiB"), "{err}");
    let err = expect_failure(&["train", "--strategy", "mcmc", "--out", out_s]);
    assert!(err.contains("--max-gaussians"), "{err}");

    assert!(std::fs::read(&ply).unwrap() == good_ply, "the PLY changed");
    assert!(
        std::fs::read(&checkpoint).unwrap() == good_checkpoint,
        "the checkpoint changed"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_memory_budget_caps_mcmc_growth() {
    let dir = temp_dir("budget");
    let out = dir.join("out");
    let args = [
        "train",
        "--builtin-resolution",
        "24",
        "--iterations",
        "210",
        "--strategy",
        "mcmc",
        "--optimizer-state",
        "16bit",
        "--memory-budget",
        "4.6MiB",
        "--out",
        out.to_str().unwrap(),
    ];
    // Without the test build's 1 MiB poison source, which the budget does not plan for.
    let run = Command::new(env!("CARGO_BIN_EXE_wgsplat"))
        .args(args)
        .env("WGSPLAT_POISON", "0")
        .output()
        .unwrap();
    expect_success(&run);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let cap: u64 = stdout
        .lines()
        .find_map(|l| l.split("; cap ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no cap printed:\n{stdout}"));
    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap();
    let count = metrics["gaussians"].as_u64().unwrap();
    assert!(
        cap > 4000 && count == cap,
        "{count} Gaussians with a cap of {cap}"
    );
    let peak = metrics["peak_gpu_total_bytes"].as_u64().unwrap();
    assert!(
        peak <= 4_823_449,
        "peak {peak} bytes above the 4.6 MiB budget"
    );
    if cfg!(target_os = "linux") {
        // On lavapipe device memory is host memory: the process's peak holds the allocator's.
        let rss = metrics["peak_rss_bytes"].as_u64().expect("peak_rss_bytes");
        assert!(
            rss > peak,
            "peak RSS {rss} below the allocator's peak {peak}"
        );
    }
}

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
    let dir = temp_dir("output-is-input");
    let dataset = dir.join("dataset");
    write_small_colmap(&dataset);
    let photos: Vec<Vec<u8>> = ["a.png", "b.png", "c.png"]
        .map(|name| std::fs::read(dataset.join("images").join(name)).unwrap())
        .into();
    let model = dir.join("a.ply");
    write_small_model(&model);
    let original = std::fs::read(&model).unwrap();
    // Renders into the photographs' folder (also spelled through `..`) would overwrite them.
    for out in [
        dataset.join("images"),
        dataset.join("sparse/../images/renders"),
    ] {
        let err = expect_failure(&[
            "render",
            model.to_str().unwrap(),
            "--dataset",
            dataset.to_str().unwrap(),
            "--split",
            "train",
            "--out",
            out.to_str().unwrap(),
        ]);
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
    expect_success(&wgsplat(&[
        "render",
        model.to_str().unwrap(),
        "--dataset",
        dataset.to_str().unwrap(),
        "--split",
        "train",
        "--out",
        renders.to_str().unwrap(),
    ]));
    // The default split holds out a.png (every 8th by name): b and c are the training views.
    assert!(renders.join("b.png").is_file() && renders.join("c.png").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn views_whose_masks_exclude_every_pixel_are_not_scored() {
    let dir = temp_dir("empty-masks");
    let dataset = dir.join("dataset");
    write_small_colmap(&dataset);
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
    let model = dir.join("model.ply");
    write_small_model(&model);
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
    let err = expect_failure(&[
        "eval",
        model.to_str().unwrap(),
        "--dataset",
        dataset.to_str().unwrap(),
        "--test-every",
        "2",
        "--no-lpips",
    ]);
    assert!(
        err.contains("exclude every pixel") && !err.contains("inf dB"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

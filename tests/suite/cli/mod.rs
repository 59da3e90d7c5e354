//! The `wgsplat` binary end to end: a resumed training run equals an uninterrupted one bit for bit
//! (also after SIGTERM stopped it with a checkpoint),
//! bad inputs give errors that name the file and the fix while losing nothing already written,
//! and `convert` writes every model format, saying what each dropped.
//!
//! The resume test runs multi-threaded lavapipe: no kernel sums floats in an order that depends
//! on scheduling, so any difference would come from state the checkpoint failed to carry.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::binary::{expect_failure, failure_text, temp_dir, wgsplat};

mod budget;
mod builtin_lens;
mod cleanup;
mod depth;
mod ignored;
mod inputs;
mod lod;
mod mesh;
mod near_plane;
mod outputs;
mod path_lens;
mod refusals;
mod signals;
mod video;

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

/// Trains the built-in scene at `size`² pixels for `iterations` into `dir/model` (with
/// [`write_config`]'s settings) and returns the model's PLY.
fn train_builtin_model(dir: &Path, size: u32, iterations: u32) -> PathBuf {
    let config = write_config(dir);
    let model = dir.join("model");
    expect_success(&wgsplat(&[
        "train",
        "--builtin-resolution",
        &size.to_string(),
        "--out",
        model.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--iterations",
        &iterations.to_string(),
    ]));
    model.join("point_cloud.ply")
}

/// The 48², 150-iteration built-in model that the depth, normals and mesh tests read, trained
/// once per test process (they only read it).
fn shared_builtin_model_48() -> PathBuf {
    static MODEL: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    MODEL
        .get_or_init(|| train_builtin_model(&temp_dir("shared-builtin-48"), 48, 150))
        .clone()
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
    // checkpoint too, and a random background (a COLMAP capture's default) draws the same
    // colours after a resume.
    let options = ["--exposure", "--pose-opt", "--background", "random"];
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

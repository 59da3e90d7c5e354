//! A signal once training is over: the model is already written, so the final evaluation (and
//! whatever follows it) stops at the next view, says so, and the process exits with the signal's
//! status instead of scoring on through a scheduler's grace period. A signal while a video
//! renders stops it at the next frame with no partial file left.

use super::*;

/// The most seconds from SIGINT to the exit: the view being scored finishes first, so this only
/// catches a process that scores on (or hangs) after the signal. The whole evaluation of the 8
/// test views at 128² takes 1 to 2 s on an idle 2-core machine (6 s in the measurement),
/// so that the stop itself is shown by the exit status and the missing metrics.json.
const PROMPT_SECONDS: f64 = 5.0;

/// SIGINT while `train` scores its test views (sent as soon as `point_cloud.ply` appears, which
/// is written just before the evaluation) ends the process with status 130 within
/// [`PROMPT_SECONDS`], the model kept, no metrics.json, and a message that says both.
#[cfg(unix)]
#[test]
fn sigint_during_the_final_evaluation_keeps_the_model_and_stops() {
    use std::io::Read as _;
    use std::time::{Duration, Instant};
    let dir = temp_dir("sigint-eval");
    let out = dir.join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wgsplat"))
        .args(["train", "--iterations", "3", "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            pipe.read_to_string(&mut text).unwrap();
            text
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let ply = out.join("point_cloud.ply");
    let started = Instant::now();
    while !ply.exists() && child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no model after 300 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = child.id().to_string();
    let kill = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let signalled = Instant::now();
    let status = child.wait().unwrap();
    let seconds = signalled.elapsed().as_secs_f64();
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let text = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(kill.success(), "kill -INT {pid} failed:\n{text}");
    assert_eq!(
        status.code(),
        Some(130),
        "SIGINT during the evaluation should end it with 130 ({status}):\n{text}"
    );
    assert!(!stderr.contains("panicked"), "{text}");
    assert!(
        stderr.contains(&format!(
            "stopped by SIGINT during the final evaluation, after the last iteration (3): the \
             model was written to {}; the final evaluation and what follows it were stopped, so \
             metrics.json was not written",
            ply.display()
        )),
        "{text}"
    );
    assert!(stdout.contains("scoring 8 test views"), "{text}");
    assert!(ply.is_file(), "the model is gone:\n{text}");
    assert!(!out.join("metrics.json").exists(), "{text}");
    assert!(
        seconds < PROMPT_SECONDS,
        "{seconds:.1} s from SIGINT to the exit:\n{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGINT while `render --video` renders ends it with status 130 at the next frame, saying how
/// far it got, and leaves no partial video, temporary file or ffmpeg log behind.
#[cfg(unix)]
#[test]
fn sigint_during_a_video_leaves_no_partial_files() {
    use std::time::{Duration, Instant};
    if !super::video::have_ffmpeg() {
        return;
    }
    let dir = temp_dir("sigint-video");
    let model = dir.join("grid.ply");
    super::video::write_coloured_grid(&model);
    let video = dir.join("orbit.mp4");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wgsplat"))
        .args([
            "render",
            model.to_str().unwrap(),
            "--builtin-resolution",
            "16",
        ])
        .args(["--video", video.to_str().unwrap(), "--path", "orbit"])
        .args(["--seconds", "1000", "--fps", "10", "--size", "32x32"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // ffmpeg's log is created as it starts, just before the first frame.
    let log = dir.join("orbit.ffmpeg.log");
    let started = Instant::now();
    while !log.exists() && child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no ffmpeg after 120 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id().to_string();
    let kill = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(kill.success(), "kill -INT {pid} failed:\n{text}");
    assert_eq!(out.status.code(), Some(130), "{}:\n{text}", out.status);
    assert!(
        text.contains("stopped by SIGINT after") && text.contains("of 10000 frames"),
        "{text}"
    );
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["grid.ply"], "left behind:\n{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

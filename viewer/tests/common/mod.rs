//! What the viewer's end-to-end tests share: a scratch folder, running the viewer under xvfb
//! for a screenshot and its sidecar, and reading the sidecar's rectangles.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh folder for one test (`name` and the process id in its name).
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgsplat-viewer-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating a scratch folder");
    dir
}

/// Runs the viewer under xvfb with `args`; returns the screenshot and its JSON sidecar.
pub fn run_viewer(dir: &Path, args: &[&str]) -> (image::RgbaImage, Value) {
    let have_xvfb = Command::new("xvfb-run").arg("--help").output().is_ok();
    assert!(
        have_xvfb,
        "xvfb-run is missing: the viewer tests need a virtual X server. Install it with \
         `sudo apt-get install -y xvfb xauth libx11-6 libxcursor1 libxrandr2 libxi6 libxkbcommon0 libxkbcommon-x11-0`"
    );
    let shot = dir.join("shot.png");
    let runtime = std::env::var("XDG_RUNTIME_DIR").unwrap_or_else(|_| "/tmp".into());
    let output = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1280x800x24"])
        .arg(env!("CARGO_BIN_EXE_wgsplat-viewer"))
        .args(args)
        .arg("--screenshot")
        .arg(&shot)
        .env("XDG_RUNTIME_DIR", runtime)
        .output()
        .expect("starting xvfb-run");
    let log = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "the viewer failed ({}):\n{log}",
        output.status
    );
    let png =
        image::open(&shot).unwrap_or_else(|e| panic!("reading {}: {e}\n{log}", shot.display()));
    let json = std::fs::read_to_string(shot.with_extension("json")).expect("reading the sidecar");
    (
        png.to_rgba8(),
        serde_json::from_str(&json).expect("parsing the sidecar"),
    )
}

/// A sidecar region's rectangle in whole pixels: [x0, y0, x1, y1].
pub fn rect_of(region: &Value) -> [u32; 4] {
    let r = &region["rect"];
    let at = |k: usize| r[k].as_f64().expect("a rect coordinate").round().max(0.0) as u32;
    [at(0), at(1), at(2), at(3)]
}

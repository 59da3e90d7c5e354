//! `--memory-budget` across a resume: the run keeps the cap its checkpoint was trained with, so
//! the settings documented as changeable (`--image-cache`, `--optimizer-state`) may change even
//! where the budget alone would now plan another cap, and a budget that can no longer hold that
//! cap is refused with the smallest one that does.

use super::*;

/// The budget of the first run: room for about twice the built-in scene's initial points at 32².
const BUDGET: &str = "6MiB";

/// The number after `; cap ` in a run's stdout (the budget's line).
fn printed_cap(run: &Output) -> u64 {
    let stdout = String::from_utf8_lossy(&run.stdout);
    stdout
        .lines()
        .find_map(|l| l.split("; cap ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no cap printed:\n{stdout}"))
}

/// The first run trains under [`BUDGET`] with f32 moments and stops at iteration 10, without
/// densification, so that its model stays well under the cap. A smaller budget is refused with the
/// smallest one that holds the cap, which resumes (one byte less is refused); then 16-bit moments
/// and a one-slot image cache, which leave the budget room for more than the cap, resume with the
/// checkpoint's cap, and say so.
#[test]
fn a_resume_under_a_budget_keeps_its_cap_and_may_change_the_cache_and_moments() {
    let dir = temp_dir("budget-resume");
    let config = write_config_with(&dir, r#", "lpips": false, "densify_grad_threshold": 1e9"#);
    let (config, out) = (config.to_str().unwrap(), dir.join("out"));
    let run = |extra: &[&str]| {
        let mut args = train_args(out.to_str().unwrap(), config, "30");
        args.extend_from_slice(extra);
        wgsplat(&args)
    };
    let f32_under = |budget: &str, more: &[&str]| {
        let mut args = vec!["--memory-budget", budget, "--optimizer-state", "f32"];
        args.extend_from_slice(more);
        run(&args)
    };
    let first = f32_under(BUDGET, &["--stop-at", "10"]);
    expect_success(&first);
    let cap = printed_cap(&first);

    let err = failure_text(
        &f32_under("5.6MiB", &["--resume"]),
        "a resume under too small a budget",
    );
    assert!(
        err.contains("invalid argument to memory budget: 5872025 bytes hold at most ")
            && err.contains(&format!(
                "Gaussians with this resume's settings (a GPU image cache of 196608 bytes, f32 \
                 optimizer state), fewer than the {cap} Gaussians the checkpoint's run is capped \
                 at, which a resume keeps; raise --memory-budget to at least "
            )),
        "{err}"
    );
    let smallest: u64 = err
        .split("raise --memory-budget to at least ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no smallest budget in:\n{err}"));
    assert!((5_872_026..=6 << 20).contains(&smallest), "{err}");
    let short = (smallest - 1).to_string();
    let err = failure_text(
        &f32_under(&short, &["--resume"]),
        "a resume one byte under the smallest budget",
    );
    assert!(err.contains(&format!("at least {smallest} bytes")), "{err}");
    let at_smallest = f32_under(&smallest.to_string(), &["--resume", "--stop-at", "20"]);
    expect_success(&at_smallest);
    assert_eq!(printed_cap(&at_smallest), cap);

    // Other moments and a one-slot cache leave more of the budget to the model than the run's
    // cap: the resume keeps the cap and says so.
    let resumed = run(&[
        "--memory-budget",
        BUDGET,
        "--optimizer-state",
        "16bit",
        "--image-cache",
        "4KiB",
        "--resume",
    ]);
    expect_success(&resumed);
    assert_eq!(printed_cap(&resumed), cap, "the resume changed the cap");
    let stdout = String::from_utf8_lossy(&resumed.stdout);
    assert!(
        stdout.contains(&format!(
            "cap {cap} Gaussians, the checkpoint's: a resume keeps the cap it was trained with \
             (this budget alone would allow "
        )),
        "{stdout}"
    );
    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(metrics["iterations"].as_u64(), Some(30));
    assert_eq!(metrics["config"]["max_gaussians"].as_u64(), Some(cap));
    assert_eq!(metrics["config"]["optimizer_state"], "packed");
    assert_eq!(metrics["image_cache"]["slots"].as_u64(), Some(1));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The smallest budget `wgsplat train` accepts for the built-in scene at 128² with `extra`
/// options: the one its refusal of 1 MiB names.
fn smallest_budget(out: &str, extra: &[&str]) -> u64 {
    let mut args = vec![
        "train",
        "--builtin-resolution",
        "128",
        "--memory-budget",
        "1MiB",
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    let err = failure_text(&wgsplat(&args), "a budget of 1 MiB");
    err.split("raise --memory-budget to at least ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no smallest budget in:\n{err}"))
}

/// At the smallest budget the planner accepts, with and without exposure compensation, the whole
/// run stays within it: `peak_gpu_total_bytes` is read after the final evaluation, so it
/// includes the render, the metrics and LPIPS (its network alone is about 10 MB, more than
/// this budget), which is scored or skipped with a note in metrics.json and on stderr.
#[test]
fn the_evaluation_stays_within_the_smallest_memory_budget() {
    let dir = temp_dir("budget-evaluation");
    let out = dir.join("out");
    let out_s = out.to_str().unwrap();
    for extra in [&[][..], &["--exposure"][..]] {
        let budget = smallest_budget(out_s, extra);
        let budget_s = budget.to_string();
        let mut args = vec![
            "train",
            "--builtin-resolution",
            "128",
            "--iterations",
            "20",
            "--memory-budget",
            &budget_s,
            "--out",
            out_s,
        ];
        args.extend_from_slice(extra);
        // Without the test build's 1 MiB poison source, which the budget does not plan for.
        let run = Command::new(env!("CARGO_BIN_EXE_wgsplat"))
            .args(&args)
            .env("WGSPLAT_POISON", "0")
            .output()
            .unwrap();
        expect_success(&run);
        let metrics: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap();
        let peak = metrics["peak_gpu_total_bytes"].as_u64().unwrap();
        assert!(
            peak <= budget,
            "{extra:?}: peak {peak} bytes above the smallest budget, {budget} bytes"
        );
        assert!(metrics["test_psnr"].as_f64().is_some(), "{metrics}");
        expect_per_view_scores(&metrics);
        let stderr = String::from_utf8_lossy(&run.stderr);
        match metrics["lpips_skipped"].as_str() {
            Some(note) => {
                assert!(metrics["test_lpips"].is_null(), "{metrics}");
                assert!(note.contains("--memory-budget"), "{note}");
                assert!(
                    stderr.contains(note),
                    "{extra:?}: no note on stderr:\n{stderr}"
                );
            }
            None => assert!(metrics["test_lpips"].as_f64().is_some(), "{metrics}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// metrics.json scores each test view by name, its mean is the per-view scores' mean, and the
/// worst view is the lowest of them.
fn expect_per_view_scores(metrics: &serde_json::Value) {
    let views = metrics["per_view"].as_array().expect("per_view scores");
    assert_eq!(
        views.len() as u64,
        metrics["test_views"].as_u64().unwrap(),
        "{metrics}"
    );
    let psnrs: Vec<f64> = views.iter().map(|v| v["psnr"].as_f64().unwrap()).collect();
    let mean = psnrs.iter().sum::<f64>() / psnrs.len() as f64;
    let reported = metrics["test_psnr"].as_f64().unwrap();
    assert!(
        (mean - reported).abs() < 1e-9,
        "mean {mean} against {reported}"
    );
    let worst = psnrs.iter().copied().fold(f64::INFINITY, f64::min);
    assert_eq!(
        metrics["worst_view"]["psnr"].as_f64(),
        Some(worst),
        "{metrics}"
    );
    assert!(
        views
            .iter()
            .all(|v| v["name"].as_str().is_some_and(|n| !n.is_empty()))
    );
}

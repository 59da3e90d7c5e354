//! Inputs refused by name before any work: benchmark sizes, bad files and values, and a memory
//! budget that caps MCMC's growth.

use super::*;

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

    // Learning rates of the exposure transforms out of range are refused before training, by
    // name, as the pose corrections' are (1e30 used to end in a NaN blamed on the means).
    let wild = dir.join("wild-exposure.json");
    std::fs::write(
        &wild,
        r#"{ "iterations": 5, "exposure": true, "exposure_lr_init": 1e30 }"#,
    )
    .unwrap();
    let err = expect_failure(&["train", "--config", wild.to_str().unwrap(), "--out", out_s]);
    assert!(
        err.contains(
            "invalid argument to train config: exposure learning rates exposure_lr_init 1e30 \
             and exposure_lr_final 0.001 must each be finite, zero or above and at most 1.0 \
             (Adam moves each value by about its rate per step); the defaults are 0.01 and 0.001"
        ),
        "{err}"
    );
    assert!(!err.contains("NaN"), "{err}");
    std::fs::write(
        &wild,
        r#"{ "exposure_lr_final": -0.001, "pose_lr_init": 0.5 }"#,
    )
    .unwrap();
    let err = expect_failure(&["train", "--config", wild.to_str().unwrap(), "--out", out_s]);
    assert!(
        err.contains("exposure_lr_init 0.01 and exposure_lr_final -0.001 must each be finite"),
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

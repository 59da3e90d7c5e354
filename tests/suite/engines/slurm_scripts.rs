//! The Slurm scripts beside a plan: one requeueable array task per block, directives where they
//! belong, the merge chained after the array, and signals forwarded ahead of the time limit.

use super::*;

#[test]
fn slurm_scripts_run_one_requeueable_task_per_block_with_absolute_paths() {
    let dir = temp_dir("slurm");
    let plan_dir = dir.join("city");
    let options = options(&["--wgsplat", "/opt/wgsplat/bin/wgsplat"]);
    write_engine_files(&plan_dir, &plan(4, None), &options).unwrap();

    let train = read(&plan_dir.join("slurm/train.sbatch"));
    assert!(train.starts_with("#!/bin/bash\n"));
    let train_options = directives(&train);
    for want in [
        "--array=0-3",
        "--requeue",
        // SIGUSR1 to the batch shell two minutes before the time limit: wgsplat checkpoints.
        "--signal=B:USR1@120",
        "--job-name=wgsplat-train-city",
        &format!("--output={}/logs/train-%A_%a.log", plan_dir.display()),
        &format!("--chdir={}", plan_dir.display()),
    ] {
        assert!(train_options.iter().any(|o| o == want), "{want} in {train}");
    }
    for absent in ["--gres", "--time", "--partition"] {
        assert!(!has_prefix(&train_options, absent), "{absent} in {train}");
    }
    assert!(
        train.contains("wgsplat='/opt/wgsplat/bin/wgsplat'"),
        "{train}"
    );
    // wgsplat runs under the batch shell, which passes Slurm's signals on (see
    // `train_script_forwards_signals_and_requeues_ahead_of_the_time_limit`).
    assert!(
        train.contains(&format!(
            "\"$wgsplat\" train --plan '{}/plan.json' --block \"$block\" &",
            plan_dir.display()
        )),
        "{train}"
    );
    assert!(train.contains("SLURM_ARRAY_TASK_ID"));

    let merge = read(&plan_dir.join("slurm/merge.sbatch"));
    let merge_options = directives(&merge);
    assert!(!has_prefix(&merge_options, "--array"), "{merge}");
    assert!(!has_prefix(&merge_options, "--signal"), "{merge}");
    assert!(has_prefix(&merge_options, "--output="), "{merge}");
    assert!(
        merge.contains(&format!(
            "exec \"$wgsplat\" merge '{0}' --out '{0}/merged.ply'",
            plan_dir.display()
        )),
        "{merge}"
    );

    let submit = read(&plan_dir.join("slurm/submit.sh"));
    assert!(submit.contains("sbatch --parsable"), "{submit}");
    assert!(
        submit.contains("--dependency=\"afterok:$array\""),
        "{submit}"
    );
    assert!(submit.contains("--kill-on-invalid-dep=yes"), "{submit}");

    // Slurm does not create the output folder: without it every task fails unseen.
    assert!(plan_dir.join("logs").is_dir());
    #[cfg(unix)]
    for script in ["train.sbatch", "merge.sbatch", "submit.sh"] {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(plan_dir.join("slurm").join(script))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755, "{script}");
    }
    // Atomic writes leave no temporary files behind.
    for folder in ["slurm", "k8s"] {
        for entry in std::fs::read_dir(plan_dir.join(folder)).unwrap() {
            let name = entry.unwrap().file_name();
            assert!(!name.to_string_lossy().ends_with(".tmp"), "{name:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn slurm_options_add_directives_where_they_belong() {
    let dir = temp_dir("slurm-options");
    let options = options(&[
        "--wgsplat",
        "/opt/wgsplat",
        "--slurm-gres",
        "gpu:1",
        "--slurm-time",
        "2:00:00",
        "--slurm-partition",
        "gpu",
        "--sbatch-line",
        "--account=city",
        "--sbatch-line",
        "#SBATCH --qos=high",
    ]);
    write_engine_files(&dir, &plan(2, None), &options).unwrap();
    let train = directives(&read(&dir.join("slurm/train.sbatch")));
    for want in [
        "--array=0-1",
        "--gres=gpu:1",
        "--time=2:00:00",
        "--partition=gpu",
        "--account=city",
        "--qos=high",
    ] {
        assert!(train.iter().any(|o| o == want), "{want} in {train:?}");
    }
    // The merge runs in the same partition and account, without the training tasks' GPU and
    // time requests.
    let merge = directives(&read(&dir.join("slurm/merge.sbatch")));
    for want in ["--partition=gpu", "--account=city", "--qos=high"] {
        assert!(merge.iter().any(|o| o == want), "{want} in {merge:?}");
    }
    assert!(
        !has_prefix(&merge, "--gres") && !has_prefix(&merge, "--time"),
        "{merge:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_default_binary_is_this_executable_and_bad_values_are_refused() {
    let defaults = options(&[]);
    assert_eq!(defaults.wgsplat, std::env::current_exe().unwrap());
    assert!(defaults.wgsplat.is_absolute());
    let relative = options(&["--wgsplat", "bin/wgsplat"]);
    assert_eq!(
        relative.wgsplat,
        std::env::current_dir().unwrap().join("bin/wgsplat")
    );

    let dir = temp_dir("refused");
    let message = |plan_dir: &Path, plan: &PlanManifest, options: &EngineOptions| {
        write_engine_files(plan_dir, plan, options)
            .expect_err("refused")
            .to_string()
    };
    let spaced = dir.join("my plan");
    let text = message(&spaced, &plan(2, None), &defaults);
    assert!(
        text.contains("my plan") && text.contains("spaces"),
        "{text}"
    );
    let text = message(&dir, &plan(0, None), &defaults);
    assert!(text.contains("at least one block"), "{text}");
    let text = message(
        &dir,
        &plan(2, None),
        &options(&["--sbatch-line", "account=x"]),
    );
    assert!(
        text.contains("--sbatch-line") && text.contains("account=x"),
        "{text}"
    );
    let text = message(
        &dir,
        &plan(2, None),
        &options(&["--slurm-gres", "gpu:1\n--x"]),
    );
    assert!(text.contains("--slurm-gres"), "{text}");
    // Nothing was written by the refused calls.
    assert!(!dir.join("slurm").exists() && !spaced.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// submit.sh against a stand-in `sbatch` that logs its arguments and answers like
/// `sbatch --parsable` on a federated cluster (`id;cluster`).
#[cfg(unix)]
#[test]
fn submit_chains_the_merge_after_the_array_and_prints_both_ids() {
    let dir = temp_dir("submit");
    let plan_dir = dir.join("plan");
    write_engine_files(&plan_dir, &plan(3, None), &options(&[])).unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("sbatch.log");
    let fake = format!(
        "#!/bin/bash\necho \"$*\" >> '{}'\nn=$(wc -l < '{0}')\necho \"$((100 + n));ci\"\n",
        log.display()
    );
    std::fs::write(bin.join("sbatch"), fake).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(bin.join("sbatch"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = Command::new(plan_dir.join("slurm/submit.sh"))
        .arg("--account=city")
        .env("PATH", path)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "101\n102\n");
    let calls = read(&log);
    let calls: Vec<&str> = calls.lines().collect();
    let slurm = plan_dir.join("slurm");
    assert_eq!(
        calls,
        [
            format!("--parsable --account=city {}/train.sbatch", slurm.display()),
            format!(
                "--parsable --dependency=afterok:101 --kill-on-invalid-dep=yes --account=city \
                 {}/merge.sbatch",
                slurm.display()
            ),
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes an executable script.
fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The train script under bash with a stand-in wgsplat (which, like the real one, stops with
/// 128 + the signal's number once signalled) and a stand-in scontrol: a signal to the batch
/// shell reaches wgsplat, and after SIGUSR1 (ahead of the time limit) the task requeues itself;
/// after SIGTERM (Slurm requeues or preempts it itself) it does not.
#[test]
fn train_script_forwards_signals_and_requeues_ahead_of_the_time_limit() {
    let dir = temp_dir("signals");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let (log, calls) = (dir.join("wgsplat.log"), dir.join("scontrol.log"));
    let fake_wgsplat = bin.join("wgsplat");
    write_executable(
        &fake_wgsplat,
        &format!(
            "#!/bin/bash\nlog='{}'\necho \"started $*\" >> \"$log\"\n\
             trap 'echo stopped USR1 >> \"$log\"; exit 138' USR1\n\
             trap 'echo stopped TERM >> \"$log\"; exit 143' TERM\n\
             for i in $(seq 600); do sleep 0.1; done\nexit 0\n",
            log.display()
        ),
    );
    write_executable(
        &bin.join("scontrol"),
        &format!("#!/bin/bash\necho \"$*\" >> '{}'\n", calls.display()),
    );
    let plan_dir = dir.join("plan");
    let wgsplat = fake_wgsplat.to_str().unwrap();
    write_engine_files(&plan_dir, &plan(2, None), &options(&["--wgsplat", wgsplat])).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    for (signal, status, requeued) in [("USR1", 138, true), ("TERM", 143, false)] {
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_file(&calls);
        let mut child = Command::new("bash")
            .arg(plan_dir.join("slurm/train.sbatch"))
            .env("PATH", &path)
            .env("SLURM_ARRAY_JOB_ID", "77")
            .env("SLURM_ARRAY_TASK_ID", "1")
            .spawn()
            .unwrap();
        // Once wgsplat runs, signal the batch shell as Slurm's `B:` does.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("started")) {
            assert!(
                std::time::Instant::now() < deadline,
                "wgsplat never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        let sent = Command::new("kill")
            .args(["-s", signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let exit = child.wait().unwrap();
        let wgsplat_log = read(&log);
        assert!(wgsplat_log.contains("--block 1"), "{wgsplat_log}");
        assert!(
            wgsplat_log.contains(&format!("stopped {signal}")),
            "SIG{signal} did not reach wgsplat: {wgsplat_log}"
        );
        assert_eq!(exit.code(), Some(status), "after SIG{signal}");
        let scontrol = std::fs::read_to_string(&calls).unwrap_or_default();
        match requeued {
            true => assert_eq!(scontrol, "requeue 77_1\n"),
            false => assert_eq!(scontrol, "", "requeued after SIG{signal}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

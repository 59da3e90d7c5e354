//! The engine files beside a plan: the Slurm scripts' directives and commands, and the Kubernetes
//! manifests parsed as YAML. No cluster is needed here (`slurm` submits to a real one).

use clap::Parser;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use wgsplat::plan::manifest::PartitionRecord;
use wgsplat::plan::{
    BlockPlan, Cell, EngineArgs, EngineOptions, Grid, GroundFrame, PLAN_VERSION, PlanData,
    PlanManifest, write_engine_files,
};
use wgsplat::train::TrainConfig;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgsplat-engines-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A plan of `blocks` blocks over a dataset at `data`.
fn plan(blocks: usize, data: Option<PathBuf>) -> PlanManifest {
    PlanManifest {
        version: PLAN_VERSION,
        data: PlanData {
            path: data,
            builtin: Default::default(),
            builtin_resolution: 64,
            resolution: Some(1),
            eval: true,
            test_every: None,
            test_list: None,
            alpha_as_mask: false,
        },
        config: TrainConfig::default(),
        partition: PartitionRecord::of_grid(Grid {
            rows: 1,
            cols: blocks,
        }),
        ground: GroundFrame {
            origin: [0.0; 3],
            u: [1.0, 0.0, 0.0],
            v: [0.0, 1.0, 0.0],
            up: [0.0, 0.0, 1.0],
        },
        blocks: (0..blocks)
            .map(|index| BlockPlan {
                index,
                core: Cell::default(),
                bounds: Cell::default(),
                views: vec![format!("view{index}.png")],
                test_views: Vec::new(),
                points: 10,
                max_gaussians: 0,
                estimated_peak_bytes: 1 << 20,
            })
            .collect(),
    }
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    engines: EngineArgs,
}

fn options(args: &[&str]) -> EngineOptions {
    let cli = Cli::try_parse_from(std::iter::once("wgsplat").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    cli.engines.options().unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `#SBATCH` options of a script, checking they all come before its first command (sbatch
/// stops reading them there).
fn directives(script: &str) -> Vec<String> {
    let mut seen_command = false;
    let mut found = Vec::new();
    for line in script.lines().skip(1) {
        if let Some(option) = line.strip_prefix("#SBATCH ") {
            assert!(!seen_command, "#SBATCH after the first command: {line}");
            found.push(option.to_string());
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            seen_command = true;
        }
    }
    found
}

fn has_prefix(options: &[String], prefix: &str) -> bool {
    options.iter().any(|o| o.starts_with(prefix))
}

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

fn yaml(path: &Path) -> Value {
    serde_yaml_ng::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {value}"))
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

#[test]
fn kubernetes_train_job_is_indexed_with_a_completion_per_block() {
    let dir = temp_dir("k8s");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let plan_dir = dir.join("Town Plan_2");
    let options = options(&[
        "--k8s-image",
        "registry.example/wgsplat:1.0",
        "--k8s-gpus",
        "1",
    ]);
    // A path with a space is fine for Kubernetes, but not for the #SBATCH lines.
    assert!(write_engine_files(&plan_dir, &plan(5, Some(data.clone())), &options).is_err());
    let plan_dir = dir.join("Town_Plan_2");
    write_engine_files(&plan_dir, &plan(5, Some(data.clone())), &options).unwrap();

    let train = yaml(&plan_dir.join("k8s/train-job.yaml"));
    assert_eq!(train["apiVersion"], "batch/v1");
    assert_eq!(train["kind"], "Job");
    assert_eq!(train["metadata"]["name"], "wgsplat-train-town-plan-2");
    let spec = &train["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 5);
    assert_eq!(spec["parallelism"], 5);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    // Time to checkpoint between SIGTERM and SIGKILL (Kubernetes' default is 30 s).
    assert_eq!(pod["terminationGracePeriodSeconds"], 120);
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let container = &containers[0];
    assert_eq!(container["image"], "registry.example/wgsplat:1.0");
    let manifest = plan_dir.join("plan.json");
    assert_eq!(
        strings(&container["command"]),
        ["wgsplat", "train", "--plan", manifest.to_str().unwrap()]
    );
    assert_eq!(container["resources"]["limits"]["nvidia.com/gpu"], 1);

    // Each folder is mounted at its own absolute path: the plan writable, the data read-only.
    let volumes = pod["volumes"].as_array().unwrap();
    let mounts = container["volumeMounts"].as_array().unwrap();
    assert_eq!(volumes.len(), 2);
    assert_eq!(mounts.len(), 2);
    for (folder, read_only) in [(&plan_dir, false), (&data, true)] {
        let folder = folder.to_str().unwrap();
        let volume = volumes
            .iter()
            .find(|v| v["hostPath"]["path"] == folder)
            .unwrap_or_else(|| panic!("no volume for {folder}: {volumes:?}"));
        assert_eq!(volume["hostPath"]["type"], "Directory");
        let mount = mounts.iter().find(|m| m["name"] == volume["name"]).unwrap();
        assert_eq!(mount["mountPath"], folder);
        assert_eq!(mount["readOnly"].as_bool().unwrap_or(false), read_only);
    }

    let merge = yaml(&plan_dir.join("k8s/merge-job.yaml"));
    assert_eq!(merge["kind"], "Job");
    assert_eq!(merge["metadata"]["name"], "wgsplat-merge-town-plan-2");
    assert!(merge["spec"].get("completionMode").is_none());
    let container = &merge["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        strings(&container["command"]),
        [
            "wgsplat",
            "merge",
            plan_dir.to_str().unwrap(),
            "--out",
            plan_dir.join("merged.ply").to_str().unwrap()
        ]
    );
    assert!(container.get("resources").is_none());
    assert_eq!(merge["spec"]["template"]["spec"]["volumes"], pod["volumes"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kubernetes_claim_mounts_each_folder_from_its_sub_path() {
    let dir = temp_dir("k8s-claim");
    let data = dir.join("captures/town");
    std::fs::create_dir_all(&data).unwrap();
    let plan_dir = dir.join("plans/town");
    let root = dir.to_str().unwrap();
    let options = options(&["--k8s-claim", "scenes", "--k8s-claim-root", root]);
    write_engine_files(&plan_dir, &plan(2, Some(data.clone())), &options).unwrap();
    let train = yaml(&plan_dir.join("k8s/train-job.yaml"));
    let pod = &train["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"],
        serde_json::json!([{"name": "shared", "persistentVolumeClaim": {"claimName": "scenes"}}])
    );
    let mounts = pod["containers"][0]["volumeMounts"].as_array().unwrap();
    let sub_paths: Vec<(&str, &str)> = mounts
        .iter()
        .map(|m| {
            (
                m["mountPath"].as_str().unwrap(),
                m["subPath"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sub_paths,
        [
            (plan_dir.to_str().unwrap(), "plans/town"),
            (data.to_str().unwrap(), "captures/town")
        ]
    );
    assert!(pod["containers"][0].get("resources").is_none());

    // A root that does not hold the data is refused, naming it.
    let options = self::options(&["--k8s-claim", "scenes", "--k8s-claim-root", "/elsewhere"]);
    let err = write_engine_files(&plan_dir, &plan(2, Some(data)), &options).unwrap_err();
    assert!(err.to_string().contains("/elsewhere"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

//! The Kubernetes manifests beside a plan, parsed as YAML: an Indexed Job with a completion per
//! block, and the claim's folders mounted from their sub-paths.

use super::*;

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

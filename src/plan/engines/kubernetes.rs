//! The Kubernetes manifests: `train-job.yaml`, an Indexed Job with one completion per block (the
//! pod's `JOB_COMPLETION_INDEX` is its block), and `merge-job.yaml`.
//!
//! The pods see the plan, the data and the test list at the same absolute paths as the machine
//! that wrote the plan (hostPath volumes, or one PersistentVolumeClaim mounted with a `subPath`
//! per folder), so the paths recorded in `plan.json` hold inside them too.

use super::yaml::{Node, document, map, s};
use super::{EngineFile, EngineOptions, PlanPaths};
use crate::error::{Error, Result};
use crate::plan::manifest::PlanManifest;
use std::path::{Path, PathBuf};

/// Retries of one block's pod before the block (and so the Job) counts as failed.
const RETRIES_PER_BLOCK: i64 = 3;

/// Seconds a training pod has between SIGTERM and SIGKILL (`terminationGracePeriodSeconds`,
/// Kubernetes' default is 30): time for the step under way and one checkpoint of a large block,
/// which wgsplat writes on SIGTERM before it exits.
const TRAIN_GRACE_SECONDS: i64 = 120;

/// A folder the pods mount at its own absolute path.
struct Mount {
    name: &'static str,
    folder: PathBuf,
    read_only: bool,
}

/// The two manifests of `plan`.
pub(super) fn jobs(
    paths: &PlanPaths,
    plan: &PlanManifest,
    options: &EngineOptions,
) -> Result<Vec<EngineFile>> {
    let k8s = &options.kubernetes;
    let mounts = mounts(paths, plan);
    let (volumes, volume_mounts) = volumes(&mounts, k8s.claim.as_deref(), &k8s.claim_root)?;
    let train_name = format!("wgsplat-train-{}", paths.name);
    let merge_name = format!("wgsplat-merge-{}", paths.name);
    let blocks = i64::try_from(plan.blocks.len()).unwrap_or(i64::MAX);

    let mut train_container = vec![
        ("name", s("train")),
        ("image", s(&k8s.image)),
        (
            "command",
            Node::List(vec![
                s(&k8s.wgsplat),
                s("train"),
                s("--plan"),
                s(path_text(&paths.manifest)),
            ]),
        ),
        ("volumeMounts", Node::List(volume_mounts.clone())),
    ];
    if k8s.gpus > 0 {
        train_container.push((
            "resources",
            map(vec![(
                "limits",
                map(vec![("nvidia.com/gpu", Node::Int(i64::from(k8s.gpus)))]),
            )]),
        ));
        // The NVIDIA container runtime exposes only compute by default; Vulkan needs graphics.
        train_container.push((
            "env",
            Node::List(vec![map(vec![
                ("name", s("NVIDIA_DRIVER_CAPABILITIES")),
                ("value", s("compute,utility,graphics")),
            ])]),
        ));
    }
    let train = job(
        &train_name,
        vec![
            ("completionMode", s("Indexed")),
            ("completions", Node::Int(blocks)),
            ("parallelism", Node::Int(blocks)),
            ("backoffLimitPerIndex", Node::Int(RETRIES_PER_BLOCK)),
        ],
        map(train_container),
        volumes.clone(),
        Some(TRAIN_GRACE_SECONDS),
    );
    let merge_container = map(vec![
        ("name", s("merge")),
        ("image", s(&k8s.image)),
        (
            "command",
            Node::List(vec![
                s(&k8s.wgsplat),
                s("merge"),
                s(path_text(&paths.dir)),
                s("--out"),
                s(path_text(&paths.merged)),
            ]),
        ),
        ("volumeMounts", Node::List(volume_mounts)),
    ]);
    let merge = job(
        &merge_name,
        vec![
            ("completions", Node::Int(1)),
            ("backoffLimit", Node::Int(RETRIES_PER_BLOCK)),
        ],
        merge_container,
        volumes,
        None,
    );
    let train_comment = format!(
        "Trains the plan's {blocks} blocks as a Kubernetes Indexed Job: the pod of completion \
         index K\n(JOB_COMPLETION_INDEX) trains block K; a retried pod resumes from its block's \
         last checkpoint\n(backoffLimitPerIndex: Kubernetes 1.29 or later), which a pod sent \
         SIGTERM writes before it exits\n(terminationGracePeriodSeconds: \
         {TRAIN_GRACE_SECONDS}). Run it, then the merge:\n  kubectl apply -f {dir}/k8s/train-job.yaml\n  kubectl wait \
         --for=condition=complete --timeout=24h job/{train_name}\n  kubectl apply -f \
         {dir}/k8s/merge-job.yaml",
        dir = paths.dir.display(),
    );
    let merge_comment = format!(
        "Merges the plan's trained blocks into one model, {};\napply it once job/{train_name} \
         is complete.",
        paths.merged.display()
    );
    Ok(vec![
        EngineFile {
            name: "train-job.yaml",
            text: document(&train_comment, &train),
            executable: false,
        },
        EngineFile {
            name: "merge-job.yaml",
            text: document(&merge_comment, &merge),
            executable: false,
        },
    ])
}

/// A batch/v1 Job named `name` with these spec fields, running `container` once per completion,
/// its pods given `grace_seconds` between SIGTERM and SIGKILL (Kubernetes' default when `None`).
fn job(
    name: &str,
    mut spec: Vec<(&'static str, Node)>,
    container: Node,
    volumes: Vec<Node>,
    grace_seconds: Option<i64>,
) -> Node {
    let labels = || {
        map(vec![
            ("app.kubernetes.io/name", s("wgsplat")),
            ("app.kubernetes.io/instance", s(name)),
        ])
    };
    spec.push((
        "template",
        map(vec![
            ("metadata", map(vec![("labels", labels())])),
            (
                "spec",
                map([("restartPolicy", s("Never"))]
                    .into_iter()
                    .chain(grace_seconds.map(|g| ("terminationGracePeriodSeconds", Node::Int(g))))
                    .chain([
                        ("containers", Node::List(vec![container])),
                        ("volumes", Node::List(volumes)),
                    ])
                    .collect()),
            ),
        ]),
    ));
    map(vec![
        ("apiVersion", s("batch/v1")),
        ("kind", s("Job")),
        (
            "metadata",
            map(vec![("name", s(name)), ("labels", labels())]),
        ),
        ("spec", map(spec)),
    ])
}

/// The folders the pods need: the plan (written to), the data and the test list (read), each
/// once, none inside another.
fn mounts(paths: &PlanPaths, plan: &PlanManifest) -> Vec<Mount> {
    let folder_of = |path: &Path| {
        if path.is_file() {
            path.parent()
                .map_or_else(|| path.to_path_buf(), Path::to_path_buf)
        } else {
            path.to_path_buf()
        }
    };
    let mut wanted = vec![Mount {
        name: "plan",
        folder: paths.dir.clone(),
        read_only: false,
    }];
    if let Some(data) = &plan.data.path {
        wanted.push(Mount {
            name: "data",
            folder: folder_of(data),
            read_only: true,
        });
    }
    if let Some(list) = &plan.data.test_list {
        wanted.push(Mount {
            name: "test-list",
            folder: folder_of(list),
            read_only: true,
        });
    }
    let mut kept: Vec<Mount> = Vec::new();
    for mount in wanted {
        if kept.iter().any(|k| mount.folder.starts_with(&k.folder)) {
            continue;
        }
        // A folder inside the new one is replaced by it (writable if either was).
        let read_only = mount.read_only
            && kept
                .iter()
                .filter(|k| k.folder.starts_with(&mount.folder))
                .all(|k| k.read_only);
        kept.retain(|k| !k.folder.starts_with(&mount.folder));
        kept.push(Mount { read_only, ..mount });
    }
    kept
}

/// The pod's volumes and the container's volume mounts for `mounts`.
fn volumes(
    mounts: &[Mount],
    claim: Option<&str>,
    claim_root: &Option<PathBuf>,
) -> Result<(Vec<Node>, Vec<Node>)> {
    let mount_node = |name: &str, mount: &Mount, sub_path: Option<String>| {
        let mut entries = vec![
            ("name", s(name)),
            ("mountPath", s(path_text(&mount.folder))),
        ];
        if let Some(sub_path) = sub_path.filter(|p| !p.is_empty()) {
            entries.push(("subPath", s(sub_path)));
        }
        if mount.read_only {
            entries.push(("readOnly", Node::Bool(true)));
        }
        map(entries)
    };
    let Some(claim) = claim else {
        let volumes = mounts
            .iter()
            .map(|m| {
                map(vec![
                    ("name", s(m.name)),
                    (
                        "hostPath",
                        map(vec![
                            ("path", s(path_text(&m.folder))),
                            ("type", s("Directory")),
                        ]),
                    ),
                ])
            })
            .collect();
        let volume_mounts = mounts.iter().map(|m| mount_node(m.name, m, None)).collect();
        return Ok((volumes, volume_mounts));
    };
    let root = match claim_root {
        Some(root) => root.clone(),
        None => common_ancestor(mounts.iter().map(|m| m.folder.as_path())),
    };
    let mut volume_mounts = Vec::new();
    for mount in mounts {
        let relative = mount
            .folder
            .strip_prefix(&root)
            .map_err(|_| Error::InvalidSetting {
                name: "--k8s-claim-root".into(),
                value: root.display().to_string(),
                expected: format!(
                    "a folder holding {} (the {} the pods mount from the claim)",
                    mount.folder.display(),
                    mount.name
                ),
            })?;
        volume_mounts.push(mount_node("shared", mount, Some(path_text(relative))));
    }
    let volume = map(vec![
        ("name", s("shared")),
        ("persistentVolumeClaim", map(vec![("claimName", s(claim))])),
    ]);
    Ok((vec![volume], volume_mounts))
}

/// The deepest folder holding every one of `folders`.
fn common_ancestor<'a>(mut folders: impl Iterator<Item = &'a Path>) -> PathBuf {
    let mut common = folders.next().map(Path::to_path_buf).unwrap_or_default();
    for folder in folders {
        while !folder.starts_with(&common) {
            if !common.pop() {
                break;
            }
        }
    }
    common
}

fn path_text(path: &Path) -> String {
    path.display().to_string()
}

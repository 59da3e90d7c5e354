//! The engine files beside a plan: what a user submits to the cluster engine they already run.
//!
//! - `PLAN/slurm/train.sbatch`: a job array, one requeueable task per block;
//! - `PLAN/slurm/merge.sbatch`: the merge into `PLAN/merged.ply`;
//! - `PLAN/slurm/submit.sh`: submits the array, then the merge with `--dependency=afterok` and
//!   `--kill-on-invalid-dep=yes`, and prints the two job ids, each alone on a line;
//! - `PLAN/k8s/train-job.yaml`: a Kubernetes Indexed Job, one completion per block;
//! - `PLAN/k8s/merge-job.yaml`: the merge as a Kubernetes Job, applied once the first completes.
//!
//! Every path in them is absolute, so they run from any working directory and under
//! `sbatch --export=NONE` (which gives the job an empty environment). Each file is written
//! atomically; the scripts are executable.

mod kubernetes;
mod slurm;
mod yaml;

use super::manifest::{PLAN_FILE, PlanManifest};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The file the merge job writes inside the plan folder.
pub const MERGED_FILE: &str = "merged.ply";

/// The engine options of `wgsplat partition` (flattened into its arguments).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct EngineArgs {
    /// The wgsplat binary the Slurm scripts run, as the compute nodes see it (default: this
    /// executable's absolute path).
    #[arg(long, value_name = "PATH")]
    pub wgsplat: Option<PathBuf>,
    /// Generic resources of each training task, as `sbatch --gres` takes them (e.g. `gpu:1`).
    /// None by default, so the scripts also run on a cluster without GPUs.
    #[arg(long, value_name = "GRES")]
    pub slurm_gres: Option<String>,
    /// Time limit of each training task, as `sbatch --time` takes it (e.g. `4:00:00`).
    #[arg(long, value_name = "TIME")]
    pub slurm_time: Option<String>,
    /// The Slurm partition both jobs are submitted to (default: the cluster's default).
    #[arg(long, value_name = "NAME")]
    pub slurm_partition: Option<String>,
    /// An extra `#SBATCH` line for both jobs, e.g. `--sbatch-line "--account=city"` (the
    /// `#SBATCH` prefix is optional); repeatable.
    #[arg(
        long = "sbatch-line",
        value_name = "OPTION",
        allow_hyphen_values = true
    )]
    pub sbatch_lines: Vec<String>,
    /// The container image of the Kubernetes jobs; it must hold wgsplat (see --k8s-wgsplat).
    #[arg(long, value_name = "IMAGE", default_value = "wgsplat:latest")]
    pub k8s_image: String,
    /// The wgsplat command inside the image.
    #[arg(long, value_name = "PATH", default_value = "wgsplat")]
    pub k8s_wgsplat: String,
    /// GPUs (`nvidia.com/gpu`) each Kubernetes training pod asks for; 0 asks for none.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub k8s_gpus: u32,
    /// Mount the plan and the data from this PersistentVolumeClaim (which every pod must be able
    /// to mount) instead of from each node's own file system (hostPath).
    #[arg(long, value_name = "NAME")]
    pub k8s_claim: Option<String>,
    /// The folder the claim's root holds (default: the deepest folder holding both the plan and
    /// the data). Each folder is mounted at its own absolute path, so the plan's paths hold in
    /// the pods too.
    #[arg(long, value_name = "DIR", requires = "k8s_claim")]
    pub k8s_claim_root: Option<PathBuf>,
}

/// What the Slurm scripts ask the scheduler for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlurmOptions {
    /// `--gres` of each training task.
    pub gres: Option<String>,
    /// `--time` of each training task.
    pub time: Option<String>,
    /// `--partition` of both jobs.
    pub partition: Option<String>,
    /// Extra `#SBATCH` options of both jobs (without the `#SBATCH ` prefix).
    pub extra: Vec<String>,
}

/// How the Kubernetes jobs run and see the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct KubernetesOptions {
    /// The container image.
    pub image: String,
    /// The wgsplat command inside the image.
    pub wgsplat: String,
    /// `nvidia.com/gpu` of each training pod (0: none).
    pub gpus: u32,
    /// A PersistentVolumeClaim holding the plan and the data, or `None` for hostPath volumes.
    pub claim: Option<String>,
    /// The absolute folder the claim's root holds (`None`: derived from the mounted folders).
    pub claim_root: Option<PathBuf>,
}

impl Default for KubernetesOptions {
    fn default() -> Self {
        KubernetesOptions {
            image: "wgsplat:latest".into(),
            wgsplat: "wgsplat".into(),
            gpus: 0,
            claim: None,
            claim_root: None,
        }
    }
}

/// Everything [`write_engine_files`] needs beyond the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineOptions {
    /// The wgsplat binary the Slurm scripts run (absolute).
    pub wgsplat: PathBuf,
    /// The Slurm scripts' requests.
    pub slurm: SlurmOptions,
    /// The Kubernetes jobs' settings.
    pub kubernetes: KubernetesOptions,
}

impl EngineArgs {
    /// The options these arguments ask for: paths made absolute, the wgsplat binary defaulting to
    /// the running executable.
    pub fn options(&self) -> Result<EngineOptions> {
        let wgsplat = match &self.wgsplat {
            Some(path) => absolute(path, "--wgsplat")?,
            None => std::env::current_exe().map_err(|e| Error::InvalidSetting {
                name: "--wgsplat".into(),
                value: String::new(),
                expected: format!(
                    "the path of the wgsplat binary the jobs should run (this executable's own \
                     path is unknown: {e})"
                ),
            })?,
        };
        let extra = self
            .sbatch_lines
            .iter()
            .map(|line| {
                let line = line.trim();
                line.strip_prefix("#SBATCH")
                    .map_or(line, str::trim_start)
                    .to_string()
            })
            .collect();
        let claim_root = match &self.k8s_claim_root {
            Some(root) => Some(absolute(root, "--k8s-claim-root")?),
            None => None,
        };
        Ok(EngineOptions {
            wgsplat,
            slurm: SlurmOptions {
                gres: self.slurm_gres.clone(),
                time: self.slurm_time.clone(),
                partition: self.slurm_partition.clone(),
                extra,
            },
            kubernetes: KubernetesOptions {
                image: self.k8s_image.clone(),
                wgsplat: self.k8s_wgsplat.clone(),
                gpus: self.k8s_gpus,
                claim: self.k8s_claim.clone(),
                claim_root,
            },
        })
    }
}

fn absolute(path: &Path, option: &str) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|e| Error::InvalidSetting {
        name: option.into(),
        value: path.display().to_string(),
        expected: format!("a path that can be made absolute ({e})"),
    })
}

/// The absolute paths the engine files refer to.
pub(crate) struct PlanPaths {
    /// The plan folder.
    pub dir: PathBuf,
    /// `PLAN/plan.json`.
    pub manifest: PathBuf,
    /// `PLAN/logs`, where the Slurm jobs write their output.
    pub logs: PathBuf,
    /// `PLAN/merged.ply`.
    pub merged: PathBuf,
    /// A name for the plan's jobs, from the plan folder's name (letters, digits, `-`).
    pub name: String,
}

impl PlanPaths {
    fn new(plan_dir: &Path) -> Result<PlanPaths> {
        let dir = absolute(plan_dir, "plan folder")?;
        let name: String = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let name = name.trim_matches('-');
        let name = if name.is_empty() { "plan" } else { name };
        Ok(PlanPaths {
            manifest: dir.join(PLAN_FILE),
            logs: dir.join("logs"),
            merged: dir.join(MERGED_FILE),
            name: name
                .chars()
                .take(40)
                .collect::<String>()
                .trim_end_matches('-')
                .into(),
            dir,
        })
    }
}

/// Writes the Slurm and Kubernetes files of `plan` into `plan_dir` (`slurm/`, `k8s/`, and the
/// empty `logs/` the Slurm jobs write to; Slurm does not create it).
pub fn write_engine_files(
    plan_dir: &Path,
    plan: &PlanManifest,
    options: &EngineOptions,
) -> Result<()> {
    if plan.blocks.is_empty() {
        return Err(Error::InvalidSetting {
            name: "plan".into(),
            value: plan_dir.display().to_string(),
            expected: "a plan with at least one block: partition the scene again".into(),
        });
    }
    let paths = PlanPaths::new(plan_dir)?;
    let scripts = slurm::scripts(&paths, plan.blocks.len(), options)?;
    let jobs = kubernetes::jobs(&paths, plan, options)?;
    for (folder, files) in [("slurm", scripts), ("k8s", jobs)] {
        let folder = paths.dir.join(folder);
        create_dir(&folder)?;
        for file in files {
            write_file(&folder.join(file.name), &file.text, file.executable)?;
        }
    }
    create_dir(&paths.logs)
}

/// One generated file.
pub(crate) struct EngineFile {
    /// The file name inside its folder.
    pub name: &'static str,
    /// The contents.
    pub text: String,
    /// Whether it is a script (mode 0755).
    pub executable: bool,
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| crate::io::io_error(dir, "create the folder", e))
}

fn write_file(path: &Path, text: &str, executable: bool) -> Result<()> {
    crate::io::write_atomically(path, |w| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = if executable { 0o755 } else { 0o644 };
            w.get_ref()
                .set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(|e| crate::io::io_error(path, "set the permissions of", e))?;
        }
        #[cfg(not(unix))]
        let _ = executable;
        std::io::Write::write_all(w, text.as_bytes())
            .map_err(|e| crate::io::io_error(path, "write", e))
    })
}

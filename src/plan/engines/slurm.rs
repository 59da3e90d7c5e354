//! The Slurm scripts: `train.sbatch` (a job array, one task per block), `merge.sbatch` and
//! `submit.sh`.
//!
//! sbatch reads `#SBATCH` lines up to the first command and does not unquote them the way a
//! shell does, so a path in one is refused if it holds a character that would need quoting; in
//! the scripts' bodies every path is single-quoted.

use super::{EngineFile, EngineOptions, PlanPaths};
use crate::error::{Error, Result};
use std::fmt::Write as _;
use std::path::Path;

/// How long before its time limit a training task is sent SIGUSR1 to checkpoint and stop: time
/// for the step under way and one checkpoint of a large block.
const SIGNAL_AHEAD_SECONDS: u32 = 120;

/// wgsplat's exit status after SIGUSR1 (128 + 10, as a shell reports a process the signal ended):
/// the train script requeues the task on it.
const USR1_STATUS: i32 = 128 + 10;

/// The three scripts of a plan of `blocks` blocks.
pub(super) fn scripts(
    paths: &PlanPaths,
    blocks: usize,
    options: &EngineOptions,
) -> Result<Vec<EngineFile>> {
    let slurm = &options.slurm;
    let mut common = Vec::new();
    if let Some(partition) = &slurm.partition {
        common.push(directive("--slurm-partition", "--partition=", partition)?);
    }
    for line in &slurm.extra {
        if !line.starts_with('-') {
            return Err(Error::InvalidSetting {
                name: "--sbatch-line".into(),
                value: line.clone(),
                expected: "an sbatch option such as \"--account=NAME\"".into(),
            });
        }
        common.push(directive("--sbatch-line", "", line)?);
    }
    let mut train_requests = Vec::new();
    if let Some(gres) = &slurm.gres {
        train_requests.push(directive("--slurm-gres", "--gres=", gres)?);
    }
    if let Some(time) = &slurm.time {
        train_requests.push(directive("--slurm-time", "--time=", time)?);
    }
    let dir = directive_path(&paths.dir)?;
    let logs = directive_path(&paths.logs)?;
    let wgsplat = options
        .wgsplat
        .to_str()
        .ok_or_else(|| Error::InvalidSetting {
            name: "--wgsplat".into(),
            value: options.wgsplat.display().to_string(),
            expected: "a UTF-8 path".into(),
        })?;
    let wgsplat = quote(Path::new(wgsplat));
    let check_wgsplat = format!(
        "wgsplat={wgsplat}\n\
         if [ ! -x \"$wgsplat\" ]; then\n    \
         echo \"wgsplat: $wgsplat is not an executable on this node; write the plan's engine \
         files again with --wgsplat naming the binary as the compute nodes see it\" >&2\n    \
         exit 1\n\
         fi\n"
    );

    let mut train = String::from("#!/bin/bash\n");
    train.push_str(
        "# Trains the plan's blocks as a Slurm job array: array task K trains block K. A requeued\n\
         # task resumes from its block's last checkpoint; a block already done is a no-op.\n\
         # SIGTERM (preemption, requeue, scancel) or SIGUSR1 (asked for below, ahead of the time\n\
         # limit) makes wgsplat checkpoint after its current step and exit. The shell passes the\n\
         # signals Slurm sends it (B:) on to wgsplat, and after SIGUSR1 puts the task back in the\n\
         # queue, to continue from that checkpoint instead of being killed at the limit.\n",
    );
    let _ = writeln!(train, "#SBATCH --job-name=wgsplat-train-{}", paths.name);
    let _ = writeln!(train, "#SBATCH --array=0-{}", blocks - 1);
    train.push_str("#SBATCH --requeue\n#SBATCH --open-mode=append\n");
    let _ = writeln!(train, "#SBATCH --signal=B:USR1@{SIGNAL_AHEAD_SECONDS}");
    let _ = writeln!(train, "#SBATCH --output={logs}/train-%A_%a.log");
    let _ = writeln!(train, "#SBATCH --chdir={dir}");
    for line in train_requests.iter().chain(&common) {
        let _ = writeln!(train, "#SBATCH {line}");
    }
    train.push_str("set -euo pipefail\n");
    train.push_str(&check_wgsplat);
    train.push_str(
        "block=\"${SLURM_ARRAY_TASK_ID:?this script is a Slurm job array: submit it with sbatch}\"\n",
    );
    let _ = writeln!(
        train,
        "\"$wgsplat\" train --plan {} --block \"$block\" &",
        quote(&paths.manifest)
    );
    train.push_str(
        "child=$!\n\
         for signal in TERM INT USR1; do\n    \
         trap \"kill -s $signal $child 2>/dev/null || true\" \"$signal\"\n\
         done\n\
         # A trapped signal interrupts `wait`: wait again until wgsplat has ended.\n\
         while kill -0 \"$child\" 2>/dev/null; do wait \"$child\" || true; done\n\
         status=0\n\
         wait \"$child\" || status=$?\n",
    );
    let _ = writeln!(
        train,
        "if [ \"$status\" -eq {USR1_STATUS} ]; then\n    \
         task=\"${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}\"\n    \
         echo \"wgsplat: block $block checkpointed ahead of the time limit; requeueing task $task to continue from there\" >&2\n    \
         scontrol requeue \"$task\" || echo \"wgsplat: scontrol requeue $task failed; submit the task again to continue\" >&2\n\
         fi\n\
         exit \"$status\""
    );

    let mut merge = String::from("#!/bin/bash\n");
    let _ = writeln!(
        merge,
        "# Merges the plan's trained blocks into one model, once every block is done (submit.sh\n\
         # chains it after the training array):\n# {}",
        paths.merged.display()
    );
    let _ = writeln!(merge, "#SBATCH --job-name=wgsplat-merge-{}", paths.name);
    merge.push_str("#SBATCH --requeue\n#SBATCH --open-mode=append\n");
    let _ = writeln!(merge, "#SBATCH --output={logs}/merge-%j.log");
    let _ = writeln!(merge, "#SBATCH --chdir={dir}");
    for line in &common {
        let _ = writeln!(merge, "#SBATCH {line}");
    }
    merge.push_str("set -euo pipefail\n");
    merge.push_str(&check_wgsplat);
    let _ = writeln!(
        merge,
        "exec \"$wgsplat\" merge {} --out {}",
        quote(&paths.dir),
        quote(&paths.merged)
    );

    let slurm_dir = paths.dir.join("slurm");
    let submit = format!(
        "#!/bin/bash\n\
         # Submits the plan to Slurm: the training array, then the merge, which starts once every\n\
         # block succeeded and is cancelled if one fails for good. Prints the array's job id, then\n\
         # the merge's, each alone on a line. Arguments go to both sbatch calls\n\
         # (e.g. --account=NAME).\n\
         set -euo pipefail\n\
         slurm={slurm}\n\
         array=$(sbatch --parsable \"$@\" \"$slurm/train.sbatch\")\n\
         array=${{array%%;*}}\n\
         if ! merge=$(sbatch --parsable --dependency=\"afterok:$array\" --kill-on-invalid-dep=yes \\\n    \
         \"$@\" \"$slurm/merge.sbatch\"); then\n    \
         echo \"submit.sh: the training array is job $array, but sbatch refused the merge; once \
         the array is done, submit $slurm/merge.sbatch by hand\" >&2\n    \
         exit 1\n\
         fi\n\
         merge=${{merge%%;*}}\n\
         echo \"$array\"\n\
         echo \"$merge\"\n",
        slurm = quote(&slurm_dir),
    );

    Ok(vec![
        EngineFile {
            name: "train.sbatch",
            text: train,
            executable: true,
        },
        EngineFile {
            name: "merge.sbatch",
            text: merge,
            executable: true,
        },
        EngineFile {
            name: "submit.sh",
            text: submit,
            executable: true,
        },
    ])
}

/// `prefix` + `value` as one `#SBATCH` option, refusing what would break the line.
fn directive(option: &str, prefix: &str, value: &str) -> Result<String> {
    let value = value.trim();
    if value.is_empty() || value.chars().any(char::is_control) {
        return Err(Error::InvalidSetting {
            name: option.into(),
            value: value.into(),
            expected: "a non-empty value on one line".into(),
        });
    }
    Ok(format!("{prefix}{value}"))
}

/// A path for an `#SBATCH` line, where sbatch does no shell unquoting and `%` starts a pattern.
fn directive_path(path: &Path) -> Result<String> {
    let text = path.to_str().unwrap_or_default();
    let bad = |c: char| c.is_whitespace() || c.is_control() || "\"'%\\$`".contains(c);
    if text.is_empty() || text.chars().any(bad) {
        return Err(Error::InvalidSetting {
            name: "plan folder".into(),
            value: path.display().to_string(),
            expected: "a UTF-8 path without spaces, quotes, '%', '$', '`' or '\\' (Slurm reads \
                       the log and working folders from #SBATCH lines unquoted): write the plan \
                       to such a folder"
                .into(),
        });
    }
    Ok(text.into())
}

/// `path` single-quoted for bash.
fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

//! Stopping training cleanly on SIGTERM, SIGINT (Ctrl-C) or SIGUSR1.
//!
//! Slurm sends SIGTERM before it kills a task (time limit, preemption, `scontrol requeue`), and
//! SIGUSR1 ahead of the time limit where the script asks for it (`--signal=B:USR1@120`);
//! Kubernetes sends SIGTERM and waits the pod's grace period. Once [`StopSignals::install`] has
//! run, such a signal only sets a flag: the training loop sees it between two steps, writes its
//! checkpoint (atomically: a temporary file, then a rename) and the command ends with an
//! [`Interrupted`] error, whose exit status is 128 + the signal's number, as a shell reports a
//! process the signal ended. Further signals while the checkpoint is written only set the flag
//! again. Once the last iteration is done and the model written, `train` asks the flag before
//! each export format, scored view and test render, and a signal ends it there (the model kept,
//! no metrics.json), with the same status.
//!
//! Only Unix has these signals: elsewhere [`StopSignals::install`] registers nothing and Ctrl-C
//! ends the process as before (continue from the last `--save-every` checkpoint).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The signals that stop training, by number and name.
#[cfg(unix)]
const SIGNALS: [(i32, &str); 3] = [
    (signal_hook::consts::SIGTERM, "SIGTERM"),
    (signal_hook::consts::SIGINT, "SIGINT"),
    (signal_hook::consts::SIGUSR1, "SIGUSR1"),
];

/// The first stopping signal this process received since [`StopSignals::install`].
#[derive(Clone, Debug)]
pub(crate) struct StopSignals {
    /// The number of the first signal received; 0 while none has come.
    received: Arc<AtomicUsize>,
}

/// A signal that stopped training.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Signal {
    /// Its number (15 for SIGTERM).
    pub(crate) number: i32,
    /// Its name, e.g. `SIGTERM`.
    pub(crate) name: &'static str,
}

impl StopSignals {
    /// Catches SIGTERM, SIGINT and SIGUSR1 from now on, for the rest of the process: a thread
    /// records the first that comes, and later ones change nothing.
    pub(crate) fn install() -> anyhow::Result<Self> {
        let received = Arc::new(AtomicUsize::new(0));
        #[cfg(unix)]
        {
            let numbers = SIGNALS.map(|(number, _)| number);
            let mut signals = signal_hook::iterator::Signals::new(numbers).map_err(|e| {
                anyhow::anyhow!("catching SIGTERM, SIGINT and SIGUSR1 (to checkpoint on them): {e}")
            })?;
            let first = Arc::clone(&received);
            std::thread::Builder::new()
                .name("signals".into())
                .spawn(move || {
                    for number in signals.forever() {
                        let number = usize::try_from(number).unwrap_or(usize::MAX);
                        // Only the first signal counts.
                        let _ =
                            first.compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst);
                    }
                })
                .map_err(|e| anyhow::anyhow!("starting the signal thread: {e}"))?;
        }
        Ok(Self { received })
    }

    /// The signal received, if one has come.
    pub(crate) fn received(&self) -> Option<Signal> {
        let number = self.received.load(Ordering::SeqCst);
        if number == 0 {
            return None;
        }
        let number = i32::try_from(number).unwrap_or(i32::MAX);
        #[cfg(unix)]
        let name = SIGNALS
            .iter()
            .find(|(n, _)| *n == number)
            .map_or("a signal", |(_, name)| *name);
        #[cfg(not(unix))]
        let name = "a signal";
        Some(Signal { number, name })
    }

    /// Whether a signal has come: the training loop's stop test.
    pub(crate) fn requested(&self) -> bool {
        self.received.load(Ordering::SeqCst) != 0
    }
}

/// Training stopped on `signal` after writing its checkpoint; `message` says where it stopped
/// and how to continue. [`super::run`] prints it and exits with [`Interrupted::exit_code`].
#[derive(Debug)]
pub(crate) struct Interrupted {
    /// The signal that stopped it.
    pub(crate) signal: Signal,
    /// What stopped, where, and the command that continues it.
    pub(crate) message: String,
}

impl Interrupted {
    /// 128 + the signal's number, as a shell reports a process that the signal ended.
    pub(crate) fn exit_code(&self) -> u8 {
        u8::try_from(128 + self.signal.number.clamp(1, 127)).unwrap_or(1)
    }
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Interrupted {}

/// This process's command line quoted for a POSIX shell, with `--resume` added (unless it is
/// there) when `resume`: the command that continues an interrupted run.
pub(crate) fn this_command(resume: bool) -> String {
    let mut args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Some(first) = args.first_mut() {
        // The program as the user typed it, or `wgsplat` when it was found on PATH.
        if !first.contains('/') {
            "wgsplat".clone_into(first);
        }
    }
    if resume && !args.iter().skip(1).any(|a| a == "--resume") {
        args.push("--resume".to_owned());
    }
    args.iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `arg` as one word for a POSIX shell: as it is when that is safe, else single-quoted.
fn shell_quote(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./=:,@+%".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn arguments_are_quoted_only_when_a_shell_needs_it() {
        assert_eq!(shell_quote("--out"), "--out");
        assert_eq!(shell_quote("runs/a b"), "'runs/a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}

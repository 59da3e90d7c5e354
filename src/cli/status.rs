//! How commands report: `train`'s progress display (also used by `run-plan` and
//! `train --plan`), and where status lines go when stdout carries JSON.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal as _;
use std::time::Instant;
use wgsplat::gpu::memory::format_bytes;
use wgsplat::train::TrainEvent;

/// Prints a line above the progress bar, or on stdout when the bar is hidden (not a terminal).
fn print_line(bar: &ProgressBar, interactive: bool, line: String) {
    if interactive {
        bar.println(line);
    } else {
        println!("{line}");
    }
}

/// `train`'s progress display: a bar on a terminal, a line every 5 s otherwise, and the
/// evaluations and log lines above it. `run-plan` shows every block's training the same way.
pub(crate) struct TrainProgress {
    /// The bar (hidden when stdout is not a terminal).
    pub(crate) bar: ProgressBar,
    interactive: bool,
    iterations: u64,
    last_line: Instant,
}

impl TrainProgress {
    /// A display for a run of `iterations`, starting at `start`.
    pub(crate) fn new(iterations: u64, start: u64) -> Self {
        let interactive = std::io::stdout().is_terminal();
        let bar = if interactive {
            ProgressBar::new(iterations)
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} {per_sec} ETA {eta} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_position(start);
        TrainProgress {
            bar,
            interactive,
            iterations,
            last_line: Instant::now(),
        }
    }

    /// Shows one training event.
    pub(crate) fn event(&mut self, event: TrainEvent) {
        let (bar, interactive) = (&self.bar, self.interactive);
        match event {
            TrainEvent::Progress {
                iteration,
                loss,
                train_psnr,
                gaussians,
                iterations_per_second,
                gpu_bytes,
            } => {
                let msg = format!(
                    "loss {loss:.4} psnr {train_psnr:.2} dB, {gaussians} Gaussians, GPU {}",
                    format_bytes(gpu_bytes)
                );
                bar.set_position(iteration);
                bar.set_message(msg.clone());
                if !interactive
                    && (self.last_line.elapsed().as_secs_f64() > 5.0
                        || iteration == self.iterations)
                {
                    println!(
                        "it {iteration}/{} ({iterations_per_second:.1} it/s): {msg}",
                        self.iterations
                    );
                    self.last_line = Instant::now();
                }
            }
            // A hidden bar (output not a terminal) prints nothing, so lines go to stdout directly.
            TrainEvent::Evaluated { iteration, scores } => print_line(
                bar,
                interactive,
                format!("it {iteration}: {}", scores.summary()),
            ),
            TrainEvent::Log { message } => print_line(bar, interactive, message),
            _ => {}
        }
    }
}

/// Where a command's status lines go: stdout, or stderr when stdout carries the command's
/// machine-readable result (`--json`), so that `wgsplat eval … --json | jq` reads JSON alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StatusTo {
    Stdout,
    Stderr,
}

impl StatusTo {
    /// Status lines go to stderr when `json` is set.
    pub(crate) fn for_json(json: bool) -> Self {
        if json { Self::Stderr } else { Self::Stdout }
    }

    /// Prints one status line.
    pub(crate) fn line(self, text: impl std::fmt::Display) {
        match self {
            Self::Stdout => println!("{text}"),
            Self::Stderr => eprintln!("{text}"),
        }
    }
}
